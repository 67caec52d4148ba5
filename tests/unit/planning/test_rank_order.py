"""The rack repair's shortcuts give what they replace: ``Assignment.has_room`` answers as ``best_dir``
finds a dir, and the hard goal's ``_sorter`` orders brokers as ``topology.by_rank`` does with its ranks,
checked at every allocation of real plans (with and without dir balance, with the partition's own
brokers among those ordered) and on random clusters with disk capacities that bind; ``RackTree._fill``'s
shortcuts (a unit whose children share its slots evenly, a unit with one slot) plan as serving every slot
one at a time does."""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from tests.bench.generator import cluster, scenario
from tests.unit.planning.test_planner_properties import cases

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import topology
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.optimizer import optimize
from kafka_placement.planning.topology import RackTree, by_rank

NO_DIR_BALANCE = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
    "  rackAwareness: {separator: /, levels: 2}\n"
    "  balance: {brokers: true, leaders: true, tolerance: 0.05}\n"
)


def _rooms_agree(ctx: PlanningContext) -> tuple[int, int]:
    """(questions, yes) over every broker and some sizes, each answer checked against ``best_dir``."""
    a, e = ctx.assignment, ctx.eligibility
    sizes = sorted({0, 1, *list(a.size.values())[:50], max(a.size.values(), default=0), 1 << 50})
    answers = asked = 0
    for b in e.dirs:
        for size in sizes:
            assert a.has_room(e, b, size) == (a.best_dir(e, b, size) is not None), (b, size)
            answers += a.has_room(e, b, size)
            asked += 1
    return asked, answers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_has_room_answers_as_best_dir_finds(case: tuple[ClusterSnapshot, Intents]) -> None:
    snap, intents = case
    _rooms_agree(PlanningContext.of(snap, intents))


def test_has_room_where_the_headroom_limit_binds() -> None:
    snap = cluster(brokers=9, partitions=300, seed=4, capacity_bytes=20 << 30)
    ctx = PlanningContext.of(snap, Intents.loads(scenario("all", brokers=9, partitions=300)[1]))
    asked, yes = _rooms_agree(ctx)
    assert 0 < yes < asked - len(ctx.eligibility.dirs), "some brokers have room for a size, some not"


@pytest.mark.parametrize("text", [scenario("all", brokers=24, partitions=900)[1], NO_DIR_BALANCE])
def test_the_sorter_orders_as_the_ranks_do(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    snap = scenario("all", brokers=24, partitions=900, seed=9)[0]
    real = RackTree.allocate
    checked: list[int] = []
    rng = random.Random(5)

    def allocate(
        tree: RackTree,
        rf: int,
        keep: Collection[int],
        usable: Callable[[int], bool],
        ranks: topology.Ranks,
        load: Mapping[int, int] | None = None,
        order: Callable[[Sequence[int]], list[int]] | None = None,
    ) -> list[int] | None:
        if order is None:  # (not the repair's: the lower bound's ``rack_must_move``, which ranks by id)
            return real(tree, rf, keep, usable, ranks, load, order)
        for unit, members in tree.under.items():
            mine = [b for b in members if b in tree.members]
            picked = rng.sample(mine, min(len(mine), 7)) + [b for b in keep if b in tree.members]
            for bs in (mine, sorted(set(picked))):
                assert order(bs) == by_rank(bs, ranks), (unit, bs)
        checked.append(len(keep))
        return real(tree, rf, keep, usable, ranks, load, order)

    monkeypatch.setattr(RackTree, "allocate", allocate)
    plan = optimize(snap, Intents.loads(text))
    assert len(checked) > 50 and plan.partitions


def _fill_slot_by_slot(
    tree: RackTree,
    unit: topology.Unit,
    k: int,
    caps: dict[topology.Unit, int],
    kids: dict[topology.Unit, tuple[topology.Unit, ...]],
    current: dict[topology.Unit, int],
    keep: Collection[int],
    usable: Callable[[int], bool],
    ranks: topology.Ranks,
    chosen: list[int],
    memo: dict[topology.Unit, tuple[object, ...]],
) -> bool:
    """``RackTree._fill`` without its shortcuts (as it was before them): every unit's slots served one at a
    time, every pick of a leaf by ``by_rank``."""
    if k == 0:
        return True
    if len(unit) >= tree.levels:
        depth = len(unit)
        pick = by_rank([b for b in keep if tree.path[b][:depth] == unit], ranks)[:k]
        if len(pick) < k:
            need = k - len(pick)
            window: list[int] = []
            for b in tree._ordered(unit, ranks):
                if b not in keep and usable(b):
                    window.append(b)
                    if len(window) >= need + topology.WINDOW:
                        break
            pick += by_rank(window, ranks)[:need]
        chosen.extend(pick)
        return len(pick) == k
    children = kids.get(unit, ())
    given = dict.fromkeys(children, 0)
    held = current.get
    for _ in range(k):
        keyed = [((g, g - held(c, 0)), c) for c in children if (g := given[c]) < caps.get(c, 0)]
        if not keyed:
            return False
        first = min(keyed)[0]
        tied = [c for kk, c in keyed if kk == first]
        best = tied[0] if len(tied) == 1 else tree._tie_break(tied, given, current, keep, ranks, memo)
        given[best] += 1
    for c, n in given.items():
        if n and not _fill_slot_by_slot(tree, c, n, caps, kids, current, keep, usable, ranks, chosen, memo):
            return False
    return True


@pytest.mark.parametrize(
    ("dcs", "racks", "rf", "balance"),
    [(3, 2, 3, "brokers: true, logDirs: true, leaders: true"), (3, 2, 3, "leaders: true"),
     (2, 3, 4, "brokers: true"), (1, 3, 3, "logDirs: true"), (3, 1, 5, "brokers: true, logDirs: true"),
     (2, 2, 2, "leaders: true")],
)  # fmt: skip
def test_the_rack_allocation_s_shortcuts_give_the_slot_by_slot_plan(
    dcs: int, racks: int, rf: int, balance: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit whose children share its slots evenly (RF 3 over 3 data centres, RF 4 over 2, one child)
    and a unit with one slot skip the loop that serves slots one at a time: the same plans, on clusters
    where each applies (a decommission and a rack rule of 2 levels, replication factors 2-5)."""
    snap = cluster(brokers=24, partitions=600, topics=12, dcs=dcs, racks_per_dc=racks, rf=3, seed=rf + dcs)
    intents = Intents.loads(
        "kind: BrokerDecommission\nspec: {brokers: [3]}\n---\n"
        "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        f"  replicationFactor: {rf}\n  rackAwareness: {{separator: /, levels: 2}}\n"
        f"  balance: {{{balance}, tolerance: 0.05}}\n"
    )
    fast = optimize(snap, intents)
    monkeypatch.setattr(RackTree, "_fill", _fill_slot_by_slot)
    slow = optimize(snap, intents)
    assert len(fast.partitions) > 100, "the rules change many partitions"
    assert fast.canonical() == slow.canonical()
