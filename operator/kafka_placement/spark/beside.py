"""The local engine's second core: a forked copy of the planning process works beside the plan.

Two things the plan needs depend on the snapshot and the intents only, not on the plan: which partitions
the hard rules would change (``repairs.repair_reasons`` of the screen's suspects), which the hard goal
otherwise asks of every suspect after the planning state is built, and the summary's tally of every
partition as the plan leaves it (``planning.plan_quality``: ``add(p, t) == add(p, None) + shift(p, t)``).
So while this process builds the planning state and plans, a forked copy of it (its pages shared until
either side writes them) computes both and sends them back in that order; the hard goal takes the first
(``PlanningContext.repairs``), and the plan's entries are shifted into the second. It is the Spark engine's
split (``spark.analysis`` beside the shards, ``spark.tally`` after), on one machine: the same code, so the
same plan and summary; at a million partitions it takes the tally's pass over every partition and the
suspects' checks (a quarter of the plan's time) off the plan's path. Once the plan is made, a second copy
(``shifting``) shifts most of its entries into a tally of their own while this process orders the batches
and shifts the rest; merged, they are the plan's tally (``Tally.merge``: the Spark engine merges its tasks'
tallies so).

Used only when it can pay and cannot hurt (``wanted``): a snapshot of at least ``MIN_PARTITIONS``
partitions, at least two CPUs this process may use (its affinity and its cgroup's CPU quota), and, under a
memory limit (``spark.memory``), room for the copy's pages too (``CHILD_BYTES_PER_REPLICA``). The copy
dies with this process (``PR_SET_PDEATHSIG``) and is killed and reaped when the plan ends without
needing it (an infeasible plan); whatever stops it from answering (killed, out of memory, an error, stuck),
this process does the work itself as before (``repairs`` and ``result`` return None): never a different
plan or summary, only a slower one.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..model.intents import Intents
from ..model.plan import PartitionTarget
from ..model.snapshot import ClusterSnapshot
from ..planning.plan_quality import Scope, Tally, tally_of
from ..planning.repairs import repair_reasons
from ..planning.state import Key
from .memory import CGROUP_ROOT, PLAN_BYTES_PER_REPLICA, Limit, cgroup_dirs, read_value, resident_bytes

MIN_PARTITIONS = 50_000  # below this the tally takes a second or two: not worth a process
# the copy's pages (the snapshot's it touches, which the kernel copies, and its tally): 1 GB for 3M replicas
# measured (docs/benchmarks.md, "The summary's tally beside the plan"), with a margin
CHILD_BYTES_PER_REPLICA = 400
PATIENCE_S = 30.0
# a plan of this many entries is shifted into its tally by two processes (``shifting``): the copy shifts
# this share of them while this process orders the batches and shifts the rest
MIN_SHIFTED = 20_000
SHIFTED_SHARE = 0.8
PR_SET_PDEATHSIG = 1


def usable_cpus(root: Path = CGROUP_ROOT, own: Path = Path("/proc/self/cgroup")) -> float:
    """CPUs this process may run on: its affinity, capped by the tightest CPU quota of its cgroup and its
    parents' (a pod's CPU limit): cgroup v2's ``cpu.max`` ("max" or "QUOTA PERIOD"), v1's
    ``cpu.cfs_quota_us`` (-1: none) over ``cpu.cfs_period_us``."""
    cpus = float(len(os.sched_getaffinity(0)))
    v2, dirs = cgroup_dirs("cpu", root, own)
    for d in dirs:
        if v2:
            quota, _, period = read_value(d / "cpu.max").partition(" ")
        else:
            quota, period = read_value(d / "cpu.cfs_quota_us"), read_value(d / "cpu.cfs_period_us")
        if quota.isdigit() and period.isdigit() and int(period):
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
    """A forked process working for the plan, its results each a frame (8 bytes of length, a pickle): the
    first copy (``start``) sends the partitions the hard rules would change (``repairs``), then its tally
    of the snapshot as no plan changes it (``result``); a shifting copy (``shifting``) the tally of its
    entries (``shifts``). A thread here reads them as they are written, so the process ends, and its copies
    of pages are freed, when its work is done, not when the plan is."""

    def __init__(self, pid: int, fd: int, intents: Intents | None) -> None:
        self.pid, self.fd, self.intents = pid, fd, intents
        self.started = time.monotonic()
        self._frames: list[bytes] = []
        self._ended = False  # (under _arrived: no frame comes any more)
        self._arrived = threading.Condition()
        self._reaped = False  # (under _lock: its pid is ours to signal until then)
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="tally-beside", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        data = bytearray()
        try:
            while chunk := os.read(self.fd, 1 << 20):
                data += chunk
                while len(data) >= 8 and len(data) >= 8 + (size := int.from_bytes(data[:8], "big")):
                    with self._arrived:
                        self._frames.append(bytes(data[8 : 8 + size]))
                        self._arrived.notify_all()
                    del data[: 8 + size]
        except OSError:
            pass
        finally:
            os.close(self.fd)
            self._reap()
            with self._arrived:
                self._ended = True
                self._arrived.notify_all()

    def _reap(self) -> None:
        with self._lock, contextlib.suppress(ChildProcessError):
            self._reaped = True
            _, status = os.waitpid(self.pid, 0)  # (its frames are written: it is exiting, or killed)
            if status != 0:
                with self._arrived:
                    self._frames.clear()  # it did not finish: use nothing of it not yet taken

    def _frame(self, index: int) -> Any:
        """Frame ``index`` unpickled once the process has written it whole (each frame is whole or absent);
        None when it will not come (the process ended without it, or ended in error before it was read).
        Waits as long as the plan took so far (at least ``PATIENCE_S``): each takes a fraction of the plan's
        time, so a copy still at it after that is stuck (a lock some other thread of this process held when
        it forked) and is stopped."""
        deadline = self.started + max(PATIENCE_S, 2 * (time.monotonic() - self.started))
        with self._arrived:
            while len(self._frames) <= index and not self._ended:
                if not self._arrived.wait(max(0.0, deadline - time.monotonic())):
                    break
            found = self._frames[index] if len(self._frames) > index else None
        if found is None:
            self.close()
            return None
        try:
            return pickle.loads(found)
        except Exception:  # (cannot happen: a frame is whole; never a wrong plan if it did)
            return None

    def repairs(self, intents: Intents) -> frozenset[Key] | None:
        """The snapshot's partitions the hard rules of ``intents`` would change, or None (not these intents,
        or the process did not give them: the hard goal screens and asks every partition then)."""
        if intents != self.intents:
            return None
        found = self._frame(0)
        return found if isinstance(found, frozenset) else None

    def result(self, scope: Scope) -> Tally | None:
        """The snapshot's tally, or None when the process did not give one (or tallied under other intents
        than ``scope``'s): tally here then."""
        if scope.intents != self.intents:
            return None
        found = self._frame(1)
        with self._arrived:
            self._frames.clear()  # (its bytes are not needed again)
        return found if isinstance(found, Tally) else None

    def shifts(self) -> Tally | None:
        """The tally of the entries given to ``shifting``, or None when the process did not give it (shift
        them here then)."""
        found = self._frame(0)
        self.close()
        return found if isinstance(found, Tally) else None

    def close(self) -> None:
        """Stop the process if it still runs, and wait for its reaping (idempotent)."""
        with self._lock:
            if not self._reaped:
                os.kill(self.pid, signal.SIGKILL)  # (a zombie at worst: still ours)
        self._reader.join(PATIENCE_S)  # (its read ends at the copy's end: a daemon thread, never waited on)


