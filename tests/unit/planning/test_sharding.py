"""The sharded planner (the Spark engine's pure core) without Spark, and engine selection."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.errors import BadInputError, InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.sharding import (
    merge_and_balance,
    plan_shards,
    shard_of,
    sharded_optimize,
)
from kafka_placement.planning.state import Assignment, ClusterLoads
from kafka_placement.spark.engines import EngineSettings, choose

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


@pytest.mark.parametrize("name", ["all", "decommission", "drain", "rack-repair", "scale-out"])
def test_sharded_plans_meet_every_hard_rule_and_stay_close_to_local(name: str) -> None:
    snap = ClusterSnapshot.loads((GOLDEN / name / "snapshot.json").read_text())
    wanted = Intents.loads((GOLDEN / name / "intents.yaml").read_text())
    local = compute_plan(snap, wanted).summary.to_json()
    sharded = compute_plan(snap, wanted, optimizer=lambda s, i: sharded_optimize(s, i, 5)).summary.to_json()
    assert sharded["hardViolationsAfter"] == 0
    assert sharded["bytesToMove"] <= 1.05 * local["bytesToMove"]
    for mine, theirs in zip(sharded["goals"], local["goals"], strict=True):
        assert mine["goal"] == theirs["goal"]
        assert mine["met"] or not theirs["met"], mine


def test_shards_plan_on_cluster_loads_and_do_not_pile_onto_the_same_empty_brokers() -> None:
    # 300 brokers, 50 of them empty, 2-level rack repair, a decommission and a drain: shards that rank
    # on their own partitions' loads, or all break ties the same way, leave dir balance unmet here.
    from tests.bench.generator import scenario

    snap, text = scenario("all", brokers=300, partitions=20000, topics=40)
    wanted = Intents.loads(text)
    local = compute_plan(snap, wanted).summary.to_json()
    sharded = compute_plan(snap, wanted, optimizer=lambda s, i: sharded_optimize(s, i, 8)).summary.to_json()
    assert sharded["hardViolationsAfter"] == 0
    assert sharded["bytesToMove"] <= 1.05 * local["bytesToMove"]
    for mine, theirs in zip(sharded["goals"], local["goals"], strict=True):
        assert mine["met"] or not theirs["met"], mine


def test_shard_numbers_are_stable_and_spread() -> None:
    assert shard_of("orders", 7, 16) == shard_of("orders", 7, 16)
    counts = [0] * 8
    for n in range(800):
        counts[shard_of("t", n, 8)] += 1
    assert min(counts) > 60


def test_infeasible_shard_is_reported_with_partition_and_rule() -> None:
    snap = snapshot({1: None, 2: None, 3: None}, [("t", n, [1, 2, 3], [0, 0, 0], 10) for n in range(6)])
    with pytest.raises(InfeasibleError) as err:
        sharded_optimize(snap, intents("kind: BrokerDecommission\nspec: {brokers: [2]}\n"), 3)
    assert err.value.rule == "replication-factor" and err.value.partition.startswith("t-")


def test_auto_picks_spark_for_large_snapshots_and_local_refuses_them() -> None:
    snap = snapshot({1: None, 2: None}, [("t", n, [1, 2], [0, 0], 1) for n in range(10)])
    assert choose(snap, EngineSettings("auto", auto_spark_replicas=21)) == "local"
    assert choose(snap, EngineSettings("auto", auto_spark_replicas=20)) == "spark"
    with pytest.raises(BadInputError) as err:
        choose(snap, EngineSettings("local", local_max_replicas=19))
    assert "use --engine spark" in err.value.message
    with pytest.raises(BadInputError):
        choose(snap, EngineSettings("gpu"))


@pytest.mark.parametrize("name", ["all", "decommission", "drain", "rack-repair", "scale-out", "all-20000"])
def test_trusting_an_exact_selection_plans_what_the_full_reconciliation_plans(name: str) -> None:
    # needs_repair of a partition depends on it alone: with an exact selection, the partitions the shards
    # never saw need no repair and those they returned are repaired, so no reconciliation changes nothing.
    if name == "all-20000":
        from tests.bench.generator import scenario

        snap, text = scenario("all", brokers=300, partitions=20000, topics=40)
    else:
        snap = ClusterSnapshot.loads((GOLDEN / name / "snapshot.json").read_text())
        text = (GOLDEN / name / "intents.yaml").read_text()
    wanted = Intents.loads(text).enforced_only()
    for shards in (1, 5):
        only_changed = sharded_optimize(snap, wanted, shards)
        assert only_changed == sharded_optimize(snap, wanted, shards, reconcile_all=True)


def test_only_the_full_reconciliation_repairs_a_partition_the_selection_missed() -> None:
    # Why the Spark engine checks every plan (the summary's tally, spark.engines) before it trusts an
    # exact selection: a partition missing from the selection would keep its replica on broker 2.
    snap = snapshot({1: None, 2: None, 3: None, 4: None}, [("t", n, [1, 2], [0, 0], 10) for n in range(4)])
    wanted = intents("kind: BrokerDecommission\nspec: {brokers: [2]}\n")
    full = merge_and_balance(PlanningContext.of(snap, wanted), [], ClusterLoads.none(), exact_selection=False)
    assert len(full.partitions) == 4 and all(2 not in t.replicas for t in full.partitions)
    assert merge_and_balance(
        PlanningContext.of(snap, wanted), [], ClusterLoads.none(), exact_selection=True
    ).empty


def _state(a: Assignment) -> tuple[object, ...]:
    """Everything an assignment holds, with the order of each broker's partitions (goals iterate it)."""
    return (
        a.replicas,
        a.dirs,
        a.broker_bytes,
        a.broker_replicas,
        a.broker_leaders,
        a.dir_bytes,
        a.dir_replicas,
        a.free,
        {b: list(held.items()) for b, held in a.by_broker.items()},
    )


