"""The Spark engine's snapshot analysis on real PySpark (local[2]) against the pure planner's answers.

Random clusters with 3-level racks (and brokers without a rack), JBOD dirs with unknown (offline)
dirs, zero-byte replicas, and intents that decommission, cordon whole brokers (holders that may not
receive), drain dirs, change replication factors both ways and ask for 1-, 2- and 3-level spread.
For each, the DataFrame aggregation must give exactly the ``Assignment``'s loads, and the partitions
``to_repair`` selects by joins and window functions must be exactly those the pure ``needs_repair``
selects, each with the same reasons; the shard column must be ``shard_of``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals.replica_placement import needs_repair, replication_factor
from kafka_placement.planning.sharding import shard_of
from kafka_placement.spark.analysis import REASONS, SnapshotFrames, shard_column
from kafka_placement.spark.engines import spark_session

pytestmark = pytest.mark.spark
RACKS = [f"/dc{d}/z{z}/r{r}" for d in (1, 2, 3) for z in (1, 2) for r in (1, 2)] + ["/dc4", None]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield spark_session("local[2]", "2g")


def random_cluster(seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    ids = list(range(1, 19))
    brokers = [
        {
            "id": b,
            "rack": rng.choice(RACKS),
            "logDirs": [
                {"path": f"/data/d{i}", "totalBytes": 10**12, "usableBytes": 10**12} for i in range(3)
            ],
        }
        for b in ids
    ]
    parts = []
    for i in range(1500):
        reps = rng.sample(ids, rng.choice([1, 2, 3, 3, 3, 4, 5]))
        dirs = [None if rng.random() < 0.03 else f"/data/d{rng.randrange(3)}" for _ in reps]
        parts.append(
            {
                "topic": f"{rng.choice('abcde')}{i % 7}",
                "partition": i,
                "replicas": reps,
                "logDirs": dirs,
                "leader": reps[0],
                "isr": reps,
                "sizeBytes": 0 if rng.random() < 0.1 else rng.randrange(1, 10**6),
            }
        )
    return ClusterSnapshot.from_json({"version": 1, "brokers": brokers, "partitions": parts})


INTENTS = {
    "spread": """
kind: PlacementPolicy
metadata: {name: dc-zone-rack}
spec: {topics: {include: ['a*']}, rackAwareness: {separator: /, levels: 3}, replicationFactor: 3}
---
kind: PlacementPolicy
metadata: {name: dc}
spec: {topics: {include: ['b*']}, rackAwareness: {separator: /, levels: 1}}
---
kind: PlacementPolicy
metadata: {name: dc-zone}
spec: {topics: {include: ['c*']}, rackAwareness: {separator: /, levels: 2}, replicationFactor: 2}
""",
    "everything": """
