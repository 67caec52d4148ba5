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

Cost: one vectorised pass over the partitions builds the hand-over graph (``_Handovers``: arrays of
each partition's leader and of the replicas that may lead it); each round counts the edges' capacities
over those arrays (NumPy), solves the flow on the broker graph and groups the partitions of the brokers
its flow leaves by follower, so the Python work of a round is the hand-overs it makes and the partitions
it considers for them. Reorders update the arrays in place. The limit is tried before the binary search.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

from ...model.intents import Intents
from ...model.snapshot import PartitionState
from ..context import PlanningContext, Verdict, balance_verdict
from ..plan_summary import PlanSummary
from ..state import Key

# Flow rounds. A round may fall short of its flow: a partition counts on the edge to each follower that
# may lead it, so a flow using several edges of one broker can ask for more distinct partitions than
# those edges hold together; the next round starts from the reorders made.
ROUNDS = 3


class _Handovers:
    """The hand-over graph as arrays over the partitions whose leader may change (``keys``): each one's
    leader and the replicas that may lead it (``able``, in replica order, -1 where a replica may not),
    as indexes into the sorted active brokers. An edge (u, v)'s capacity is the number of partitions u
    leads that v may lead: one count over the arrays per round (``edges``). Built in one vectorised pass
    over the assignment (``of``) and kept exact across hand-overs (``hand_over`` sets one leader), so a
    round's reorders cost what its flow carries; building it per partition in Python, with a list of
    partitions per edge, took seconds at a million partitions."""

    def __init__(self, active: Sequence[int], keys: list[Key], leader: Any, able: Any) -> None:
        self.active = tuple(active)
        self.keys = keys
        self.leader = leader  # int32 per partition: the index of its leader
        self.able = able  # int32 partitions x widest replica list: indexes of those that may lead, or -1

    @staticmethod
    def of(ctx: PlanningContext, active: Sequence[int]) -> _Handovers:
        """The graph of the working assignment. A partition's leader may change when its policy balances
        leaders and its leader is active, towards active brokers in sync (or new to the partition);
        reorders do not change that."""
        import numpy as np

        a = ctx.assignment
        nodes = np.asarray(active, np.int64)
        balanced = ctx.balanced_topics("leaders")
        keys = [k for k in a.replicas if k[0] in balanced]
        if not keys or not len(nodes):
            return _Handovers(active, [], np.zeros(0, np.int32), np.zeros((0, 0), np.int32))
        reps = [a.replicas[k] for k in keys]
        lens = np.fromiter(map(len, reps), np.int64, len(reps))
        flat = np.fromiter(chain.from_iterable(reps), np.int64, int(lens.sum()))
        at = np.minimum(np.searchsorted(nodes, flat), len(nodes) - 1)
        index = np.where(nodes[at] == flat, at, -1).astype(np.int32)  # -1: not an active broker
        starts = np.cumsum(lens) - lens
        able = np.full((len(keys), int(lens.max())), -1, np.int32)
        able[np.repeat(np.arange(len(keys)), lens), np.arange(len(flat)) - np.repeat(starts, lens)] = index
        leader = able[:, 0].copy()
        # A follower out of the snapshot's ISR (few partitions) may not lead.
        lagging = [
            p for p in ctx.snapshot.partitions if p.isr != p.replicas and not set(p.replicas).issubset(p.isr)
        ]
        if lagging:
            row = {k: i for i, k in enumerate(keys)}
            for p in lagging:
                i = row.get(p.key)
                if i is not None:
                    for j, b in enumerate(a.replicas[p.key]):
                        if b in p.replicas and b not in p.isr:
                            able[i, j] = -1
        kept = (leader >= 0) & ((able >= 0).sum(axis=1) >= 2)
        return _Handovers(
            active, [k for k, keep in zip(keys, kept, strict=True) if keep], leader[kept], able[kept]
        )

    def edges(self) -> tuple[Any, Any, Any]:
        """(u, v, held): the edges that carry partitions, as broker indexes, and how many each carries."""
        import numpy as np

        n = len(self.active)
        lead = self.leader[:, None].astype(np.int64)
        codes = (lead * n + self.able)[(self.able >= 0) & (self.able != lead)]
        found, held = np.unique(codes, return_counts=True)
        return (found // n).astype(np.int32), (found % n).astype(np.int32), held.astype(np.int32)

    def led_by(self) -> Callable[[int], Any]:
        """The partitions (rows) each broker index leads now."""
        import numpy as np

        order = np.argsort(self.leader, kind="stable")
        bounds = np.searchsorted(self.leader[order], np.arange(len(self.active) + 1))
        return lambda u: order[bounds[u] : bounds[u + 1]]

    def may_lead(self) -> dict[Key, tuple[int, ...]]:
        """Per partition of the graph, the brokers that may lead it (in replica order)."""
        return {
            k: tuple(self.active[j] for j in row if j >= 0)
            for k, row in zip(self.keys, self.able.tolist(), strict=True)
        }

    def hand_over(self, row: int, new: int) -> None:
        """Partition ``row``'s leadership went to broker index ``new`` (one that may lead it)."""
        self.leader[row] = new


class LeaderBalanceGoal:
    """Preferred leaders per broker: max/mean <= 1 + tolerance (integer rounding allowed)."""

    name = "LeaderBalance"
    is_hard = False

    def __init__(self) -> None:
        self._limit: int | None = None  # the ceiling of leaders per broker (once optimize ran)

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """A later goal may not give a broker at the ceiling one more leader (only the network goals
        change leaders after this one)."""
        if self._limit is None or not replicas:
            return True
        current = ctx.assignment.replicas.get(key)
        if current is not None and current and current[0] == replicas[0]:
            return True
        return ctx.assignment.broker_leaders.get(replicas[0], 0) + 1 <= self._limit

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Preferred leaders max/mean after the plan."""
        return balance_verdict(intents, "leaders", summary.balance_after.leaders_max_mean)

    def optimize(self, ctx: PlanningContext) -> None:
        a, e = ctx.assignment, ctx.eligibility
        tol = ctx.tolerance("leaders")
        active = e.active_brokers
        if tol is None or len(active) < 2:
            return
        mean = sum(a.broker_leaders[b] for b in active) / len(active)
        limit = max(math.ceil(mean), math.floor((1 + tol) * mean))
        self._limit = limit
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

        u, v, held = graph.edges()
        if not len(held):
            return False
        leaders = ctx.assignment.broker_leaders
        n = len(active)
        s, t = n, n + 1  # source, sink; brokers are nodes 0..n-1 (``active`` is sorted)
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
        on_edges = np.asarray(best.flow[u, v]).ravel()
        carried = {(int(u[i]), int(v[i])): int(on_edges[i]) for i in np.flatnonzero(on_edges > 0)}
        return self._apply(ctx, carried, graph)

    def _apply(
        self,
        ctx: PlanningContext,
        carried: dict[tuple[int, int], int],
        graph: _Handovers,
    ) -> bool:
        """Hand over ``carried[(u, v)]`` leaderships from broker index u to v, each partition at most
        once; partitions the plan changes anyway first (a reorder there costs no extra reassignment). True
        when some edge found fewer partitions than its flow (one partition counted on two of u's edges)."""
        import numpy as np

        a = ctx.assignment
        original_of, touched = ctx.snapshot.partition, a.touched
        wanted: dict[int, dict[int, int]] = {}
        for (u, v), n in carried.items():
            wanted.setdefault(u, {})[v] = n
        led_by = graph.led_by()  # as the round starts: a partition handed to u this round stays put
        handed: set[int] = set()  # one hand-over per partition and round
        short = False
        for u, per_v in sorted(wanted.items()):
            # u's partitions per follower that may lead them: one grouping per broker, not per edge
            mine = led_by(u)
            sub = graph.able[mine]
            at, col = np.nonzero((sub >= 0) & (sub != u))
            follower = sub[at, col]
            order = np.argsort(follower, kind="stable")
            rows_by_v, follower = mine[at[order]], follower[order]
            firsts, starts = np.unique(follower, return_index=True)
            ends = np.append(starts[1:], len(follower))
            bounds = zip(starts.tolist(), ends.tolist(), strict=True)
            span = dict(zip(firsts.tolist(), bounds, strict=True))  # follower -> its rows' (lo, hi)
            for v, n in sorted(per_v.items()):
                lo, hi = span.get(v, (0, 0))
                candidates: list[tuple[bool, Key, int]] = []
                for row in rows_by_v[lo:hi].tolist():
                    if row in handed:  # handed away to an earlier v of u's
                        continue
                    key = graph.keys[row]
                    # a partition no goal set keeps the snapshot's replicas (no lookup needed)
                    same = key not in touched or _unchanged(original_of(*key), a.replicas[key])
                    candidates.append((same, key, row))
                broker = graph.active[v]
                for _, key, row in sorted(candidates):
                    if n == 0:
                        break
                    index = a.replicas[key].index(broker)
                    if not ctx.reorder_ok(key, _led_by(a.replicas[key], index)):
                        continue  # a network goal refuses this broker the partition's traffic
                    a.make_leader(key, index)
                    graph.hand_over(row, v)
                    handed.add(row)
                    n -= 1
                short = short or n > 0
        return short


def _led_by(replicas: list[int], index: int) -> list[int]:
    """``replicas`` reordered so the one at ``index`` leads (``Assignment.make_leader``'s order)."""
    out = list(replicas)
    out[0], out[index] = out[index], out[0]
    return out


def _unchanged(original: PartitionState | None, replicas: list[int]) -> bool:
    """The snapshot has the partition with these replicas in this order."""
    return original is not None and list(original.replicas) == replicas
