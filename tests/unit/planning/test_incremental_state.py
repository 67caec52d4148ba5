"""The planner's incrementally kept state equals the same state recomputed from scratch: the
assignment's loads after any mix of moves, dir changes and reorders (``Assignment.set_placement`` skips
the replicas that stay, ``make_leader`` touches only leader counts), and the leader goal's hand-over
graph after any hand-overs (it is built once and then kept, not rebuilt every round), and the broker
goal's receivers sorted by load after any moves. And the broker and dir goals spend replicas the plan
moves anyway before those a broker or dir already holds; a place (``receiver_place``) gets one verdict."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from tests.unit.builders import RACKED_INTENTS, intents, racked_cluster, snapshot

from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals import ReplicaPlacementGoal
from kafka_placement.planning.goals.broker_balance import BrokerBalanceGoal, _ByLoad
from kafka_placement.planning.goals.dir_balance import DirBalanceGoal
from kafka_placement.planning.goals.leader_balance import LeaderBalanceGoal, _Handovers
from kafka_placement.planning.optimizer import diff
from kafka_placement.planning.plan_quality import movement
from kafka_placement.planning.state import Assignment, ClusterLoads

BROKERS = {b: f"/r{b % 3}" for b in range(1, 10)}


def _context(seed: int) -> PlanningContext:
    rng = random.Random(seed)
    parts = []
    for i in range(300):
        reps = rng.sample(sorted(BROKERS), 3)
        parts.append((f"t{i % 7}", i, reps, [rng.randrange(2) for _ in reps], rng.randrange(1, 1000)))
    snap = snapshot(BROKERS, parts)
    return PlanningContext.of(snap, intents("kind: PlacementPolicy\nspec: {balance: {leaders: true}}\n"))


def _recounted(a: Assignment) -> Assignment:
    """The loads of ``a``'s placement counted from nothing."""
    fresh = Assignment(dict(a.replicas), dict(a.dirs), dict(a.size), dict(a.topic_policy))
    for b in a.broker_bytes:
        fresh.broker_bytes[b] = fresh.broker_replicas[b] = fresh.broker_leaders[b] = 0
        fresh.by_broker[b] = {}
    for dk in a.dir_bytes:
        fresh.dir_bytes[dk] = fresh.dir_replicas[dk] = 0
    for key, reps in a.replicas.items():
        for b, d in zip(reps, a.dirs[key], strict=True):
            fresh.broker_bytes[b] += a.size[key]
            fresh.broker_replicas[b] += 1
            fresh.by_broker[b][key] = d
            if d is not None:
                fresh.dir_bytes[(b, d)] += a.size[key]
                fresh.dir_replicas[(b, d)] += 1
        fresh.broker_leaders[reps[0]] += 1
    return fresh


@pytest.mark.parametrize("huge", [False, True])
def test_the_assignment_of_a_snapshot_is_its_placement_counted_replica_by_replica(huge: bool) -> None:
    """``Assignment.of`` sums its loads over arrays sorted by broker: the same loads, and each broker's
    partitions in the snapshot's order, as counting one replica after another; a replica whose dir
    is not known (null) counts on its broker only; a broker without replicas is there with nothing;
    sizes whose sums overflow 64 bits stay exact."""
    rng = random.Random(7)
    racks = {**BROKERS, 10: "/r0"}  # broker 10 holds nothing
    parts = []
    for i in range(400):
        reps = rng.sample(sorted(BROKERS), rng.randint(1, 4))
        size = rng.randrange(2**62, 2**63) if huge else rng.randrange(0, 1000)
        parts.append((f"t{i % 5}", i, reps, [rng.randrange(3) for _ in reps], size))
    snap = snapshot(racks, parts, dirs=3)
    unknown = tuple(  # every seventh partition's dirs not known (null in the snapshot)
        replace(p, log_dirs=(None,) * len(p.replicas)) if i % 7 == 0 else p
        for i, p in enumerate(snap.partitions)
    )
    snap = ClusterSnapshot(snap.brokers, unknown, snap.cluster_id)
    leaders = intents("kind: PlacementPolicy\nspec: {balance: {leaders: true}}\n")
    a = PlanningContext.of(snap, leaders).assignment
    fresh = _recounted(a)
    for field in ("broker_bytes", "broker_replicas", "broker_leaders", "dir_bytes", "dir_replicas"):
        assert getattr(a, field) == getattr(fresh, field), field
    assert {b: list(held.items()) for b, held in a.by_broker.items()} == {
        b: list(held.items()) for b, held in fresh.by_broker.items()
    }
    assert a.by_broker[10] == {} and a.broker_bytes[10] == a.broker_leaders[10] == 0
    assert max(a.broker_bytes.values()) > 2**63 if huge else max(a.broker_bytes.values()) < 2**63


