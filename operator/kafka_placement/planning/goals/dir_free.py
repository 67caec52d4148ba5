"""Dir balance for no bytes: the plan's copies and departures chosen where they even out a broker's dirs.

Before the dir balance goal pays local copies, a broker with a dir above its threshold may be evened out
by bytes arriving on its other dirs: every byte brought to a broker raises its dirs' thresholds
((1 + tolerance) / dirs per byte), and the bytes land on its emptiest dir. The plan already copies
replicas to new brokers (rack repairs, decommissions, balance); sending one of them to such a broker
instead of the one the earlier goals chose is still one copy of the same bytes. Issue 56 measured it: at
100k partitions on 1,000 brokers (``scenario all``), 183 brokers neither above their broker-balance limit
nor receiving from it still held 2.6 GB above their dirs' thresholds after the repair, which the dir goal
then copied locally, where the lower bound (planning/plan_quality.py) lets each of them take copies up to
its limit (``redirect_arrivals``).

The other free choice is which holder of a repaired partition leaves: the repair drops one replica of a
partition breaking the rack spread and copies it to a broker of another rack, and dropping another holder
(one on a dir above its threshold) instead, keeping the one dropped, copies the same bytes
(``return_departed``; the lower bound credits each dir with every such replica it holds).

A change is made only when every earlier goal accepts the partition's new broker list
(``PlanningContext.accepts``), the receiving broker stays within its broker-balance limit (or, without
broker balance, under the fullest broker's load), its dir has room, and the dir excess of both brokers
together falls: the other broker loses bytes, which lowers its own thresholds. Only replicas the plan
brings to a broker move, or return to a dir that held them in the snapshot (any other would be a new
copy), only of topics whose policy asks for dir balance. Bounded (``ROUNDS`` rounds, ``CHECKS`` rule
checks per broker and round, ``TRIES`` and ``RETURN_TRIES`` replicas examined per change) and
deterministic (brokers by excess, then id; replicas by size, then in the snapshot's order). Pure: no I/O.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import TypeVar

from .. import shares
from ..context import PlanningContext
from ..state import Key
from .reclaim import returnable

TRIES = 64  # replicas examined per redirect (closest in size to what evens the broker out first)
RETURN_TRIES = 16  # replicas examined per return (each asks who may take it back)
ROUNDS = 3  # each step's moves change which brokers are hot and what they may take: the steps again
CHECKS = 32  # rule checks per broker (``accepts``: the costliest question)

Arrival = tuple[int, Key, int]  # (size, partition, slot): a replica the plan brings to a broker
Held = tuple[int, Key, str]  # (size, partition, dir): a replica a broker holds as in the snapshot
T = TypeVar("T", Arrival, Held)
_size = itemgetter(0)


def even_dirs_for_free(ctx: PlanningContext, tol: float, balanced: frozenset[str]) -> int:
    """Both steps of the module's docstring, returns first (measured: at 100k partitions on 1,000 brokers
    1.0092x the lower bound against 1.0106x the other way round), ``ROUNDS`` times while they move
    anything; the replicas moved."""
    if _hot(ctx, tol) is None:
        return 0
    arrivals, held = _changes(ctx, balanced)  # (kept up to date by the steps' moves)
    moved = 0
    for _ in range(ROUNDS):
        now = return_departed(ctx, tol, held) + redirect_arrivals(ctx, tol, arrivals)
        moved += now
        if not now:
            break
    return moved


def return_departed(ctx: PlanningContext, tol: float, held: dict[int, list[Held]]) -> int:
    """Where a broker's dir above its threshold holds a replica (of ``held``, each broker's by size:
    ``_changes``) of a partition the plan took off another broker, keep that one and drop this one
    instead (``held`` follows); returns the number of replicas exchanged so."""
    found = _hot(ctx, tol)
    if found is None:
        return 0
    hot, limit, paths = found
    a = ctx.assignment
    moved = 0
    for broker in hot:
        checks = [CHECKS]
        items = held.get(broker, [])
        while (pick := _best_return(ctx, broker, paths, tol, limit, items, checks)) is not None:
            item, slot, back, path = pick
            _drop(items, item)
            bisect.insort(held.setdefault(back, []), (item[0], item[1], path), key=_size)
            a.move(item[1], slot, back, path)
            moved += 1
    return moved


def redirect_arrivals(ctx: PlanningContext, tol: float, arrivals: list[Arrival]) -> int:
    """Send replicas the plan brings to brokers (``arrivals``, by size: ``_changes``) to brokers whose
    dirs they even out; returns the number of replicas redirected (each still an arrival, on its new
    broker: in ``arrivals`` again for the next round)."""
    found = _hot(ctx, tol)
    if found is None:
        return 0
    hot, limit, paths = found
    hot = [b for b in hot if limit[b] > ctx.assignment.broker_bytes[b]]
    sent: list[Arrival] = []
    for broker in hot:
        checks = [CHECKS]
        while (pick := _best(ctx, broker, paths, tol, limit, arrivals, checks)) is not None:
            item, path = pick
            ctx.assignment.move(item[1], item[2], broker, path)
            _drop(arrivals, item)
            sent.append(item)
    for item in sent:
        bisect.insort(arrivals, item, key=_size)
    return len(sent)


def _changes(ctx: PlanningContext, balanced: frozenset[str]) -> tuple[list[Arrival], dict[int, list[Held]]]:
    """In one pass over the partitions the plan changes, of topics asking for dir balance: the replicas
    it brings to a broker (not there in the snapshot), by size; and per broker, by size, the replicas it
    keeps on the dir the snapshot has them on, of partitions that lose another holder."""
    a = ctx.assignment
    partition, sizes, replicas, dirs = ctx.snapshot.at, a.size, a.replicas, a.dirs
    arrivals: list[Arrival] = []
    held: dict[int, list[Held]] = {}
    touched = a.touched
    for key in replicas:  # (in the snapshot's order: deterministic, where the set's order is not)
        if key not in touched or key[0] not in balanced:
            continue
        p, reps = partition(key), replicas[key]
        if p is None:
            arrivals.extend((sizes[key], key, slot) for slot in range(len(reps)))
            continue
        before = p.replicas
        dropped = False
        for b in before:
            if b not in reps:
                dropped = True
                break
        for slot, b in enumerate(reps):
            if b not in before:
                arrivals.append((sizes[key], key, slot))
            elif dropped:
                at = dirs[key][slot]
                if at is not None and at == p.log_dirs[before.index(b)]:
                    held.setdefault(b, []).append((sizes[key], key, at))
    arrivals.sort(key=_size)  # (stable: equal sizes in the snapshot's order)
    for items in held.values():
        items.sort(key=_size)
    return arrivals, held


def _drop(items: list[T], item: T) -> None:
    """Remove ``item`` from ``items`` (sorted by size, stably)."""
    i = bisect.bisect_left(items, item[0], key=_size)
    while items[i] != item:
        i += 1
    del items[i]


def _hot(
    ctx: PlanningContext, tol: float
) -> tuple[list[int], Mapping[int, float], dict[int, list[str]]] | None:
    """The brokers with a dir above its threshold, most excess first; each broker's limit (broker
    balance's, or the fullest broker's load without it) and dirs that keep data. None: nothing to do."""
    a, e = ctx.assignment, ctx.eligibility
    active = e.active_brokers
    total = sum(a.broker_bytes[b] for b in active)
    if total <= 0 or len(active) < 2:
        return None
    btol = ctx.tolerance("brokers")
    if btol is not None:
        limit: Mapping[int, float] = shares.limits(e.capacity, active, total, btol, True)
    else:
        limit = dict.fromkeys(active, float(max(a.broker_bytes[b] for b in active)))
    paths = {b: e.keeping_dirs(b) for b in active}
    hot = sorted(
        (-x, b)
        for b in active
        if len(paths[b]) >= 2 and e.may_receive(b) and (x := _excess(ctx, b, paths[b], tol)) > 0
    )
    return ([b for _, b in hot], limit, paths) if hot else None


def _best_return(
    ctx: PlanningContext,
    broker: int,
    paths: Mapping[int, Sequence[str]],
    tol: float,
    limit: Mapping[int, float],
    items: list[Held],
    checks: list[int],
) -> tuple[Held, int, int, str] | None:
    """Of ``items`` (``_changes``) on ``broker``'s dirs above their thresholds, the replica whose
    partition the plan took off another broker that may take it back on the dir it held it on, lowering
    the two brokers' dir excess the most (among the ``RETURN_TRIES`` closest in size to that excess):
    (the item, its slot, that broker, dir)."""
    a, e = ctx.assignment, ctx.eligibility
    mine = paths[broker]
    before = _excess(ctx, broker, mine, tol)
    if before <= 0 or checks[0] <= 0:
        return None
    threshold = shares.dir_thresholds(a.dir_bytes, broker, mine, tol, e.sizes.get(broker))
    over = {d for d in mine if a.dir_bytes[(broker, d)] > threshold[d]}
    best: tuple[float, Held, int, int, str] | None = None
    theirs: dict[int, float] = {}  # the dir excess of the brokers that could take a replica back
    cap = items[-1][0] if items else 0
    for item in _closest(items, int(before), cap, RETURN_TRIES, lambda i: i[2] in over):
        size, key, at = item
        reps = a.replicas[key]
        slot = reps.index(broker)
        mine_gain: float | None = None
        for back, path in returnable(ctx, key):
            if back not in limit or a.broker_bytes[back] + size > limit[back]:
                continue
            if mine_gain is None:
                mine_gain = before - _excess(ctx, broker, mine, tol, at, -size)
            gain = mine_gain
            their_paths = paths.get(back, [])
            if path in their_paths and len(their_paths) >= 2:
                if back not in theirs:
                    theirs[back] = _excess(ctx, back, their_paths, tol)
                gain += theirs[back] - _excess(ctx, back, their_paths, tol, path, size)
            if gain <= 0 or (best is not None and gain <= best[0]):
                continue
            if checks[0] <= 0:
                break
            if _accepted(ctx, key, slot, back, checks):
                best = (gain, item, slot, back, path)
    return None if best is None else best[1:]


def _best(
    ctx: PlanningContext,
    broker: int,
    paths: Mapping[int, Sequence[str]],
    tol: float,
    limit: Mapping[int, float],
    pool: list[Arrival],
    checks: list[int],
) -> tuple[Arrival, str] | None:
    """The arrival elsewhere whose redirect to ``broker`` lowers the two brokers' dir excess the most
    among the ``TRIES`` closest in size to the bytes that even ``broker`` out, with its dir there."""
    a, e = ctx.assignment, ctx.eligibility
    mine = paths[broker]
    before = _excess(ctx, broker, mine, tol)
    room = limit[broker] - a.broker_bytes[broker]
    if before <= 0 or room <= 0 or checks[0] <= 0:
        return None
    # bytes whose arrival on the other dirs lifts the hottest dir's threshold to it
    n = len(mine)
    hottest = max(a.dir_bytes[(broker, p)] for p in mine)
    aim = max(1, int(n * hottest / (1 + tol) - a.broker_bytes[broker]))
    best: tuple[float, Arrival, str] | None = None
    theirs: dict[int, float] = {}  # the dir excess of the brokers the arrivals were going to
    for item in _closest(pool, aim, int(room)):
        size, key, slot = item
        reps = a.replicas[key]
        source = reps[slot]
        if broker in reps:
            continue
        path = a.best_dir(e, broker, size)
        if path is None or a.dir_bytes[(broker, path)] >= hottest:
            continue
        gain = before - _excess(ctx, broker, mine, tol, path, size)
        src_dir = a.dirs[key][slot]
        src_paths = paths.get(source)
        if src_paths is not None and src_dir in src_paths and len(src_paths) >= 2:
            if source not in theirs:
                theirs[source] = _excess(ctx, source, src_paths, tol)
            gain += theirs[source] - _excess(ctx, source, src_paths, tol, src_dir, -size)
        if gain <= 0 or (best is not None and gain <= best[0]):
            continue
        if checks[0] <= 0:
            break
        if _accepted(ctx, key, slot, broker, checks):
            best = (gain, item, path)
    return None if best is None else (best[1], best[2])


def _accepted(ctx: PlanningContext, key: Key, slot: int, broker: int, checks: list[int]) -> bool:
    """Whether every earlier goal accepts ``key``'s replica at ``slot`` on ``broker`` (one of ``checks``)."""
    checks[0] -= 1
    candidate = list(ctx.assignment.replicas[key])
    candidate[slot] = broker
    return ctx.accepts(key, candidate)


def _closest(
    pool: Sequence[T], aim: int, cap: int, tries: int = TRIES, keep: Callable[[T], bool] | None = None
) -> Iterator[T]:
    """Up to ``tries`` items of ``pool`` (sorted by size, their first field, stably) of at most ``cap``
    bytes, nearest ``aim`` first; with ``keep``, only those it keeps (the others are passed over)."""
    top = bisect.bisect_right(pool, cap, key=_size)
    hi = min(bisect.bisect_left(pool, aim, key=_size), top)
    lo = hi - 1
    left = tries
    while left > 0:
        if hi < top and (lo < 0 or pool[hi][0] - aim <= aim - pool[lo][0]):
            item = pool[hi]
            hi += 1
        elif lo >= 0:
            item = pool[lo]
            lo -= 1
        else:
            return
        if keep is None or keep(item):
            left -= 1
            yield item


def _excess(
    ctx: PlanningContext, broker: int, paths: Sequence[str], tol: float, at: str | None = None, delta: int = 0
) -> float:
    """``shares.dir_excess`` of ``broker`` in the plan as it stands."""
    return shares.dir_excess(
        ctx.assignment.dir_bytes, broker, paths, tol, ctx.eligibility.sizes.get(broker), at, delta
    )
