"""Soft goal: bytes (or replicas, on an empty cluster) balanced across brokers within the tolerance.

Met when max/mean <= 1 + tolerance over the brokers that keep data: each broker at most its limit
(planning/shares.py: an even share of the bytes, or its share by disk capacity where brokers' disks
differ in size). Only brokers above their limit shed replicas, and only as many bytes as their excess:
the largest replica that fits in the excess first, then the smallest that clears it, so the bytes moved
stay close to the lower bound (sum of excesses). A replica goes to the broker with the most room that
stays under its limit and that every earlier goal accepts (rack spread, cordons, decommissions). Only
topics whose policy sets ``balance.brokers`` move; every broker's load counts. A broker sheds the
replicas the plan brings to it first: sent to another broker instead they are still one copy each, so
they balance at no extra bytes (the sharded planner's shards, each seeing only its share, leave more of
those to redirect); then, for no bytes either, replicas it holds of partitions the repair took off
another holder, which keeps its replica instead (``_return_held``); only then replicas that cost a copy.
"""

from __future__ import annotations

import bisect
import heapq
import math
from bisect import bisect_left
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import replace

from ...model.intents import Intents
from .. import shares
from ..context import PlanningContext, Verdict, balance_verdict
from ..plan_summary import PlanSummary
from ..state import Key
from .reclaim import reclaim, returnable

SWAP_CHECKS = 4000  # rule checks per blocked broker when looking for an exchange
SWAP_DESTS = 16  # least-loaded brokers considered as the other side of an exchange