kind: BrokerDecommission
spec: {brokers: [3, 11]}
---
kind: LogDirCordon
spec: {broker: 5, logDirs: ['*']}
---
kind: LogDirCordon
spec: {broker: 7, logDirs: ['/data/d0', '/data/d1', '/data/d2']}
---
kind: LogDirCordon
spec: {broker: 2, logDirs: [/data/d1], drain: true}
---
kind: LogDirCordon
spec: {broker: 9, logDirs: [/data/d0]}
---
kind: PlacementPolicy
metadata: {name: dc-zone}
spec: {topics: {include: ['a*', 'b*'], exclude: ['b3']}, rackAwareness: {separator: /, levels: 2}}
---
kind: PlacementPolicy
metadata: {name: rf4}
spec: {topics: {include: ['d*']}, replicationFactor: 4}
---
kind: PlacementPolicy
metadata: {name: three-levels}
spec: {topics: {include: ['e*']}, rackAwareness: {separator: /, levels: 3}, replicationFactor: 3}
""",
}


def pure_reasons(ctx: PlanningContext) -> dict[tuple[str, int], set[str]]:
    e = ctx.eligibility
    out: dict[tuple[str, int], set[str]] = {}
    for p in ctx.snapshot.partitions:
        if not needs_repair(ctx, p.key):
            continue
        why = set()
        pairs = list(zip(p.replicas, p.log_dirs, strict=True))
        if any(b in e.decommissioned for b, _ in pairs):
            why.add("decommissioned")
        if any(d is not None and (b, d) in e.drained for b, d in pairs):
            why.add("drained")
        cordoned_only = e.cordoned - e.drained
        if e.reactive_cordon and p.size_bytes == 0 and any(x in cordoned_only for x in pairs):
            why.add("cordonedEmpty")
        if len(p.replicas) != replication_factor(ctx, p.key):
            why.add("replicationFactor")
        tree = ctx.tree_for(p.key)
        if tree is not None and tree.violation(p.replicas) is not None:
            why.add("rackSpread")
        out[p.key] = why
    return out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", ["spread", "everything", "everything-reactive"])
def test_dataframe_analysis_equals_the_pure_planners(spark: Any, case: str, seed: int) -> None:
    snap = random_cluster(seed)
    intents = Intents.loads(INTENTS[case.removesuffix("-reactive")])
    if case.endswith("-reactive"):
        intents = intents.with_reactive_cordon()
    ctx = PlanningContext.of(snap, intents)
    frames = SnapshotFrames.of(spark, snap)
    try:
        loads = frames.loads()
        a = ctx.assignment
        assert loads.broker_bytes == a.broker_bytes and loads.broker_replicas == a.broker_replicas
        assert loads.dir_bytes == a.dir_bytes and loads.dir_replicas == a.dir_replicas
        rows = frames.to_repair(intents).collect()
    finally:
        frames.close()
    mine = {(r.topic, r.partition): {x for x in REASONS if r[x]} for r in rows}
    expected = pure_reasons(ctx)
    assert len(expected) > 50 and len(expected) < len(snap.partitions)  # the case selects some, not all
    if case == "everything-reactive":
        assert any("cordonedEmpty" in why for why in expected.values())
    assert {k: mine.get(k) for k in expected} == expected
    assert set(mine) == set(expected)


def test_rack_rule_window_functions_count_cordoned_holders(spark: Any) -> None:
    # Broker 5 is cordoned: it may not receive, so it is not a member of the rack tree, but a replica
    # it holds counts in dc2 and adds one to dc2's room for that partition. dc1 = {1, 2, 4},
    # dc2 = {5, 6}, dc3 = {7}.
    #   0 [1, 2, 5]        dc1 2, dc2 1, dc3 0 (room)              -> broken
    #   1 [1, 5, 7]        one in each                              -> spread
    #   2 [1, 2, 4]        dc1 3 while dc2 and dc3 have room        -> broken
    #   3 [5, 1, 2, 4, 7]  dc1 3, dc2 1 of room 2 (6 could take one) -> broken
    #   4 [5, 6, 1, 2, 7]  dc1 2, dc2 2 (full), dc3 1 (full)        -> spread
    racks = {1: "/dc1", 2: "/dc1", 4: "/dc1", 5: "/dc2", 6: "/dc2", 7: "/dc3"}
    placements = [[1, 2, 5], [1, 5, 7], [1, 2, 4], [5, 1, 2, 4, 7], [5, 6, 1, 2, 7]]
    doc = {
        "version": 1,
        "brokers": [{"id": b, "rack": r, "logDirs": [{"path": "/d"}]} for b, r in racks.items()],
        "partitions": [
            {"topic": "t", "partition": n, "replicas": reps, "logDirs": ["/d"] * len(reps), "sizeBytes": 1}
            for n, reps in enumerate(placements)
        ],
    }
    snap = ClusterSnapshot.from_json(doc)
    intents = Intents.loads(
        "kind: LogDirCordon\nspec: {broker: 5, logDirs: ['*']}\n---\n"
        "kind: PlacementPolicy\nspec: {topics: {include: ['*']}, rackAwareness: {levels: 1}}\n"
    )
    ctx = PlanningContext.of(snap, intents)
    frames = SnapshotFrames.of(spark, snap)
    try:
        flagged = sorted(r.partition for r in frames.to_repair(intents).collect())
    finally:
        frames.close()
    assert flagged == sorted(p.partition for p in snap.partitions if needs_repair(ctx, p.key))
    assert flagged == [0, 2, 3]


def test_spark_shard_column_is_shard_of(spark: Any) -> None:
    rows = [("orders", n) for n in range(300)] + [("ünïcode-topic", 7), ("x", 0)]
    df = spark.createDataFrame(rows, "topic string, partition int")
    got = {(r.topic, r.partition): r.shard for r in df.select("*", shard_column(16).alias("shard")).collect()}
    assert got == {(t, n): shard_of(t, n, 16) for t, n in rows}
