"""Network goals, on a snapshot with traffic (``bytesInPerSec``, ``readFanout``; ``state.py`` keeps each
broker's network in, network out and leaders' bytes in as the plan changes).

- ``NetworkCapacityGoal`` (hard): no broker is planned above ``maxShare`` (default 0.8) of its declared
  network in or out capacity (``KafkaCluster.spec.capacity``; the CLI's ``--capacity``). Every later goal's
  move that would take a broker over its limit is refused (``accepts``). A broker already over sheds load:
  network out first by handing leaderships to followers (a reorder moves no data), then replicas, the
  fewest bytes per byte/s shed first (followers for network in: they carry no network out). A broker still
  over afterwards makes the plan infeasible (``InfeasibleError`` naming the broker, its load, its capacity
  and the share: exit 3, Blocked). Off when no network capacity is declared or the snapshot has no rate.
- ``NetworkInBalanceGoal`` (soft, ``balance.networkIn``): network in max/mean <= 1 + tolerance, by moving
  followers (then leaders) of the goal's topics off brokers above the threshold, fewest bytes per byte/s
  first, within the policy's move budget, to brokers that stay under it.
- ``NetworkOutBalanceGoal`` (soft, ``balance.networkOut``): network out max/mean <= 1 + tolerance, by
  leadership hand-overs first (free), then by moving leader replicas.
- ``LeaderBytesInBalanceGoal`` (soft, also ``balance.networkOut``: the leaders' bytes in is what a
  broker's produce requests cost, and network out is its multiple by followers and readers): leaders' bytes
  in max/mean <= 1 + tolerance, by hand-overs only, none taking a broker over the network out threshold.

A partition without a rate counts nothing and never moves for these goals. Each balance goal refuses later
goals' moves that take a broker over its threshold, and moves only what every earlier goal accepts
(placement rules, capacity, the broker and dir balance thresholds, the leader ceiling). Work is bounded:
``TRIES`` rule checks per broker shed.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Sequence
from dataclasses import replace
from heapq import heapify, heappop
from typing import Any

from ...model.capacity import DEFAULT_MAX_SHARE
from ...model.errors import InfeasibleError
from ...model.intents import Intents
from ..context import PlanningContext, Verdict, balance_verdict
from ..loads import rate_text
from ..plan_summary import PlanSummary
from ..state import Key
from ..summary_parts import TrafficBalance
from .failure_spread import BalanceLimits

TRIES = 4000  # rule checks per broker shed
ROOM_LOOKS = 32  # leaderships a follower short of room tries to hand on, per partition it would take
EPS = 1e-6  # bytes per second: float sums drift by far less


def _first(pair: tuple[float, Key]) -> float:
    return pair[0]


class _Shedder:
    """Moves load off one broker: hand-overs of leadership, then replica moves (module docstring)."""

    def __init__(
        self,
        ctx: PlanningContext,
        hard: bool,
        topics: frozenset[str] | None,
        weight: Callable[[Key], float] | None = None,
    ) -> None:
        self.ctx = ctx
        self.tries = 0
        self.weight = weight  # what a leadership weighs for ``hand_over`` (one measure per goal)
        self._pass = 0  # ``hand_over`` passes so far
        # per broker, its leaderships by weight, heaviest first (``_make_room``): the pass they were
        # listed in, (-weight, key) pairs and the keys listed
        self._led: dict[int, tuple[int, list[tuple[float, Key]], set[Key]]] = {}
        self._on: dict[int, set[Key]] = {}  # per broker, its partitions with a rate (``_mine``)
        self.hard = hard  # a hard goal's moves ignore move budgets (as the placement goal's)
        # the goal's topics; None: every topic (also when the goal's topics are all the assignment's)
        whole = topics is None or topics.issuperset(ctx.assignment.topic_policy)
        self.topics = None if whole else topics
        self.limits = BalanceLimits.of(ctx)

    def _mine(self, broker: int, leading: bool | None) -> list[Key]:
        """The partitions with a rate on ``broker`` (``leading``: only those it leads / follows), in no
        particular order (every caller sorts them by a total order). Its rated partitions of the goal's
        topics are listed once per goal (``_on``, from the assignment's index ``Assignment.rated_on``);
        those that left it since are skipped, and those that arrived are not seen: a broker receives
        only while under the goal's limit, so it is never one that sheds afterwards. The filters are set
        intersections with the assignment's indexes (its partitions per broker, the rated ones it leads:
        ``Assignment.rated_led``), not a look at each partition's replicas."""
        a = self.ctx.assignment
        on = self._on.get(broker)
        if on is None:
            found, topics = a.rated_on(broker), self.topics
            on = self._on[broker] = set(found) if topics is None else {k for k in found if k[0] in topics}
        if leading:
            return list(on & a.rated_led(broker))
        held = on.intersection(a.by_broker[broker])  # (iterates the smaller: set vs dict)
        if leading is None:
            return list(held)
        return list(held - a.rated_led(broker))

    def hand_over(self, broker: int, excess: Callable[[], float], room: Callable[[int], float]) -> None:
        """Hand the leadership of ``broker``'s partitions to followers while ``excess()`` > 0: the
        heaviest first, each to the follower with the most ``room`` (at least its weight) that may lead it
        and that every earlier goal accepts. A follower short of room first hands lighter leaderships of
        its own to its followers with room (a chain of two hand-overs; undone when it falls short)."""
        a = self.ctx.assignment
        self.tries = 0
        self._pass += 1
        for neg, key in list(self._listed(broker)):  # (a copy: only other brokers' lists change meanwhile)
            if excess() <= EPS or self.tries >= TRIES:
                return
            if a.replicas[key][0] != broker:  # (listed in an earlier pass, led by another broker since)
                continue
            w = -neg
            able = sorted(self._may_lead(key), key=lambda b: (-room(b), b))
            for b in able:
                if room(b) >= w and self._lead(key, b):
                    break
            else:
                for b in able:  # (most room first)
                    if self._make_room(b, w, broker, room) and self._lead(key, b):
                        break

    def _may_lead(self, key: Key) -> list[int]:
        """The followers of ``key`` that may lead it: brokers that keep data, in sync (or new to it)."""
        reps = self.ctx.assignment.replicas[key]
        original = self.ctx.snapshot.partition(*key)
        keeping = self.ctx.eligibility.keeping
        return [
            b
            for b in reps[1:]
            if b in keeping and (original is None or b not in original.replicas or b in original.isr)
        ]

    def _lead(self, key: Key, b: int) -> bool:
        """Make ``b`` lead ``key`` if every earlier goal accepts it."""
        a = self.ctx.assignment
        self.tries += 1
        reps = a.replicas[key]
        index = reps.index(b)
        new = list(reps)
        new[0], new[index] = new[index], new[0]
        if not self.ctx.accepts(key, new):
            return False
        a.make_leader(key, index)
        return True

    def _listed(self, v: int) -> list[tuple[float, Key]]:
        """``v``'s leaderships (``_mine``) by weight, heaviest first, as (-weight, key) pairs: listed
        once per goal and brought up to date once per hand-over pass (within a pass ``v``'s leaderships
        only shrink). Pairs of partitions ``v`` no longer leads stay listed: the caller skips them. At a
        million partitions a broker leads thousands: weighing them all again on each pass cost seconds."""
        found = self._led.get(v)
        if found is not None and found[0] == self._pass:
            return found[1]
        weight = self.weight
        assert weight is not None, "a goal that hands leaderships over weighs them"
        # (a weight is computed once per partition and goal: hand-overs and moves keep replica counts)
        if found is None:
            pairs = sorted([(-weight(k), k) for k in self._mine(v, True)])
            listed = {k for _, k in pairs}
        else:
            _, pairs, listed = found
            new = [k for k in self._mine(v, True) if k not in listed]
            for k in new:
                insort(pairs, (-weight(k), k))
            listed.update(new)
        self._led[v] = (self._pass, pairs, listed)
        return pairs

    def _make_room(self, v: int, w: float, avoid: int, room: Callable[[int], float]) -> bool:
        """Hand leaderships lighter than ``w`` from ``v`` to its followers (not ``avoid``) with room until
        ``v`` has room for ``w``; False (and nothing changed) when it cannot."""
        a = self.ctx.assignment
        done: list[tuple[Key, int]] = []
        pairs = self._listed(v)
        looked = 0
        # the heaviest first, from the first lighter than ``w`` (the heavier ones are never handed on)
        for i in range(bisect_right(pairs, -w, key=_first), len(pairs)):
            if room(v) >= w or self.tries >= TRIES or looked >= ROOM_LOOKS:
                break
            neg, key = pairs[i]
            x = -neg
            if a.replicas[key][0] != v:
                continue
            looked += 1
            for f in sorted(self._may_lead(key), key=lambda b: (-room(b), b)):
                if f != avoid and room(f) >= x and self._lead(key, f):
                    done.append((key, v))
                    break
        if room(v) >= w:
            return True
        for key, back in reversed(done):  # undo: the chain fell short
            a.make_leader(key, a.replicas[key].index(back))
        return False

    def move_replicas(
        self,
        broker: int,
        excess: Callable[[], float],
        takes: Callable[[int, Key, int], bool],
        leading: bool | None,
    ) -> None:
        """Move replicas of ``broker``'s partitions (``leading``: only those it leads / follows; None:
        both) to other brokers while ``excess()`` > 0, fewest bytes per byte/s first; a destination must
        ``takes(dest, key, index)``, be accepted by every earlier goal, keep the broker and dir balance
        thresholds and have a dir with room; a soft goal's move stays within its policy's move budget."""
        ctx = self.ctx
        a, e, limits = ctx.assignment, ctx.eligibility, self.limits
        receivers = [b for b in e.active_brokers if e.may_receive(b)]
        size_of, rate = a.size, a.rate
        # fewest bytes per byte/s first: a heap, popped only as far as the shedding goes (a broker holds
        # thousands of rated partitions; a few hundred are looked at)
        candidates = [(size_of[k] / rate[k], k) for k in self._mine(broker, leading)]
        heapify(candidates)
        tries = 0
        net_in = a.net_in

        def by_load(b: int) -> tuple[float, int]:
            return (net_in.get(b, 0.0), b)

        # least network in first; a move changes only its two brokers' network in: they are put back in
        # order (not a sort of every receiver per move)
        dests = sorted(receivers, key=by_load)
        receiving = set(receivers)
        while candidates:
            if excess() <= EPS or tries >= TRIES:
                return
            key = heappop(candidates)[1]
            size, reps = a.size[key], a.replicas[key]
            if broker not in reps:
                continue
            index = reps.index(broker)
            policy = a.policy(key)
            if not self.hard and (policy is None or not ctx.within_budget(policy, size)):
                continue
            if not limits.source_keeps(broker, a.dirs[key][index], size):
                continue
            for dest in dests:
                if dest in reps or not takes(dest, key, index) or not limits.broker_takes(dest, size):
                    continue
                tries += 1
                new = list(reps)
                new[index] = dest
                if not ctx.accepts(key, new):
                    if tries >= TRIES:
                        return
                    continue
                path = a.best_dir(e, dest, size)
                if path is None or not limits.dir_takes(dest, path, size):
                    continue
                a.move(key, index, dest, path)
                if policy is not None:
                    ctx.charge(policy, size)
                for b in (dest, broker):
                    if b in receiving:
                        dests.remove(b)
                        insort(dests, b, key=by_load)
                break


