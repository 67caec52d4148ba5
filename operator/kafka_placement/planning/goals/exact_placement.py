"""The exact program as a goal (``planning/exact.py``): after the greedy repair and broker balance, on a
small cluster and unless the planner's effort is ``Fast`` (model/effort.py), the cheapest placement
that keeps every hard rule and the balance limits replaces the greedy one when it copies fewer bytes
(under the ``Balanced`` effort, at least 0.5% fewer: ``exact.worth``), or when the greedy one left a
broker above its limit the program meets. It changes only replica sets and dirs; the goals after it
(leaders, network, failure spread) work on its result as on the greedy one's. Not run where it cannot
win (``exact.hopeless``: the lower bound or the proof that broker balance is out of reach says so).

With dir balance asked, finished plans are compared, each as DirBalance would finish it (tried on the
working assignment, measured, undone): the greedy plan; the greedy brokers with exact dirs
(``exact_dirs``: per broker, the cheapest dirs within dir balance); the joint program's brokers and dirs
(``exact.DirRows``: every broker's dirs within balance, the local copies counted), run for a plan cheaper
than the best of those; and, only where the greedy plan misses broker balance, the program on brokers with
exact dirs, run to meet it. The cheapest replaces the greedy one when it copies less (under ``Balanced``,
0.5% less) and keeps in balance every broker the greedy plan does, and any broker balance it meets. Pure:
no I/O.

The program on brokers is not run for a cheaper plan where dir balance is asked: it counts no dir's local
copy, which the dir balance goal adds after it. Of 126 instances measured, it found a plan on 43, each
1.6-46% dearer once finished than the best of the others (median 17%; docs/benchmarks.md); on 24 brokers
with 200 partitions, where the joint program is too large to build, it searched 3.7-7.5 s for one.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model.intents import Intents
from .. import exact, exact_dirs
from ..context import PlanningContext, Verdict
from ..plan_summary import PlanSummary
from ..state import Key
from .dir_balance import DirBalanceGoal
from .replica_placement import balance_limits


class ExactPlacementGoal:
    """The cheapest placement under the hard rules and broker balance, on small clusters."""

    name = "ExactPlacement"
    is_hard = False

    def optimize(self, ctx: PlanningContext) -> None:
        if ctx.intents.effort == "Fast":
            return  # (model/effort.py: the greedy goals' plan stands)
        if not exact.applicable(ctx):
            return
        limits = balance_limits(ctx)
        limit = None if limits is None else {b: int(v) for b, v in limits.items()}
        tol = ctx.tolerance("log_dirs")
        if tol is not None:
            self._with_dirs(ctx, limit, tol)
            return
        parts = exact.movable(ctx, balance=limit is not None)
        keys = [p.key for p in parts]
        a = ctx.assignment
        meets = limit is None or all(a.broker_bytes[b] <= limit[b] for b in ctx.eligibility.active_brokers)
        now = exact.copied(ctx, keys)
        if (meets and now == 0) or exact.hopeless(ctx, now if meets else None):
            return
        before = {k: (list(a.replicas[k]), list(a.dirs[k])) for k in keys}
        # brokers first (a third of the binaries), the dirs then chosen as the greedy steps choose them;
        # on dirs within their room only when that choice does not fit (not when the program on brokers
        # is proven to have no solution: the one on dirs then has none either)
        for dirs in (False, True) if exact.sized(ctx) else (False,):
            solved = exact.solve(ctx, parts, limit, below=exact.worth(ctx, now) if meets else None, dirs=dirs)
            if solved.found is not None and exact.apply(ctx, solved.found, limit):
                break
            if solved.infeasible:
                return
        else:
            return
        if meets and exact.copied(ctx, keys) >= now:
            for key, (replicas, placed) in before.items():  # (the bound says it cannot happen: kept safe)
                a.set_placement(key, replicas, placed)

    def _with_dirs(self, ctx: PlanningContext, limit: dict[int, int] | None, tol: float) -> None:
        """The plans compared when dir balance is asked (module docstring)."""
        a, e = ctx.assignment, ctx.eligibility
        everything = [p.key for p in ctx.snapshot.partitions]  # (at most exact.MAX_PARTITIONS)
        start = _placements(ctx, everything)
        brokers = [b for b in e.active_brokers if len(e.keeping_dirs(b)) >= 2]

        def within(b: int) -> bool:
            return limit is None or a.broker_bytes[b] <= limit[b]

        meets = all(within(b) for b in e.active_brokers)
        DirBalanceGoal().optimize(ctx)
        greedy = exact.copied(ctx, everything)
        balanced = {b for b in brokers if exact.dirs_met(ctx, b, tol)}
        _restore(ctx, start)

        def finished() -> tuple[int, Placements] | None:
            exact_dirs.place(ctx, tol, brokers)
            DirBalanceGoal().optimize(ctx)  # (the brokers it could not place)
            if not all(exact.dirs_met(ctx, b, tol) for b in balanced):
                return None
            if meets and not all(within(b) for b in e.active_brokers):
                return None
            return exact.copied(ctx, everything), _placements(ctx, everything)

        tried = [finished()]
        _restore(ctx, start)
        parts = exact.movable(ctx, balance=limit is not None)

        def best() -> int | None:  # (without broker balance met, the programs are run to meet it)
            return min([greedy, *(t[0] for t in tried if t is not None)]) if meets else None

        def bar() -> int | None:
            return None if (now := best()) is None else exact.worth(ctx, now)

        # the bar is the best finished plan so far (the greedy brokers with exact dirs often is near the
        # lower bound already: the joint program is then pruned at its root, or not run at all)
        if not exact.hopeless(ctx, best()):
            rows = exact.DirRows(tol, frozenset(brokers))
            joint = exact.solve(ctx, parts, limit, below=bar(), dir_rows=rows)
            if joint.found is not None and exact.apply(ctx, joint.found, limit):
                tried.append(finished())
            _restore(ctx, start)
        # the program on brokers counts no dir's local copy, which the dir balance goal adds after it: run
        # only to meet a broker balance the greedy plan misses (a plan meeting it is worth its copies), not
        # for a cheaper plan (module docstring)
        if not meets and not exact.hopeless(ctx, None):
            for dirs in (False, True) if exact.sized(ctx) else (False,):
                solved = exact.solve(ctx, parts, limit, dirs=dirs)
                if solved.found is not None and exact.apply(ctx, solved.found, limit):
                    tried.append(finished())
                    break
                if solved.infeasible:
                    break
        _restore(ctx, start)
        ranked = sorted((t for t in tried if t is not None), key=lambda t: t[0])
        if not ranked:
            return
        cost, placed = ranked[0]
        if cost < exact.worth(ctx, greedy) or (not meets and all(within(b) for b in e.active_brokers)):
            _restore(ctx, placed)  # (the dir balance goal next finds its dirs in balance)

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """Later goals are not held to the program's placement (it is a step, not a rule)."""
        return True

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Nothing a policy asks for: it has no entry in the summary's goals."""
        return None


Placements = dict[Key, tuple[list[int], list[str | None]]]


def _placements(ctx: PlanningContext, keys: Sequence[Key]) -> Placements:
    a = ctx.assignment
    return {k: (list(a.replicas[k]), list(a.dirs[k])) for k in keys}


def _restore(ctx: PlanningContext, placed: Placements) -> None:
    a = ctx.assignment
    for key, (replicas, dirs) in placed.items():
        if a.replicas[key] != replicas or a.dirs[key] != dirs:
            a.set_placement(key, replicas, dirs)