def _prctl() -> Any:
    """Linux's prctl(2), None where there is none."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def start(snapshot: ClusterSnapshot, intents: Intents) -> Beside:
    """Fork a process that selects the partitions of ``snapshot`` the hard rules of ``intents`` would
    change and tallies every partition without a plan, under the scope of ``intents`` (the enforced ones, as
    the plan and its summary use them), writing both to a pipe."""

    def work() -> Iterator[object]:
        scope = Scope.of(snapshot, intents)
        yield frozenset(to_repair(snapshot, scope))
        yield tally_of(((p, None) for p in snapshot.partitions), scope)

    return _fork(work, intents)


def shifting(snapshot: ClusterSnapshot, entries: Sequence[PartitionTarget], scope: Scope) -> Beside:
    """Fork a process that tallies what ``entries`` (plan entries checked against ``snapshot``) change: an
    empty tally with each shifted in (``Tally.shift``), to be merged into the tally that holds the rest
    (``shifts``). The plan's summary shifts the other entries here meanwhile."""

    def work() -> Iterator[object]:
        out = Tally()
        for t in entries:
            p = snapshot.partition(t.topic, t.partition)
            assert p is not None  # (checked against the snapshot before the fork)
            out.shift(p, t, scope)
        yield out

    return _fork(work, scope.intents)


def _fork(work: Callable[[], Iterator[object]], intents: Intents | None) -> Beside:
    """Fork a process that writes what ``work`` yields to a pipe, a frame each, and a ``Beside`` reading
    them."""
    prctl = _prctl()  # (looked up here: the copy calls only what it needs no lock for)
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the copy: compute, write, leave without running anything of the parent's
        code = 1
        try:
            os.close(read)
            if prctl is not None:  # (sent when the forking thread ends: the parent's loss is only time)
                prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            _default_signals()
            if os.getppid() == parent:  # (else the parent died before the line above)
                for value in work():
                    _send(write, value)
                code = 0
        finally:
            os._exit(code)
    os.close(write)
    return Beside(pid, read, intents)


def to_repair(snapshot: ClusterSnapshot, scope: Scope) -> Iterator[Key]:
    """The partitions of ``snapshot`` the hard rules would change (``repair_reasons`` of the suspects the
    ``Screen`` keeps: what the hard goal asks, ``replica_placement.needs_repair``)."""
    elig, screen = scope.elig, scope.screen
    for p in snapshot.partitions:
        rf, tree = scope.rf(p), scope.policy(p.topic)[1]
        if screen.suspect(p.replicas, rf, tree) and repair_reasons(
            elig, p.replicas, p.log_dirs, p.size_bytes, rf, tree, p.leader, p.isr
        ):
            yield p.key


def _default_signals() -> None:
    """In the copy: a signal ends it, never runs the parent's handlers (an asyncio loop's, the operator's:
    they would write to a wakeup fd the copy shares with the parent and stop the parent instead)."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)


def _send(fd: int, value: object) -> None:
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


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


__all__ = [
    "CHILD_BYTES_PER_REPLICA",
    "MIN_PARTITIONS",
    "MIN_SHIFTED",
    "SHIFTED_SHARE",
    "Beside",
    "shifting",
    "start",
    "tallied",
    "to_repair",
    "usable_cpus",
    "wanted",
]
