"""The exact program on small clusters (planning/exact.py): where the greedy steps lose bytes or find no
packing, the plan is the optimum; a solution breaking a rule is never taken; the same input gives the
same plan; large clusters never build the program."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from tests.unit.builders import intents
from tests.unit.planning.test_planner_optimum import DECOMMISSION_4, one_dir

from kafka_placement.model.effort import BALANCED_GAP, EFFORTS
from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot, PartitionState
from kafka_placement.planning import exact
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals import replica_placement
from kafka_placement.planning.optimizer import compute_plan

SPREAD_BALANCE = (
    "kind: BrokerDecommission\nspec: {brokers: [1, 4]}\n---\n"
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
    "  rackAwareness: {separator: /, levels: 2}\n  balance: {brokers: true, tolerance: 0.054}\n"
)


def decommission_with_balance() -> tuple[ClusterSnapshot, Intents]:
    """117 partitions, RF 2, 8 brokers in 3 data centres of 3 racks, brokers 1 and 4 leave, 2-level
    spread and broker balance at 0.054 (tests/bench/generator.py; the generalisation benchmark's shape
    where the greedy steps copied 0.4% more than the optimum)."""
    from tests.bench.generator import cluster

    snap = cluster(brokers=8, partitions=117, topics=4, rf=2, dcs=3, racks_per_dc=3, dirs=1, seed=953085035)
    return snap, Intents.loads(SPREAD_BALANCE)


def greedy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact, "MAX_PARTITIONS", -1)


def test_the_plan_is_the_optimum_where_the_greedy_steps_copy_more(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ortools")  # the bench extra, installed by make venv
    from tests.bench.optimum import solve

    snap, wanted = decommission_with_balance()
    s = compute_plan(snap, wanted.with_effort("Exhaustive")).summary.to_json()
    opt = solve(snap, wanted, time_limit=10)
    assert opt.exact and opt.balance_reachable and opt.bytes is not None
    assert abs(s["bytesToMove"] - opt.bytes) <= 1  # (the solver's objective is a float)
    assert s["hardViolationsAfter"] == 0
    assert all(g["met"] for g in s["goals"]), s["goals"]
    # the default effort stops within 0.5% of the optimum: here it keeps the greedy plan, 0.37% above
    balanced = compute_plan(snap, wanted).summary.to_json()
    assert opt.bytes < balanced["bytesToMove"] <= opt.bytes * (1 + BALANCED_GAP)
    assert balanced["hardViolationsAfter"] == 0 and all(g["met"] for g in balanced["goals"])
    greedy_only(monkeypatch)
    assert compute_plan(snap, wanted).summary.bytes_to_move > opt.bytes + 10**8  # what it improves on


def test_each_effort_bounds_the_exact_program() -> None:
    """Fast plans with the greedy goals alone; Balanced within 0.5% of Exhaustive's plan (HiGHS stops
    once its best is proven that close, and a program that cannot win 0.5% is pruned at its root);
    every effort keeps every rule. 4 brokers, 24 partitions, RF 3, two rack levels, broker balance."""
    from tests.bench.generator import cluster

    snap = cluster(brokers=4, partitions=24, topics=4, rf=3, dcs=2, racks_per_dc=2, seed=3, dirs=2)
    wanted = Intents.loads(
        "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        "  rackAwareness: {separator: /, levels: 2}\n  balance: {brokers: true}\n"
    )
    moved = {}
    for effort in EFFORTS:
        s = compute_plan(snap, wanted.with_effort(effort)).summary.to_json()
        assert s["hardViolationsAfter"] == 0, effort
        moved[effort] = s["bytesToMove"]
    assert moved["Exhaustive"] <= moved["Balanced"] <= moved["Exhaustive"] * (1 + BALANCED_GAP)
    assert moved["Fast"] > moved["Balanced"] * 1.2  # (the greedy goals alone: 27% more here)


def test_the_same_input_gives_the_same_plan() -> None:
    snap, wanted = decommission_with_balance()
    assert compute_plan(snap, wanted).plan.plan_id == compute_plan(snap, wanted).plan.plan_id


def test_full_dirs_the_searches_cannot_pack_are_packed_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Broker 4 leaves; partition 0 (50 bytes, also on broker 1) fits on no other broker as things are:
    # brokers 2 and 3 have 30 and 40 bytes of room. The only plan moves partition 1's kept replica off
    # broker 2 too (90 bytes). With the hard goal's own searches switched off, the program finds it.
    snap = one_dir(
        dict.fromkeys(range(1, 5)), [(0, [4, 1], 50), (1, [4, 2], 20)], {1: 20, 2: 30, 3: 40, 4: 0}
    )
    monkeypatch.setattr(replica_placement, "repack", lambda *a, **k: False)
    monkeypatch.setattr(
        replica_placement.ReplicaPlacementGoal,
        "_pack",
        lambda self, ctx, full: [InfeasibleError("no room", "dir-capacity", "t-0")],
    )
    result = compute_plan(snap, intents(DECOMMISSION_4))
    assert result.summary.bytes_to_move == 90 and result.summary.hard_violations_after == 0
    assert {t.partition: sorted(t.replicas) for t in result.plan.partitions} == {0: [1, 2], 1: [1, 3]}
    greedy_only(monkeypatch)
    with pytest.raises(InfeasibleError):
        compute_plan(snap, intents(DECOMMISSION_4))


def test_a_solution_that_breaks_a_rule_is_never_taken() -> None:
    snap = one_dir(
        dict.fromkeys(range(1, 5)), [(0, [4, 1], 50), (1, [4, 2], 20)], {1: 20, 2: 30, 3: 40, 4: 0}
    )
    ctx = PlanningContext.of(snap, intents(DECOMMISSION_4))
    a = ctx.assignment
    before = {k: (list(v), list(a.dirs[k])) for k, v in a.replicas.items()}
    too_full = {("t", 0): ([2, 1], ["/data/d0", "/data/d0"])}  # 50 bytes into broker 2's 30 of room
    assert not exact.apply(ctx, too_full, None)
    on_leaving = {("t", 1): ([4, 3], ["/data/d0", "/data/d0"])}  # keeps the decommissioned broker
    assert not exact.apply(ctx, on_leaving, None)
    assert {k: (list(v), list(a.dirs[k])) for k, v in a.replicas.items()} == before
    assert a.room(2, "/data/d0") == 30
    best = {("t", 0): ([1, 2], ["/data/d0", "/data/d0"]), ("t", 1): ([1, 3], ["/data/d0", "/data/d0"])}
    limit = dict.fromkeys(ctx.eligibility.active_brokers, 60)
    assert not exact.apply(ctx, best, limit)  # broker 1 would hold 70 bytes, above a limit of 60
    assert exact.apply(ctx, best, None)
    assert a.room(2, "/data/d0") == 0 and a.replicas[("t", 1)] == [1, 3]


def test_a_cluster_above_the_bound_never_builds_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, wanted = decommission_with_balance()
    monkeypatch.setattr(exact, "MAX_PARTITIONS", len(snap.partitions) - 1)
    monkeypatch.setattr(exact, "run_program", lambda m: pytest.fail("the program was built"))
    compute_plan(snap, wanted)


DIR_BALANCE = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n  balance: {logDirs: true, tolerance: 0.05}\n"
)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_dirs_copy_no_more_than_the_dir_goal_and_balance_as_many_brokers(seed: int) -> None:
    """Dirs placed exactly per broker (planning/exact_dirs.py) against the dir balance goal's greedy
    shedding, both on the snapshot's replicas (every broker's dirs out of balance): fewer bytes (3.5-9%
    fewer on these three), every broker the goal balances balanced, the brokers untouched, every rule
    kept."""
    from tests.bench.generator import cluster

    from kafka_placement.planning import exact_dirs
    from kafka_placement.planning.goals.dir_balance import DirBalanceGoal

    snap = cluster(brokers=6, partitions=90, topics=6, rf=2, dcs=1, racks_per_dc=1, dirs=3, seed=seed)
    ctx = PlanningContext.of(snap, intents(DIR_BALANCE))
    keys = [p.key for p in snap.partitions]
    start = {k: (list(ctx.assignment.replicas[k]), list(ctx.assignment.dirs[k])) for k in keys}
    brokers = list(ctx.eligibility.active_brokers)
    DirBalanceGoal().optimize(ctx)
    greedy = exact.copied(ctx, keys)
    balanced = {b for b in brokers if exact.dirs_met(ctx, b, 0.05)}
    for k, (replicas, dirs) in start.items():
        ctx.assignment.set_placement(k, replicas, dirs)
    assert exact_dirs.place(ctx, 0.05, brokers) == []  # every broker placed
    DirBalanceGoal().optimize(ctx)
    assert {b for b in brokers if exact.dirs_met(ctx, b, 0.05)} >= balanced
    assert exact.copied(ctx, keys) < greedy
    assert [ctx.assignment.replicas[k] for k in keys] == [start[k][0] for k in keys]  # dirs alone changed
    assert exact.check(ctx, keys, None)


def test_dir_balance_plans_with_exact_dirs_where_the_greedy_goal_copies_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The golden scale-out (broker, dir and leader balance at 0.05): the plan with exact dirs copies
    0.7% less than the greedy goals' (64.41 -> 63.96 GB, the lower bound 63.91), every goal met."""
    from pathlib import Path

    golden = Path(__file__).resolve().parents[2] / "testdata" / "golden" / "scale-out"
    snap = ClusterSnapshot.loads((golden / "snapshot.json").read_text())
    wanted = Intents.loads((golden / "intents.yaml").read_text())
    s = compute_plan(snap, wanted).summary.to_json()
    assert s["hardViolationsAfter"] == 0 and all(g["met"] for g in s["goals"]), s["goals"]
    greedy_only(monkeypatch)
    g = compute_plan(snap, wanted).summary.to_json()
    assert all(x["met"] for x in g["goals"])
    assert s["lowerBoundBytes"] <= s["bytesToMove"] < g["bytesToMove"] / (1 + BALANCED_GAP)


