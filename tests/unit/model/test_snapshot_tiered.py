"""Tiered storage (KIP-405, KIP-1023) in the snapshot and the cost model: the optional ``topics`` list
(``remoteStorageEnable``, ``localRetentionBytes``/``Ms``) and ``followerFetchLastTieredOffset`` round trip,
absent means unknown, bad values are refused; a move of a remote-storage partition costs its local size
(``sizeBytes``, what DescribeLogDirs reports: the leader's local log), in bytes to move, the lower bound,
the batches and the report alike (tests/integration/test_tiered_storage.py measures it on Kafka)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import batching, plan_quality
from kafka_placement.planning.report import build_report
from kafka_placement.planning.report_html import render
from kafka_placement.planning.state import Eligibility
from kafka_placement.spark.io import read_snapshot, write_parquet

LOCAL = 2_000_000  # the tiered partition's local bytes (its total, tiered included, is far more)
PLAIN = 8_000_000


def _doc(**extra: object) -> dict[str, object]:
    dirs = [{"path": "/d"}]
    return {
        "version": 1,
        "brokers": [{"id": 1, "rack": "r1", "logDirs": dirs}, {"id": 2, "rack": "r2", "logDirs": dirs}],
        "partitions": [
            {"topic": "tiered", "partition": 0, "replicas": [1], "logDirs": ["/d"], "sizeBytes": LOCAL},
            {"topic": "plain", "partition": 0, "replicas": [1], "logDirs": ["/d"], "sizeBytes": PLAIN},
        ],
        **extra,
    }


TOPICS = [
    {"topic": "plain", "remoteStorageEnable": False, "localRetentionBytes": -2, "localRetentionMs": -2},
    {"topic": "tiered", "remoteStorageEnable": True, "localRetentionBytes": 1048576, "localRetentionMs": -2},
]


def test_remote_storage_fields_round_trip_and_absent_is_unknown() -> None:
    snap = ClusterSnapshot.from_json(_doc(topics=TOPICS, followerFetchLastTieredOffset=False))
    assert snap.remote_storage("tiered") is True and snap.remote_storage("plain") is False
    assert snap.remote_storage("other") is None
    tiered = snap.storage("tiered")
    assert tiered is not None and (tiered.local_retention_bytes, tiered.local_retention_ms) == (1048576, -2)
    assert snap.follower_fetch_last_tiered_offset is False
    doc = snap.to_json()
    assert doc["topics"] == TOPICS and doc["followerFetchLastTieredOffset"] is False
    assert ClusterSnapshot.loads(snap.dumps()) == snap
    bare = ClusterSnapshot.from_json(_doc())
    assert bare.remote_storage("tiered") is None and bare.follower_fetch_last_tiered_offset is None
    assert "topics" not in bare.to_json() and "followerFetchLastTieredOffset" not in bare.to_json()
    partial = ClusterSnapshot.from_json(_doc(topics=[{"topic": "tiered"}]))
    assert partial.remote_storage("tiered") is None
    assert partial.to_json()["topics"] == [{"topic": "tiered"}]


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"topics": [TOPICS[0], TOPICS[0]]}, "snapshot.topics[1]"),
        (
            {"topics": [{"topic": "t", "remoteStorageEnable": "yes"}]},
            "snapshot.topics[0].remoteStorageEnable",
        ),
        ({"topics": [{"topic": "t", "localRetentionBytes": -3}]}, "snapshot.topics[0].localRetentionBytes"),
        ({"topics": [{"topic": "t", "localRetentionMs": 1.5}]}, "snapshot.topics[0].localRetentionMs"),
        ({"topics": [{"topic": "t", "remoteStorage": True}]}, "snapshot.topics[0]"),
        ({"topics": [{"topic": "bad/name"}]}, "snapshot.topics[0].topic"),
        ({"topics": {"t": {}}}, "snapshot.topics"),
        ({"followerFetchLastTieredOffset": 1}, "snapshot.followerFetchLastTieredOffset"),
    ],
)
def test_bad_remote_storage_fields_are_refused_with_their_location(
    extra: dict[str, object], where: str
) -> None:
    with pytest.raises(BadInputError) as e:
        ClusterSnapshot.from_json(_doc(**extra))
    assert e.value.location == where


def test_a_move_of_a_tiered_partition_costs_its_local_bytes_everywhere() -> None:
    snap = ClusterSnapshot.from_json(_doc(topics=TOPICS, followerFetchLastTieredOffset=True))
    tiered, plain = snap.partition("tiered", 0), snap.partition("plain", 0)
    assert tiered is not None and plain is not None
    # the one definition: local bytes (an upper bound with KIP-1023, which copies only the untiered part)
    assert (tiered.copy_bytes, plain.copy_bytes) == (LOCAL, PLAIN)
    plan = Plan((PartitionTarget("tiered", 0, (2,), ("any",)), PartitionTarget("plain", 0, (2,), ("any",))))
    intents = Intents.loads("kind: BrokerDecommission\nspec: {brokers: [1]}\n")
    summary = plan_quality.evaluate(snap, plan, intents).to_json()
    assert summary["bytesToMove"] == summary["networkBytes"] == LOCAL + PLAIN
    assert summary["lowerBoundBytes"] == LOCAL + PLAIN
    elig = Eligibility.of(snap, intents)
    parts = {t.name: snap.partition(t.topic, t.partition) for t in plan.partitions}
    changes = {
        t.name: batching.change_of(p, t, elig).size_bytes
        for t in plan.partitions
        if (p := parts[t.name]) is not None
    }
    assert changes == {"tiered-0": LOCAL, "plain-0": PLAIN}


def test_the_report_says_the_bytes_of_tiered_topics_are_local_bytes() -> None:
    plan = Plan((PartitionTarget("tiered", 0, (2,), ("any",)), PartitionTarget("plain", 0, (2,), ("any",))))
    snap = ClusterSnapshot.from_json(_doc(topics=TOPICS))
    r = build_report(snap, plan)
    assert r.tiered == (1, LOCAL)
    page = render(r)
    assert 'id="tiered"' in page and "1 of the partitions changed are of topics with remote storage" in page
    unknown = build_report(ClusterSnapshot.from_json(_doc()), plan)  # not known to be tiered: no claim
    assert unknown.tiered == (0, 0) and 'id="tiered"' not in render(unknown)


def test_remote_storage_fields_survive_a_parquet_snapshot(tmp_path: Path) -> None:
    snap = ClusterSnapshot.from_json(_doc(topics=TOPICS, followerFetchLastTieredOffset=True))
    write_parquet(snap, tmp_path / "snap")
    again = read_snapshot(tmp_path / "snap")
    assert again == snap and again.topic_storage == snap.topic_storage
    assert again.follower_fetch_last_tiered_offset is True


UNTIERED = 80_000  # KIP-1023: the tiered partition's bytes after its last tiered offset


def _kip1023(untiered: object = UNTIERED) -> ClusterSnapshot:
    doc = _doc(topics=TOPICS, followerFetchLastTieredOffset=True)
    doc["partitions"][0]["untieredBytes"] = untiered  # type: ignore[index]
    return ClusterSnapshot.from_json(doc)


def test_with_kip1023_a_move_costs_the_untiered_bytes_everywhere_a_dir_move_its_local_bytes(
    tmp_path: Path,
) -> None:
    snap = _kip1023()
    tiered, plain = snap.partition("tiered", 0), snap.partition("plain", 0)
    assert tiered is not None and plain is not None
    assert (tiered.untiered_bytes, tiered.copy_bytes, plain.copy_bytes) == (UNTIERED, UNTIERED, PLAIN)
    assert ClusterSnapshot.loads(snap.dumps()) == snap
    assert snap.to_json()["partitions"][0]["untieredBytes"] == UNTIERED
    assert "untieredBytes" not in snap.to_json()["partitions"][1]  # absent: not read
    write_parquet(snap, tmp_path / "snap")
    assert read_snapshot(tmp_path / "snap") == snap
    plan = Plan((PartitionTarget("tiered", 0, (2,), ("any",)), PartitionTarget("plain", 0, (2,), ("any",))))
    intents = Intents.loads("kind: BrokerDecommission\nspec: {brokers: [1]}\n")
    summary = plan_quality.evaluate(snap, plan, intents).to_json()
    assert summary["bytesToMove"] == summary["networkBytes"] == UNTIERED + PLAIN
    assert summary["lowerBoundBytes"] == UNTIERED + PLAIN
    elig = Eligibility.of(snap, intents)
    assert batching.change_of(tiered, plan.partitions[0], elig).size_bytes == UNTIERED
    # a dir move within the broker copies the whole local log (the future replica copies its current one)
    two_dirs = _doc(topics=TOPICS, followerFetchLastTieredOffset=True)
    for b in two_dirs["brokers"]:  # type: ignore[attr-defined]
        b["logDirs"] = [{"path": "/d"}, {"path": "/e"}]
    two_dirs["partitions"][0]["untieredBytes"] = UNTIERED  # type: ignore[index]
    moved = plan_quality.movement(
        ClusterSnapshot.from_json(two_dirs), Plan((PartitionTarget("tiered", 0, (1,), ("/e",)),))
    )
    assert moved["intraBrokerBytes"] == moved["bytesToMove"] == LOCAL and moved["networkBytes"] == 0
    # never more than the local size; a negative count is refused
    big = _kip1023(LOCAL * 3).partition("tiered", 0)
    assert big is not None and big.copy_bytes == LOCAL
    with pytest.raises(BadInputError) as e:
        _kip1023(-1)
    assert e.value.location == "snapshot.partitions[0] (tiered-0).untieredBytes"


def test_with_copies_cheaper_than_their_disk_bytes_the_lower_bound_stays_below_the_plan() -> None:
    """Broker balance: the bytes leaving a broker above its threshold are disk bytes; under KIP-1023 each
    costs fewer copy bytes, so the bound counts them at the cheapest copy per disk byte (never above
    what the plan copies)."""
    from kafka_placement.planning.optimizer import compute_plan

    dirs = [{"path": "/d"}]
    parts = [
        {
            "topic": "tiered", "partition": i, "replicas": [1], "logDirs": ["/d"], "sizeBytes": 1_000_000,
            "untieredBytes": 10_000 * (1 + i % 3),
        }
        for i in range(12)
    ]  # fmt: skip
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [{"id": b, "rack": f"r{b}", "logDirs": dirs} for b in (1, 2, 3)],
            "partitions": parts,
            "topics": [TOPICS[1]],
            "followerFetchLastTieredOffset": True,
        }
    )
    intents = Intents.loads("kind: PlacementPolicy\nspec: {balance: {brokers: true, tolerance: 0.1}}\n")
    s = compute_plan(snap, intents).summary.to_json()
    assert 0 < s["lowerBoundBytes"] <= s["bytesToMove"] <= 8 * 30_000, s["lowerBound"]
    # broker 1 holds 12 MB against a threshold of 1.1 x 4 MB: 7.6 MB must leave it, at 1% (the cheapest
    # copy per disk byte) at least 76 kB of copies (counted as disk bytes, the bound would exceed the plan)
    assert s["lowerBoundBytes"] >= 0.01 * (12e6 - 1.1 * 4e6) - 1


def test_derived_snapshots_keep_the_storage_fields_and_own_their_indexes() -> None:
    """A snapshot made from another (rates added, a plan applied, cordons synced) keeps the topics' storage
    and KIP-1023's switch; its lookups are its own partitions, and the first snapshot's stay its own (the
    indexes were once shared dicts that a derived snapshot overwrote)."""
    from dataclasses import replace

    from kafka_placement.planning.traffic_rates import Traffic, with_traffic

    snap = ClusterSnapshot.from_json(_doc(topics=TOPICS, followerFetchLastTieredOffset=True))
    bigger = replace(snap, partitions=tuple(replace(p, size_bytes=p.size_bytes + 1) for p in snap.partitions))
    assert snap.partition("plain", 0).size_bytes == PLAIN  # type: ignore[union-attr]
    assert bigger.partition("plain", 0).size_bytes == PLAIN + 1  # type: ignore[union-attr]
    rated = with_traffic(snap, {("plain", 0): Traffic(5.0, 1)})
    moved = plan_quality.apply_plan(snap, Plan.of([PartitionTarget("tiered", 0, (2,), ("/d",))]))
    for derived in (rated, moved):
        assert derived.remote_storage("tiered") is True and derived.follower_fetch_last_tiered_offset is True
    assert rated.partition("plain", 0).bytes_in_per_sec == 5.0  # type: ignore[union-attr]
    assert snap.partition("plain", 0).bytes_in_per_sec is None  # type: ignore[union-attr]
    assert moved.partition("tiered", 0).replicas == (2,) and snap.partition("tiered", 0).replicas == (1,)  # type: ignore[union-attr]
