"""The exact program as a goal (``planning/exact.py``): after the greedy repair and broker balance, on a
small cluster and unless the planner's effort is ``Fast`` (model/effort.py), the cheapest placement
that keeps every hard rule and the balance limits replaces the greedy one when it copies fewer bytes
(under the ``Balanced`` effort, at least 0.5% fewer: ``exact.worth``), or when the greedy one left a
broker above its limit the program meets. It changes only replica sets and dirs; the goals after it
(leaders, network, failure spread) work on its result as on the greedy one's. Not run when a policy
asks for dir balance: that goal's local copies come after it and the program does not count them (a
plan it finds cheaper could end dearer). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model.intents import Intents
from .. import exact
from ..context import PlanningContext, Verdict
from ..plan_summary import PlanSummary
from ..state import Key
from .replica_placement import balance_limits


class ExactPlacementGoal:
    """The cheapest placement under the hard rules and broker balance, on small clusters."""

    name = "ExactPlacement"
    is_hard = False

    def optimize(self, ctx: PlanningContext) -> None:
        if ctx.intents.effort == "Fast":
            return  # (model/effort.py: the greedy goals' plan stands)
        if not exact.applicable(ctx) or ctx.tolerance("log_dirs") is not None:
            return  # (dir balance after it makes local copies the program does not count)
        limits = balance_limits(ctx)
        limit = None if limits is None else {b: int(v) for b, v in limits.items()}
        parts = exact.movable(ctx, balance=limit is not None)
        keys = [p.key for p in parts]
        a = ctx.assignment
        meets = limit is None or all(a.broker_bytes[b] <= limit[b] for b in ctx.eligibility.active_brokers)
        now = exact.copied(ctx, keys)
        if meets and now == 0:
            return
        before = {k: (list(a.replicas[k]), list(a.dirs[k])) for k in keys}
        # brokers first (a third of the binaries), the dirs then chosen as the greedy steps choose them;
        # on dirs within their room only when that choice does not fit
        for dirs in (False, True) if exact.sized(ctx) else (False,):
            found = exact.solve(ctx, parts, limit, below=exact.worth(ctx, now) if meets else None, dirs=dirs)
            if found is not None and exact.apply(ctx, found, limit):
                break
        else:
            return
        if meets and exact.copied(ctx, keys) >= now:
            for key, (replicas, placed) in before.items():  # (the bound says it cannot happen: kept safe)
                a.set_placement(key, replicas, placed)

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """Later goals are not held to the program's placement (it is a step, not a rule)."""
        return True

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Nothing a policy asks for: it has no entry in the summary's goals."""
        return None