@pytest.mark.parametrize("name", ["all", "drain", "rack-repair"])
def test_the_loads_the_shards_report_changed_are_what_their_rows_change(name: str) -> None:
    # The merge applies the shards' rows without updating loads per replica: it adds what each shard
    # reported its rows change (``plan_shard``). That must leave exactly what applying every row one by
    # one leaves, by_broker's order included.
    from tests.bench.generator import scenario

    snap, text = scenario(name, brokers=24, partitions=6000, topics=40, seed=3)
    wanted = Intents.loads(text)
    results = plan_shards(PlanningContext.of(snap, wanted), 4)
    rows = [row for found, _, _ in results for row in found]
    assert rows and all(error is None for _, _, error in results)
    change = ClusterLoads.none()
    for _, part, _ in results:
        change.add(part)
    one_by_one = PlanningContext.of(snap, wanted).assignment
    for topic, number, reps, dirs in rows:
        one_by_one.set_placement((topic, number), reps, dirs)
    at_once = PlanningContext.of(snap, wanted).assignment
    at_once.set_placements((((t, n), reps, dirs) for t, n, reps, dirs in rows), change)
    assert _state(at_once) == _state(one_by_one)
    assert any(change.parts()) and _state(at_once) != _state(PlanningContext.of(snap, wanted).assignment)


def test_the_merge_charges_the_shards_moves_to_the_policy_budgets() -> None:
    # The shards' partitions that gain a replica count against their policy's moveBudget (one move and
    # its new replicas' bytes each), as the local engine's hard goal counts them: with a budget of
    # exactly those moves, the balance goals that run after the merge may not move anything more.
    parts = [("t", n, [1 + n % 3, 1 + (n + 1) % 3], [0, 0], 100 + n) for n in range(30)]
    snap = snapshot({1: None, 2: None, 3: None, 4: None, 5: None}, parts)

    def merged(budget: int) -> tuple[PlanningContext, list[tuple[str, int]], set[tuple[str, int]]]:
        text = (
            "kind: BrokerDecommission\nspec: {brokers: [2]}\n---\nkind: PlacementPolicy\n"
            f"spec: {{balance: {{brokers: true}}, moveBudget: {{maxMoves: {budget}}}}}\n"
        )
        wanted = intents(text)
        results = plan_shards(PlanningContext.of(snap, wanted), 3)
        rows = [row for found, _, _ in results for row in found]
        change = ClusterLoads.none()
        for _, part, _ in results:
            change.add(part)
        ctx = PlanningContext.of(snap, wanted)
        plan = merge_and_balance(ctx, rows, change, exact_selection=True)
        return ctx, [(t, n) for t, n, _, _ in rows], {t.key for t in plan.partitions}

    gaining = [p for p in parts if 2 in p[2]]  # each loses broker 2 and gains one other
    ctx, rows, planned = merged(len(gaining))
    [spent] = ctx.spent.values()
    assert (spent.moves, spent.bytes) == (len(gaining), sum(p[4] for p in gaining))
    assert planned == set(rows)  # the budget was spent by the shards' moves: balance moved nothing
    assert len(merged(1000)[2]) > len(planned)  # with room in the budget, balance does move more