class BrokerBalanceGoal:
    """Bytes per broker: max/mean <= 1 + tolerance."""

    name = "BrokerBalance"
    is_hard = False

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        return True  # later goals only reorder or move within a broker: broker loads do not change

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Bytes max/mean after the plan; when unmet and provably out of reach (reach.py), why."""
        found = balance_verdict(intents, "brokers", summary.balance_after.broker_bytes_max_mean)
        why = summary.broker_balance_unreachable
        if found is not None and not found.met and why:
            return replace(found, unreachable=why)
        return found

    def optimize(self, ctx: PlanningContext) -> None:
        a, e = ctx.assignment, ctx.eligibility
        tol = ctx.tolerance("brokers")
        active = e.active_brokers
        if tol is None or len(active) < 2:
            return
        by_bytes = sum(a.broker_bytes[b] for b in active) > 0
        load = a.broker_bytes if by_bytes else a.broker_replicas
        limit = shares.limits(e.capacity, active, sum(load[b] for b in active), tol, by_bytes)
        receivers = _ByLoad([b for b in active if e.may_receive(b)], load, limit)
        # fullest first: by load over the limit (with even limits, by load)
        for broker in sorted(active, key=lambda b: (limit[b] - load[b], b)):
            if load[broker] > limit[broker]:  # replicas arriving with the plan first: they cost no more
                self._shed(ctx, broker, limit, receivers, by_bytes, arriving_only=True)
            if load[broker] > limit[broker] and by_bytes:  # then holders the plan dropped take theirs back
                _return_held(ctx, broker, limit, receivers)
            if load[broker] > limit[broker]:
                self._shed(ctx, broker, limit, receivers, by_bytes)
        # A broker shed while brokers after it were still above their limits found no room there
        # for an exchange; once every broker has shed, those have room: one more pass (bounded, and
        # only over the brokers still above their limits, usually none).
        for broker in sorted(active, key=lambda b: (limit[b] - load[b], b)):
            if load[broker] > limit[broker]:
                self._shed(ctx, broker, limit, receivers, by_bytes)
        if by_bytes:  # copies the repair and the shedding made that balance lets the plan take back
            reclaim(ctx, limit, receivers)

    def _shed(
        self,
        ctx: PlanningContext,
        broker: int,
        limit: Mapping[int, float],
        receivers: _ByLoad,
        by_bytes: bool,
        arriving_only: bool = False,
    ) -> None:
        """Move replicas off ``broker`` until it is under its limit. ``arriving_only``: only replicas
        the plan brings to it (sent elsewhere, they are still one copy each), and no exchanges."""
        a = ctx.assignment
        load = a.broker_bytes if by_bytes else a.broker_replicas
        # Candidates per dir, so the broker sheds from its fullest dir first: leaving bytes then also
        # even out its dirs and the dir goal has less to move afterwards.
        movable: dict[str | None, list[tuple[int, Key]]] = {}
        balanced = ctx.balanced_topics("brokers")
        for key, path in a.by_broker[broker].items():
            if arriving_only and (key not in a.touched or ctx.held_dir(key, broker)[0]):
                continue  # held in the snapshot (a partition no goal set is where the snapshot has it)
            if key[0] in balanced:
                movable.setdefault(path, []).append(((a.size[key] if by_bytes else 1), key))
        for items in movable.values():
            items.sort()
        count_mean = sum(a.broker_replicas[b] for b in receivers.at) / max(1, len(receivers.at))
        failed: set[Key] = set()
        while load[broker] > limit[broker] and any(movable.values()):
            excess = load[broker] - limit[broker]
            hot_first = sorted(movable, key=lambda d: -a.dir_bytes.get((broker, d), 0) if d else 0)
            # Near the end, compare finishing now with the one or two replicas whose bytes clear the
            # excess by the least (a bounded subset sum) against one more greedy step then finishing:
            # the greedy alone ends with one replica overshooting by up to its size.
            peek = self._greedy_pick(ctx, broker, excess, count_mean, by_bytes, movable, hot_first, failed)
            if peek is not None and excess <= 2 * peek[1]:
                hot = self._hot_dirs(ctx, broker, excess, movable)
                finish = _finishing(movable, excess, failed, hot)
                if finish is not None:
                    after = _finishing(movable, excess - peek[1], failed | {peek[2]}, hot)
                    if after is None or finish[0] <= peek[1] + after[0]:
                        self._move_set(ctx, broker, finish[1], limit, receivers, load, movable, failed)
                        continue
            # Aim at replicas of size excess / (replicas this broker has too many): the same bytes move,
            # and replica (hence leader) counts even out too. Never overshoot unless nothing else fits.
            moved = False
            while (
                pick := self._greedy_pick(
                    ctx, broker, excess, count_mean, by_bytes, movable, hot_first, failed
                )
            ) is not None:
                d, weight, key = pick
                if self._move_one(ctx, key, broker, weight, limit, receivers, load):
                    _drop(movable[d], (weight, key))
                    moved = True
                    break
                failed.add(key)
            if moved:
                continue
            # Nothing fits in the excess any more: the smallest finishing set, whatever it overshoots.
            finish = _finishing(movable, excess, failed, self._hot_dirs(ctx, broker, excess, movable))
            if finish is not None and self._move_set(
                ctx, broker, finish[1], limit, receivers, load, movable, failed
            ):
                continue
            if arriving_only:
                return
            if self._relay(ctx, broker, limit, receivers, load, movable, by_bytes):
                continue
            if not self._swap(ctx, broker, limit, receivers, load, movable, failed, by_bytes):
                return

    @staticmethod
    def _hot_dirs(
        ctx: PlanningContext, broker: int, excess: float, movable: dict[str | None, list[tuple[int, Key]]]
    ) -> list[str | None]:
        """Dirs a finishing set may come from: with dir balance asked, those above the mean the
        broker's dirs will have once it sheds its excess (shedding from the others would unbalance its
        dirs, which the dir goal then pays for with local copies); all of them otherwise."""
        if ctx.tolerance("log_dirs") is None or len(movable) < 2:
            return list(movable)
        above = _above_share(ctx, broker, excess)
        return [d for d in movable if d is None or d in above]

    @staticmethod
    def _greedy_pick(
        ctx: PlanningContext,
        broker: int,
        excess: float,
        count_mean: float,
        by_bytes: bool,
        movable: dict[str | None, list[tuple[int, Key]]],
        hot_first: list[str | None],
        failed: set[Key],
    ) -> tuple[str | None, int, Key] | None:
        """The next replica the greedy would try: within the excess, closest to the size that also
        evens out replica counts, from the fullest dir first (None when none is within the excess)."""
        surplus = ctx.assignment.broker_replicas[broker] - count_mean
        target = excess / surplus if by_bytes and surplus > 1 else excess
        goal, cap = int(target), int(excess)
        for d in hot_first:
            for i in _closest_first(movable[d], goal, cap, False):
                weight, key = movable[d][i]
                if key not in failed:
                    return d, weight, key
        return None

    def _move_set(
        self,
        ctx: PlanningContext,
        broker: int,
        items: list[tuple[str | None, int, Key]],
        limit: Mapping[int, float],
        receivers: _ByLoad,
        load: dict[int, int],
        movable: dict[str | None, list[tuple[int, Key]]],
        failed: set[Key],
    ) -> bool:
        """Move each of ``items`` off ``broker``; False when one could not move (it is marked failed)."""
        for d, weight, key in items:
            if load[broker] <= limit[broker]:
                break
            if not self._move_one(ctx, key, broker, weight, limit, receivers, load):
                failed.add(key)
                return False
            _drop(movable[d], (weight, key))
        return True

    def _swap(
        self,
        ctx: PlanningContext,
        broker: int,
        limit: Mapping[int, float],
        receivers: _ByLoad,
        load: dict[int, int],
        movable: dict[str | None, list[tuple[int, Key]]],
        failed: set[Key],
        by_bytes: bool,
    ) -> bool:
        """When no single move can leave ``broker``: exchange one of its replicas with a smaller replica
        of a broker under its limit (both partitions keep every earlier goal's rules; the other
        broker stays under its limit). An exchange that clears the excess is preferred, the one
        costing the fewest bytes; otherwise the one shedding the most, and the loop tries again."""
        a, e = ctx.assignment, ctx.eligibility
        if not by_bytes:
            return False
        excess = load[broker] - limit[broker]
        balanced = ctx.balanced_topics("brokers")
        mine = _by_weight(movable)
        best: tuple[int, int, Key, int, Key] | None = None  # rank, their key, dest, other key
        best_rank: tuple[int, int] | None = None
        checks = 0
        for _, dest in receivers.order[:SWAP_DESTS]:
            room = limit[dest] - load[dest]
            if dest == broker or room <= 0:
                continue
            theirs = sorted(
                (a.size[k], k) for k in a.by_broker[dest] if broker not in a.replicas[k] and k[0] in balanced
            )
            for w, _, key in mine:
                if dest in a.replicas[key]:
                    continue
                # their replica of size v: shed = w - v in (0, excess], dest gains w - v <= room
                # their replica of size v < w: the other broker gains w - v, at most its room; the
                # smallest such v sheds the most for the fewest bytes
                j = bisect.bisect_left(theirs, (math.ceil(w - room), ("", -1)))
                for v, other in theirs[j:]:
                    if v >= w:
                        break
                    checks += 1
                    if checks > SWAP_CHECKS:
                        break
                    # clearing the excess first, then the fewest bytes; else the most bytes shed
                    rank = (0, w + v) if w - v >= excess else (1, v - w)
                    if best_rank is not None and rank >= best_rank:
                        break  # a larger v is no better
                    if self._swap_ok(ctx, key, broker, dest, other):
                        best, best_rank = (rank[0], rank[1], key, dest, other), rank
                        break
            if checks > SWAP_CHECKS:
                break
        if best is None:
            return False
        _, _, key, dest, other = best
        pkey, pother = a.policy(key), a.policy(other)
        if pkey is None or pother is None:
            return False
        i, j = a.replicas[key].index(broker), a.replicas[other].index(dest)
        di, dj = a.best_dir(e, dest, a.size[key]), a.best_dir(e, broker, a.size[other])
        if di is None or dj is None:
            return False
        a.move(key, i, dest, di)
        a.move(other, j, broker, dj)
        receivers.moved(broker, dest)
        ctx.charge(pkey, a.size[key])
        ctx.charge(pother, a.size[other])
        for items in movable.values():
            for n, item in enumerate(items):
                if item[1] == key:
                    items.pop(n)
                    break
        return True

    def _relay(
        self,
        ctx: PlanningContext,
        broker: int,
        limit: Mapping[int, float],
        receivers: _ByLoad,
        load: dict[int, int],
        movable: dict[str | None, list[tuple[int, Key]]],
        by_bytes: bool,
    ) -> bool:
        """When no single move can leave ``broker``: move one of its replicas to a broker that has no
        room for it yet, making that room by sending replicas the plan brings to that broker to other
        brokers instead (each still one copy). It costs the replica's bytes alone, where an exchange
        costs both sides' (a repair that filled the brokers with room first otherwise leaves a broker
        holding two large replicas above its limit, and exchanges of large replicas follow). The
        smallest replica that clears the excess first, then the largest below it."""
        a = ctx.assignment
        if not by_bytes:
            return False
        excess = load[broker] - limit[broker]
        mine = _by_weight(movable)  # failed: no plain move
        order = [m for m in mine if m[0] >= excess] + [m for m in reversed(mine) if m[0] < excess]
        checks = 0
        redirects_of: dict[int, tuple[list[tuple[Key, int, int, str]], list[int]]] = {}  # per dest
        for w, d, key in order:
            policy = a.policy(key)
            if policy is None or not ctx.within_budget(policy, a.size[key]):
                continue
            reps = a.replicas[key]
            index = reps.index(broker)
            for _, dest in receivers.order[:SWAP_DESTS]:
                if dest == broker or dest in reps:
                    continue
                checks += 1
                if checks > SWAP_CHECKS:
                    return False
                cand = list(reps)
                cand[index] = dest
                if not ctx.accepts(key, cand):
                    continue
                if dest not in redirects_of:  # (nothing changes until a relay is made: once per dest)
                    redirects_of[dest] = self._redirects(ctx, dest, broker, limit)
                redirects = _enough(*redirects_of[dest], load[dest] + w - limit[dest])
                if redirects is None:
                    continue
                undo: list[tuple[Key, int, int, str | None]] = []
                for k, i, to, there in redirects:
                    undo.append((k, i, dest, a.dirs[k][i]))
                    a.move(k, i, to, there)
                path = _home_dir(ctx, key, dest) or a.best_dir(ctx.eligibility, dest, a.size[key])
                if path is None:  # the dir room did not follow the broker's
                    for k, i, back, old in reversed(undo):
                        a.move(k, i, back, old)
                    continue
                a.move(key, index, dest, path)
                ctx.charge(policy, a.size[key])
                receivers.moved(broker, dest, *(to for _, _, to, _ in redirects))
                _drop(movable[d], (w, key))
                return True
        return False

    @staticmethod
    def _redirects(
        ctx: PlanningContext, dest: int, broker: int, limit: Mapping[int, float]
    ) -> tuple[list[tuple[Key, int, int, str]], list[int]]:
        """Replicas the plan brings to ``dest`` that could be sent to other brokers under their limits
        instead (key, slot, broker, dir), largest first, one per other broker (their dirs' room then
        holds), none to ``broker``; and the bytes each prefix frees on ``dest`` (``_enough`` takes the
        shortest prefix that frees what a relay needs)."""
        a, e = ctx.assignment, ctx.eligibility
        balanced = ctx.balanced_topics("brokers")
        arriving = sorted(
            (
                (a.size[k], k)
                for k in a.by_broker[dest]
                if k in a.touched and k[0] in balanced and not ctx.held_dir(k, dest)[0]
            ),
            reverse=True,
        )
        roomiest = sorted(e.active_brokers, key=lambda b: (a.broker_bytes[b] - limit[b], b))
        used: set[int] = {broker, dest}
        out: list[tuple[Key, int, int, str]] = []
        freed: list[int] = []
        for v, k in arriving:
            reps = a.replicas[k]
            i = reps.index(dest)
            for z in roomiest:
                if a.broker_bytes[z] + v > limit[z]:
                    break
                if z in used or z in reps or not e.may_receive(z):
                    continue
                cand = list(reps)
                cand[i] = z
                if not ctx.accepts(k, cand):
                    continue
                path = _home_dir(ctx, k, z) or a.best_dir(e, z, v)
                if path is None:
                    continue
                out.append((k, i, z, path))
                freed.append((freed[-1] if freed else 0) + v)
                used.add(z)
                break
        return out, freed

    def _swap_ok(self, ctx: PlanningContext, key: Key, broker: int, dest: int, other: Key) -> bool:
        a, e = ctx.assignment, ctx.eligibility
        if not (e.may_receive(dest) and e.may_receive(broker)):
            return False
        for k, frm, to in ((key, broker, dest), (other, dest, broker)):
            policy = a.policy(k)
            if policy is None or not ctx.within_budget(policy, a.size[k]):
                return False
            cand = list(a.replicas[k])
            cand[cand.index(frm)] = to
            if not ctx.accepts(k, cand):
                return False
        return (
            a.best_dir(e, dest, a.size[key]) is not None and a.best_dir(e, broker, a.size[other]) is not None
        )

    def _move_one(
        self,
        ctx: PlanningContext,
        key: Key,
        broker: int,
        weight: int,
        limit: Mapping[int, float],
        receivers: _ByLoad,
        load: dict[int, int],
    ) -> bool:
        a, e = ctx.assignment, ctx.eligibility
        policy = a.policy(key)
        size = a.size[key]
        if policy is None or not ctx.within_budget(policy, size):
            return False
        reps = a.replicas[key]
        index = reps.index(broker)
        place, rejected = ctx.receiver_place(key), set()
        for _, dest in receivers.order:
            if load[dest] + weight > limit[dest]:
                return False  # receivers are sorted by room: none further down has more
            if dest in reps or place(dest) in rejected:
                continue
            candidate = list(reps)
            candidate[index] = dest
            if not ctx.accepts(key, candidate):
                rejected.add(place(dest))  # every broker of that place gets the same answer
                continue
            path = _home_dir(ctx, key, dest) or a.best_dir(e, dest, size)
            if path is None:
                continue
            a.move(key, index, dest, path)
            receivers.moved(broker, dest)
            ctx.charge(policy, size)
            return True
        return False


class _ByLoad:
    """The brokers that may receive, by room under their limits (``order``: (load + slack, broker),
    most room first; ``slack`` = the largest limit minus the broker's, 0 for every broker when limits are
    even, so the order is then by load) and kept sorted as this goal's moves change loads: each move
    re-sorted all of them before (a thousand brokers, for each of tens of thousands of moves)."""

    def __init__(self, receivers: list[int], load: dict[int, int], limit: Mapping[int, float]) -> None:
        self.load = load
        top = max(limit.values(), default=0.0)
        self.slack = {b: top - limit[b] for b in receivers}
        self.at = {b: load[b] + self.slack[b] for b in receivers}  # each receiver's key in ``order``
        self.order = sorted((v, b) for b, v in self.at.items())

    def moved(self, *brokers: int) -> None:
        """The loads of ``brokers`` changed (those that are receivers move to their new rank)."""
        for b in brokers:
            old = self.at.get(b)
            if old is None:
                continue
            now = self.load[b] + self.slack[b]
            if old == now:
                continue
            del self.order[bisect_left(self.order, (old, b))]
            self.at[b] = now
            bisect.insort(self.order, (now, b))


def _return_held(ctx: PlanningContext, broker: int, limit: Mapping[int, float], receivers: _ByLoad) -> int:
    """Shed ``broker``'s excess for no bytes: a replica it holds as in the snapshot, of a partition the
    plan copies elsewhere and took off another holder, stays and that holder keeps its replica instead
    (``reclaim.returnable``: on its dir, no copy; the copy elsewhere is made either way), where every
    earlier goal accepts it, the holder stays within its limit and, with dir balance asked, its dirs'
    excess does not grow. Within the excess largest first, then the smallest above it; bounded by
    ``SWAP_CHECKS`` rule checks, from its dirs above their share of its limit first. The replicas
    returned."""
    a = ctx.assignment
    balanced = ctx.balanced_topics("brokers")
    dir_tol = ctx.tolerance("log_dirs")
    held = [
        (a.size[k], k, d)
        for k, d in a.by_broker[broker].items()
        if k in a.touched and k[0] in balanced and ctx.held_dir(k, broker)[0]
    ]
    returned = 0
    fuller = set() if dir_tol is None else _above_share(ctx, broker, a.broker_bytes[broker] - limit[broker])
    for dirs in (fuller, None):  # from its fuller dirs first (dir balance)
        items = sorted((w, k) for w, k, d in held if (dirs is None or d in dirs) and broker in a.replicas[k])
        returned += _return_items(ctx, broker, limit, receivers, items, dir_tol)
    return returned


def _return_items(
    ctx: PlanningContext,
    broker: int,
    limit: Mapping[int, float],
    receivers: _ByLoad,
    items: list[tuple[int, Key]],
    dir_tol: float | None,
) -> int:
    """``_return_held`` of ``items`` (sorted by size)."""
    a = ctx.assignment
    checks = returned = 0
    while a.broker_bytes[broker] > limit[broker] and items and checks < SWAP_CHECKS:
        excess = a.broker_bytes[broker] - limit[broker]
        split = bisect.bisect_right(items, (int(excess), ("\U0010ffff", 1 << 62)))
        for i in (*range(split - 1, -1, -1), *range(split, len(items))):
            size, key = items[i]
            step = None
            for back, path in returnable(ctx, key):
                if a.broker_bytes[back] + size > limit.get(back, -1.0) or checks >= SWAP_CHECKS:
                    continue
                if dir_tol is not None and _dir_worse(ctx, back, path, size, dir_tol):
                    continue
                checks += 1
                cand = list(a.replicas[key])
                cand[cand.index(broker)] = back
                if ctx.accepts(key, cand):
                    step = (back, path)
                    break
            if step is not None:
                a.move(key, a.replicas[key].index(broker), *step)
                receivers.moved(broker, step[0])
                del items[i]
                returned += 1
                break
        else:
            break
    return returned


def _above_share(ctx: PlanningContext, broker: int, excess: float) -> set[str]:
    """``broker``'s dirs above the mean bytes its undrained dirs will hold once it sheds ``excess``."""
    a, e = ctx.assignment, ctx.eligibility
    paths = [d for d in e.dirs[broker] if (broker, d) not in e.drained]
    mean = (a.broker_bytes[broker] - excess) / max(1, len(paths))
    return {d for d in e.dirs[broker] if a.dir_bytes.get((broker, d), 0) > mean}


