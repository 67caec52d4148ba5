"""The new-partition lane's pure parts (reconcile/new_partitions.py): what a look finds new, and what the lane
decides for the new partitions it read (plan, approval, pause, what it leaves to the full re-plan)."""

from __future__ import annotations

from typing import Any

from tests.unit.builders import intents, snapshot

from kafka_placement.model.intents import parse_resource
from kafka_placement.planning.state import SMALL_REPLICA_BYTES
from kafka_placement.reconcile import new_partitions as lane

RACKS: dict[int, str | None] = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}
POLICY = (
    "kind: PlacementPolicy\nmetadata: {name: spread}\n"
    "spec: {topics: {include: ['t*']}, rackAwareness: {levels: 2}}\n"
)


def resource(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "kafka", "uid": f"u-{name}"}
    return {"kind": kind, "metadata": meta, "spec": {"clusterRef": {"name": "c"}, **spec}}


def policy(**operator: Any) -> dict[str, Any]:
    spec = {"topics": {"include": ["t*"]}, "rackAwareness": {"levels": 2}, **operator}
    return resource("PlacementPolicy", "spread", spec)


def valid(*bodies: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    return [(b, parse_resource(b)) for b in bodies]


def test_a_look_finds_new_topics_and_grown_ones_and_forgets_deleted_ones() -> None:
    w = lane.Watch()
    w.look({"a": 2})
    assert w.pending == set()  # the first look is the baseline
    w.look({"a": 3, "b": 2})
    assert w.pending == {("a", 2), ("b", 0), ("b", 1)}
    w.look({"a": 3})  # b deleted before the lane placed it
    assert w.pending == {("a", 2)}
    snap = snapshot(
        RACKS, [("a", 0, [1, 3], [0, 0], 0), ("a", 1, [2, 4], [0, 0], 0), ("a", 2, [1, 2], [0, 0], 0)]
    )
    w.saw_snapshot(snap)  # the full re-plan covers what a full read saw
    assert w.pending == set() and w.known == {"a": 3}
    assert lane.new_keys({"a": 5}, {"a": 3}) == [("a", 3), ("a", 4)]


def test_looks_are_paced_by_their_own_cost() -> None:
    """A look of milliseconds leaves the next due at once (every reconcile); one of 2 s (a million
    partitions' Metadata) leaves the next due LOOK_PACE x 2 s after it started."""
    w = lane.Watch()
    assert w.due(0.0)
    w.paced(100.0, 100.004)
    assert w.due(100.05)  # the next reconcile, a second later or less
    w.paced(200.0, 202.0)
    assert not w.due(202.5) and not w.due(200.0 + lane.LOOK_PACE * 2.0 - 0.1)
    assert w.due(200.0 + lane.LOOK_PACE * 2.0)
    w.paced(300.0, 299.0)  # a clock that went back: no pause
    assert w.due(300.0)


def test_new_partitions_in_one_dc_are_spread_by_the_hard_goal_alone() -> None:
    snap = snapshot(RACKS, [("t1", 0, [1, 2], [0, 0], 10), ("t1", 1, [3, 1], [0, 0], 10)])
    out = lane.decide_lane(snap, valid(policy()), intents(POLICY), frozenset(), None)
    assert out.start is not None and out.status is not None
    (target,) = out.start.partitions  # t1-1 already spans both DCs: not moved (no balance move)
    assert target.name == "t1-0" and {RACKS[b][:4] for b in target.replicas} == {"/dc1", "/dc2"}
    assert out.status.phase == lane.EXECUTING and out.status.plan_id == out.start.plan_id
    assert out.participants == ("u-spread",)
    assert [e[2] for e in out.events] == ["NewPartitionsPlaced"]


def test_a_manual_policy_holds_the_lane_plan_until_its_id_is_approved() -> None:
    snap = snapshot(RACKS, [("t1", 0, [1, 2], [0, 0], 10)])
    out = lane.decide_lane(snap, valid(policy(approval="Manual")), intents(POLICY), frozenset(), None)
    assert out.start is None and out.status is not None
    assert out.status.phase == lane.AWAITING_APPROVAL
    plan_id = out.status.plan_id
    assert f"set spec.approvedPlan: {plan_id} on PlacementPolicy/spread" in out.status.message
    again = lane.decide_lane(snap, valid(policy(approval="Manual")), intents(POLICY), frozenset(), out.status)
    assert again.events == ()  # told once, not every reconcile
    approved = policy(approval="Manual", approvedPlan=plan_id)
    go = lane.decide_lane(snap, valid(approved), intents(POLICY), frozenset(), out.status)
    assert go.start is not None and go.start.plan_id == plan_id
    paused = lane.decide_lane(snap, valid(policy(paused=True)), intents(POLICY), frozenset(), None)
    assert paused.start is None and paused.status is not None and paused.status.phase == lane.PAUSED


def test_the_lane_leaves_the_running_plan_and_large_partitions_to_the_full_replan() -> None:
    parts = [("t1", 0, [1, 2], [0, 0], 10), ("t1", 1, [1, 2], [0, 0], SMALL_REPLICA_BYTES + 1)]
    snap = snapshot(RACKS, parts)
    out = lane.decide_lane(snap, valid(policy()), intents(POLICY), frozenset({("t1", 0)}), None)
    assert out.start is None and out.status is not None and out.status.phase == lane.WATCHING


def test_a_rule_no_placement_meets_is_blocked_with_a_warning_and_no_plan() -> None:
    text = (
        "kind: PlacementPolicy\nmetadata: {name: rf5}\nspec: {topics: {include: [t1]}, replicationFactor: 5}"
    )
    body = resource("PlacementPolicy", "rf5", {"topics": {"include": ["t1"]}, "replicationFactor": 5})
    snap = snapshot(RACKS, [("t1", 0, [1, 2], [0, 0], 10)])
    out = lane.decide_lane(snap, valid(body), intents(text), frozenset(), None)
    assert out.start is None and out.status is not None and out.status.phase == lane.BLOCKED
    assert "t1-0" in out.status.message
    assert [(e[1], e[2]) for e in out.events] == [("Warning", "NewPartitionsBlocked")]


def test_only_enforced_valid_intents_make_the_lane_look() -> None:
    advise = resource("PlacementPolicy", "a", {"mode": "Advise"})
    broken = resource("BrokerDecommission", "b", {"brokers": "x"})
    assert not lane.enforced([advise, broken])
    assert lane.enforced([advise, resource("BrokerDecommission", "d", {"brokers": [1]})])


def test_below_kip_1066_a_new_partition_with_data_leaves_a_cordoned_dir() -> None:
    """A cluster that cannot cordon dirs itself: the lane moves a new replica that already took writes
    (up to LANE_MAX_BYTES) off the cordoned dir; the whole cluster's plan would only move an empty one."""
    cordon = resource("LogDirCordon", "c1", {"broker": 1, "logDirs": ["/data/d0"]})
    text = "kind: LogDirCordon\nmetadata: {name: c1}\nspec: {broker: 1, logDirs: [/data/d0]}\n"
    snap = snapshot(RACKS, [("n", 0, [1, 3], [0, 0], 5_000_000)])
    legacy = intents(text).with_reactive_cordon(True, lane.LANE_MAX_BYTES)
    out = lane.decide_lane(snap, valid(cordon), legacy, frozenset(), None)
    assert out.start is not None and out.participants == ("u-c1",)
    (target,) = out.start.partitions
    assert target.replicas == (1, 3) and target.log_dirs[0] == "/data/d1"
    whole = intents(text).with_reactive_cordon(True)  # the full re-plan's rule: empty replicas only
    assert lane.decide_lane(snap, valid(cordon), whole, frozenset(), None).start is None