class NetworkCapacityGoal:
    """No broker above ``maxShare`` of its network in or out capacity (hard)."""

    name = "NetworkCapacity"
    is_hard = True

    def __init__(self) -> None:
        self.limit_in: dict[int, float] = {}
        self.limit_out: dict[int, float] = {}
        self.active = False

    def _limits(self, ctx: PlanningContext) -> None:
        cap = ctx.intents.capacity
        a = ctx.assignment
        if cap is None or not a.rate:
            return
        for b in ctx.eligibility.dirs:
            c = cap.of(b)
            if c.network_in is not None:
                self.limit_in[b] = cap.max_share * c.network_in
            if c.network_out is not None:
                self.limit_out[b] = cap.max_share * c.network_out
        self.active = bool(self.limit_in or self.limit_out)

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """Refused when a broker's network in or out would rise above its limit."""
        if not self.active:
            return True
        a = ctx.assignment
        r = a.rate.get(key)
        if r is None:
            return True
        old = a.replicas[key]
        for b in replicas:
            lim = self.limit_in.get(b)
            if lim is not None and b not in old and a.net_in[b] + r > lim + EPS:
                return False
        lead = replicas[0]
        lim = self.limit_out.get(lead)
        if lim is None:
            return True
        added = a.out_of(key, len(replicas)) - (a.out_of(key, len(old)) if old[0] == lead else 0.0)
        return added <= 0 or a.net_out[lead] + added <= lim + EPS

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Brokers above their limit after the plan (met at 0); None when the goal is off."""
        traffic = summary.traffic
        if traffic is None or traffic.capacity_goal != "on":
            return None
        over = traffic.brokers_over_limit_after
        return Verdict(over == 0, over, 0)

    def optimize(self, ctx: PlanningContext) -> None:
        self._limits(ctx)
        if not self.active:
            if ctx.intents.capacity is not None:
                ctx.notes.append(
                    "network capacity goal off: "
                    + ("no rate in the snapshot" if not ctx.assignment.rate else "no network capacity")
                )
            return
        ctx.per_broker_rules = True
        a = ctx.assignment
        self._check_totals(ctx)
        shed = _Shedder(ctx, hard=True, topics=None, weight=lambda k: a.out_of(k, len(a.replicas[k])))

        def takes(dest: int, key: Key, index: int) -> bool:  # (this goal is not among ``ctx.done`` yet)
            new = list(a.replicas[key])
            new[index] = dest
            return self.accepts(ctx, key, new)

        for b in sorted(self.limit_out, key=lambda b: (-a.net_out.get(b, 0.0), b)):
            lim = self.limit_out[b]

            def over_out(b: int = b, lim: float = lim) -> float:
                return a.net_out.get(b, 0.0) - lim

            if over_out() > EPS:
                shed.hand_over(b, over_out, self._room_out(a))
            if over_out() > EPS:
                shed.move_replicas(b, over_out, takes, leading=True)
        for b in sorted(self.limit_in, key=lambda b: (-a.net_in.get(b, 0.0), b)):
            lim = self.limit_in[b]

            def over_in(b: int = b, lim: float = lim) -> float:
                return a.net_in.get(b, 0.0) - lim

            if over_in() > EPS:
                shed.move_replicas(b, over_in, takes, leading=False)
            if over_in() > EPS:
                shed.move_replicas(b, over_in, takes, leading=True)
        self._check_after(ctx)

    def _room_out(self, a: Any) -> Callable[[int], float]:
        lim_out = self.limit_out

        def room(b: int) -> float:
            lim = lim_out.get(b)
            return float("inf") if lim is None else lim - a.net_out.get(b, 0.0)

        return room

    def _check_totals(self, ctx: PlanningContext) -> None:
        """Infeasible up front when the brokers' network in cannot fit under their limits together."""
        a, active = ctx.assignment, ctx.eligibility.active_brokers
        if not active or any(b not in self.limit_in for b in active):
            return
        total, room = sum(a.net_in.values()), sum(self.limit_in[b] for b in active)
        if total > room + EPS:
            share = ctx.intents.capacity.max_share if ctx.intents.capacity else DEFAULT_MAX_SHARE
            raise InfeasibleError(
                f"the partitions' network in totals {rate_text(total)} over all replicas, above "
                f"{share:.0%} of the brokers' network in capacity together ({rate_text(room)}); "
                "add brokers or capacity",
                "networkCapacity",
            )

    def _check_after(self, ctx: PlanningContext) -> None:
        """Infeasible when a broker is still above a limit (the worst one named, with its numbers)."""
        a = ctx.assignment
        cap = ctx.intents.capacity
        share = cap.max_share if cap is not None else DEFAULT_MAX_SHARE
        worst: tuple[float, int, str, float, float] | None = None
        for what, loads, limits in (("in", a.net_in, self.limit_in), ("out", a.net_out, self.limit_out)):
            for b, lim in limits.items():
                load = loads.get(b, 0.0)
                if load > lim + EPS and (worst is None or load / lim > worst[0]):
                    worst = (load / lim, b, what, load, lim)
        if worst is not None:
            _, b, what, load, lim = worst
            raise InfeasibleError(
                f"broker {b}: network {what} {rate_text(load)} stays above {share:.0%} of its capacity "
                f"{rate_text(lim / share)} (limit {rate_text(lim)}): "
                "no move within the rules brings it under",
                "networkCapacity",
            )


