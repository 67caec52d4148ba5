"""Soft goal: preferred leaders balanced across brokers, by reordering replicas (moves no data).

Met when the most-leading broker leads at most max(ceil(mean), floor((1 + tolerance) * mean))
partitions, over the brokers that keep data. Only topics whose policy sets ``balance.leaders`` are
reordered (and only towards followers that are in sync or new); the executor then runs a
preferred-leader election.

Handing a leadership from broker u to a follower v is one unit of flow on the edge u -> v, whose
capacity is the number of partitions u leads with v as an eligible follower. The goal finds the smallest
ceiling T >= the limit such that every broker's leaders above T can flow, along chains of hand-overs, to
brokers below T (a max flow on the broker graph, scipy's ``maximum_flow``; binary search on T), then
turns the flow into reorders. Single hand-overs alone stop when an over-loaded broker's followers are
all full (new brokers holding few, large partitions make that common); chains do not. When no ceiling at
the limit exists (brokers hold too few replicas to lead their share) the goal still brings the maximum
down to the lowest reachable ceiling and reports itself unmet.

Cost: one pass over the partitions builds the hand-over graph (``_Handovers``: per edge, the partitions
it can carry); after that, each round costs the broker graph plus the hand-overs its flow carries, since
reorders update the graph in place and each edge lists its own partitions. The limit is tried before
the binary search.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..context import PlanningContext
from ..state import Key

# Flow rounds. A round may fall short of its flow: a partition counts on the edge to each follower that
# may lead it, so a flow using several edges of one broker can ask for more distinct partitions than
# those edges hold together; the next round starts from the reorders made.
ROUNDS = 3


class _Handovers:
    """The hand-over graph: per (leader u, follower v) the partitions u leads that v may lead (an edge's
    capacity is their number). Built in one pass (``of``), then kept exact across reorders
    (``hand_over``), so a round's reorders cost what its flow carries, not a pass over the cluster."""

    def __init__(self, able: dict[Key, tuple[int, ...]], pairs: dict[tuple[int, int], list[Key]]) -> None:
        self.able = able  # per partition whose leader may change: the replicas that may lead it
        self.pairs = pairs

    @staticmethod
    def of(ctx: PlanningContext, active: Sequence[int]) -> _Handovers:
        """The graph of the working assignment. A partition's leader may change when its policy balances
        leaders, towards kept brokers in sync (or new to the partition); reorders do not change that."""
        a = ctx.assignment
        nodes = frozenset(active)
        balanced = ctx.balanced_topics("leaders")
        # A partition whose snapshot ISR holds all its replicas may be led by any of its replicas on a
        # kept broker: only the others (few) need their replicas checked one by one.
        lagging = {
            p.key: p
            for p in ctx.snapshot.partitions
            if p.isr != p.replicas and not set(p.replicas).issubset(p.isr)
        }
        able_of: dict[Key, tuple[int, ...]] = {}
        pairs: defaultdict[tuple[int, int], list[Key]] = defaultdict(list)
        for key, reps in a.replicas.items():
            if key[0] not in balanced:
                continue
            lag = lagging.get(key)
            if lag is None and nodes.issuperset(reps):
                able = tuple(reps)
            else:
                able = tuple(
                    b for b in reps if b in nodes and (lag is None or b not in lag.replicas or b in lag.isr)
                )
            if len(able) < 2:
                continue
            able_of[key] = able
            leader = reps[0]
            if leader in nodes:
                for f in able:
                    if f != leader:
                        pairs[(leader, f)].append(key)
        return _Handovers(able_of, pairs)

    def hand_over(self, key: Key, old: int, new: int) -> None:
        """``key``'s leadership went from ``old`` to ``new`` (both may lead it)."""
        pairs = self.pairs
        for f in self.able[key]:
            if f != old:
                held = pairs[(old, f)]
                held.remove(key)
                if not held:
                    del pairs[(old, f)]
            if f != new:
                pairs[(new, f)].append(key)


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
        graph = _Handovers.of(ctx, active)
        for _ in range(ROUNDS):
            if max(a.broker_leaders[b] for b in active) <= limit or not self._round(
                ctx, active, limit, graph
            ):
                return  # met, or the lowest reachable ceiling is reached

    def _round(
        self,
        ctx: PlanningContext,
        active: tuple[int, ...],
        limit: int,
        graph: _Handovers,
    ) -> bool:
        """One flow round: the lowest reachable ceiling, its flow turned into reorders. True when another
        round may lower the maximum further (the reorders fell short of the flow)."""
        import numpy as np  # imported here: shard tasks import the goals but never run this one
        from scipy.sparse import csr_array
        from scipy.sparse.csgraph import maximum_flow

        if not graph.pairs:
            return False
        leaders = ctx.assignment.broker_leaders
        n = len(active)
        s, t = n, n + 1  # source, sink; brokers are nodes 0..n-1 (``active`` is sorted)
        pairs = list(graph.pairs)
        ends = np.searchsorted(np.array(active), np.array(pairs, np.int64)).astype(np.int32)
        u, v = ends[:, 0], ends[:, 1]
        held = np.fromiter(map(len, graph.pairs.values()), np.int32, len(pairs))
        load = np.fromiter((leaders[b] for b in active), np.int64, n)
        brokers = np.arange(n, dtype=np.int32)
        rows = np.concatenate([u, np.full(n, s, np.int32), brokers])
        cols = np.concatenate([v, brokers, np.full(n, t, np.int32)])

        def flow(ceiling: int) -> Any | None:
            """The max flow moving every leadership above ``ceiling`` to room below it, or None when
            some cannot reach room."""
            excess, room = np.maximum(load - ceiling, 0), np.maximum(ceiling - load, 0)
            caps = np.concatenate([held, excess.astype(np.int32), room.astype(np.int32)])
            found = maximum_flow(csr_array((caps, (rows, cols)), shape=(n + 2, n + 2)), s, t)
            return found if found.flow_value == int(excess.sum()) else None

        # The smallest reachable ceiling: the limit itself first (one flow when it is reachable), else
        # a binary search above it; the current maximum is always reachable (no flow).
        lo, hi = limit, int(load.max())
        best = flow(lo)
        if best is not None:
            hi = lo
        else:
            lo += 1
        while lo < hi:
            mid = (lo + hi) // 2
            found = flow(mid)
            if found is not None:
                hi, best = mid, found
            else:
                lo = mid + 1
        if best is None:
            return False  # no ceiling below the current maximum is reachable
        on_pairs = np.asarray(best.flow[u, v]).ravel()
        carried = {pairs[i]: int(on_pairs[i]) for i in np.flatnonzero(on_pairs > 0)}
        return self._apply(ctx, carried, graph)

    def _apply(
        self,
        ctx: PlanningContext,
        carried: dict[tuple[int, int], int],
        graph: _Handovers,
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
                    graph.hand_over(key, u, v)
                    used.add(key)
                    n -= 1
                short = short or n > 0
            handed |= used
        return short