def test_loads_stay_exact_through_moves_dir_changes_and_reorders() -> None:
    ctx = _context(1)
    a, rng = ctx.assignment, random.Random(2)
    keys = sorted(a.replicas)
    for _ in range(2000):
        key = rng.choice(keys)
        reps, dirs = list(a.replicas[key]), list(a.dirs[key])
        kind = rng.randrange(4)
        if kind == 0:  # one replica to another broker
            i = rng.randrange(len(reps))
            a.move(key, i, rng.choice([b for b in BROKERS if b not in reps]), f"/data/d{rng.randrange(2)}")
        elif kind == 1:  # one replica to the other dir of its broker
            i = rng.randrange(len(reps))
            a.move(key, i, reps[i], "/data/d1" if dirs[i] == "/data/d0" else "/data/d0")
        elif kind == 2:
            a.make_leader(key, rng.randrange(1, len(reps)))
        else:  # a whole new order, some replicas kept
            rng.shuffle(order := list(range(len(reps))))
            a.set_placement(key, [reps[j] for j in order], [dirs[j] for j in order])
    fresh = _recounted(a)
    assert a.broker_bytes == fresh.broker_bytes and a.broker_replicas == fresh.broker_replicas
    assert a.broker_leaders == fresh.broker_leaders and a.by_broker == fresh.by_broker
    assert a.dir_bytes == fresh.dir_bytes and a.dir_replicas == fresh.dir_replicas


def test_the_rated_indexes_stay_exact_through_moves_and_reorders() -> None:
    """``Assignment.rated_led`` and ``rated_on`` (the network goals' leaderships and partitions per
    broker, built at first use, then kept by every mutation: moves, dir changes, reorders, the sharded
    engine's ``set_placements``) equal the partitions with a rate > 0 each broker leads / holds,
    recounted."""
    ctx = _context(3)
    a, rng = ctx.assignment, random.Random(4)
    keys = sorted(a.replicas)
    a.rate = {k: float(rng.choice([0, 1, 5, 20])) for k in keys if rng.random() < 0.8}
    a.net_in, a.net_out, a.lead_in = ({b: 0.0 for b in BROKERS} for _ in range(3))  # (not checked here)
    for step in range(1500):
        if step == 300:
            a.rated_on(1)  # the indexes are built after some mutations, then kept
        key = rng.choice(keys)
        reps, dirs = list(a.replicas[key]), list(a.dirs[key])
        kind = rng.randrange(5)
        if kind == 0:
            i = rng.randrange(len(reps))
            a.move(key, i, rng.choice([b for b in BROKERS if b not in reps]), dirs[i])
        elif kind == 1:
            a.make_leader(key, rng.randrange(1, len(reps)))
        elif kind == 2:  # one replica to the other dir of its broker (it stays on the broker)
            i = rng.randrange(len(reps))
            a.move(key, i, reps[i], "/data/d1" if dirs[i] == "/data/d0" else "/data/d0")
        elif kind == 3:  # the sharded engine's merge (its loads' change is not checked here)
            i = rng.randrange(len(reps))
            reps[i] = rng.choice([b for b in BROKERS if b not in reps])
            a.set_placements([(key, reps, dirs)], ClusterLoads({}, {}, {}, {}))
        else:
            rng.shuffle(order := list(range(len(reps))))
            a.set_placement(key, [reps[j] for j in order], [dirs[j] for j in order])
    for b in BROKERS:
        led = {k for k, r in a.rate.items() if r > 0 and a.replicas[k][0] == b}
        assert a.rated_led(b) == led, b
        assert a.rated_on(b) == {k for k, r in a.rate.items() if r > 0 and b in a.replicas[k]}, b
    assert a.rated() == {k for k, r in a.rate.items() if r > 0}


def test_the_plan_is_every_partition_left_changed_though_diff_reads_only_those_set() -> None:
    ctx = _context(3)
    a, rng, snap = ctx.assignment, random.Random(4), ctx.snapshot
    keys = sorted(a.replicas)
    for key in rng.sample(keys, 120):
        reps, dirs = list(a.replicas[key]), list(a.dirs[key])
        a.move(key, 0, next(b for b in BROKERS if b not in reps), "/data/d0")
        if rng.randrange(2):  # and back again: set, but not a change
            a.set_placement(key, reps, dirs)
        elif rng.randrange(2):
            a.make_leader(key, 1)
    changed = {
        p.key
        for p in snap.partitions
        if (tuple(a.replicas[p.key]), tuple(a.dirs[p.key])) != (p.replicas, p.log_dirs)
    }
    assert 0 < len(changed) < len(a.touched) <= 120
    assert {t.key for t in diff(snap, ctx).partitions} == changed


