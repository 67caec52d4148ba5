"""The disk relief goal (planning/goals/disk_relief.py): a LogDirCordon's ``relieveBelowShare`` brings a
dir's volume under the share by moving the fewest bytes, to the broker's other dirs first, else to other
brokers; a dir that cannot be relieved refuses the plan naming the numbers. Pure: no rig."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_placement.model.errors import BadInputError, DiskHeadroomError
from kafka_placement.model.intents import Intents, parse_resource
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.sharding import sharded_optimize

GB = 10**9


def snapshot(sizes: dict[int, list[int]], dirs: int = 2, volume: int = 100 * GB) -> ClusterSnapshot:
    """Brokers 1-3 with ``dirs`` dirs of ``volume`` bytes; broker 1's /d0 holds one replica per size
    (GB) in ``sizes[1]`` (RF 2, the other replica on broker 2 or 3's /d0); every volume's used bytes are
    its replicas'."""
    held: dict[tuple[int, str], int] = {}
    parts: list[dict[str, Any]] = []
    for n, gb in enumerate(sizes.get(1, [])):
        other = 2 + n % 2
        parts.append(
            {"topic": "t", "partition": n, "replicas": [1, other], "logDirs": ["/d0", "/d0"],
             "leader": 1, "isr": [1, other], "sizeBytes": gb * GB}
        )  # fmt: skip
        for b in (1, other):
            held[(b, "/d0")] = held.get((b, "/d0"), 0) + gb * GB
    brokers = [
        {
            "id": b,
            "rack": None,
            "logDirs": [
                {"path": f"/d{i}", "totalBytes": volume, "usableBytes": volume - held.get((b, f"/d{i}"), 0)}
                for i in range(dirs)
            ],
        }
        for b in (1, 2, 3)
    ]
    return ClusterSnapshot.from_json({"version": 1, "brokers": brokers, "partitions": parts})


RELIEVE = "kind: LogDirCordon\nspec: {{broker: 1, logDirs: [/d0], relieveBelowShare: {share}}}\n"


def moved_off(snap: ClusterSnapshot, text: str) -> dict[int, str]:
    """The partitions whose broker-1 replica left /d0, and where it went ("1:/d1" or "2:/d1"...)."""
    plan = compute_plan(snap, Intents.loads(text)).plan
    out: dict[int, str] = {}
    for t in plan.partitions:
        placed = dict(zip(t.replicas, t.log_dirs, strict=True))
        if placed.get(1) != "/d0":
            new = next(b for b in t.replicas if b not in snap.partition(t.topic, t.partition).replicas) \
                if 1 not in placed else 1  # fmt: skip
            out[t.partition] = f"{new}:{placed[new]}"
    return out


def test_the_fewest_bytes_leave_for_the_same_brokers_other_dir() -> None:
    # /d0 of broker 1: 90 GB of 100 (replicas 40, 30, 12, 8); to 80%: 10 GB must go. The 12 GB replica
    # alone finishes it: the fewest bytes, one local copy (its other dir, no network traffic)
    snap = snapshot({1: [40, 30, 12, 8]})
    assert moved_off(snap, RELIEVE.format(share=0.8)) == {2: "1:/d1"}
    # to 50%: 40 GB; the 40 GB replica finishes it
    assert moved_off(snap, RELIEVE.format(share=0.5)) == {0: "1:/d1"}
    # already under: nothing moves
    assert moved_off(snap, RELIEVE.format(share=0.95)) == {}


def test_without_another_dir_the_replicas_go_to_another_broker_keeping_every_rule() -> None:
    snap = snapshot({1: [40, 30, 12, 8]}, dirs=1)
    moved = moved_off(snap, RELIEVE.format(share=0.8))
    assert list(moved) == [2]
    (where,) = moved.values()
    assert where.split(":")[0] in ("2", "3") and where != "1:/d0"  # a broker without the partition
    plan = compute_plan(snap, Intents.loads(RELIEVE.format(share=0.8))).plan
    for t in plan.partitions:
        assert len(set(t.replicas)) == 2  # RF kept, distinct brokers


def test_the_sharded_engine_relieves_the_same_dir() -> None:
    snap = snapshot({1: [40, 30, 12, 8]})
    intents = Intents.loads(RELIEVE.format(share=0.8))
    plan = sharded_optimize(snap, intents, 3)
    (t,) = plan.partitions
    assert t.partition == 2 and dict(zip(t.replicas, t.log_dirs, strict=True))[1] == "/d1"


def test_a_dir_that_cannot_be_relieved_refuses_the_plan_with_the_numbers() -> None:
    # one dir per broker, every volume 90% full: no room under maxDiskShare 0.85 anywhere
    full = snapshot({1: [45, 45]}, dirs=1)
    with pytest.raises(DiskHeadroomError) as e:
        compute_plan(full, Intents.loads(RELIEVE.format(share=0.6)))
    message = str(e.value)
    assert "broker 1 log dir /d0 cannot be relieved below 60%" in message and "90.0%" in message
    assert e.value.exit_code == 3 and e.value.reason == "DiskHeadroom"


def test_a_volume_of_unknown_size_cannot_be_relieved() -> None:
    doc = snapshot({1: [40, 30, 12, 8]}).to_json()
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            d["totalBytes"] = d["usableBytes"] = 0
    with pytest.raises(DiskHeadroomError, match="size is unknown"):
        compute_plan(ClusterSnapshot.from_json(doc), Intents.loads(RELIEVE.format(share=0.8)))


def test_relieve_is_bounded_and_not_with_drain() -> None:
    with pytest.raises(BadInputError, match="relieveBelowShare"):
        Intents.loads(RELIEVE.format(share=0.05))
    with pytest.raises(BadInputError, match="set one"):
        Intents.loads(
            "kind: LogDirCordon\nspec: {broker: 1, logDirs: [/d0], drain: true, relieveBelowShare: 0.8}\n"
        )
    body = {
        "kind": "LogDirCordon",
        "metadata": {"name": "relief"},
        "spec": {"clusterRef": {"name": "c"}, "broker": 1, "logDirs": ["/d0"], "relieveBelowShare": 0.8},
    }
    assert parse_resource(body).relieve_below_share == 0.8  # type: ignore[union-attr]
