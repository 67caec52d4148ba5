"""Soft goal: preferred leaders balanced across brokers, by reordering replicas (moves no data).

Met when the most-leading broker leads at most max(ceil(mean), floor((1 + tolerance) * mean))
partitions, over the brokers that keep data. Only topics whose policy sets ``balance.leaders`` are
reordered (and only towards followers that are in sync or new); the executor then runs a
preferred-leader election.

Handing a leadership from broker u to a follower v is one unit of flow on the edge u -> v, whose
capacity is the number of partitions u leads with v as an eligible follower. The goal finds the smallest
ceiling T >= the limit such that every broker's leaders above T can flow, along chains of hand-overs,
to brokers below T (a max flow on the broker graph, binary search on T), then turns the flow into
reorders. Single hand-overs alone stop when an over-loaded broker's followers are all full (new brokers
holding few, large partitions make that common); chains do not. When no ceiling at the limit exists
(brokers hold too few replicas to lead their share) the goal still brings the maximum down to the
lowest reachable ceiling and reports itself unmet.

Cost: one pass over the partitions builds the hand-over graph (``_Handovers``: per edge, the partitions
it can carry); after that, each round costs the broker graph plus the hand-overs its flow carries, since
reorders update the graph in place and each edge lists its own partitions. The limit is tried before
the binary search, as it is usually reachable.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from ..context import PlanningContext
from ..state import Assignment, Key

ROUNDS = 3  # flow rounds: a round may fall short when one partition was counted on two of its edges


class _Flow:
    """Dinic's max flow on a small graph (brokers + source + sink), capacities as ints."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.head: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def add(self, u: int, v: int, c: int) -> int:
        self.head[u].append(len(self.to))
        self.to.append(v)
        self.cap.append(c)
        self.head[v].append(len(self.to))
        self.to.append(u)
        self.cap.append(0)
        return len(self.to) - 2

    def add_many(self, arcs: Sequence[tuple[int, int, int]]) -> int:
        """``add`` for each (u, v, capacity) in order; arc i's id is the returned id + 2 * i."""
        first = len(self.to)
        head, to, cap = self.head, self.to, self.cap
        e = first
        for u, v, _ in arcs:
            head[u].append(e)
            head[v].append(e + 1)
            e += 2
        to.extend(x for u, v, _ in arcs for x in (v, u))
        cap.extend(x for _, _, c in arcs for x in (c, 0))
        return first

    def run(self, s: int, t: int, need: int) -> int:
        total = 0
        to, cap, head = self.to, self.cap, self.head
        while total < need:
            level = [-1] * self.n
            level[s] = 0
            queue = deque([s])
            while queue:
                u = queue.popleft()
                for e in head[u]:
                    if cap[e] > 0 and level[to[e]] < 0:
                        level[to[e]] = level[u] + 1
                        queue.append(to[e])
            if level[t] < 0:
                break
            it = [0] * self.n
            while total < need:
                pushed = self._augment(s, t, need - total, level, it)
                if not pushed:
                    break
                total += pushed
        return total

    def _augment(self, s: int, t: int, limit: int, level: list[int], it: list[int]) -> int:
        """One augmenting path in the level graph (iterative DFS); returns what it carried."""
        to, cap, head = self.to, self.cap, self.head
        path: list[int] = []
        u = s
        while True:
            if u == t:
                f = min([limit, *(cap[e] for e in path)])
                for e in path:
                    cap[e] -= f
                    cap[e ^ 1] += f
                return f
            edges = head[u]
            while it[u] < len(edges):
                e = edges[it[u]]
                if cap[e] > 0 and level[to[e]] == level[u] + 1:
                    break
                it[u] += 1
            if it[u] == len(edges):
                if not path:
                    return 0
                level[u] = -1  # dead end: never visited again in this phase
                e = path.pop()
                u = to[e ^ 1]
                it[u] += 1
                continue
            e = edges[it[u]]
            path.append(e)
            u = to[e]


