"""Repacking on full dirs: a bounded branch and bound for replicas no dir has room for.

With little spare room a replica can be larger than the free bytes of every dir that may take it; an
exact packing then exists only if other replicas leave a dir first (the dir's room grows by their
size, and they need room elsewhere). ``repack`` searches for that: the replicas still to place are
taken largest first; each goes to a dir where it fits (best fit first) or to a dir freed by moving
some of its replicas out (the cheapest set that frees enough: a replica this plan placed there costs
nothing extra, it is copied anyway; a snapshot replica of a partition the plan changes anyway costs
its bytes, an extra copy; partitions that break no rule are never moved), and the moved-out replicas
join the queue. Branch and bound on the extra bytes, explored as a limited discrepancy search (paths
that leave the heuristic's first choice at most k times, k = 0, 1, ...) of at most ``MAX_NODES``
nodes; the cheapest complete packing found wins. Every hard rule is kept: a replica goes only to a
broker that may hold it and not already holding its partition, on a dir that may receive it with
room, and every partition the search touches ends maximally spread with its replication factor
(checked again, with every dir's room, before anything is applied).

When both searches above find nothing (the room is within a few percent of what an exact packing
needs: keeping most replicas where they are leaves the room in the wrong dirs), a last search
``reopen``s the repair: every replica of every partition the hard goal changes anyway is taken out
and placed again, largest first, its own dir first (back home costs nothing, any other dir costs
its bytes: a network or a local copy), then best fit, by the same limited discrepancy branch and
bound (``MAX_NODES`` nodes, ``FIT_OPTIONS`` dirs per replica; no eviction: every movable replica is
already being placed; a branch is cut when its bytes plus the copies every packing still owes, the
replicas with no home left to go back to, reach the best found). When home first finds no packing,
best fit first (home or not) is tried once more: it finds packings home first misses, at more
bytes. Bounded by ``FRESH_SLOTS`` replicas: on a large repair it does not run. It finds packings
the eviction searches miss (kept replicas of several partitions trading dirs and brokers) at the
price of more bytes, so it only runs when they found nothing.

Beside the last one (they are heuristic within their budgets: a packing can need exactly one kept
replica moved, which a limited discrepancy search may never reach, or find one copying far more), an
**exact** search runs on clusters of at most ``ROOM_DIRS`` dirs, and its packing is taken when the last
search finds none or one copying more bytes: sets of at most ``MAX_RELEASE``
kept replicas of the repaired partitions are moved out of the way, cheapest first (the empty set first),
and for each a depth-first search tries every dir with room for every replica to place, cut when the
replicas left need more bytes than the dirs that can take the smallest of them have (room smaller than
every replica left is wasted). The first set that packs is the cheapest: the packing itself copies
nothing more. Bounded by ``RELEASE_SETS`` sets, ``RELEASE_NODES`` nodes and ``RELEASE_WORK`` dirs
examined. Pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .context import PlanningContext
from .state import DirKey, Key

MAX_NODES = 30_000  # search nodes of one search (each places one replica)
MAX_WORK = 2_000_000  # dirs examined and subset-search steps of one search (large clusters)
FRESH_SLOTS = 500  # the whole repair is packed afresh when it places at most this many replicas
COVER_NODES = 64  # nodes of the subset search for one dir's replicas to move out
FIT_OPTIONS = 6  # dirs tried where the replica fits as it is
EVICT_OPTIONS = 4  # dirs tried that need replicas moved out first
EVICTIONS = 2  # times one partition's replica may be moved out again on one search path
ROOM_DIRS = 400  # the exact search runs on clusters of at most this many dirs (its room bound scans them)
MAX_RELEASE = 2  # kept replicas the exact search may move out of the way
RELEASE_SETS = 2_000  # sets of them it tries, cheapest first
RELEASE_NODES = 200_000  # its search nodes over all the sets
RELEASE_WORK = 10_000_000  # its dirs examined (options and room bound) over all the sets

Rules = Callable[[Key, Sequence[int]], bool]  # the hard goal's verdict on a partition's brokers
Order = Callable[[Sequence[int], Sequence[int]], list[int]]  # (current, target) -> replica order


@dataclass(slots=True)
class _Option:
    extra: int  # bytes copied beyond the replica itself
    rank: tuple[int, ...]
    broker: int
    path: str
    evict: list[tuple[Key, int]] = field(default_factory=list)  # (partition, broker) leaving the dir


Release = tuple[tuple[Key, int], ...]  # kept replicas (partition, broker) moved out of the way


def release_sets(
    kept: Sequence[tuple[int, Key, int]], limit: int, pairs: bool = True
) -> list[tuple[int, Release]]:
    """The ``limit`` cheapest sets of kept replicas to move out of the way, cheapest first: the empty
    set, each replica of ``kept`` (size, partition, broker; sorted) alone and, with ``pairs``, each two
    of different partitions at most ``limit`` apart in ``kept``. Ties go by the replicas, so the answer
    is the first ``limit`` of all those sets sorted. The pairs come off a heap in order of their bytes
    (``kept`` is sorted, so ``(i, j + 1)`` never costs less than ``(i, j)``) until ``limit`` of them and
    every one tied with the last are out: O(n + limit log n), not the n x limit pairs."""
    sets: list[tuple[int, Release]] = [(0, ())]
    sets += [(size, ((k, b),)) for size, k, b in kept]
    n = len(kept)
    heap = [(kept[i][0] + kept[i + 1][0], i, i + 1) for i in range(n - 1)] if pairs else []
    heapq.heapify(heap)
    found, last = 0, -1
    while heap and (found < limit or heap[0][0] == last):
        last, i, j = heapq.heappop(heap)
        if j + 1 < min(n, i + 1 + limit):
            heapq.heappush(heap, (kept[i][0] + kept[j + 1][0], i, j + 1))
        if kept[i][1] != kept[j][1]:
            sets.append((last, ((kept[i][1], kept[i][2]), (kept[j][1], kept[j][2]))))
            found += 1
    sets.sort()
    return sets[:limit]


class Repacker:
    """One search over the assignment in ``ctx`` (a copy of its dirs' room and of the touched
    partitions' placements); ``apply`` writes the best packing found back."""

    def __init__(
        self,
        ctx: PlanningContext,
        keys: list[Key],
        target_rf: Callable[[Key], int],
        rules: Rules,
        order: Order,
        changing: Callable[[Key], bool],
        reopen: bool = False,
        home_first: bool = True,
        exact: bool = False,
    ) -> None:
        self.ctx = ctx
        self.reopen = reopen
        self.exact = exact
        self.home_first = home_first
        self.changing = changing
        self.rf = target_rf
        self.rules = rules
        self.order = order
        self.evicted: dict[Key, int] = {}
        self.movable = {k for k in ctx.assignment.replicas if self._movable(k)}
        self.version: dict[DirKey, int] = {}
        self.covers: dict[tuple[DirKey, int, int], tuple[int, list[Key]] | None] = {}
        a, e = ctx.assignment, ctx.eligibility
        self.free: dict[DirKey, int] = dict(a.free)  # per volume (``Assignment.free``)
        self.vol = a.vol
        self.where: dict[Key, dict[int, str | None]] = {}
        self.residents: dict[DirKey, set[Key]] = {(b, p): set() for b, paths in e.dirs.items() for p in paths}
        for b, keys_on in a.by_broker.items():
            for k, d in keys_on.items():
                if d is not None and (b, d) in self.residents:
                    self.residents[(b, d)].add(k)
        self.origin: dict[Key, dict[int, str | None]] = {}
        self.pending: list[tuple[int, Key]] = []  # (-size, key), one entry per replica to place
        self.missing: dict[Key, int] = {}
        for key in sorted(set(keys)):
            self._open(key)
        self.nodes = 0
        self.limit = MAX_NODES
        self.work = 0
        self.best: int | None = None
        self.solution: dict[Key, dict[int, str | None]] | None = None
        # reopen: replicas of each partition that can go home to no dir (a copy whatever the packing)
        self.unavoidable = {k: self._away(k) for k in self.missing} if reopen else {}
        self.paid: dict[Key, int] = {}
        self.floor = sum(n * self.ctx.assignment.size[k] for k, n in self.unavoidable.items())
        self.receivers = self._receivers() if exact else []
        self.max_work = RELEASE_WORK if exact else MAX_WORK

    # ---- state --------------------------------------------------------------------------------------

    def _placement(self, key: Key) -> dict[int, str | None]:
        if key not in self.where:
            a = self.ctx.assignment
            self.where[key] = dict(zip(a.replicas[key], a.dirs[key], strict=True))
            p = self.ctx.snapshot.partition(*key)
            self.origin[key] = dict(zip(p.replicas, p.log_dirs, strict=True)) if p is not None else {}
            self.missing.setdefault(key, 0)
        return self.where[key]

    def _open(self, key: Key) -> None:
        """Take out the replicas of ``key`` that may not stay where they are or that this plan placed
        (all of them when ``reopen`` and the partition may move: they are placed again by the search);
        queue one entry per replica the RF then lacks."""
        e = self.ctx.eligibility
        size = self.ctx.assignment.size[key]
        here = self._placement(key)
        reopen = self.reopen and key in self.movable
        for b, d in list(here.items()):
            moved = not e.may_keep(b, d, size) or not e.broker_may_keep(b) or self.origin[key].get(b) != d
            if reopen or moved:
                self._leave(key, b)  # may not stay, placed by this plan, or reopened: placed again here
        while len(here) > self.rf(key):
            self._leave(key, max(here))
        for _ in range(self.rf(key) - len(here) - self.missing[key]):
            self._queue(key)

    def _queue(self, key: Key) -> None:
        self.missing[key] += 1
        bisect.insort(self.pending, (-self.ctx.assignment.size[key], key))

    def _unqueue(self, key: Key) -> None:
        self.missing[key] -= 1
        self.pending.remove((-self.ctx.assignment.size[key], key))

    def _leave(self, key: Key, broker: int) -> str | None:
        d = self._placement(key).pop(broker)
        if d is not None:
            self.version[(broker, d)] = self.version.get((broker, d), 0) + 1
            self.residents[(broker, d)].discard(key)
            v = self.vol.get((broker, d))
            if v is not None:
                self.free[v] += self.ctx.assignment.size[key]
        return d

    def _enter(self, key: Key, broker: int, path: str | None) -> None:
        self._placement(key)[broker] = path
        if path is not None:
            self.version[(broker, path)] = self.version.get((broker, path), 0) + 1
            self.residents[(broker, path)].add(key)
            v = self.vol.get((broker, path))
            if v is not None:
                self.free[v] -= self.ctx.assignment.size[key]

    # ---- search -------------------------------------------------------------------------------------

    def _away(self, key: Key) -> int:
        """How many of the replicas ``key`` still lacks cannot go back to their own dir (each such one
        is a copy in any packing): a bound on the bytes still to pay, for pruning."""
        e, here = self.ctx.eligibility, self.where[key]
        homes = sum(
            1
            for b, d in self.origin[key].items()
            if b not in here
            and d is not None
            and self._may_hold(key, b)
            and e.dir_may_receive(b, d)
            and (b, d) not in e.drained
        )
        return max(0, self.missing[key] - homes)

    def _receivers(self) -> list[DirKey]:
        """The dirs a replica may be placed on (whatever the partition), for the room bound; none when
        one of them has no known room (the bound says nothing then) or when there are more than
        ``ROOM_DIRS`` (the bound's scan would cost more than it saves)."""
        e = self.ctx.eligibility
        out = [
            (b, path)
            for b in sorted(e.dirs)
            if e.may_receive(b) or e.broker_may_keep(b)
            for path in e.dirs[b]
            if e.dir_may_receive(b, path) and (b, path) not in e.drained
        ]
        if len(out) > ROOM_DIRS or any(dk not in self.vol for dk in out):
            return []
        return sorted({self.vol[dk] for dk in out})  # each volume once

    def _room_short(self) -> bool:
        """Whether the replicas still to place cannot fit whatever the packing: their bytes exceed the
        room of the dirs that can take at least the smallest of them (room smaller than every replica
        left is wasted). A relaxation (it ignores which broker may take which replica), so it never
        cuts a branch that holds a packing."""
        if not self.receivers or not self.pending:
            return False
        smallest = -self.pending[-1][0]
        need = -sum(s for s, _ in self.pending)
        self.work += len(self.receivers)
        room = 0
        for dk in self.receivers:
            f = self.free[dk]
            if f >= smallest:
                room += f
        return need > room

    def search(self, nodes: int) -> int | None:
        """Limited discrepancy search (paths that leave the heuristic's first choice at most k times,
        k = 0, 1, 2, ...) within ``nodes`` nodes; the extra bytes of the best packing found."""
        self.limit = nodes
        for k in range(len(self.pending) + 1):
            if not self.pending or self._spent():
                break
            self._search(0, k)
        return self.best

    def release_search(self) -> int | None:
        """The cheapest set of at most ``MAX_RELEASE`` replicas, kept where they are, whose moving
        elsewhere lets every replica to place fit (``exact``: a depth-first search over every dir with
        room, cut by the room bound); the bytes the packing copies (the replicas to place and the set).
        Sets are tried cheapest first, the first that packs wins: a packing costs nothing beyond the
        set. Bounded by ``RELEASE_SETS`` sets, ``RELEASE_NODES`` nodes and ``RELEASE_WORK`` dirs."""
        size = self.ctx.assignment.size
        kept = sorted(
            (size[k], k, b)
            for k in self.where
            if k in self.movable
            for b, d in self.where[k].items()
            if d is not None and self.origin[k].get(b) == d
        )
        placing = -sum(s for s, _ in self.pending)  # copied whatever the packing
        self.limit = RELEASE_NODES
        for cost, release in release_sets(kept, RELEASE_SETS, pairs=MAX_RELEASE >= 2):
            if self._spent():
                break
            moved = [(k, b, self._leave(k, b)) for k, b in release]
            for k, _, _ in moved:
                self._queue(k)
            self._search(0, len(self.pending))
            for k, b, d in reversed(moved):
                self._unqueue(k)
                if self.solution is None:
                    self._enter(k, b, d)
            if self.solution is not None:
                self.best = placing + cost
                return self.best
        return None

    def apply(self) -> bool:
        """Apply the best packing found to the assignment; whether it was (and kept every rule)."""
        return self.solution is not None and self._apply(self.solution)

    def _spent(self) -> bool:
        return self.nodes >= self.limit or self.work >= self.max_work

    def _search(self, extra: int, slack: int) -> None:
        if self._spent():
            return
        if not self.pending:
            if self.best is None or extra < self.best:
                self.best = extra
                self.solution = {k: dict(v) for k, v in self.where.items()}
            return
        self.nodes += 1
        if self._room_short():
            return
        _, key = self.pending[0]
        self._unqueue(key)
        for i, opt in enumerate(self._options(key, slack)):
            if i > slack:
                break
            owed = 0  # the floor this option pays off: a copy the partition had to make anyway
            if opt.extra and self.paid.get(key, 0) < self.unavoidable.get(key, 0):
                owed = self.ctx.assignment.size[key]
            if self.best is not None and extra + opt.extra + self.floor - owed >= self.best:
                continue
            self.floor -= owed
            self.paid[key] = self.paid.get(key, 0) + (1 if owed else 0)
            moved = [(k, b, self._leave(k, b)) for k, b in opt.evict]
            for k, _, _ in moved:
                self._queue(k)
                self.evicted[k] = self.evicted.get(k, 0) + 1
            self._enter(key, opt.broker, opt.path)
            self._search(extra + opt.extra, slack - i)
            self._leave(key, opt.broker)
            self.floor += owed
            self.paid[key] -= 1 if owed else 0
            for k, b, d in reversed(moved):
                self.evicted[k] -= 1
                self._unqueue(k)
                self._enter(k, b, d)
            if self._spent():
                break
        self._queue(key)

    def _may_hold(self, key: Key, broker: int) -> bool:
        e = self.ctx.eligibility
        if e.may_receive(broker):
            return True
        return broker in self.origin.get(key, {}) and e.broker_may_keep(broker)

    def _options(self, key: Key, slack: int) -> list[_Option]:
        """Where the replica may go, in the order tried: dirs where it fits (best fit first), then
        dirs that need replicas moved out (cheapest first); the latter only when ``slack`` reaches
        them."""
        ctx, e = self.ctx, self.ctx.eligibility
        size = ctx.assignment.size[key]
        here = self.where[key]
        tree = ctx.tree_for(key)
        last = self.missing[key] == 0
        fits: list[_Option] = []
        full: list[tuple[DirKey, int]] = []
        self.work += len(e.dirs)
        for b in sorted(e.dirs):
            if b in here or not self._may_hold(key, b):
                continue
            if tree is not None and last and tree.violation([*here, b]) is not None:
                continue
            for path in e.dirs[b]:
                if not e.dir_may_receive(b, path) or (b, path) in e.drained:
                    continue
                home = self.origin[key].get(b) == path
                if home and b not in here and not self.reopen:
                    continue  # back where it was moved out from: not a packing, a cycle
                v = self.vol.get((b, path))
                free = None if v is None else self.free[v]
                if free is None or free >= size:
                    left = -1 if free is None else free - size
                    if self.reopen:  # every replica is placed afresh: one away from home is a copy
                        rank = (not home, left, b) if self.home_first else (left, not home, b)
                        fits.append(_Option(0 if home else size, rank, b, path))
                    else:
                        fits.append(_Option(0, (left, b), b, path))
                    continue
                full.append(((b, path), size - free))
        fits.sort(key=lambda o: o.rank)
        if self.exact:  # every dir where it fits, nothing moved out of the way
            return fits
        fits = fits[:FIT_OPTIONS]
        if slack < len(fits) or self.reopen:
            return fits
        evictions: list[_Option] = []
        for (b, path), need in full:
            cover = self._cover((b, path), need)
            if cover is not None:
                cost, keys = cover
                evictions.append(_Option(cost, (cost, len(keys), b), b, path, [(k, b) for k in keys]))
        evictions.sort(key=lambda o: o.rank)
        return fits + evictions[:EVICT_OPTIONS]

    def _cost(self, key: Key, broker: int) -> int:
        """Bytes a replica moved out of its dir costs: nothing for one this plan placed there."""
        a = self.ctx.assignment
        here = self.where[key] if key in self.where else dict(zip(a.replicas[key], a.dirs[key], strict=True))
        origin = self.origin.get(key)
        if origin is None:
            p = self.ctx.snapshot.partition(*key)
            origin = dict(zip(p.replicas, p.log_dirs, strict=True)) if p is not None else {}
        return a.size[key] if origin.get(broker) == here.get(broker) else 0

    def _movable(self, key: Key) -> bool:
        """Only partitions the hard goal changes anyway (``changing``) may have replicas moved out: a
        partition that breaks no rule is left alone (and the sharded planner never sees it); nor one
        under a move budget."""
        if not self.changing(key):
            return False
        policy = self.ctx.assignment.policy(key)
        return policy is None or not (policy.move_budget.max_moves or policy.move_budget.max_bytes)

    def _cover(self, dirkey: DirKey, need: int) -> tuple[int, list[Key]] | None:
        """The cheapest replicas of the dir whose bytes add up to ``need`` (few nodes of a subset
        search: free ones and large ones first); None when the dir cannot free that much."""
        memo = (dirkey, self.version.get(dirkey, 0), need)
        if memo not in self.covers:
            if len(self.covers) > 100_000:
                self.covers.clear()
            self.covers[memo] = self._find_cover(dirkey, need)
        return self.covers[memo]

    def _find_cover(self, dirkey: DirKey, need: int) -> tuple[int, list[Key]] | None:
        a = self.ctx.assignment
        b = dirkey[0]
        cands = sorted(
            (self._cost(k, b), -a.size[k], k)
            for k in self.residents[dirkey]
            if k in self.movable and self.evicted.get(k, 0) < EVICTIONS
        )
        sizes = [-s for _, s, _ in cands]
        if sum(sizes) < need:
            return None
        suffix = [0] * (len(cands) + 1)
        for i in range(len(cands) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + sizes[i]
        best: tuple[int, list[int]] | None = None
        nodes = 0
        chosen: list[int] = []

        def walk(i: int, cost: int, got: int) -> None:
            nonlocal best, nodes
            nodes += 1
            if got >= need:
                if best is None or cost < best[0]:
                    best = (cost, list(chosen))
                return
            if i == len(cands) or got + suffix[i] < need or nodes > COVER_NODES:
                return
            if best is not None and cost >= best[0]:
                return
            chosen.append(i)
            walk(i + 1, cost + cands[i][0], got + sizes[i])
            chosen.pop()
            walk(i + 1, cost, got)

        single = [i for i in range(len(cands)) if sizes[i] >= need]
        if single:
            i = min(single, key=lambda j: (cands[j][0], sizes[j]))
            best = (cands[i][0], [i])
        walk(0, 0, 0)
        self.work += nodes + len(cands)
        if best is None:
            return None
        return best[0], [cands[i][2] for i in best[1]]

    # ---- result -------------------------------------------------------------------------------------

    def _apply(self, solution: dict[Key, dict[int, str | None]]) -> bool:
        """Set every touched partition's placement (kept replicas in their slots); revert all and
        return False if any ends breaking a rule or a dir ends over its room."""
        ctx, a = self.ctx, self.ctx.assignment
        before = {k: (list(a.replicas[k]), list(a.dirs[k])) for k in solution}
        was = dict(a.free)  # a volume above the disk headroom limit already may stay there, no higher
        charges: list[tuple[Key, int]] = []
        for key, placed in sorted(solution.items()):
            order = self.order(a.replicas[key], sorted(placed))
            copies = sum(1 for b in order if b not in a.replicas[key] and b not in self.origin[key])
            charges.append((key, copies))
            a.set_placement(key, order, [placed[b] for b in order])
        e = ctx.eligibility
        ok = all(f >= min(0, was[v]) for v, f in a.free.items()) and all(
            self.rules(k, a.replicas[k])
            and all(e.may_keep(b, d, a.size[k]) for b, d in zip(a.replicas[k], a.dirs[k], strict=True))
            for k in solution
        )
        if not ok:
            for key, (reps, dirs) in before.items():
                a.set_placement(key, reps, dirs)
            return False
        for key, copies in charges:
            policy = a.policy(key)
            if policy is not None and copies:
                ctx.charge(policy, copies * a.size[key])
        return True


def repack(
    ctx: PlanningContext,
    keys: list[Key],
    target_rf: Callable[[Key], int],
    rules: Rules,
    order: Order,
    changing: Callable[[Key], bool],
) -> bool:
    """Place the replicas of ``keys`` that have no room, moving other replicas out of the way when
    needed (bounded search, see the module docstring); whether every one was placed. ``rules`` is
    the hard goal's verdict on a partition's brokers, ``order`` its replica order (kept replicas
    stay in their slots); only partitions ``changing`` names (those the hard goal changes anyway)
    have replicas moved out of the way. The whole repair is packed afresh when it is small (every
    replica it places is placed again: the greedy's choices may be what blocks), else only ``keys``;
    when neither finds a packing, every replica of those partitions is placed afresh (``reopen``), and
    on a small cluster the exact search's packing is taken instead when it copies less (or when
    ``reopen`` finds none)."""
    rest = (target_rf, rules, order, changing)
    every = [*keys, *(k for k in ctx.assignment.replicas if changing(k))]
    fresh = Repacker(ctx, every, *rest)
    if len(fresh.pending) <= FRESH_SLOTS and fresh.search(MAX_NODES) is not None and fresh.apply():
        return True
    local = Repacker(ctx, keys, *rest)
    if local.search(MAX_NODES) is not None and local.apply():
        return True
    exact = Repacker(ctx, every, *rest, exact=True)
    small = exact.receivers and len(exact.pending) <= FRESH_SLOTS
    cheapest = exact.release_search() if small else None  # bytes copied
    for home_first in (True, False):
        whole = Repacker(ctx, every, *rest, reopen=True, home_first=home_first)
        if len(whole.pending) > FRESH_SLOTS:
            break
        found = whole.search(MAX_NODES)  # bytes copied
        if found is not None and (cheapest is None or found <= cheapest) and whole.apply():
            return True
        if found is not None and cheapest is not None:
            break  # the exact search's packing copies less
    return cheapest is not None and exact.apply()
