"""The operator's planner pool: the in-process plans (engines ``local``, ``spark``, ``auto``) run on its own
thread, off kopf's handler threads, so a long plan (about 150 s at a million partitions) holds neither the
cluster's reconcile (its execution polled, its window closed, its intents' status) nor a kopf executor
thread. One pool per operator process (the ``Reconciler``'s); reconcile/planner.py drives it.

- **At most one run per cluster**, and at most ``workers`` runs in the process (default 1, queued in the
  order asked): planning at a million partitions peaks at gigabytes, and the memory check before a plan
  (spark/memory.py: the process's resident memory now plus the plan's estimate) assumes it plans alone;
  two CPU-bound plans on threads would share one core's worth of the GIL anyway.
- **A run is keyed by what its plan depends on** (the caller's key: planning/plan_keeping.py's
  ``inputs_key``). A queued run whose inputs changed runs the new inputs instead (a run of inputs no longer
  current is never started); a running one cannot be stopped (a thread cannot be cancelled): the next run
  of the cluster waits for it (``Pending.state == "stale"``), then starts at once, and the stale result is
  dropped.
- ``step`` waits up to ``wait_s`` (``INLINE_WAIT_S``) for the run it asks for, so a small plan is still
  made within one reconcile; else it returns ``Pending`` and a later step returns the ``Finished`` run.
  It does not wait for a run that cannot start (queued behind another cluster's plan, or behind a stale
  run of its own): that wait would hold a kopf thread on every reconcile for nothing.
  Nothing wakes the cluster's timer when a run ends: its next reconcile (``--interval``, 5 s by default;
  a cluster whose plan runs is never idle) takes the result. A result a reconcile waited for is used once;
  a result that finished between reconciles is kept for the same key and reused for ``reuse_s`` (the
  resync period: an unchanged cluster is re-planned no more often than an idle one is), then a refresh
  runs while the kept result is still returned, so a slow plan's intents do not flap to Planning and back
  each time it is made again. Such a result is ``Finished.earlier`` (planned from an older snapshot of
  the same inputs): the caller judges it (rates drifted) and ``drop``s it to plan again.
- An unexpected exception in a run is logged with its traceback and returned as ``Finished.error``.
- Runs are daemon threads, started when work is queued and ended when none is left: a stopping process is
  never held by a running plan, and nothing idles. A run writes nothing (it computes a plan from a
  snapshot): only the reconcile that takes its result writes, through the leader fence.

Test-only seam: ``KP_TEST_PLAN_HOLD`` (``name=path[,name=path]``) holds every run of a cluster of that
name before it plans until the file ``path`` exists (at most ``HOLD_MAX_S``): the end-to-end test of this
pool (tests/e2e/test_operator_leader.py) makes a plan as slow as it needs and no slower, deterministically
(a real plan slower than ``wait_s`` needs tens of thousands of partitions on the rig). Never set it in a
deployment.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generic, Literal, TypeVar

from . import periods

INLINE_WAIT_S = 3.0  # a reconcile waits this long for its plan before it reports it Planning
HOLD_ENV = "KP_TEST_PLAN_HOLD"  # test-only (module docstring)
HOLD_MAX_S = 600.0

T = TypeVar("T")
Where = tuple[str, str]  # (namespace, cluster)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Finished(Generic[T]):
    """A run's outcome: ``value`` (what its work returned), or ``error`` (an unexpected exception's type and
    message) when the work raised. Times are the pool's clock (wall-clock seconds)."""

    key: str
    value: T | None
    error: str | None
    started: float
    finished: float
    earlier: bool = False  # of a run an earlier step asked for, or a kept result (``PlanRuns.step``)


@dataclass(frozen=True, slots=True)
class Pending:
    """The run asked for is not finished: ``queued`` behind another cluster's run, ``running``, or ``stale``:
    waiting for the cluster's run of older inputs to end (``stale_since``: when that one started).
    ``since``: when this run was asked for (queued, stale) or started (running)."""

    key: str
    state: Literal["queued", "running", "stale"]
    since: float
    stale_since: float | None = None