def _never(*args: object, **kwargs: object) -> None:
    pytest.fail("the exact program was built")


@pytest.mark.parametrize(
    ("name", "brokers", "partitions", "unreachable"),
    [("decommission", 8, 200, False), ("all", 12, 400, True)],
)
def test_a_program_that_cannot_win_is_never_built(
    monkeypatch: pytest.MonkeyPatch, name: str, brokers: int, partitions: int, unreachable: bool
) -> None:
    """The greedy plan at the lower bound (a decommission), or broker balance proven out of reach (the
    rack spread puts more in a data centre than its brokers' limits: the program, run to meet balance,
    has no solution): the summary's own proofs say the program cannot win, and it is not built (it
    took HiGHS 2-28 s to prove so on such clusters of 100-400 partitions)."""
    from tests.bench.generator import scenario

    snap, text = scenario(name, brokers=brokers, partitions=partitions, topics=6, seed=1)
    monkeypatch.setattr(exact, "solve", _never)
    s = compute_plan(snap, Intents.loads(text)).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert bool(s.get("brokerBalanceUnreachable")) is unreachable
    if not unreachable:
        assert s["bytesToMove"] == s["lowerBoundBytes"]


def test_no_placement_proven_by_the_program_is_refused_without_the_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Volumes 70% full on 6 brokers, a decommission, a drain and a two-level spread: no placement keeps
    the disk headroom limit. The exact program proves it at once; the repacking and ejection searches
    (which ran to their work limits first, 10-20 s) are not run, and the refusal names the limit."""
    from tests.bench.generator import scenario, sized_volumes

    snap, text = scenario("all", brokers=6, partitions=100, topics=6, seed=1)
    snap, _ = sized_volumes(snap, 0.7)
    monkeypatch.setattr(replica_placement, "repack", lambda *a, **k: pytest.fail("repack ran"))
    monkeypatch.setattr(
        replica_placement.ReplicaPlacementGoal, "_pack", lambda *a, **k: pytest.fail("_pack ran")
    )
    with pytest.raises(InfeasibleError, match=r"maxDiskShare 0\.85") as refused:
        compute_plan(snap, Intents.loads(text))
    assert refused.value.rule == "dir-capacity"


def test_a_cheaper_plan_is_sought_without_new_replicas_on_brokers_above_their_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A scale-out (8 brokers, 2 new; broker and dir balance, volumes sized so the disk headroom binds): the
    greedy plan meets balance and the program (the joint one: dir balance is asked) seeks a cheaper one,
    narrowed (``exact.narrow``): the partitions it places for balance alone (here every partition: no hard
    rule asks any to change) get no new replica on a broker holding more than its limit before the plan
    (such a broker must shed bytes); there are such brokers, the program finds a plan, and it keeps every
    rule."""
    from tests.unit.planning.test_headroom import sized_draw

    snap, wanted = sized_draw("scale-out", 1147, 1.507, 0.6)
    held: dict[int, int] = {}
    for p in snap.partitions:
        for b in p.replicas:
            held[b] = held.get(b, 0) + p.size_bytes
    asked: list[tuple[bool, set[int], list[set[int]]]] = []  # (narrowed, brokers over, replicas added)
    real = exact.solve

    def seen(
        ctx: PlanningContext,
        parts: Sequence[PartitionState],
        limit: Mapping[int, int] | None,
        below: int | None = None,
        dirs: bool = False,
        root_only: bool = False,
        dir_rows: exact.DirRows | None = None,
    ) -> exact.Solved:
        found = real(ctx, parts, limit, below, dirs, root_only, dir_rows)
        if limit is not None and found.found is not None:
            over = {b for b, most in limit.items() if held.get(b, 0) > most}
            added = [set(found.found[p.key][0]) - set(p.replicas) for p in parts]
            asked.append((exact.narrow(ctx, limit, below), over, added))
        return found

    monkeypatch.setattr(exact, "solve", seen)
    s = compute_plan(snap, wanted).summary.to_json()
    assert s["hardViolationsAfter"] == 0 and all(g["met"] for g in s["goals"]), s["goals"]
    narrowed = [(over, new) for n, over, new in asked if n]
    assert narrowed, "the program never sought a cheaper plan here"
    for over, added in narrowed:
        assert over, "no broker above its limit: nothing to narrow"
        assert all(new.isdisjoint(over) for new in added)
    # the program itself: fewer binaries than Exhaustive's for the same question
    binaries = _binaries(monkeypatch, snap, wanted)
    assert binaries["Balanced"] < binaries["Exhaustive"], binaries


