"""Failure spread as a soft goal (``balance.failureSpread``): on small clusters where the plan without
it leaves a broker's led partitions with the same few followers, the goal spreads them over as many
brokers as the rules allow, breaks no hard rule and keeps the other balance goals."""

from __future__ import annotations

import functools

import pytest
from tests.unit.builders import RACKED_INTENTS, intents, racked_cluster, snapshot

from kafka_placement.model.intents import RackAwareness
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.goals import FailureSpreadGoal, default_goals
from kafka_placement.planning.optimizer import compute_plan, optimize
from kafka_placement.planning.sharding import sharded_optimize
from kafka_placement.planning.spread import FollowerRoom
from kafka_placement.planning.topology import RackTree

GB = 10**9


def followers_of(snap: ClusterSnapshot, plan_json: dict, leader: int) -> set[int]:
    """The distinct followers of the partitions ``leader`` leads after the plan."""
    targets = {(t["topic"], t["partition"]): t["replicas"] for t in plan_json["partitions"]}
    out: set[int] = set()
    for p in snap.partitions:
        reps = targets.get(p.key, list(p.replicas))
        if reps[0] == leader:
            out.update(reps[1:])
    return out


def concentrated() -> ClusterSnapshot:
    """Six brokers without racks; broker 1 leads four partitions, all followed by brokers 2 and 3; the
    other brokers lead partitions of their own (sizes in GB, the largest moved last)."""
    parts = [("t", i, [1, 2, 3], [0, 0, 0], (i + 1) * GB) for i in range(4)]
    parts += [("u", i, [b, 4 + (b % 3), 2 + (b + 1) % 4], [0, 1, 1], GB) for i, b in enumerate([4, 5, 6])]
    return snapshot({b: None for b in range(1, 7)}, parts)


SPREAD = "kind: PlacementPolicy\nmetadata: {name: p}\nspec: {balance: {failureSpread: true}}\n"
OFF = "kind: PlacementPolicy\nmetadata: {name: p}\nspec: {balance: {leaders: true}}\n"


def test_the_goal_spreads_a_brokers_followers_over_every_other_broker() -> None:
    snap = concentrated()
    before = compute_plan(snap, intents(OFF))
    assert followers_of(snap, before.plan.to_json(), 1) == {2, 3}  # today's plan leaves them together
    result = compute_plan(snap, intents(SPREAD))
    plan = result.plan.to_json()
    assert followers_of(snap, plan, 1) == {2, 3, 4, 5, 6}  # the 5 other brokers, of 8 follower slots
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["failureSpread"]["brokersBelowTarget"] == 0
    assert s["lowerBound"]["failureSpread"] == 0
    assert {"goal": "FailureSpread", "hard": False, "met": True, "value": 0, "target": 0} in s["goals"]
    # three moves, of the smallest partitions (1 GB twice, 2 GB: the fewest bytes), no leader change
    assert s["replicaMoves"] == 3 and s["leaderChanges"] == 0 and s["bytesToMove"] == 4 * GB
    assert {t["partition"] for t in plan["partitions"]} == {0, 1}


def test_the_summary_says_the_goal_is_unmet_without_the_goal_and_adds_nothing_when_not_asked() -> None:
    snap = concentrated()
    asked_not_run = compute_plan(
        snap, intents(SPREAD), optimizer=lambda s, i: optimize(s, i, default_goals()[:-1])
    ).summary.to_json()
    assert asked_not_run["failureSpread"]["brokersBelowTarget"] >= 1
    assert asked_not_run["failureSpread"]["followersShort"] >= 3
    entry = next(g for g in asked_not_run["goals"] if g["goal"] == "FailureSpread")
    assert entry["met"] is False
    off = compute_plan(snap, intents(OFF)).summary.to_json()
    assert set(off["failureSpread"]) == {"min", "mean"}  # the summary without the goal is unchanged
    assert "failureSpread" not in off["lowerBound"]
    assert all(g["goal"] != "FailureSpread" for g in off["goals"])


RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
RACKED = """
kind: PlacementPolicy
metadata: {name: p}
spec: {rackAwareness: {levels: 1}, replicationFactor: 3, balance: {failureSpread: true}}
"""


def test_under_a_rack_spread_followers_go_only_where_the_spread_allows() -> None:
    parts = [("t", i, [1, 3, 5], [0, 0, 0], GB) for i in range(4)]
    snap = snapshot(RACKS, parts)
    result = compute_plan(snap, intents(RACKED))
    plan = result.plan.to_json()
    assert followers_of(snap, plan, 1) == {3, 4, 5, 6}  # never broker 2, in broker 1's rack
    assert result.summary.hard_violations_after == 0
    for t in plan["partitions"]:
        assert len({RACKS[b] for b in t["replicas"]}) == 3


