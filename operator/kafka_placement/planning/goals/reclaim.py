"""Copies the broker-balance goal takes back: a replica the plan copies to a new broker returns to a
broker that held it, when balance allows. Pure: no I/O.

The hard goal repairs partitions one at a time and the balance goal sheds excess after it, each
choosing greedily; together they can copy a replica away from a broker (a repair drops it, or
balance sheds it) and later pay other copies to shed the same broker's excess again. Once balance
has run, ``reclaim`` looks for such copies: a partition's newcomer on broker ``n`` is replaced by a
broker ``o`` that held the partition in the snapshot (on the same dir: no copy at all), saving the
partition's bytes. Where ``o`` has no room under its balance limit for it, one replica of
another partition leaves ``o`` to make room, at a lower cost than the bytes saved: a replica the
plan brought to ``o`` (redirected elsewhere: still one copy), a replica whose partition dropped
another holder that may take it back (which holder of a repaired partition leaves is free), or
failing those a replica ``o`` held, copied elsewhere for its bytes when smaller than the saving.
Every change keeps every earlier goal's rules (``PlanningContext.accepts``), every dir's room, and leaves
no broker that receives above its limit (planning/shares.py). Bounded (``CHECKS`` rule checks and
``WORK`` replicas and brokers examined per run, ``PASSES`` passes, ``ROOM_STEPS`` moves to make room);
deterministic (partitions and brokers in sorted order).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ...model.intents import PlacementPolicy
from ..context import PlanningContext
from ..state import Key

CHECKS = 2_000  # rule checks of one run, in all
WORK = 30_000  # replicas and brokers examined by one run, in all (rule checks aside)
ROOM_STEPS = 4  # replicas moved off a broker to make room for one returning
ROOM_ITEMS = 16  # replicas of that broker tried per move (each side of the size that is enough)
PASSES = 3  # passes over the plan's partitions (a pass ends early when it changes nothing)


class Receivers(Protocol):
    """The brokers that may receive, most room under their limits first (``broker_balance._ByLoad``)."""

    order: list[tuple[float, int]]

    def moved(self, *brokers: int) -> None: ...


@dataclass(slots=True)
class _Step:
    """One replica of ``key`` going from ``frm`` to ``to`` (on ``path``); ``cost`` bytes copied."""

    key: Key
    frm: int
    to: int
    path: str | None
    cost: int


class Reclaimer:
    """One reclaiming run over ``ctx``'s assignment, each broker within broker balance's ``limit``."""

    def __init__(self, ctx: PlanningContext, limit: Mapping[int, float], receivers: Receivers) -> None:
        self.ctx = ctx
        self.limit = limit
        self.receivers = receivers
        self.checks = 0
        self.work = 0
        # topics whose policy asks for broker balance and budgets no moves (a budgeted policy's plan is
        # left as it is)
        policies = ctx.assignment.topic_policy
        self.free = frozenset(t for t in ctx.balanced_topics("brokers") if _free(policies.get(t)))
        self.before: dict[int, float] = {}  # dir excess (``_dir_excess``) of brokers before a reclaim

    def run(self) -> int:
        """Reclaim what can be; the bytes saved."""
        saved = 0
        for _ in range(PASSES):
            found = 0
            for key in self._candidates():
                if self._spent():
                    break
                found += self._reclaim(key)
            saved += found
            if not found:
                break
        return saved

    def _spent(self) -> bool:
        return self.checks > CHECKS or self.work > WORK

    # ---- partitions and their holders ------------------------------------------------------------

    def _candidates(self) -> list[Key]:
        """Partitions the plan copies somewhere, largest first."""
        a, free = self.ctx.assignment, self.free
        self.work += len(a.touched)
        out = [k for k in a.touched if k[0] in free and self._newcomers(k)]
        out.sort(key=lambda k: (-a.size[k], k))
        return out

    def _newcomers(self, key: Key) -> list[int]:
        """The partition's brokers that did not hold it in the snapshot."""
        p = self.ctx.snapshot.at(key)
        held = p.replicas if p is not None else ()
        return [b for b in self.ctx.assignment.replicas[key] if b not in held]

    def _returnable(self, key: Key) -> list[tuple[int, str]]:
        p = self.ctx.snapshot.at(key)
        self.work += len(p.replicas) if p is not None else 0
        return returnable(self.ctx, key)

    def _ok(self, key: Key, frm: int, to: int) -> bool:
        self.checks += 1
        cand = list(self.ctx.assignment.replicas[key])
        cand[cand.index(frm)] = to
        return self.ctx.accepts(key, cand)

    # ---- one partition ---------------------------------------------------------------------------

    def _reclaim(self, key: Key) -> int:
        a = self.ctx.assignment
        size = a.size[key]
        for n in self._newcomers(key):
            for o, path in self._returnable(key):
                if self._spent():
                    return 0
                if not self._ok(key, n, o):
                    continue
                back = _Step(key, n, o, path, -size)
                self.before = {}
                done = [(back, self._do(back))]
                if a.broker_bytes[o] > self.limit[o]:
                    done += self._make_room(o, key, size)
                if a.broker_bytes[o] <= self.limit[o] and all(
                    self._dir_excess(b) <= max(0.0, x) for b, x in self.before.items()
                ):
                    return sum(-step.cost for step, _ in done)
                for step, was in reversed(done):  # no room: undone
                    self._do(_Step(step.key, step.to, step.frm, was, 0))
        return 0

    def _dir_excess(self, broker: int) -> float:
        """With dir balance asked: by how much the broker's fullest dir is above the dir goal's
        threshold (0 without): a reclaim must not leave the dir goal local copies to pay instead."""
        tol = self.ctx.tolerance("log_dirs")
        if tol is None:
            return 0.0
        a, e = self.ctx.assignment, self.ctx.eligibility
        paths = e.keeping_dirs(broker)
        if not paths:
            return 0.0
        loads = {p: a.dir_bytes[(broker, p)] for p in paths}
        mean = sum(loads.values()) / len(paths)
        return max(loads.values()) - (1 + tol) * mean

    def _make_room(self, broker: int, returned: Key, saving: int) -> list[tuple[_Step, str | None]]:
        """Move replicas off ``broker`` (not ``returned``'s) until it is under its limit, for less
        than ``saving`` bytes: free ones first (the smallest that is enough alone, else the largest),
        then one paid replica, at most ``ROOM_STEPS`` moves. The moves made (with the dir each left);
        the caller undoes them if not enough."""
        a = self.ctx.assignment
        done: list[tuple[_Step, str | None]] = []
        tried: set[Key] = {returned}
        items = sorted((a.size[k], k) for k in a.by_broker[broker] if k[0] in self.free)
        self.work += len(items)
        while a.broker_bytes[broker] > self.limit[broker] and len(done) < ROOM_STEPS and not self._spent():
            over = a.broker_bytes[broker] - self.limit[broker]
            cut = bisect.bisect_left(items, (math.ceil(over), ("", -1)))
            enough = [x for x in items[cut:] if x[1] not in tried][:ROOM_ITEMS]
            smaller = [x for x in reversed(items[:cut]) if x[1] not in tried][:ROOM_ITEMS]
            step = self._free_step([*enough, *smaller], broker, tried)
            if step is None:
                spent = sum(s.cost for s, _ in done)
                step = self._paid_step(enough, broker, saving - spent)
            if step is None:
                break
            tried.add(step.key)
            done.append((step, self._do(step)))
        return done

    def _free_step(self, items: list[tuple[int, Key]], broker: int, tried: set[Key]) -> _Step | None:
        """The first of ``items`` that can leave ``broker`` at no cost: a replica the plan brought there,
        redirected, or one whose partition may return to a holder it dropped."""
        a = self.ctx.assignment
        for size, key in items:
            if self._spent():
                return None
            self.work += 1
            if self.ctx.held_dir(key, broker)[0]:
                for o, path in self._returnable(key):
                    if a.broker_bytes[o] + size <= self.limit[o] and self._ok(key, broker, o):
                        return _Step(key, broker, o, path, 0)
            else:
                step = self._destination(key, broker, 0)
                if step is not None:
                    return step
        return None

    def _paid_step(self, items: list[tuple[int, Key]], broker: int, budget: int) -> _Step | None:
        """The smallest of ``items`` (each enough alone) held in the snapshot, copied elsewhere for
        less than ``budget`` bytes."""
        for size, key in items:
            if size >= budget or self._spent():
                return None
            if self.ctx.held_dir(key, broker)[0]:
                step = self._destination(key, broker, size)
                if step is not None:
                    return step
        return None

    def _destination(self, key: Key, broker: int, cost: int) -> _Step | None:
        """The receiver with the most room under its limit, with room for it, that every rule accepts."""
        a, e = self.ctx.assignment, self.ctx.eligibility
        size, reps = a.size[key], a.replicas[key]
        place, rejected = self.ctx.receiver_place(key), set()
        for _, dest in self.receivers.order:
            self.work += 1
            if a.broker_bytes[dest] + size > self.limit[dest] or self._spent():
                return None
            if dest in reps or place(dest) in rejected:
                continue
            if not self._ok(key, broker, dest):
                rejected.add(place(dest))
                continue
            held, path = self.ctx.held_dir(key, dest)
            if not (held and path is not None and e.may_keep(dest, path, size) and a.fits(dest, path, size)):
                path = a.best_dir(e, dest, size)
            if path is None:
                continue
            return _Step(key, broker, dest, path, cost)
        return None

    def _do(self, step: _Step) -> str | None:
        """Make the move; the dir the replica left."""
        a = self.ctx.assignment
        for b in (step.frm, step.to):
            if b not in self.before:
                self.before[b] = self._dir_excess(b)
        i = a.replicas[step.key].index(step.frm)
        was = a.dirs[step.key][i]
        a.move(step.key, i, step.to, step.path)
        self.receivers.moved(step.frm, step.to)
        return was


def returnable(ctx: PlanningContext, key: Key) -> list[tuple[int, str]]:
    """The snapshot's holders of ``key`` the plan dropped that may hold its replica again, on the dir
    they held it on (no copy at all), by broker id."""
    a, e = ctx.assignment, ctx.eligibility
    p = ctx.snapshot.at(key)
    if p is None:
        return []
    size, reps = a.size[key], a.replicas[key]
    out = []
    for b, d in sorted(zip(p.replicas, p.log_dirs, strict=True)):
        if b in reps or d is None or b in e.decommissioned or not e.broker_may_keep(b):
            continue
        if e.may_keep(b, d, size) and (b, d) not in e.drained and a.fits(b, d, size):
            out.append((b, d))
    return out


def reclaim(ctx: PlanningContext, limit: Mapping[int, float], receivers: Receivers) -> int:
    """Take back copies the plan need not make (module docstring); the bytes saved."""
    return Reclaimer(ctx, limit, receivers).run()


def _free(policy: PlacementPolicy | None) -> bool:
    """A policy with no move budget to account for."""
    return policy is not None and not (policy.move_budget.max_moves or policy.move_budget.max_bytes)