def test_partitions_under_a_rack_rule_are_never_narrowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a rack rule a broker above its limit may be the only one of a unit the spread must use: the
    program seeking a cheaper plan keeps every option there (as many binaries as Exhaustive's)."""
    from tests.bench.generator import cluster

    # 4 brokers in 2 data centres x 2 racks, every topic spread over two rack levels, broker balance: the
    # greedy plan meets balance, a cheaper one is sought, and brokers above their limit exist
    snap = cluster(brokers=4, partitions=24, topics=4, rf=3, dcs=2, racks_per_dc=2, seed=3, dirs=2)
    wanted = Intents.loads(
        "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        "  rackAwareness: {separator: /, levels: 2}\n  balance: {brokers: true}\n"
    )
    binaries = _binaries(monkeypatch, snap, wanted)
    assert binaries["Balanced"] == binaries["Exhaustive"] > 0, binaries


def _binaries(monkeypatch: pytest.MonkeyPatch, snap: ClusterSnapshot, wanted: Intents) -> dict[str, int]:
    """The most binaries of a program built while planning under Balanced and under Exhaustive (HiGHS not
    run: the greedy plan stands)."""
    binaries: dict[str, int] = {}
    for effort in ("Balanced", "Exhaustive"):

        def counted(
            m: exact.Program,
            gap: float | None = None,
            root_only: bool = False,
            nodes: int = exact.MAX_NODES,
            solutions: int | None = None,
        ) -> exact.Answer:
            binaries[effort] = max(binaries.get(effort, 0), len(m.cost))  # noqa: B023 (read at once)
            return exact.Answer(None)

        monkeypatch.setattr(exact, "run_program", counted)
        compute_plan(snap, wanted.with_effort(effort))
    return binaries


def test_the_program_is_narrowed_only_where_a_cheaper_plan_is_sought() -> None:
    """``exact.narrow``: with a balance limit and a bar (a cheaper plan asked for) under Balanced only;
    never without the bar (a placement or a balance asked for at all, or a proof of none) or under
    Exhaustive."""
    snap, wanted = decommission_with_balance()
    limit = {b.id: 1 for b in snap.brokers}
    balanced = PlanningContext.of(snap, wanted)
    exhaustive = PlanningContext.of(snap, wanted.with_effort("Exhaustive"))
    assert exact.narrow(balanced, limit, below=10**12)
    assert not exact.narrow(balanced, limit, below=None)
    assert not exact.narrow(balanced, None, below=10**12)
    assert not exact.narrow(exhaustive, limit, below=10**12)
    assert exact.over_limit(balanced, limit) == frozenset(
        b for p in snap.partitions for b in p.replicas
    )  # (every broker holding anything holds more than one byte)


@pytest.mark.parametrize(("cutoff", "found"), [(None, 3e10), (4e10 - 1, 3e10), (3e10 - 1, None)])
def test_the_cutoff_reaches_highs_on_the_objectives_scale(cutoff: float | None, found: float | None) -> None:
    """``Program.cutoff`` is HiGHS's ``objective_bound`` (no row here: the cutoff alone), scaled as the
    objective is: of two items costing 30 and 50 GB, one to pick, a cutoff just under 40 GB keeps the 30
    GB one, a cutoff just under 30 GB leaves no solution."""
    m = exact.Program()
    cheap, dear = m.var(3e10), m.var(5e10)
    m.row([(cheap, 1.0), (dear, 1.0)], 1.0, 1.0)
    m.cutoff = cutoff
    values = exact.run_program(m).values
    assert (None if values is None else sum(c * v for c, v in zip(m.cost, values, strict=True))) == found


def test_a_cheaper_plan_sought_gives_highs_the_bar_as_its_cutoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each program run for a plan cheaper than ``below`` carries ``below - 1`` as its cutoff (and the
    bar's row); a program run to meet a balance or a placement at all carries none."""
    snap, wanted = decommission_with_balance()
    ctx = PlanningContext.of(snap, wanted)
    parts = exact.movable(ctx, balance=True)
    limit = {b.id: 10**15 for b in snap.brokers}
    seen: list[float | None] = []

    def cutoff_of(m: exact.Program, *args: object, **kwargs: object) -> exact.Answer:
        seen.append(m.cutoff)
        return exact.Answer(None)

    monkeypatch.setattr(exact, "run_program", cutoff_of)
    exact.solve(ctx, parts, limit, below=123_456_789)
    exact.solve(ctx, parts, limit)
    assert seen == [123_456_788.0, None]