class _BalanceGoal:
    """A network balance goal: one load per broker, max/mean <= 1 + tolerance (module docstring)."""

    name = ""
    switch = ""  # the policy's balance field
    is_hard = False

    def __init__(self) -> None:
        self.threshold: float | None = None

    def load(self, ctx: PlanningContext) -> dict[int, float]:
        raise NotImplementedError

    def max_mean(self, after: TrafficBalance) -> float | None:
        """This goal's max/mean after the plan (the summary's ``balanceAfter``)."""
        raise NotImplementedError

    def added(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> dict[int, float]:
        """What ``key`` getting ``replicas`` adds to each broker's load (the brokers that gain)."""
        raise NotImplementedError

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """Refused when a broker would rise above the threshold."""
        if self.threshold is None or key not in ctx.assignment.rate:
            return True
        load = self.load(ctx)
        return all(
            load.get(b, 0.0) + w <= self.threshold + EPS
            for b, w in self.added(ctx, key, replicas).items()
            if w > 0
        )

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Max/mean after the plan; unmet and saying why when the snapshot has no rate to balance."""
        rates = summary.balance_after.traffic
        found = balance_verdict(intents, self.switch, self.max_mean(rates) if rates is not None else None)
        if found is not None and (summary.traffic is None or not summary.traffic.partitions_with_rate):
            return replace(found, met=False, unreachable="no rate in the snapshot (bytesInPerSec)")
        return found

    def optimize(self, ctx: PlanningContext) -> None:
        tol = ctx.tolerance(self.switch)
        a, active = ctx.assignment, ctx.eligibility.active_brokers
        if tol is None or not a.rate or len(active) < 2:
            if tol is not None and not a.rate:
                ctx.notes.append(f"{self.name} off: no rate in the snapshot")
            return
        load = self.load(ctx)
        mean = sum(load.get(b, 0.0) for b in active) / len(active)
        if mean <= 0:
            return
        self.threshold = threshold = (1 + tol) * mean
        ctx.per_broker_rules = True
        topics = ctx.balanced_topics(self.switch)
        shed = _Shedder(ctx, hard=False, topics=topics, weight=self.lead_weight(ctx))
        for b in sorted(active, key=lambda b: (-load.get(b, 0.0), b)):

            def excess(b: int = b) -> float:
                return load.get(b, 0.0) - threshold

            if excess() > EPS:
                self.shed(ctx, shed, b, excess, threshold)

    def shed(
        self, ctx: PlanningContext, shed: _Shedder, b: int, excess: Callable[[], float], threshold: float
    ) -> None:
        raise NotImplementedError

    def lead_weight(self, ctx: PlanningContext) -> Callable[[Key], float] | None:
        """What a leadership weighs when this goal hands leaderships over (None: it does not)."""
        return None

    def room(self, ctx: PlanningContext, threshold: float) -> Callable[[int], float]:
        load = self.load(ctx)
        return lambda b: threshold - load.get(b, 0.0)


class NetworkInBalanceGoal(_BalanceGoal):
    """Network in per broker: max/mean <= 1 + tolerance."""

    name = "NetworkInBalance"
    switch = "network_in"

    def max_mean(self, after: TrafficBalance) -> float | None:
        return after.network_in_max_mean

    def load(self, ctx: PlanningContext) -> dict[int, float]:
        return ctx.assignment.net_in

    def added(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> dict[int, float]:
        old, r = ctx.assignment.replicas[key], ctx.assignment.rate[key]
        return {b: r for b in replicas if b not in old}

    def shed(
        self, ctx: PlanningContext, shed: _Shedder, b: int, excess: Callable[[], float], threshold: float
    ) -> None:
        a = ctx.assignment

        def takes(dest: int, key: Key, index: int) -> bool:
            return a.net_in.get(dest, 0.0) + a.rate[key] <= threshold + EPS

        shed.move_replicas(b, excess, takes, leading=False)
        shed.move_replicas(b, excess, takes, leading=True)


class NetworkOutBalanceGoal(_BalanceGoal):
    """Network out per broker: max/mean <= 1 + tolerance."""

    name = "NetworkOutBalance"
    switch = "network_out"

    def max_mean(self, after: TrafficBalance) -> float | None:
        return after.network_out_max_mean

    def load(self, ctx: PlanningContext) -> dict[int, float]:
        return ctx.assignment.net_out

    def added(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> dict[int, float]:
        a = ctx.assignment
        old = a.replicas[key]
        out = a.out_of(key, len(replicas))
        return {replicas[0]: out - (a.out_of(key, len(old)) if old[0] == replicas[0] else 0.0)}

    def lead_weight(self, ctx: PlanningContext) -> Callable[[Key], float]:
        a = ctx.assignment
        return lambda k: a.out_of(k, len(a.replicas[k]))

    def shed(
        self, ctx: PlanningContext, shed: _Shedder, b: int, excess: Callable[[], float], threshold: float
    ) -> None:
        a = ctx.assignment
        shed.hand_over(b, excess, self.room(ctx, threshold))

        def takes(dest: int, key: Key, index: int) -> bool:
            return a.net_out.get(dest, 0.0) + a.out_of(key, len(a.replicas[key])) <= threshold + EPS

        shed.move_replicas(b, excess, takes, leading=True)


class LeaderBytesInBalanceGoal(_BalanceGoal):
    """The leaders' bytes in per broker: max/mean <= 1 + tolerance (switch: ``balance.networkOut``)."""

    name = "LeaderBytesInBalance"
    switch = "network_out"

    def max_mean(self, after: TrafficBalance) -> float | None:
        return after.leader_bytes_in_max_mean

    def load(self, ctx: PlanningContext) -> dict[int, float]:
        return ctx.assignment.lead_in

    def added(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> dict[int, float]:
        old = ctx.assignment.replicas[key]
        return {} if old[0] == replicas[0] else {replicas[0]: ctx.assignment.rate[key]}

    def shed(
        self, ctx: PlanningContext, shed: _Shedder, b: int, excess: Callable[[], float], threshold: float
    ) -> None:
        shed.hand_over(b, excess, self.room(ctx, threshold))

    def lead_weight(self, ctx: PlanningContext) -> Callable[[Key], float]:
        return ctx.assignment.rate.__getitem__


__all__ = [
    "LeaderBytesInBalanceGoal",
    "NetworkCapacityGoal",
    "NetworkInBalanceGoal",
    "NetworkOutBalanceGoal",
]