class _Run(Generic[T]):
    """One run of a cluster: queued (``started`` None), running, or finished (``outcome``)."""

    def __init__(self, key: str, work: Callable[[], T] | None, asked: float) -> None:
        self.key, self.work, self.asked = key, work, asked
        self.started: float | None = None
        self.outcome: Finished[T] | None = None
        self.dropped = False  # its cluster was forgotten while it was queued: never started


class _Slot(Generic[T]):
    """A cluster's runs: the current one, the one waiting for a stale current one, the last result kept."""

    def __init__(self) -> None:
        self.run: _Run[T] | None = None
        self.wanted: _Run[T] | None = None
        self.kept: Finished[T] | None = None


def holds_from_env(env: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """``KP_TEST_PLAN_HOLD`` parsed (test-only; see the module docstring); entries without a path ignored."""
    out: dict[str, Path] = {}
    for item in env.get(HOLD_ENV, "").split(","):
        name, _, path = item.partition("=")
        if name.strip() and path.strip():
            out[name.strip()] = Path(path.strip())
    return out


class PlanRuns(Generic[T]):
    """The planner pool (module docstring)."""

    def __init__(
        self,
        workers: int = 1,
        wait_s: float = INLINE_WAIT_S,
        reuse_s: float | None = None,
        clock: Callable[[], float] = time.time,
        observe: Callable[[float], None] | None = None,  # each run's duration (the planning-time metric)
        holds: Mapping[str, Path] | None = None,  # test-only: per cluster name, the file its runs wait for
    ) -> None:
        self.workers, self.wait_s, self.clock = workers, wait_s, clock
        self.reuse_s = periods.resync_s() if reuse_s is None else reuse_s
        self.observe = observe or (lambda _s: None)
        self.holds = holds_from_env() if holds is None else dict(holds)
        self._cond = threading.Condition()
        self._slots: dict[Where, _Slot[T]] = {}
        self._queue: deque[tuple[Where, _Run[T]]] = deque()
        self._threads = 0
        self._running = 0  # runs started and not finished

    def step(self, where: Where, key: str, work: Callable[[], T]) -> Finished[T] | Pending:
        """The outcome of ``work`` for inputs ``key`` of cluster ``where``: a run started (queued) unless
        one of ``key`` is under way or finished, or a kept result of ``key`` is not due yet; then awaited up
        to ``wait_s``. ``Finished.earlier``: the result is of a run an earlier step asked for (its snapshot
        is older than the caller's): the caller judges it and ``drop``s it when it is no longer usable."""
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            slot = self._slots.setdefault(where, _Slot())
            done = slot.run if slot.run is not None and slot.run.outcome is not None else None
            if done is not None:  # finished between two steps: its result is kept (if still wanted)
                slot.run = None
                if done.key == key and done.outcome is not None:
                    slot.kept = replace(done.outcome, earlier=True)
                    return slot.kept
            if slot.kept is not None and slot.kept.key != key:
                slot.kept = None
            kept = slot.kept
            mine, asked_here = self._ask(where, slot, key, work)
            while mine.outcome is None and (left := deadline - time.monotonic()) > 0:
                if mine is slot.wanted or (mine.started is None and self._running >= self.workers):
                    break  # behind a stale run or another cluster's plan: waiting would hold a kopf thread
                self._cond.wait(None if math.isinf(left) else left)
            if mine.outcome is not None:
                if slot.run is mine:
                    slot.run = None
                if asked_here:  # waited for: used once, not kept
                    slot.kept = None
                    return mine.outcome
                slot.kept = replace(mine.outcome, earlier=True)
                return slot.kept
            if kept is not None:  # a refresh runs (or waits for a stale run): the kept result meanwhile
                return kept
            if mine is slot.wanted and slot.run is not None:
                return Pending(key, "stale", mine.asked, slot.run.started)
            if mine.started is None and self._running >= self.workers:
                return Pending(key, "queued", mine.asked)
            return Pending(key, "running", mine.started or mine.asked)  # (or its thread is starting)

    def _ask(self, where: Where, slot: _Slot[T], key: str, work: Callable[[], T]) -> tuple[_Run[T], bool]:
        """The run of ``key``: the cluster's current or waiting one, the kept result while it is not due,
        else a run asked for now (True): a queued run given these inputs instead, one waiting behind a
        stale run, or a new one queued. Lock held."""
        run, now = slot.run, self.clock()
        if run is not None and run.key == key:
            return run, False
        if slot.wanted is not None and slot.wanted.key == key:
            return slot.wanted, False
        if slot.kept is not None and now - slot.kept.finished < self.reuse_s:
            if run is not None and run.started is None:  # queued for other inputs: never started
                run.dropped, slot.run = True, None
            slot.wanted = None
            return _done(slot.kept), False
        if run is not None and run.started is None:  # queued, not started: it runs these inputs instead
            run.key, run.work, run.asked = key, work, now
            return run, True
        if run is not None:  # running for older inputs: cannot be stopped; the next run starts at its end
            slot.wanted = _Run(key, work, now)
            return slot.wanted, True
        slot.run = _Run(key, work, now)
        self._enqueue(where, slot.run)
        return slot.run, True

    def drop(self, where: Where, key: str) -> None:
        """The kept result of ``key`` is no longer usable (the caller's judgement): the next step plans."""
        with self._cond:
            slot = self._slots.get(where)
            if slot is not None and slot.kept is not None and slot.kept.key == key:
                slot.kept = None

    def forget(self, where: Where) -> None:
        """Drop a cluster (deleted): a queued run of it never starts; a running one ends unread."""
        with self._cond:
            slot = self._slots.pop(where, None)
            if slot is not None and slot.run is not None and slot.run.started is None:
                slot.run.dropped = True

    def _enqueue(self, where: Where, run: _Run[T]) -> None:
        """Queue ``run``; a worker thread is started when fewer than ``workers`` run. Lock held."""
        self._queue.append((where, run))
        if self._threads < self.workers:
            self._threads += 1
            threading.Thread(target=self._work, name="kafka-placement-planner", daemon=True).start()

    def _work(self) -> None:
        """A worker: runs queued runs, oldest first, until none is left, then ends."""
        while True:
            with self._cond:
                while self._queue and self._queue[0][1].dropped:  # (a dropped run never starts)
                    self._queue.popleft()
                if not self._queue:
                    self._threads -= 1
                    return
                where, run = self._queue.popleft()
                run.started = started = self.clock()
                self._running += 1
                work, key = run.work, run.key
                self._cond.notify_all()
            value: T | None = None
            error: str | None = None
            _hold(self.holds.get(where[1]))
            began = time.monotonic()
            try:
                if work is not None:  # (always: only a kept result's stand-in has none, and is never queued)
                    value = work()
            except BaseException as e:  # never lost: the run's result is the error
                log.exception("planning %s/%s failed unexpectedly", *where)
                error = f"{type(e).__name__}: {e}"[:1000]
            with contextlib.suppress(Exception):
                self.observe(time.monotonic() - began)
            with self._cond:
                run.outcome = Finished(key, value, error, started, self.clock())
                self._running -= 1
                self._finish(where, run)
                self._cond.notify_all()

    def _finish(self, where: Where, run: _Run[T]) -> None:
        """A run ended: the run waiting for it (it was stale) starts now. Lock held."""
        slot = self._slots.get(where)
        if slot is None or slot.run is not run or slot.wanted is None:
            return
        slot.run, slot.wanted = slot.wanted, None
        self._enqueue(where, slot.run)


def _hold(path: Path | None) -> None:
    """The test-only seam (module docstring): wait until ``path`` exists."""
    deadline = time.monotonic() + HOLD_MAX_S
    while path is not None and not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def _done(outcome: Finished[T]) -> _Run[T]:
    """A finished run holding ``outcome`` (a kept result, handed back as if just run)."""
    run: _Run[T] = _Run(outcome.key, None, outcome.started)
    run.started, run.outcome = outcome.started, outcome
    return run
