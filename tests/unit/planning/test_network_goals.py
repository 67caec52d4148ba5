"""Network goals (planning/goals/network.py) on snapshots with traffic: hot partitions spread within the
tolerance, the capacity share never exceeded, an unmeetable capacity infeasible with the broker and its
numbers, hand-overs before data moves, move budgets kept, and nothing changed without traffic."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.capacity import BrokerCapacity, Capacity, CapacitySpec
from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.loads import broker_loads
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_quality import apply_plan
from kafka_placement.planning.sharding import sharded_optimize

MB = 1_000_000


def with_rates(
    snap: ClusterSnapshot, rates: dict[tuple[str, int], float], fanout: int = 1
) -> ClusterSnapshot:
    parts = tuple(
        replace(p, bytes_in_per_sec=rates[p.key], read_fanout=fanout) if p.key in rates else p
        for p in snap.partitions
    )
    return replace(snap, partitions=parts)


def hot_cluster(seed: int = 1, brokers: int = 6, parts: int = 60) -> ClusterSnapshot:
    """RF 2 partitions spread evenly by count, but the hot ones (6x the others' rate) led by broker 1."""
    rng = random.Random(seed)
    ids = list(range(1, brokers + 1))
    layout = []
    for i in range(parts):
        a = ids[i % brokers]
        b = ids[(i + 1 + i // brokers) % brokers]
        if b == a:
            b = ids[(i + 2) % brokers]
        layout.append(("t", i, [a, b], [i % 2, (i + 1) % 2], rng.randrange(1, 10) * MB))
    snap = snapshot(dict.fromkeys(ids), layout)
    rates = {("t", i): (3 * MB if i % brokers == 0 else 0.5 * MB) for i in range(parts)}
    return with_rates(snap, rates)


def goal(summary: dict[str, object], name: str) -> dict[str, object]:
    return next(g for g in summary["goals"] if g["goal"] == name)  # type: ignore[attr-defined, index]


@pytest.mark.parametrize("resource", ["networkIn", "networkOut"])
def test_hot_partitions_on_one_broker_are_spread_within_tolerance(resource: str) -> None:
    snap = hot_cluster()
    before = broker_loads(snap)
    key = "network_in" if resource == "networkIn" else "network_out"
    loads = [getattr(x, key) for x in before.values()]
    assert max(loads) / (sum(loads) / len(loads)) > 1.5  # skewed to start with
    text = f"kind: PlacementPolicy\nspec: {{balance: {{{resource}: true, tolerance: 0.1}}}}\n"
    result = compute_plan(snap, intents(text))
    after = broker_loads(apply_plan(snap, result.plan))
    loads = [getattr(x, key) for x in after.values()]
    assert max(loads) / (sum(loads) / len(loads)) <= 1.1 + 1e-9
    s = result.summary.to_json()
    assert s["balanceAfter"][f"{resource}MaxMean"] <= 1.1
    assert goal(s, f"{resource[0].upper()}{resource[1:]}Balance")["met"] is True
    # the summary's per-broker traffic is the loads' own
    rows = {r["id"]: r for r in s["traffic"]["brokers"]}
    for b, load in after.items():
        assert rows[b]["networkIn"][1] == pytest.approx(load.network_in, abs=0.1)
        assert rows[b]["networkOut"][1] == pytest.approx(load.network_out, abs=0.1)


def test_network_out_is_balanced_by_leadership_alone_when_it_can_be() -> None:
    snap = hot_cluster()
    text = "kind: PlacementPolicy\nspec: {balance: {networkOut: true, tolerance: 0.1}}\n"
    s = compute_plan(snap, intents(text)).summary.to_json()
    assert s["bytesToMove"] == 0 and s["leaderChanges"] > 0
    assert s["balanceAfter"]["networkOutMaxMean"] <= 1.1


def test_move_budget_bounds_the_bytes_network_balance_moves() -> None:
    snap = hot_cluster()
    text = (
        "kind: PlacementPolicy\n"
        "spec: {balance: {networkIn: true, tolerance: 0.05}, moveBudget: {maxMoves: 2}}\n"
    )
    s = compute_plan(snap, intents(text)).summary.to_json()
    assert s["replicaMoves"] <= 2
    free = compute_plan(snap, intents(text.replace(", moveBudget: {maxMoves: 2}", ""))).summary.to_json()
    assert free["balanceAfter"]["networkInMaxMean"] <= s["balanceAfter"]["networkInMaxMean"]


def test_network_in_balance_moves_the_cheapest_bytes_per_rate() -> None:
    # broker 1 carries two equally hot partitions, one of 1 GB and one of 1 MB: shedding one is enough,
    # the small one moves
    parts = [("hot", 0, [1, 2], [0, 0], 1000 * MB), ("hot", 1, [1, 3], [0, 0], MB)]
    parts += [("cold", i, [2 + i % 3, 2 + (i + 1) % 3], [0, 0], MB) for i in range(6)]
    snap = snapshot({1: None, 2: None, 3: None, 4: None}, parts)
    rates = {("hot", 0): 10 * MB, ("hot", 1): 10 * MB} | {("cold", i): 2 * MB for i in range(6)}
    snap = with_rates(snap, rates)
    text = "kind: PlacementPolicy\nspec: {balance: {networkIn: true, tolerance: 0.2}}\n"
    s = compute_plan(snap, intents(text)).summary.to_json()
    assert s["bytesToMove"] == MB  # the small hot one, not the 1 GB one
    # the bound: broker 1 (20 MB/s in, threshold 1.2 x 16) must shed 0.8 MB/s; the cheapest carrier holds
    # 1 MB per 10 MB/s, so at least 80 kB leave it
    assert s["lowerBound"]["networkIn"] == 80_000 == s["lowerBoundBytes"]
    assert s["balanceAfter"]["networkInMaxMean"] <= 1.2


def capacity(net_in: int, net_out: int, share: float = 0.8) -> CapacitySpec:
    return CapacitySpec(default=Capacity(network_in=net_in, network_out=net_out), max_share=share)


def test_capacity_share_is_never_exceeded_after_the_plan() -> None:
    snap = hot_cluster(seed=3, brokers=8, parts=120)
    before = broker_loads(snap)
    peak_out = max(x.network_out for x in before.values())
    mean_out = sum(x.network_out for x in before.values()) / len(before)
    peak_in = max(x.network_in for x in before.values())
    cap = capacity(int(peak_in * 1.05), int((peak_out + mean_out) / 2 / 0.8))
    plain = intents("kind: PlacementPolicy\nspec: {balance: {brokers: true, leaders: true}}\n")
    result = compute_plan(snap, plain.with_capacity(cap))
    after = broker_loads(apply_plan(snap, result.plan))
    for load in after.values():
        assert load.network_in <= 0.8 * cap.default.network_in + 1e-6  # type: ignore[operator]
        assert load.network_out <= 0.8 * cap.default.network_out + 1e-6  # type: ignore[operator]
    t = result.summary.to_json()["traffic"]
    assert t["capacityGoal"] == "on" and t["brokersOverLimitBefore"] > 0 and t["brokersOverLimitAfter"] == 0
    assert goal(result.summary.to_json(), "NetworkCapacity") == {
        "goal": "NetworkCapacity",
        "hard": True,
        "met": True,
        "value": 0,
        "target": 0,
    }


def test_later_goals_never_take_a_broker_over_its_capacity() -> None:
    # broker balance wants broker 4 (empty) filled, but broker 4's network in capacity is tiny: only
    # partitions without traffic (or none) may go there
    parts = [("t", i, [1 + i % 3, 1 + (i + 1) % 3], [0, 0], 100) for i in range(12)]
    snap = with_rates(
        snapshot({1: None, 2: None, 3: None, 4: None}, parts), {("t", i): 1000.0 for i in range(12)}
    )
    cap = CapacitySpec(
        default=Capacity(network_in=100_000, network_out=100_000),
        brokers=(BrokerCapacity(id=4, network_in=1500),),
    )
    text = "kind: PlacementPolicy\nspec: {balance: {brokers: true, leaders: true, failureSpread: true}}\n"
    result = compute_plan(snap, intents(text).with_capacity(cap))
    after = broker_loads(apply_plan(snap, result.plan))
    assert after[4].network_in <= 0.8 * 1500
    assert after[4].network_in > 0  # it took what it could


def test_an_unmeetable_capacity_is_infeasible_naming_the_broker_and_numbers() -> None:
    # one partition of 50 MB/s with RF 3 on 4 brokers: three of them take it in, above their 48 MB/s
    # limit; the four limits together (192 MB/s) would hold its 150 MB/s
    one = snapshot({1: None, 2: None, 3: None, 4: None}, [("t", 0, [1, 2, 3], [0, 0, 0], 10)])
    snap = with_rates(one, {("t", 0): 50 * MB})
    with pytest.raises(InfeasibleError) as e:
        compute_plan(snap, Intents().with_capacity(capacity(60 * MB, 10**9)))
    assert e.value.rule == "networkCapacity"
    assert "broker 1: network in 50.0 MB/s" in e.value.message
    assert "80% of its capacity 60.0 MB/s (limit 48.0 MB/s)" in e.value.message


def test_total_network_in_above_every_limit_together_is_infeasible_up_front() -> None:
    parts = [("t", i, [1 + i % 2], [0], 10) for i in range(4)]
    snap = with_rates(snapshot({1: None, 2: None}, parts), {("t", i): 30 * MB for i in range(4)})
    with pytest.raises(InfeasibleError, match=r"120.0 MB/s .* above 80% .* \(80.0 MB/s\)"):
        compute_plan(snap, Intents().with_capacity(capacity(50 * MB, 10**9)))


def test_without_traffic_the_network_goals_change_nothing_and_say_so() -> None:
    snap = hot_cluster()
    bare = replace(
        snap, partitions=tuple(replace(p, bytes_in_per_sec=None, read_fanout=None) for p in snap.partitions)
    )
    base = "kind: PlacementPolicy\nspec: {balance: {brokers: true, leaders: true, failureSpread: true%s}}\n"
    plain = compute_plan(bare, intents(base % ""))
    asked = compute_plan(
        bare, intents(base % ", networkIn: true, networkOut: true").with_capacity(capacity(10, 10))
    )
    assert asked.plan == plain.plan
    t = asked.summary.to_json()["traffic"]
    assert (
        t["partitionsWithRate"] == 0 and t["capacityGoal"] == "off: no rate in the snapshot (bytesInPerSec)"
    )
    g = goal(asked.summary.to_json(), "NetworkInBalance")
    assert g["met"] is False and g["unreachable"] == "no rate in the snapshot (bytesInPerSec)"
    assert (
        "traffic" not in plain.summary.to_json()
    )  # no traffic, no capacity, no network goal: summary as before


def test_capacities_missing_turn_the_capacity_goal_off_and_the_summary_says_so() -> None:
    snap = hot_cluster()
    s = compute_plan(
        snap, intents("kind: PlacementPolicy\nspec: {balance: {networkIn: true}}\n")
    ).summary.to_json()
    assert s["traffic"]["capacityGoal"].startswith("off: no network capacity declared")
    assert all(g["goal"] != "NetworkCapacity" for g in s["goals"])


def test_a_partition_without_a_rate_counts_nothing_and_is_counted() -> None:
    snap = hot_cluster()
    parts = list(snap.partitions)
    parts[0] = replace(parts[0], bytes_in_per_sec=None)
    s = compute_plan(
        replace(snap, partitions=tuple(parts)),
        intents("kind: PlacementPolicy\nspec: {balance: {networkIn: true}}\n"),
    ).summary.to_json()
    assert s["traffic"]["partitionsWithoutRate"] == 1 and s["traffic"]["partitionsWithRate"] == len(parts) - 1


def test_the_assignment_keeps_network_totals_exact_through_moves_and_reorders() -> None:
    snap = hot_cluster(seed=5)
    ctx = PlanningContext.of(snap, Intents())
    a = ctx.assignment
    rng = random.Random(2)
    keys = list(a.replicas)
    for _ in range(300):
        key = rng.choice(keys)
        reps = a.replicas[key]
        if rng.random() < 0.5:
            a.make_leader(key, rng.randrange(len(reps)))
        else:
            free = [b for b in range(1, 7) if b not in reps]
            a.move(key, rng.randrange(len(reps)), rng.choice(free), "/data/d0")
    parts = tuple(
        replace(p, replicas=tuple(a.replicas[p.key]), leader=a.replicas[p.key][0]) for p in snap.partitions
    )
    truth = broker_loads(replace(snap, partitions=parts))
    for b, load in truth.items():
        assert a.net_in[b] == pytest.approx(load.network_in, abs=1e-3)
        assert a.net_out[b] == pytest.approx(load.network_out, abs=1e-3)


def test_the_sharded_pipeline_runs_the_network_goals_too() -> None:
    snap = hot_cluster(seed=3, brokers=8, parts=120)
    text = (
        "kind: BrokerDecommission\nspec: {brokers: [8]}\n---\n"
        "kind: PlacementPolicy\nspec: {balance: {networkIn: true, tolerance: 0.1}}\n"
    )
    plan = sharded_optimize(snap, intents(text), shards=3)
    after = broker_loads(apply_plan(snap, plan))
    loads = [after[b].network_in for b in range(1, 8)]
    assert after[8].network_in == 0
    assert max(loads) / (sum(loads) / len(loads)) <= 1.1 + 1e-9


def test_leader_balance_hands_no_leadership_to_a_broker_at_its_network_out_limit() -> None:
    # broker 1 leads all 12 partitions (followers 2 and 3); broker 2's network out may carry 1.5
    # partitions' worth (limit 0.8 x 2,000 B/s; each led partition sends 1,000 B/s to its follower and
    # 1 group): leader balance moves leadership to broker 3 rather than over broker 2's limit
    parts = [("t", i, [1, 2, 3], [0, 0, 0], 10) for i in range(12)]
    snap = with_rates(snapshot({1: None, 2: None, 3: None}, parts), {("t", i): 333.0 for i in range(12)})
    cap = CapacitySpec(
        default=Capacity(network_out=10**9), brokers=(BrokerCapacity(id=2, network_out=2_000),)
    )
    result = compute_plan(
        snap, intents("kind: PlacementPolicy\nspec: {balance: {leaders: true}}\n").with_capacity(cap)
    )
    after = broker_loads(apply_plan(snap, result.plan))
    assert after[2].network_out <= 0.8 * 2_000
    assert result.summary.leader_changes > 0 and result.summary.bytes_to_move == 0
    assert after[3].network_out > after[2].network_out


def test_a_small_capacity_is_shown_in_its_own_unit_not_as_zero() -> None:
    from kafka_placement.planning.loads import rate_text

    shown = [rate_text(r) for r in (50e6, 1e5, 2400.0, 99.4)]
    assert shown == ["50.0 MB/s", "0.1 MB/s", "2.4 kB/s", "99 B/s"]
