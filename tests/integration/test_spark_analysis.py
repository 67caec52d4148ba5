"""The Spark engine's snapshot analysis on real PySpark (local[2]) against the pure planner's answers.

Random clusters with 3-level racks (and brokers without a rack), JBOD dirs with unknown (offline)
dirs, zero-byte replicas, and intents that decommission, cordon whole brokers (holders that may not
receive), drain dirs, change replication factors both ways and ask for 1-, 2- and 3-level spread.
For each, the pass of Spark tasks must give exactly the ``Assignment``'s loads, select exactly the
partitions ``needs_repair`` selects (as the snapshot has them), count them per reason as an
independent reading of the rules does, and tally the snapshot as one in-process pass does; the split of
those partitions into shards must be ``shard_of``'s, each shard's in the snapshot's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.unit.builders import RACKED_INTENTS, racked_cluster

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals.replica_placement import needs_repair
from kafka_placement.planning.plan_quality import Scope, tally_of
from kafka_placement.planning.repairs import REPAIR_REASONS
from kafka_placement.planning.sharding import shard_of
from kafka_placement.planning.targets import replication_factor
from kafka_placement.spark.analysis import SnapshotSlices
from kafka_placement.spark.engines import _by_shard, _shard_number, _shard_partitions, spark_session

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield spark_session("local[2]", "2g")


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
def test_the_spark_pass_finds_what_the_pure_planner_finds(spark: Any, case: str, seed: int) -> None:
    snap = racked_cluster(seed)
    intents = Intents.loads(RACKED_INTENTS[case.removesuffix("-reactive")])
    if case.endswith("-reactive"):
        intents = intents.with_reactive_cordon()
    ctx = PlanningContext.of(snap, intents)
    scope = Scope.of(snap, intents)
    analysis = SnapshotSlices.of(spark, snap, 3).analyse(scope)
    try:
        rows = analysis.repairs()
    finally:
        analysis.close()
    found, a = analysis.found, ctx.assignment
    loads = found.loads(snap)
    assert loads.broker_bytes == a.broker_bytes and loads.broker_replicas == a.broker_replicas
    assert loads.dir_bytes == a.dir_bytes and loads.dir_replicas == a.dir_replicas
    expected = pure_reasons(ctx)
    assert len(expected) > 50 and len(expected) < len(snap.partitions)  # the case selects some, not all
    if case == "everything-reactive":
        assert any("cordonedEmpty" in why for why in expected.values())
    # the rows to repair are exactly those, as the snapshot has them
    mine = {p.key: p for p in rows}
    assert len(mine) == len(rows) and mine == {k: snap.partition(*k) for k in expected}
    assert [p.key for p in rows] == [p.key for p in snap.partitions if p.key in expected]  # in its order
    assert all(expected.values())  # needs_repair selects no partition without a reason
    assert found.report(len(snap.partitions)) == {
        "partitions": len(snap.partitions),
        "partitionsToRepair": len(expected),
        "byRule": {r: sum(1 for why in expected.values() if r in why) for r in REPAIR_REASONS},
    }
    # the tasks' tallies merge to the tally of every partition without a plan, in one pass
    alone = tally_of(((p, None) for p in snap.partitions), scope)
    assert found.tally.evaluation(scope, "-") == alone.evaluation(scope, "-")


def test_a_snapshot_without_partitions_finds_nothing(spark: Any) -> None:
    snap = ClusterSnapshot.from_json({**racked_cluster(1).to_json(), "partitions": []})
    analysis = SnapshotSlices.of(spark, snap, 4).analyse(
        Scope.of(snap, Intents.loads(RACKED_INTENTS["everything"]))
    )
    try:
        assert analysis.repairs() == []
    finally:
        analysis.close()
    assert analysis.found.report(0)["partitionsToRepair"] == 0
    assert set(analysis.found.loads(snap).broker_bytes.values()) == {0}


def test_rack_spread_counts_cordoned_holders(spark: Any) -> None:
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
    analysis = SnapshotSlices.of(spark, snap, 2).analyse(Scope.of(snap, intents))
    try:
        flagged = sorted(p.partition for p in analysis.repairs())
    finally:
        analysis.close()
    assert flagged == sorted(p.partition for p in snap.partitions if needs_repair(ctx, p.key))
    assert flagged == [0, 2, 3]


def test_the_partitions_to_repair_reach_their_shard_of_task_in_the_snapshots_order(spark: Any) -> None:
    snap = racked_cluster(2)
    intents = Intents.loads(RACKED_INTENTS["everything"])
    ctx = PlanningContext.of(snap, intents)
    analysis = SnapshotSlices.of(spark, snap, 5).analyse(Scope.of(snap, intents))
    try:
        tasks = analysis.to_repair.flatMap(lambda s: _by_shard(16, s)).partitionBy(16, _shard_number).glom()
        got = [[p.key for p in _shard_partitions(pieces)] for pieces in tasks.collect()]
    finally:
        analysis.close()
    chosen = [p for p in snap.partitions if needs_repair(ctx, p.key)]
    assert len(chosen) > 50 and len(got) == 16
    assert got == [[p.key for p in chosen if shard_of(p.topic, p.partition, 16) == s] for s in range(16)]
