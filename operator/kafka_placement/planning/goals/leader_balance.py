"""Soft goal: preferred leaders balanced across brokers, by reordering replicas (moves no data).

Met when the most-leading broker leads at most max(ceil(mean), floor((1 + tolerance) * mean))
partitions, over the brokers that keep data. A partition led by an over-loaded broker gets as its
first replica the in-sync follower on the broker with the fewest leaders. Only topics whose policy
sets ``balance.leaders`` are reordered; the executor then runs a preferred-leader election.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..context import PlanningContext
from ..state import Key

ROUNDS = 3  # pull-then-push rounds while a broker still leads too many partitions


class LeaderBalanceGoal:
    """Preferred leaders per broker: max/mean <= 1 + tolerance (integer rounding allowed)."""

    name = "LeaderBalance"
    is_hard = False

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True

    def optimize(self, ctx: PlanningContext) -> None:
        a, e = ctx.assignment, ctx.eligibility
        tol = ctx.tolerance("leaders")
        active = e.active_brokers
        if tol is None or len(active) < 2:
            return
        mean = sum(a.broker_leaders[b] for b in active) / len(active)
        limit = max(math.ceil(mean), math.floor((1 + tol) * mean))
        self._push(ctx, active, limit)
        for _ in range(ROUNDS):
            if max(a.broker_leaders[b] for b in active) <= limit:
                break
            # Brokers at the limit cannot take more; let the least-leading brokers first take leadership
            # from brokers above the mean, which frees room for the over-loaded ones, then push again.
            self._pull(ctx, active, mean)
            self._push(ctx, active, limit)

    def _movable(self, ctx: PlanningContext, key: Key) -> bool:
        policy = ctx.assignment.policy(key)
        return policy is not None and policy.balance.leaders and policy.enforced

    def _pull(self, ctx: PlanningContext, active: tuple[int, ...], mean: float) -> None:
        a = ctx.assignment
        floor = math.floor(mean)
        for broker in sorted(active, key=lambda b: (a.broker_leaders[b], b)):
            if a.broker_leaders[broker] >= floor:
                continue  # (before sorting its partitions: most brokers are there already)
            for key in sorted(a.by_broker[broker]):
                if a.broker_leaders[broker] >= floor:
                    break
                reps = a.replicas[key]
                if reps[0] == broker or a.broker_leaders[reps[0]] <= mean or not self._movable(ctx, key):
                    continue
                original = ctx.snapshot.partition(*key)
                if original is not None and broker in original.replicas and broker not in original.isr:
                    continue
                a.make_leader(key, reps.index(broker))

    def _push(self, ctx: PlanningContext, active: tuple[int, ...], limit: int) -> None:
        a = ctx.assignment
        leaders = a.broker_leaders
        # only a follower leading fewer than ``limit`` partitions can take a leadership: a partition with
        # none is skipped without looking further (the set only shrinks while pushing: a giver stays at
        # or above the limit, a taker leaves it when it reaches the limit)
        below = {b for b, n in leaders.items() if n < limit}
        for broker in sorted(active, key=lambda b: (-leaders[b], b)):
            if leaders[broker] <= limit:
                continue
            if not below:
                return
            led = sorted(k for k in a.by_broker[broker] if a.replicas[k][0] == broker)
            for key in led:
                if leaders[broker] <= limit:
                    break
                if below.isdisjoint(a.replicas[key]) or not self._movable(ctx, key):
                    continue
                taker = self._hand_over(ctx, key, limit)
                if taker is not None and leaders[taker] >= limit:
                    below.discard(taker)

    def _hand_over(self, ctx: PlanningContext, key: Key, limit: int) -> int | None:
        """Make the in-sync follower with the fewest leaders (below ``limit``; the first on a tie) lead;
        returns it (None when no follower may)."""
        a = ctx.assignment
        leaders = a.broker_leaders
        reps = a.replicas[key]
        original = ctx.snapshot.partition(*key)
        before = original.replicas if original is not None else ()
        in_sync = original.isr if original is not None else ()
        best, fewest = 0, limit  # a follower may lead if it then leads at most ``limit``
        for i in range(1, len(reps)):
            b = reps[i]
            load = leaders[b]
            if load >= fewest:
                continue
            if b in before and b not in in_sync:
                continue  # an out-of-sync follower could not take the leadership
            best, fewest = i, load
        if not best:
            return None
        a.make_leader(key, best)
        return reps[best]
