"""Soft goal: the followers of each broker's led partitions spread over as many brokers as the rules
allow (``balance.failureSpread``), so that a broker's failure hands its leadership to many survivors.

Met when every leading broker's spread (distinct followers over the partitions it leads, the summary's
``failureSpread``) reaches its target (``planning/spread.py``: the brokers the rack rule lets follow it,
at most its follower slots). A broker short of its target gets new followers by moving one follower of
a partition it leads, a broker that follows it in another of its partitions too (so no follower leaves
its set), to a broker that follows it in none: the replicas the plan moves anyway first (redirected,
they are still one copy each), then the smallest partitions (a move costs its bytes). The leader and the
replica order stay, so the leader goals' work is kept; only the broker whose partition it is gains,
since the spread counts a partition for its leader alone. A move is made only when every earlier goal
accepts it (rack spread, cordons, decommissions, replication factor), the destination has a dir with room
that may receive, the policy's move budget allows it, and it keeps the balance goals asked for met: the
destination stays under its broker balance limit (planning/shares.py) and its dir under the dir
threshold, and the source's dirs stay within theirs (or no worse). Only topics whose policy sets
``balance.failureSpread`` move.

Cost: one pass over the partitions counts each leader's followers; then only brokers short of their
target are worked on, each with at most ``TRIES`` candidates and rule checks (the destinations sorted
once per move), so at scale (brokers leading hundreds of partitions, spread already at its target) the
goal costs that one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...model.intents import Intents
from .. import shares
from ..context import PlanningContext, Verdict
from ..plan_summary import PlanSummary
from ..spread import FollowerRoom, spread_of, targets
from ..state import Key

TRIES = 2000  # candidates plus rule checks per broker short of its target


class FailureSpreadGoal:
    """Distinct followers per leading broker: at the target the rules allow."""

    name = "FailureSpread"
    is_hard = False

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True  # the last goal: nothing runs after it

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Leading brokers below their target after the plan (met at 0)."""
        if not any(p.balance.failure_spread for p in intents.policies):
            return None
        below = summary.failure_spread.brokers_below_target
        return Verdict(not below, below, 0)

    def optimize(self, ctx: PlanningContext) -> None:
        spread_topics = ctx.balanced_topics("failure_spread")
        if not spread_topics:
            return
        a, e = ctx.assignment, ctx.eligibility
        active = e.active_brokers
        peers: dict[int, dict[int, int]] = {}
        led: dict[int, int] = {}
        movable: dict[int, list[Key]] = {}  # per leader, its partitions of the goal's topics
        for key, reps in a.replicas.items():
            lead = reps[0]
            led[lead] = led.get(lead, 0) + 1
            mine = peers.get(lead)
            if mine is None:
                mine = peers[lead] = {}
            for f in reps[1:]:
                mine[f] = mine.get(f, 0) + 1
            if key[0] in spread_topics:
                movable.setdefault(lead, []).append(key)
        rooms = [
            FollowerRoom(ctx.trees.get(p.name), [b for b in active if e.may_receive(b)])
            for p in ctx.intents.policies
            if p.enforced and p.balance.failure_spread
        ]
        goal = targets(peers, led, active, rooms)
        short = [b for b in active if b in goal and spread_of(peers[b]) < goal[b] and b in movable]
        if not short:
            return
        limits = _Limits.of(ctx)
        for b in short:
            self._spread(ctx, b, goal[b], peers[b], movable[b], limits)

    def _spread(
        self,
        ctx: PlanningContext,
        leader: int,
        target: int,
        followers: dict[int, int],
        keys: list[Key],
        limits: _Limits,
    ) -> None:
        """Give ``leader`` new followers until it reaches ``target`` or no move is allowed."""
        a, e = ctx.assignment, ctx.eligibility
        touched = a.touched

        def candidates(arriving: bool) -> list[tuple[int, Key, int, int]]:
            """(size, key, index, broker) of the followers that may move: those the plan brings to
            their broker (``arriving``: a redirect, no extra copy), else those the snapshot has there
            (listed only when the first kind did not reach the target); smallest first."""
            out: list[tuple[int, Key, int, int]] = []
            for key in keys:
                changed = key in touched  # a partition no goal set has the snapshot's replicas
                if arriving and not changed:
                    continue
                for i, f in enumerate(a.replicas[key][1:], 1):
                    if followers.get(f, 0) >= 2:
                        held = not changed or ctx.held_dir(key, f)[0]
                        if held is not arriving:
                            out.append((a.size[key], key, i, f))
            out.sort()
            return out

        tries = 0
        dests: list[int] | None = None  # brokers not following the leader, least loaded first
        spread = spread_of(followers)
        for arriving in (True, False):
            if spread >= target or tries >= TRIES:
                return
            for size, key, i, old in candidates(arriving):
                if spread >= target or tries >= TRIES:
                    return
                tries += 1  # (a candidate costs a look even when no destination is checked)
                reps = a.replicas[key]
                if reps[i] != old or followers.get(old, 0) < 2:
                    continue  # moved already, or an earlier move made it the last of its kind
                policy = a.policy(key)
                if policy is None or not ctx.within_budget(policy, size):
                    continue
                if not limits.source_keeps(old, a.dirs[key][i], size):
                    continue
                place = ctx.receiver_place(key)
                rejected: set[Any] = set()
                if dests is None:  # sorted again only after a move changed loads and followers
                    dests = sorted(
                        (
                            y
                            for y in e.active_brokers
                            if y != leader and not followers.get(y) and e.may_receive(y)
                        ),
                        key=lambda y: (limits.load(y), y),
                    )
                for y in dests:
                    if y in reps or place(y) in rejected:
                        continue
                    if not limits.broker_takes(y, size):
                        break  # the least loaded left cannot take it: none further can
                    path = a.best_dir(e, y, size)
                    if path is None or not limits.dir_takes(y, path, size):
                        continue
                    tries += 1
                    new = list(reps)
                    new[i] = y
                    if not ctx.accepts(key, new):
                        rejected.add(place(y))
                        if tries >= TRIES:
                            return
                        continue
                    a.move(key, i, y, path)
                    ctx.charge(policy, size)
                    followers[old] -= 1
                    followers[y] = followers.get(y, 0) + 1
                    spread += 1
                    dests = None
                    break