def test_cordoned_and_decommissioned_brokers_get_no_follower_and_the_target_says_so() -> None:
    parts = [("t", i, [1, 2, 3], [0, 0, 0], GB) for i in range(4)] + [("u", 0, [4, 5, 6], [0, 0, 0], GB)]
    snap = snapshot({b: None for b in range(1, 8)}, parts)
    text = SPREAD + "---\nkind: LogDirCordon\nspec: {broker: 6, logDirs: ['*']}\n"
    text += "---\nkind: BrokerDecommission\nspec: {brokers: [7]}\n"
    result = compute_plan(snap, intents(text))
    followers = followers_of(snap, result.plan.to_json(), 1)
    assert followers == {2, 3, 4, 5}  # 6 is cordoned and 7 leaves: neither receives
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0 and s["failureSpread"]["brokersBelowTarget"] == 0


def test_broker_balance_stays_met_and_limits_the_spread() -> None:
    # brokers 4-6 hold much more than 1-3: a follower of broker 1's small partitions may go to one of
    # them only while it stays under the broker threshold
    parts = [("t", i, [1, 2, 3], [0, 0, 0], GB) for i in range(4)]
    parts += [("big", i, [b], [0], 3 * GB) for i, b in enumerate([4, 5, 6])]
    snap = snapshot({b: None for b in range(1, 7)}, parts)
    text = SPREAD.replace("{failureSpread: true}", "{brokers: true, failureSpread: true, tolerance: 0.1}")
    s = compute_plan(snap, intents(text)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    bb = next(g for g in s["goals"] if g["goal"] == "BrokerBalance")
    plain = compute_plan(snap, intents(text.replace(", failureSpread: true", ""))).summary.to_json()
    assert bb["value"] <= max(bb["target"], plain["balanceAfter"]["brokerBytesMaxMean"]) + 1e-9


def test_the_move_budget_binds_the_goal() -> None:
    snap = concentrated()
    text = SPREAD.replace("{balance:", "{moveBudget: {maxMoves: 1}, balance:")
    s = compute_plan(snap, intents(text)).summary.to_json()
    assert s["replicaMoves"] == 1
    assert s["failureSpread"]["brokersBelowTarget"] == 1


def test_follower_room_counts_the_brokers_a_rack_spread_allows() -> None:
    racks = {1: "/dc1/r1", 2: "/dc1/r1", 3: "/dc1/r2", 4: "/dc2/r1", 5: "/dc2/r2", 6: "/dc3/r1"}
    tree = RackTree.of(racks, RackAwareness(separator="/", levels=2), racks)
    room = FollowerRoom(tree, racks)
    assert room.allowed(1, 3) == 3  # one replica per DC: the other DCs' brokers
    assert room.allowed(1, 4) == 4  # a DC holds 2, over its 2 racks: not broker 2 of the same rack
    assert room.allowed(1, 7) == 5  # a rack holds 2
    assert FollowerRoom(None, racks).allowed(1, 2) == 5
    assert FailureSpreadGoal().verdict(intents(OFF), {}) is None


def test_the_sharded_pipeline_runs_the_goal_on_the_merged_plan() -> None:
    """The Spark engine balances on the driver with ``merge_and_balance``: the goal runs there too."""
    snap = concentrated()
    decommission = "---\nkind: BrokerDecommission\nspec: {brokers: [6]}\n"
    for shards in (1, 3):
        run = functools.partial(sharded_optimize, shards=shards)
        off = compute_plan(snap, intents(OFF + decommission), optimizer=run)
        assert followers_of(snap, off.plan.to_json(), 1) == {2, 3}
        on = compute_plan(snap, intents(SPREAD + decommission), optimizer=run)
        assert followers_of(snap, on.plan.to_json(), 1) == {2, 3, 4, 5}  # 6 leaves
        s = on.summary.to_json()
        assert s["hardViolationsAfter"] == 0 and s["failureSpread"]["brokersBelowTarget"] == 0


@pytest.mark.parametrize("seed", [1, 2])
def test_on_random_racked_clusters_the_goal_breaks_no_rule_and_keeps_the_other_goals(seed: int) -> None:
    """Every kind of intent at once on 18 brokers in 1-3-level racks, RF 1-5: with the goal the plan
    breaks no hard rule, every balance goal met without it stays met, and fewer brokers (or as few) are
    below their spread target."""
    snap = racked_cluster(seed)
    text = RACKED_INTENTS["everything"].replace(
        "rackAwareness: {separator: /, levels: 2}}",
        "rackAwareness: {separator: /, levels: 2}, balance: {brokers: true, logDirs: true, leaders: true}}",
    )
    assert "balance:" in text
    on_text = text.replace("leaders: true}", "leaders: true, failureSpread: true}")
    without = compute_plan(
        snap, intents(on_text), optimizer=lambda s, i: optimize(s, i, default_goals()[:-1])
    ).summary.to_json()
    with_goal = compute_plan(snap, intents(on_text)).summary.to_json()
    assert with_goal["hardViolationsAfter"] == 0
    before = {g["goal"]: g for g in without["goals"]}
    for g in with_goal["goals"]:
        if g["goal"] != "FailureSpread" and before[g["goal"]]["met"]:
            assert g["met"], g
    spread, base = with_goal["failureSpread"], without["failureSpread"]
    assert spread["brokersBelowTarget"] <= base["brokersBelowTarget"]
    assert spread["followersShort"] < base["followersShort"] or base["followersShort"] == 0