def test_free_bytes_stay_exact_when_a_replica_stays_on_its_dir() -> None:
    snap = snapshot({1: None, 2: None, 3: None}, [("t", 0, [1, 2], [0, 0], 100)], capacity=1000)
    ctx = PlanningContext.of(snap, intents("kind: PlacementPolicy\nspec: {}\n"))
    a = ctx.assignment
    start = {(b, d): a.room(b, d) for b in (1, 2, 3) for d in ("/data/d0", "/data/d1")}
    a.set_placement(("t", 0), [2, 3], ["/data/d0", "/data/d1"])  # 2 stays on d0; 1 -> 3
    assert a.room(2, "/data/d0") == start[(2, "/data/d0")]
    assert a.room(1, "/data/d0") == start[(1, "/data/d0")] + 100
    assert a.room(3, "/data/d1") == start[(3, "/data/d1")] - 100
    a.set_placement(("t", 0), [2, 3], ["/data/d1", "/data/d1"])  # 2 changes dir only
    assert a.room(2, "/data/d0") == start[(2, "/data/d0")] + 100
    assert a.room(2, "/data/d1") == start[(2, "/data/d1")] - 100
    assert a.by_broker[2] == {("t", 0): "/data/d1"} and a.by_broker[1] == {}


def _edges(graph: _Handovers) -> dict[tuple[int, int], int]:
    u, v, held = graph.edges()
    assert held.min() > 0, "an empty edge is counted"
    return {(graph.active[i], graph.active[j]): int(h) for i, j, h in zip(u, v, held, strict=True)}


def _expected_edges(
    ctx: PlanningContext, may: dict[tuple[str, int], tuple[int, ...]]
) -> dict[tuple[int, int], int]:
    """Each (leader, follower that may lead) pair counted partition by partition."""
    found: dict[tuple[int, int], int] = {}
    for key, able in may.items():
        leader = ctx.assignment.replicas[key][0]
        for f in able:
            if f != leader:
                found[(leader, f)] = found.get((leader, f), 0) + 1
    return found


def test_hand_over_graph_stays_exact_through_hand_overs() -> None:
    ctx = _context(3)
    a, rng = ctx.assignment, random.Random(4)
    active = ctx.eligibility.active_brokers
    graph = _Handovers.of(ctx, active)
    may = graph.may_lead()
    assert len(may) == 300 and all(may[k] == tuple(a.replicas[k]) for k in may)  # all in sync
    row = {k: i for i, k in enumerate(graph.keys)}
    keys = sorted(may)
    for _ in range(1500):
        key = rng.choice(keys)
        old = a.replicas[key][0]
        new = rng.choice([b for b in may[key] if b != old])
        a.make_leader(key, a.replicas[key].index(new))
        graph.hand_over(row[key], active.index(new))
    assert _edges(graph) == _expected_edges(ctx, may) == _edges(_Handovers.of(ctx, active))
    rebuilt = _Handovers.of(ctx, active).may_lead()  # reorders keep who may lead (in another order)
    assert {k: set(v) for k, v in rebuilt.items()} == {k: set(v) for k, v in graph.may_lead().items()}
    assert a.broker_leaders == _recounted(a).broker_leaders


def test_the_goal_spreads_piled_up_leaders_to_its_limit_moving_no_data() -> None:
    # leaders piled on brokers 1-3 (the default tolerance is 5%): the goal hands over along chains
    for seed in range(5):
        ctx = _context(10 + seed)
        a = ctx.assignment
        for key in sorted(a.replicas):
            low = min(a.replicas[key])
            if low <= 3 and a.replicas[key][0] != low:
                a.make_leader(key, a.replicas[key].index(low))
        active = ctx.eligibility.active_brokers
        mean = sum(a.broker_leaders[b] for b in active) / len(active)
        assert max(a.broker_leaders[b] for b in active) > 1.5 * mean  # really piled up
        LeaderBalanceGoal().optimize(ctx)
        assert max(a.broker_leaders[b] for b in active) <= max(math.ceil(mean), math.floor(1.05 * mean))
        assert a.broker_leaders == _recounted(a).broker_leaders
        assert a.broker_bytes == _recounted(a).broker_bytes  # reorders move no data