def _dir_worse(ctx: PlanningContext, broker: int, path: str, size: int, tol: float) -> bool:
    """Whether ``size`` bytes arriving on ``broker``'s dir ``path`` raise its dirs' excess over their
    thresholds."""
    paths = ctx.eligibility.keeping_dirs(broker)
    if len(paths) < 2 or path not in paths:
        return False
    sizes, held = ctx.eligibility.sizes.get(broker), ctx.assignment.dir_bytes
    before = shares.dir_excess(held, broker, paths, tol, sizes)
    return shares.dir_excess(held, broker, paths, tol, sizes, path, size) > before


def _enough(
    redirects: list[tuple[Key, int, int, str]], freed: list[int], need: float
) -> list[tuple[Key, int, int, str]] | None:
    """The shortest prefix of ``redirects`` freeing at least ``need`` bytes ([] when nothing is needed),
    None when all of them free less."""
    if need <= 0:
        return []
    n = bisect_left(freed, need)
    return redirects[: n + 1] if n < len(freed) else None


def _drop(items: list[tuple[int, Key]], item: tuple[int, Key]) -> None:
    """Remove ``item`` from the sorted ``items`` (found by bisection: ``list.remove`` compares every
    tuple before it, which made shedding quadratic in a broker's replicas)."""
    i = bisect_left(items, item)
    if i < len(items) and items[i] == item:
        del items[i]
    else:  # pragma: no cover  (items are kept sorted; fall back to a scan)
        items.remove(item)