class _Handovers:
    """The hand-over graph: per (leader u, follower v) the partitions u leads that v may lead (an edge's
    capacity is their number). Built once, then kept exact across reorders (``hand_over``), so a
    round's reorders cost what its flow carries, not a pass over the cluster."""

    def __init__(self, a: Assignment, may_lead: dict[Key, tuple[int, ...]], active: Sequence[int]) -> None:
        nodes = set(active)
        self.pairs: dict[tuple[int, int], list[Key]] = {}
        pairs, replicas = self.pairs, a.replicas
        for key, able in may_lead.items():
            leader = replicas[key][0]
            if leader not in nodes:
                continue
            for f in able:
                if f != leader:
                    held = pairs.get((leader, f))
                    if held is None:
                        pairs[(leader, f)] = [key]
                    else:
                        held.append(key)

    def hand_over(self, key: Key, old: int, new: int, able: tuple[int, ...]) -> None:
        """``key``'s leadership went from ``old`` to ``new`` (both may lead it)."""
        pairs = self.pairs
        for f in able:
            if f != old:
                held = pairs[(old, f)]
                held.remove(key)
                if not held:
                    del pairs[(old, f)]
            if f != new:
                pairs.setdefault((new, f), []).append(key)


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
        if max(a.broker_leaders[b] for b in active) <= limit:
            return
        may_lead = self._may_lead(ctx, frozenset(active))
        graph = _Handovers(a, may_lead, active)
        for _ in range(ROUNDS):
            if max(a.broker_leaders[b] for b in active) <= limit or not self._round(
                ctx, active, limit, may_lead, graph
            ):
                return  # met, or the lowest reachable ceiling is reached

    def _may_lead(self, ctx: PlanningContext, active: frozenset[int]) -> dict[Key, tuple[int, ...]]:
        """Per partition whose leader may change (its policy balances leaders): the replicas that may lead
        it, kept brokers in sync (or new to the partition). Reorders do not change it."""
        a = ctx.assignment
        original_of = ctx.snapshot.partition
        balanced = {
            t for t, p in a.topic_policy.items() if p is not None and p.balance.leaders and p.enforced
        }
        out: dict[Key, tuple[int, ...]] = {}
        for key, reps in a.replicas.items():
            if key[0] not in balanced:
                continue
            original = original_of(*key)
            if original is None:
                able = tuple(b for b in reps if b in active)
            else:
                before, in_sync = original.replicas, original.isr
                able = tuple(b for b in reps if b in active and (b not in before or b in in_sync))
            if len(able) > 1:
                out[key] = able
        return out

    def _round(
        self,
        ctx: PlanningContext,
        active: tuple[int, ...],
        limit: int,
        may_lead: dict[Key, tuple[int, ...]],
        graph: _Handovers,
    ) -> bool:
        """One flow round: the lowest reachable ceiling, its flow turned into reorders. True when another
        round may lower the maximum further (the reorders fell short of the flow)."""
        a = ctx.assignment
        loads = {b: a.broker_leaders[b] for b in active}
        node = {b: i for i, b in enumerate(active)}
        edges = {pair: len(keys) for pair, keys in graph.pairs.items()}
        if not edges:
            return False
        pairs = sorted(edges)
        s, t = len(active), len(active) + 1
        base = _Flow(len(active) + 2)
        ends = {b: (base.add(s, node[b], 0), base.add(node[b], t, 0)) for b in active}
        first = base.add_many([(node[u], node[v], edges[(u, v)]) for u, v in pairs])
        ids = dict(zip(pairs, range(first, first + 2 * len(pairs), 2), strict=True))
        initial = list(base.cap)

        def flow(ceiling: int) -> bool:
            base.cap[:] = initial
            need = 0
            for b, n in loads.items():
                into, out = ends[b]
                base.cap[into] = max(n - ceiling, 0)
                base.cap[out] = max(ceiling - n, 0)
                need += max(n - ceiling, 0)
            return base.run(s, t, need) == need

        # The smallest reachable ceiling: the limit itself first (usually reachable: one flow), else a
        # binary search above it; the current maximum is always reachable (no flow).
        lo, hi = limit, max(loads.values())
        best: list[int] | None = None
        if flow(lo):
            hi, best = lo, list(base.cap)
        else:
            lo += 1
        while lo < hi:
            mid = (lo + hi) // 2
            if flow(mid):
                hi, best = mid, list(base.cap)
            else:
                lo = mid + 1
        if best is None:
            return False  # no ceiling below the current maximum is reachable
        carried = {pair: edges[pair] - best[e] for pair, e in ids.items() if best[e] < edges[pair]}
        return self._apply(ctx, carried, graph, may_lead)

    def _apply(
        self,
        ctx: PlanningContext,
        carried: dict[tuple[int, int], int],
        graph: _Handovers,
        may_lead: dict[Key, tuple[int, ...]],
    ) -> bool:
        """Hand over ``carried[(u, v)]`` leaderships from u to v, each partition at most once; partitions
        the plan changes anyway first (a reorder there costs no extra reassignment). True when some edge
        found fewer partitions than its flow (one partition counted on two of u's edges)."""
        a = ctx.assignment
        original_of = ctx.snapshot.partition
        wanted: dict[int, dict[int, int]] = {}
        for (u, v), n in carried.items():
            wanted.setdefault(u, {})[v] = n
        handed: set[Key] = set()  # one hand-over per partition and round: u leads what it led before
        short = False
        for u, per_v in sorted(wanted.items()):
            used: set[Key] = set()
            for v, n in sorted(per_v.items()):
                candidates: list[tuple[bool, Key]] = []
                for key in graph.pairs.get((u, v), ()):
                    if key in handed:
                        continue
                    original = original_of(*key)
                    same = original is not None and list(original.replicas) == a.replicas[key]
                    candidates.append((same, key))
                for _, key in sorted(candidates):
                    if n == 0:
                        break
                    a.make_leader(key, a.replicas[key].index(v))
                    graph.hand_over(key, u, v, may_lead[key])
                    used.add(key)
                    n -= 1
                short = short or n > 0
            handed |= used
        return short
