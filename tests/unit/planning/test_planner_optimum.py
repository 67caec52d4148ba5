"""The planner where a greedy loses to the optimum: overshoot, blocked single moves, tight room.

Each hand-made cluster has a known optimum (checked by the exact solver of tests/bench/optimum.py in
``test_plans_match_the_exact_optimum_on_tiny_instances``); the planner before issue 16 missed each
of the three (moved more, left balance unmet, or refused with exit 3).
"""

from __future__ import annotations

import pytest
from tests.unit.builders import intents, room_of, snapshot

from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan

BALANCE = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n  balance: {brokers: true, tolerance: 0.05}\n"
)

DECOMMISSION_4 = "kind: BrokerDecommission\nspec: {brokers: [4]}\n"
Parts = list[tuple[int, list[int], int]]  # partition of topic t, replicas, bytes
OVERSHOOT: Parts = [(0, [1], 50), (1, [1], 30), (2, [3], 20), (3, [1], 20), (4, [4], 70), (5, [3], 40)]
OVERSHOOT += [(6, [3], 50), (7, [1], 20), (8, [1], 20), (9, [4], 20), (10, [4], 10), (11, [2], 70)]
TWO_DCS: dict[int, str | None] = {1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1", 4: "/dc2/r2"}
BLOCKED: Parts = [(0, [1, 3], 40), (1, [1, 4], 40), (2, [1, 3], 40), (3, [2, 4], 30)]
BLOCKED += [(4, [2, 4], 20), (5, [2, 3], 20), (6, [2, 4], 10)]
TIGHT: Parts = [(0, [4, 3], 30), (1, [4, 3], 10), (2, [4, 1], 10), (3, [4, 2], 30), (4, [4, 1], 40)]
TIGHT += [(5, [4, 2], 30)]
CROWDED: Parts = [(0, [4, 1], 50), (1, [4, 2], 20)]
RESEAT: Parts = [(0, [4, 2, 1], 20), (1, [4, 1], 30), (2, [4, 2, 3], 20)]
CHAIN: Parts = [(0, [4, 3], 30), (1, [4, 3, 1], 20), (2, [4, 1, 2], 20), (3, [4, 1], 20)]
DCS: dict[int, str | None] = {1: "/dc2", 2: "/dc1", 3: "/dc2", 4: "/dc1", 5: "/dc2"}
REPAIRED: Parts = [(0, [1, 3], 50), (1, [2, 1], 90), (2, [1, 5], 10), (3, [1, 4], 40)]
SPREAD_AND_BALANCE = "kind: BrokerDecommission\nspec: {brokers: [5]}\n---\n" + BALANCE.replace(
    "  balance:", "  rackAwareness: {separator: /, levels: 1}\n  balance:"
).replace("0.05", "0.1")


def one_dir(
    racks: dict[int, str | None], parts: list[tuple[int, list[int], int]], room: dict[int, int]
) -> ClusterSnapshot:
    """Brokers with one dir each (``room`` bytes of room under the disk headroom limit, unlimited when
    absent) and partitions of topic t."""
    snap = snapshot(racks, [("t", n, reps, [0] * len(reps), size) for n, reps, size in parts], dirs=1)
    doc = snap.to_json()
    for b in doc["brokers"]:
        if b["id"] in room:
            b["logDirs"][0].update(room_of(room[b["id"]]))
    return ClusterSnapshot.from_json(doc)


def test_shedding_clears_the_excess_without_overshooting() -> None:
    # Broker 1 holds 50+30+20+20+20 = 140 of 420 bytes on 4 brokers: threshold 1.05 x 105 = 110.25,
    # excess 29.75. One replica of 30 clears it; the greedy shed two replicas of 20 (40 bytes).
    s = compute_plan(one_dir(dict.fromkeys(range(1, 5)), OVERSHOOT, {}), intents(BALANCE)).summary.to_json()
    assert all(g["met"] for g in s["goals"])
    assert s["bytesToMove"] == 30


def test_blocked_single_moves_are_exchanged() -> None:
    # Two DCs of two brokers, RF 2 (one replica per DC). Broker 1 holds 40+40+40 = 120, broker 2 80;
    # threshold 105. A 40 cannot go to broker 2 (120 > 105) nor to dc2 (spread); exchanging a 40 of
    # broker 1 with a 20 of broker 2 balances both (100 and 100) for 60 bytes.
    text = BALANCE.replace("  balance:", "  rackAwareness: {separator: /, levels: 2}\n  balance:")
    s = compute_plan(one_dir(TWO_DCS, BLOCKED, {}), intents(text)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert all(g["met"] for g in s["goals"]), s["goals"]
    assert s["bytesToMove"] == 60


def test_tight_room_is_packed_instead_of_refused() -> None:
    # Broker 4 leaves with 150 bytes; brokers 1-3 have 40, 80 and 80 bytes of room. Largest first on
    # the emptiest broker leaves a 30 with nowhere to go; moving a newly placed replica elsewhere
    # (it is copied anyway) makes room: every byte is placed, nothing extra moves.
    snap = one_dir(dict.fromkeys(range(1, 5)), TIGHT, {1: 40, 2: 80, 3: 80, 4: 0})
    s = compute_plan(snap, intents(DECOMMISSION_4)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 150


def test_tight_room_moves_a_kept_replica_out_of_the_way() -> None:
    # Broker 4 leaves. Partition 0 (50 bytes, also on broker 1) fits on no other broker: brokers 2
    # and 3 have 30 and 40 bytes of room. Partition 1 (20 bytes) is repaired anyway; moving its kept
    # replica off broker 2 as well (to brokers 1 and 3) leaves 50 bytes there: 50 + 20 + 20 moved,
    # the only plan. Placing only the replicas that must move (even with ejection) cannot fit it.
    snap = one_dir(dict.fromkeys(range(1, 5)), CROWDED, {1: 20, 2: 30, 3: 40, 4: 0})
    result = compute_plan(snap, intents(DECOMMISSION_4))
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 90
    assert {t.partition: sorted(t.replicas) for t in result.plan.partitions} == {0: [1, 2], 1: [1, 3]}


def test_a_kept_replica_leaves_a_full_broker_for_a_replica_that_has_nowhere_else() -> None:
    # Broker 4 leaves; broker 1 has no room. Partition 2 (RF 3) must take broker 1, the only broker
    # it is not on; partition 0 (RF 3) must stay there. Only partition 1's kept replica on broker 1
    # (30) can leave to make room: partition 1 ends on brokers 2 and 3 (60 bytes), 0 gets broker 3
    # and 2 broker 1 (20 each): 100 bytes, the only plan. The eviction searches, which keep kept
    # replicas where they are until a dir needs room, did not find it (exit 3); the repair packed
    # afresh (every replica of the repaired partitions placed again, home first) does.
    snap = one_dir(dict.fromkeys(range(1, 5)), RESEAT, {1: 0, 2: 80, 3: 50, 4: 0})
    result = compute_plan(snap, intents(DECOMMISSION_4))
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 100
    placed = {t.partition: sorted(t.replicas) for t in result.plan.partitions}
    assert placed == {0: [1, 2, 3], 1: [2, 3], 2: [1, 2, 3]}


def test_a_chain_of_two_evictions_makes_room() -> None:
    # Broker 4 leaves. Partition 2 (RF 3) must take broker 3 (room 10 < 20): partition 0's kept
    # replica (30) leaves broker 3; partition 0 then needs broker 1 (room 20 < 30, and brokers 1 and
    # 2 are its only choices besides 3): partition 3's kept replica (20) leaves broker 1 and goes to
    # brokers 2 and 3. 30 + 30 (0) + 20 (1) + 20 (2) + 20 + 20 (3) = 140 bytes, the optimum; no
    # dir ends over its room, every RF kept.
    snap = one_dir(dict.fromkeys(range(1, 5)), CHAIN, {1: 20, 2: 80, 3: 10, 4: 0})
    result = compute_plan(snap, intents(DECOMMISSION_4))
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 140
    placed = {t.partition: sorted(t.replicas) for t in result.plan.partitions}
    assert placed == {0: [1, 2], 1: [1, 2, 3], 2: [1, 2, 3], 3: [2, 3]}


def test_a_copy_balance_pays_for_again_is_taken_back() -> None:
    # Broker 5 leaves; partition 0 has both replicas in dc2, one must go to dc1 (brokers 2, 4).
    # 380 bytes on 4 brokers: threshold 1.1 x 95 = 104.5; broker 1 holds 190. The repair copies 0
    # (50) off broker 1 and 2 (10) from broker 5 to broker 3; balance then sheds 3 (40) and the
    # replica of 2 broker 1 still held (10 more) from broker 1: 110 bytes. Partition 2 copied once,
    # from broker 5 only, keeps broker 1 at 100: 100 bytes, the optimum.
    result = compute_plan(one_dir(DCS, REPAIRED, {}), intents(SPREAD_AND_BALANCE))
    s = result.summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert all(g["met"] for g in s["goals"]), s["goals"]
    assert s["bytesToMove"] == 100
    assert 1 in {t.partition: t.replicas for t in result.plan.partitions}[2]


def test_unreachable_balance_is_reported_as_such() -> None:
    # Three DCs, RF 3 (one replica per DC), dc1 has one broker: it holds every partition, a third of
    # the bytes, where the threshold is 1.05 x 1/5: no plan can meet it, and the summary says why.
    racks: dict[int, str | None] = {1: "/dc1/r1", 2: "/dc2/r1", 3: "/dc2/r2", 4: "/dc3/r1", 5: "/dc3/r2"}
    parts = [(n, [1, 2 + n % 2, 4 + n % 2], 10) for n in range(6)]
    text = BALANCE.replace("  balance:", "  rackAwareness: {separator: /, levels: 1}\n  balance:")
    s = compute_plan(one_dir(racks, parts, {}), intents(text)).summary.to_json()
    (goal,) = [g for g in s["goals"] if g["goal"] == "BrokerBalance"]
    assert not goal["met"] and "unit dc1" in goal["unreachable"]
    assert s["lowerBound"]["brokerExcess"] == 0  # no plan meets it: it bounds nothing


def test_reachable_balance_is_not_reported_unreachable() -> None:
    parts = [(n, [1], 10) for n in range(8)]
    s = compute_plan(one_dir(dict.fromkeys(range(1, 5)), parts, {}), intents(BALANCE)).summary.to_json()
    assert all(g["met"] and "unreachable" not in g for g in s["goals"])


def hand_made() -> list[tuple[ClusterSnapshot, str]]:
    """The seven clusters above, as (snapshot, intents)."""
    rack = BALANCE.replace("  balance:", "  rackAwareness: {separator: /, levels: 2}\n  balance:")
    return [
        (one_dir(dict.fromkeys(range(1, 5)), OVERSHOOT, {}), BALANCE),
        (one_dir(TWO_DCS, BLOCKED, {}), rack),
        (one_dir(dict.fromkeys(range(1, 5)), TIGHT, {1: 40, 2: 80, 3: 80, 4: 0}), DECOMMISSION_4),
        (one_dir(dict.fromkeys(range(1, 5)), CROWDED, {1: 20, 2: 30, 3: 40, 4: 0}), DECOMMISSION_4),
        (one_dir(DCS, REPAIRED, {}), SPREAD_AND_BALANCE),
        (one_dir(dict.fromkeys(range(1, 5)), RESEAT, {1: 0, 2: 80, 3: 50, 4: 0}), DECOMMISSION_4),
        (one_dir(dict.fromkeys(range(1, 5)), CHAIN, {1: 20, 2: 80, 3: 10, 4: 0}), DECOMMISSION_4),
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_plans_match_the_exact_optimum_on_tiny_instances(seed: int) -> None:
    """plan / optimum <= 1.005 where the solver proves its optimum (it does on all of these), the
    lower bound never above it, balance met whenever the solver meets it. The benchmark instances
    (tests/bench/run_optimum.py, docs/benchmarks.md) are larger; balance on a cluster this small
    is coarse (a dozen replicas per broker) and the greedy can lose a few percent there."""
    pytest.importorskip("ortools")  # the bench extra, installed by make venv
    from tests.bench.generator import cluster
    from tests.bench.optimum import solve

    from kafka_placement.model.intents import Intents

    rack = "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
    rack += "  rackAwareness: {separator: /, levels: 2}\n"
    mixed = (
        "kind: BrokerDecommission\nspec: {brokers: [1]}\n---\n"
        "kind: LogDirCordon\nspec: {broker: 2, logDirs: [/data/d0], drain: true}\n---\n"
        + BALANCE.replace("  balance:", "  rackAwareness: {separator: /, levels: 2}\n  balance:")
    )
    cases = [
        (
            cluster(brokers=6, partitions=24, topics=4, seed=seed),
            "kind: BrokerDecommission\nspec: {brokers: [6]}\n",
        ),
        (cluster(brokers=6, partitions=24, topics=4, seed=seed, dcs=2, racks_per_dc=3), rack),
        (
            cluster(brokers=7, partitions=24, topics=4, seed=seed, dcs=2, racks_per_dc=3, empty_brokers=1),
            mixed,
        ),
    ]
    if seed == 1:
        cases += hand_made()
    for snap, text in cases:
        wanted = Intents.loads(text)
        s = compute_plan(snap, wanted).summary.to_json()
        opt = solve(
            snap, wanted, time_limit=5, dirs=any(d.total_bytes for b in snap.brokers for d in b.log_dirs)
        )
        assert opt.exact and opt.bytes is not None, text
        assert s["bytesToMove"] <= 1.005 * opt.bytes, (text, s["bytesToMove"], opt.bytes)
        assert s["lowerBoundBytes"] <= opt.bytes
        if opt.balance_reachable:
            assert all(g["met"] for g in s["goals"] if g["goal"] == "BrokerBalance"), (text, s["goals"])


def test_a_broker_shed_before_others_had_room_sheds_again() -> None:
    # The generalisation benchmark's one balance miss (master seed 1696208009, scale-out #81: 47
    # partitions, 23 brokers in 2 DCs, 2 empty, tolerance 0.076): broker 4 shed while broker 18,
    # later in the order and still above the threshold, had no room for the exchange that clears
    # it (4.13 GB for 3.53 GB); once every broker has shed, a second pass finds it (the solver meets
    # the balance too).
    pytest.importorskip("ortools")  # run_generalise imports the solver's module
    from tests.bench.run_generalise import draw

    from kafka_placement.model.intents import Intents

    inst, _ = draw(1696208009, "scale-out", 81)
    s = compute_plan(inst.snapshot, Intents.loads(inst.intents)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    (goal,) = [g for g in s["goals"] if g["goal"] == "BrokerBalance"]
    assert goal["met"], goal
    assert s["balanceAfter"]["brokerBytesMaxMean"] <= 1.076


def test_the_repair_packed_afresh_sends_kept_replicas_home_first() -> None:
    # The generalisation benchmark's tight capacity #40 (master seed 3701926080: 50 partitions, 8
    # brokers in 2 DCs, RF 2, 2 dirs each, broker 8 leaves, dirs 3.4% above the smallest room with
    # which the solver finds a plan; that room is written here, so no solver runs). Both eviction
    # searches find no packing; the search that places every replica of the repaired partitions
    # afresh took the best-fit dir first, home or not, and moved kept replicas the optimum leaves
    # in place: 28.72 GB, 1.1225x the proven optimum of 25.59 GB. Trying the replica's own dir first
    # (it costs nothing) and pruning with the copies every packing still owes: 26.38 GB (1.031x).
    import random

    from tests.bench.generator import cluster

    from kafka_placement.model.intents import Intents

    seed, leaving, room = 708226873, 8, 1711063862.4305615 * 1.034
    snap = cluster(brokers=8, partitions=50, topics=2, rf=2, dcs=2, racks_per_dc=2, dirs=2, seed=seed)
    doc = snap.to_json()
    rng = random.Random(seed)
    dirs = [d for b in doc["brokers"] if b["id"] != leaving for d in b["logDirs"]]
    weights = [rng.uniform(0.5, 1.5) for _ in dirs]
    for d, w in zip(dirs, weights, strict=True):
        d.update(room_of(int(room * w), 1 << 50))
    text = f"kind: BrokerDecommission\nspec: {{brokers: [{leaving}]}}\n"
    s = compute_plan(ClusterSnapshot.from_json(doc), Intents.loads(text)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] <= 1.035 * 25_589_894_503, s["bytesToMove"]


def test_a_blocked_broker_sheds_into_room_made_by_redirecting_the_repairs_copies() -> None:
    # The generalisation benchmark's decommission + spread + balance #45 (master seed 2563827020: 78
    # partitions, 24 brokers in 2 DCs of one rack, RF 2, broker 8 leaves, tolerance 0.067). The
    # repair fills dc1's emptiest brokers first and leaves broker 3 above the threshold with two
    # replicas of 5.1 and 6.1 GB that fit on no dc1 broker; exchanges of large replicas followed
    # (71.1 GB, 1.2589x the proven optimum of 56.5 GB) and balance stayed missed (1.087). Sending the
    # 5.1 GB replica to a broker whose room comes from redirecting the copies the repair brought there
    # (still one copy each) costs its bytes alone: 56.9 GB, balance met.
    from tests.bench.generator import cluster

    from kafka_placement.model.intents import Intents

    snap = cluster(brokers=24, partitions=78, topics=8, rf=2, dcs=2, racks_per_dc=1, dirs=3, seed=358970774)
    text = (
        "kind: BrokerDecommission\nspec: {brokers: [8]}\n---\nkind: PlacementPolicy\nspec:\n"
        "  topics: {include: ['*']}\n  rackAwareness: {separator: /, levels: 2}\n"
        "  balance: {brokers: true, leaders: true, tolerance: 0.067}\n"
    )
    s = compute_plan(snap, Intents.loads(text)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    (goal,) = [g for g in s["goals"] if g["goal"] == "BrokerBalance"]
    assert goal["met"], goal
    assert s["bytesToMove"] <= 1.01 * 56_514_000_000, s["bytesToMove"]


def tight(
    brokers: int, partitions: int, dcs: int, racks: int, seed: int, room: dict[int, int]
) -> ClusterSnapshot:
    """A generated cluster (RF 2, one dir per broker, two topics) with the dirs' room ``room`` under the
    disk headroom limit."""
    from tests.bench.generator import cluster

    snap = cluster(
        brokers=brokers, partitions=partitions, topics=2, rf=2, dcs=dcs, racks_per_dc=racks, dirs=1, seed=seed
    )
    doc = snap.to_json()
    for b in doc["brokers"]:
        b["logDirs"][0].update(room_of(room[b["id"]], 1 << 50))
    return ClusterSnapshot.from_json(doc)


def test_when_no_search_packs_a_kept_replica_of_a_repaired_partition_is_moved_out_of_the_way() -> None:
    # The generalisation benchmark's tight capacity #49 (master seed 2397300333: 51 partitions, 8
    # brokers in 3 DCs, RF 2, one dir each, broker 3 leaves, 1.1% more room than the data needs; the
    # dirs' usable bytes are written here, so no solver runs). Its 12 displaced replicas fit in no
    # assignment to the 7 dirs left (an exhaustive search says so), and the bounded searches found no
    # packing either: exit 3, "infeasible", where the solver proves a plan of 30.00 GB. That plan moves
    # the kept replica of topic-001 13 on broker 2 out of the way; the exact search that tries such
    # moves cheapest first finds it, at the proven optimum.
    from kafka_placement.model.intents import Intents

    room = {1: 2606211813, 2: 2518693329, 3: 0, 4: 5706972510, 5: 3487343726, 6: 5395586707}
    snap = tight(8, 51, 3, 1, 379567900, room | {7: 3284871250, 8: 3934336534})
    s = compute_plan(
        snap, Intents.loads("kind: BrokerDecommission\nspec: {brokers: [3]}\n")
    ).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 30_000_716_788  # the solver's proven optimum


def test_the_exact_packing_is_taken_when_the_reopened_search_copies_more() -> None:
    # Tight capacity #40 of the same draw (73 partitions, 11 brokers in one DC, broker 1 leaves, 1.2%
    # more room than needed): the eviction searches found no packing and the reopened one found a
    # packing copying 42.74 GB, 1.777x the solver's proven optimum of 24.05 GB, which moves two kept
    # replicas (topic-001 9 and 23, on broker 8) out of the way: what the exact search finds.
    from kafka_placement.model.intents import Intents

    room = {1: 0, 2: 2387964660, 3: 1532230210, 4: 1934040848, 5: 1579863633, 6: 1900423585}
    room |= {7: 3537499669, 8: 1552159278, 9: 3837195013, 10: 1892767303, 11: 3625242774}
    snap = tight(11, 73, 1, 2, 1952811531, room)
    s = compute_plan(
        snap, Intents.loads("kind: BrokerDecommission\nspec: {brokers: [1]}\n")
    ).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["bytesToMove"] == 24_051_226_589  # the solver's proven optimum