def _home_dir(ctx: PlanningContext, key: Key, broker: int) -> str | None:
    """The dir of ``broker`` the snapshot has this partition's replica on, when the replica may go back
    there (a replica sent back where it was is no copy at all; on another dir it would be a local one)."""
    held, path = ctx.held_dir(key, broker)
    a, e = ctx.assignment, ctx.eligibility
    if (
        not held
        or path is None
        or not e.may_keep(broker, path, a.size[key])
        or not a.fits(broker, path, a.size[key])
    ):
        return None
    return path


def _finishing(
    movable: dict[str | None, list[tuple[int, Key]]],
    excess: float,
    failed: set[Key],
    dirs: Collection[str | None],
) -> tuple[int, list[tuple[str | None, int, Key]]] | None:
    """The one or two movable replicas of ``dirs`` whose bytes clear ``excess`` by the least (sum,
    items), or None: the smallest single one above it, or two pointers over those below it."""
    need = math.ceil(excess)
    below: list[list[tuple[int, str | None, Key]]] = []
    best: tuple[int, list[tuple[str | None, int, Key]]] | None = None
    for d in dirs:
        rows = movable.get(d, [])
        cut = bisect.bisect_left(rows, need, key=lambda r: r[0])
        below.append([(w, d, k) for w, k in rows[:cut] if k not in failed])
        single = next(((w, k) for w, k in rows[cut:] if k not in failed), None)
        if single is not None and (best is None or single[0] < best[0]):
            best = (single[0], [(d, single[0], single[1])])
    items = list(heapq.merge(*below, key=lambda t: t[0]))
    lo, hi = 0, len(items) - 1
    while lo < hi:
        total = items[lo][0] + items[hi][0]
        if total >= need:
            if best is None or total < best[0]:
                (w1, d1, k1), (w2, d2, k2) = items[hi], items[lo]
                best = (total, [(d1, w1, k1), (d2, w2, k2)])
            hi -= 1
        else:
            lo += 1
    return best


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


def _by_weight(movable: Mapping[str | None, list[tuple[int, Key]]]) -> list[tuple[int, str | None, Key]]:
    """A broker's movable replicas as (weight, dir, key), lightest first; a replica of unknown dir (None)
    before those of a known one of the same weight (a plain tuple sort cannot compare None with a path)."""
    mine = [(w, d, k) for d, items in movable.items() for w, k in items]
    return sorted(mine, key=lambda m: (m[0], m[1] is not None, m[1] or "", m[2]))
