"""Soft goal: bytes (or replicas, on an empty cluster) balanced across brokers within the tolerance.

Met when max/mean <= 1 + tolerance over the brokers that keep data. Only brokers above that threshold
shed replicas, and only as many bytes as their excess: the largest replica that fits in the excess
first, then the smallest that clears it, so the bytes moved stay close to the lower bound
(sum of excesses). A replica goes to the least-loaded broker that stays under the threshold and that
every earlier goal accepts (rack spread, cordons, decommissions). Only topics whose policy sets
``balance.brokers`` move; every broker's load counts.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence

from ..context import PlanningContext
from ..state import Key


class BrokerBalanceGoal:
    """Bytes per broker: max/mean <= 1 + tolerance."""

    name = "BrokerBalance"
    is_hard = False

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True  # later goals only reorder or move within a broker: broker loads do not change

    def optimize(self, ctx: PlanningContext) -> None:
        a, e = ctx.assignment, ctx.eligibility
        tol = ctx.tolerance("brokers")
        active = e.active_brokers
        if tol is None or len(active) < 2:
            return
        by_bytes = sum(a.broker_bytes[b] for b in active) > 0
        load = a.broker_bytes if by_bytes else a.broker_replicas
        mean = sum(load[b] for b in active) / len(active)
        threshold = (1 + tol) * mean
        receivers = [b for b in active if e.may_receive(b)]
        for broker in sorted(active, key=lambda b: (-load[b], b)):
            if load[broker] > threshold:
                self._shed(ctx, broker, threshold, receivers, by_bytes)

    def _shed(
        self, ctx: PlanningContext, broker: int, threshold: float, receivers: list[int], by_bytes: bool
    ) -> None:
        a = ctx.assignment
        load = a.broker_bytes if by_bytes else a.broker_replicas
        # Candidates per dir, so the broker sheds from its fullest dir first: leaving bytes then also
        # even out its dirs and the dir goal has less to move afterwards.
        movable: dict[str | None, list[tuple[int, Key]]] = {}
        for key in a.by_broker[broker]:
            policy = a.policy(key)
            if policy is not None and policy.balance.brokers and policy.enforced:
                path = a.dirs[key][a.replicas[key].index(broker)]
                movable.setdefault(path, []).append(((a.size[key] if by_bytes else 1), key))
        for items in movable.values():
            items.sort()
        count_mean = sum(a.broker_replicas[b] for b in receivers) / max(1, len(receivers))
        while load[broker] > threshold and any(movable.values()):
            excess = load[broker] - threshold
            # Aim at replicas of size excess / (replicas this broker has too many): the same bytes move,
            # and replica (hence leader) counts even out too. Never overshoot unless nothing else fits.
            surplus = a.broker_replicas[broker] - count_mean
            target = excess / surplus if by_bytes and surplus > 1 else excess
            hot_first = sorted(movable, key=lambda d: -a.dir_bytes.get((broker, d), 0) if d else 0)
            goal, cap = int(target), int(excess)
            tries = itertools.chain(
                ((d, i) for d in hot_first for i in _closest_first(movable[d], goal, cap, False)),
                ((d, i) for d in hot_first for i in _closest_first(movable[d], goal, cap, True)),
            )
            moved = False
            for d, i in tries:
                weight, key = movable[d][i]
                if self._move_one(ctx, key, broker, weight, threshold, receivers, load):
                    movable[d].pop(i)
                    moved = True
                    break
            if not moved:
                return

    def _move_one(
        self,
        ctx: PlanningContext,
        key: Key,
        broker: int,
        weight: int,
        threshold: float,
        receivers: list[int],
        load: dict[int, int],
    ) -> bool:
        a, e = ctx.assignment, ctx.eligibility
        policy = a.policy(key)
        size = a.size[key]
        if policy is None or not ctx.within_budget(policy, size):
            return False
        reps = a.replicas[key]
        index = reps.index(broker)
        for dest in sorted(receivers, key=lambda b: (load[b], b)):
            if load[dest] + weight > threshold:
                return False  # receivers are sorted: none further down has room either
            if dest in reps:
                continue
            candidate = list(reps)
            candidate[index] = dest
            if not ctx.accepts(key, candidate):
                continue
            path = a.best_dir(e, dest, size)
            if path is None:
                continue
            a.move(key, index, dest, path)
            ctx.charge(policy, size)
            return True
        return False


def _closest_first(items: list[tuple[int, Key]], target: int, limit: int, over: bool) -> Iterator[int]:
    """Indices of ``items`` (sorted by weight): those <= limit by distance to target, or (``over``)
    those above the limit, smallest first."""
    top = bisect.bisect_right(items, (limit, ("\U0010ffff", 1 << 62)))
    if over:
        yield from range(top, len(items))
        return
    mid = min(bisect.bisect_left(items, (target, ("", -1))), top)
    lo, hi = mid - 1, mid
    while lo >= 0 or hi < top:
        if hi < top and (lo < 0 or items[hi][0] - target <= target - items[lo][0]):
            yield hi
            hi += 1
        else:
            yield lo
            lo -= 1