def test_dir_balance_moves_arriving_replicas_first_they_cost_no_extra_copy() -> None:
    # broker 2 holds A0..A4 on d0 and B0..B4 on d1 (10 bytes each); the plan brings C0..C3 from 3 to its d0
    # (as a shard would, having seen other loads): d0 90, d1 50, threshold 73.5. Moving two C's to d1
    # balances it at no cost; moving two A's (sorted first by name) would copy 20 bytes within the broker.
    parts = [("A", i, [2, 1], [0, 0], 10) for i in range(5)]
    parts += [("B", i, [2, 1], [1, 1], 10) for i in range(5)]
    parts += [("C", i, [3], [0], 10) for i in range(4)]
    snap = snapshot({1: None, 2: None, 3: None}, parts)
    text = "kind: PlacementPolicy\nspec: {balance: {logDirs: true}}\n"
    ctx = PlanningContext.of(snap, intents(text))
    for i in range(4):
        ctx.assignment.set_placement(("C", i), [2], ["/data/d0"])
    DirBalanceGoal().optimize(ctx)
    a = ctx.assignment
    assert a.dir_bytes[(2, "/data/d0")] == 70 and a.dir_bytes[(2, "/data/d1")] == 70
    moved = movement(snap, diff(snap, ctx))
    assert moved["intraBrokerBytes"] == 0 and moved["networkBytes"] == 40
    assert all(a.dirs[("A", i)] == ["/data/d0", "/data/d0"] for i in range(5))


def test_broker_balance_sheds_arriving_replicas_first_they_cost_no_extra_copy() -> None:
    # brokers 1-3 hold six 10-byte replicas each, broker 3 also D0..D2; the plan brings the D's to broker
    # 1 (as a shard would): 90 / 60 / 60, threshold 73.5. Sending two D's elsewhere (one back home)
    # balances it and moves less than the plan did; shedding two A's would copy 20 more bytes.
    parts = [(t, i, [b], [0], 10) for t, b in (("A", 1), ("B", 2), ("C", 3)) for i in range(6)]
    parts += [("D", i, [3], [0], 10) for i in range(3)]
    snap = snapshot({1: None, 2: None, 3: None}, parts)
    ctx = PlanningContext.of(snap, intents("kind: PlacementPolicy\nspec: {balance: {brokers: true}}\n"))
    for i in range(3):
        ctx.assignment.set_placement(("D", i), [1], ["/data/d0"])
    BrokerBalanceGoal().optimize(ctx)
    a = ctx.assignment
    assert sorted(a.broker_bytes.values()) == [70, 70, 70]
    assert all(a.replicas[("A", i)] == [1] for i in range(6))
    assert movement(snap, diff(snap, ctx))["bytesToMove"] == 20


@pytest.mark.parametrize("uneven", [False, True])
def test_receivers_stay_sorted_by_room_through_moves(uneven: bool) -> None:
    # even limits: by load, as before; limits of brokers with disks of different sizes: by room left
    ctx = _context(7)
    a, rng = ctx.assignment, random.Random(7)
    limit = {b: (1000.0 + 300 * b if uneven else 1500.0) for b in BROKERS}
    receivers = _ByLoad([b for b in sorted(BROKERS) if b != 4], a.broker_bytes, limit)  # 4: not a receiver
    keys = sorted(a.replicas)
    for _ in range(300):
        key = rng.choice(keys)
        index = rng.randrange(3)
        dest = rng.choice([b for b in BROKERS if b not in a.replicas[key]])
        source = a.replicas[key][index]
        a.move(key, index, dest, "/data/d0")
        receivers.moved(source, dest)
        order = [b for _, b in receivers.order]
        assert order == sorted(
            (b for b in BROKERS if b != 4), key=lambda b: (a.broker_bytes[b] - limit[b], b)
        )
        if not uneven:
            assert receivers.order == sorted((a.broker_bytes[b], b) for b in BROKERS if b != 4)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", sorted(RACKED_INTENTS))
def test_every_broker_of_one_place_gets_the_same_verdict(case: str, seed: int) -> None:
    # the broker goal skips a receiver whose place (its unit in the partition's rack tree) was rejected
    # for the same move: every goal's accepts must then reject all of that place's brokers
    snap = racked_cluster(seed)
    ctx = PlanningContext.of(snap, intents(RACKED_INTENTS[case]))
    goal = ReplicaPlacementGoal()
    goal.optimize(ctx)
    ctx.done.append(goal)
    a, e = ctx.assignment, ctx.eligibility
    receivers = [b for b in e.active_brokers if e.may_receive(b)]
    answers = {True: 0, False: 0}
    for key in sorted(a.replicas)[::7]:
        reps, place = a.replicas[key], ctx.receiver_place(key)
        for index in range(len(reps)):
            verdicts: dict[object, set[bool]] = {}
            for dest in receivers:
                if dest not in reps:
                    cand = list(reps)
                    cand[index] = dest
                    verdict = ctx.accepts(key, cand)
                    verdicts.setdefault(place(dest), set()).add(verdict)
                    answers[verdict] += 1
            assert all(len(v) == 1 for v in verdicts.values()), (key, index, verdicts)
    assert answers[True] and answers[False]  # both answers were given, and given per place