class _Limits:
    """What keeps the balance goals asked for met while followers move between brokers (those goals
    accept every move of a later goal: they count on it)."""

    def __init__(
        self,
        ctx: PlanningContext,
        by_bytes: bool,
        broker_limits: Mapping[int, float] | None,
        dir_tolerance: float | None,
    ) -> None:
        self.ctx = ctx
        self.by_bytes = by_bytes
        self.broker_limits = broker_limits
        self.dir_tolerance = dir_tolerance

    @staticmethod
    def of(ctx: PlanningContext) -> _Limits:
        a, active = ctx.assignment, ctx.eligibility.active_brokers
        by_bytes = sum(a.broker_bytes[b] for b in active) > 0
        tol = ctx.tolerance("brokers")
        limits = None
        if tol is not None and active:
            load = a.broker_bytes if by_bytes else a.broker_replicas
            total = sum(load[b] for b in active)
            limits = shares.limits(ctx.eligibility.capacity, active, total, tol, by_bytes)
        return _Limits(ctx, by_bytes, limits, ctx.tolerance("log_dirs"))

    def load(self, broker: int) -> int:
        a = self.ctx.assignment
        return a.broker_bytes[broker] if self.by_bytes else a.broker_replicas[broker]

    def broker_takes(self, broker: int, size: int) -> bool:
        """The broker stays at or under its broker balance limit with one more replica (a broker that
        keeps no data has no limit: it receives nothing anyway)."""
        if self.broker_limits is None or broker not in self.broker_limits:
            return True
        return self.load(broker) + (size if self.by_bytes else 1) <= self.broker_limits[broker]

    def _paths(self, broker: int) -> list[str]:
        return self.ctx.eligibility.keeping_dirs(broker)

    def dir_takes(self, broker: int, path: str, size: int) -> bool:
        """The dir stays at or under its broker's dir threshold (after the replica arrives)."""
        if self.dir_tolerance is None:
            return True
        paths = self._paths(broker)
        if len(paths) < 2 or path not in paths:
            return True
        dir_bytes = self.ctx.assignment.dir_bytes
        mean = (sum(dir_bytes[(broker, p)] for p in paths) + size) / len(paths)
        return dir_bytes[(broker, path)] + size <= (1 + self.dir_tolerance) * mean

    def source_keeps(self, broker: int, path: str | None, size: int) -> bool:
        """The broker a replica leaves keeps its dirs within the dir threshold, or no worse than now."""
        if self.dir_tolerance is None or path is None:
            return True
        paths = self._paths(broker)
        if len(paths) < 2 or path not in paths:
            return True
        now = {p: self.ctx.assignment.dir_bytes[(broker, p)] for p in paths}
        after = dict(now)
        after[path] -= size

        def ratio(d: dict[str, int]) -> float:
            mean = sum(d.values()) / len(d)
            return max(d.values()) / mean if mean else 1.0

        return ratio(after) <= max(1 + self.dir_tolerance, ratio(now)) + 1e-9


BalanceLimits = _Limits  # (the network goals keep the same balance thresholds when they move replicas)
