"""The local engine's second core: the snapshot's half of the summary's tally, in a process beside the plan.

The summary's tally (``planning.plan_quality``) is every partition as the plan leaves it plus what each
plan entry shifts: ``add(p, t) == add(p, None) + shift(p, t)``. The first half depends on the snapshot and
the intents only, so while this process plans, a forked copy of it tallies the snapshot (its pages are
shared until either side writes them); the plan's entries are then shifted into that tally here. It is the
Spark engine's split (``spark.analysis`` beside the shards, ``spark.tally`` after), on one machine: the
same code, so the same summary; at a million partitions it takes the tally's pass over every partition
(a fifth of the plan's time) off the plan's path.

Used only when it can pay and cannot hurt (``wanted``): a snapshot of at least ``MIN_PARTITIONS``
partitions, at least two CPUs this process may use (its affinity and its cgroup's CPU quota), and, under a
memory limit (``spark.memory``), room for the copy's pages too (``CHILD_BYTES_PER_REPLICA``). The copy
dies with this process (``PR_SET_PDEATHSIG``) and is killed and reaped when the plan ends without
needing it (an infeasible plan); whatever stops it from answering (killed, out of memory, an error), the
tally is made here as before (``result`` returns None): never a different summary, only a slower one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.intents import Intents
from ..model.snapshot import ClusterSnapshot
from ..planning.plan_quality import Scope, Tally, tally_of
from .memory import PLAN_BYTES_PER_REPLICA, Limit, resident_bytes

MIN_PARTITIONS = 50_000  # below this the tally takes a second or two: not worth a process
# the copy's pages (the snapshot's it touches, which the kernel copies, and its tally): 1 GB for 3M replicas
# measured (docs/benchmarks.md, "The summary's tally beside the plan"), with a margin
CHILD_BYTES_PER_REPLICA = 400
PATIENCE_S = 30.0
CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
PR_SET_PDEATHSIG = 1


def usable_cpus(cpu_max: Path = CPU_MAX) -> float:
    """CPUs this process may run on: its affinity, capped by its cgroup's quota (``cpu.max``, a pod's
    CPU limit) when it has one."""
    cpus = float(len(os.sched_getaffinity(0)))
    try:
        quota, period = cpu_max.read_text().split()[:2]
    except (OSError, ValueError):
        return cpus
    if quota != "max" and quota.isdigit() and period.isdigit() and int(period):
        cpus = min(cpus, int(quota) / int(period))
    return cpus


def wanted(partitions: int, replicas: int, limit: Limit | None, cpus: float | None = None) -> bool:
    """Whether tallying the snapshot beside the plan pays (enough partitions, a second CPU) and fits
    (under ``limit``: the planning's own estimate plus the copy's)."""
    if partitions < MIN_PARTITIONS or (usable_cpus() if cpus is None else cpus) < 2:
        return False
    if limit is None:
        return True
    need = resident_bytes() + (PLAN_BYTES_PER_REPLICA + CHILD_BYTES_PER_REPLICA) * replicas
    return need <= limit.bytes


class Beside:
    """A forked process tallying a snapshot as no plan changes it, under ``intents``' scope. A thread here
    reads its answer as soon as it is written, so the process ends, and its copies of pages are freed,
    when its tally is done, not when the plan is."""

    def __init__(self, pid: int, fd: int, intents: Intents) -> None:
        self.pid, self.fd, self.intents = pid, fd, intents
        self.started = time.monotonic()
        self._data = bytearray()
        self._reaped = False  # (under _lock: its pid is ours to signal until then)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="tally-beside", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 20):
                self._data += chunk
        except OSError:
            self._data.clear()
        finally:
            os.close(self.fd)
            self._reap()

    def _reap(self) -> None:
        with self._lock, contextlib.suppress(ChildProcessError):
            self._reaped = True
            _, status = os.waitpid(self.pid, 0)  # (its answer is written: it is exiting, or killed)
            if status != 0:
                self._data.clear()  # it did not finish: what it wrote is not a tally

    def result(self, scope: Scope) -> Tally | None:
        """The snapshot's tally, or None when the process did not give one (or tallied under other intents
        than ``scope``'s): tally here then. Waits for it, as long as the plan took so far (at least
        ``PATIENCE_S``): the tally takes a fraction of the plan's time, so a copy still at work after that
        is stuck (a lock some other thread of this process held when it forked) and is stopped."""
        self._reader.join(max(PATIENCE_S, time.monotonic() - self.started))
        if self._reader.is_alive():
            self.close()
            return None
        if scope.intents != self.intents or not self._data:
            return None
        try:
            found = pickle.loads(self._data)
        except Exception:  # (cannot happen after a clean exit; never a wrong summary if it did)
            return None
        finally:
            self._data = bytearray()
        return found if isinstance(found, Tally) else None

    def close(self) -> None:
        """Stop the process if it still runs, and wait for its reaping (idempotent)."""
        with self._lock:
            if not self._reaped:
                os.kill(self.pid, signal.SIGKILL)  # (a zombie at worst: still ours)
        self._reader.join()


def _prctl() -> Any:
    """Linux's prctl(2), None where there is none."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def start(snapshot: ClusterSnapshot, intents: Intents) -> Beside:
    """Fork a process that tallies every partition of ``snapshot`` without a plan, under the scope of
    ``intents`` (the enforced ones, as the summary measures them), and writes the pickled tally to a
    pipe."""
    prctl = _prctl()  # (looked up here: the copy calls only what it needs no lock for)
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the copy: compute, write, leave without running anything of the parent's
        code = 1
        try:
            os.close(read)
            if prctl is not None:
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() == parent:  # (else the parent died before the line above)
                found = tally_of(((p, None) for p in snapshot.partitions), Scope.of(snapshot, intents))
                data = pickle.dumps(found, pickle.HIGHEST_PROTOCOL)
                view = memoryview(data)
                while view:
                    view = view[os.write(write, view) :]
                code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Beside(pid, read, intents)


@contextlib.contextmanager
def tallied(snapshot: ClusterSnapshot, intents: Intents, use: bool) -> Iterator[Beside | None]:
    """``start`` when ``use``, closed on the way out whatever happened (None: not used)."""
    if not use:
        yield None
        return
    beside = start(snapshot, intents)
    try:
        yield beside
    finally:
        beside.close()


__all__ = ["CHILD_BYTES_PER_REPLICA", "MIN_PARTITIONS", "Beside", "start", "tallied", "usable_cpus", "wanted"]
