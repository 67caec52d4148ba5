"""Leader election over a ``coordination.k8s.io/v1`` Lease, and the fence every write of the operator passes.

Two (or more) operator processes run; exactly one drives (docs/architecture.md, "Leader election and
fencing"). ``LeaseElector`` is the only code that reads or writes the Lease. Every write is a replace
carrying the ``resourceVersion`` it read (optimistic concurrency): of two candidates, one wins, the other
gets a 409 and stays standby.

Time is this process's own ``CLOCK_BOOTTIME`` (monotonic; it keeps counting while the process is stopped
by SIGSTOP or the machine sleeps), never the wall-clock times written in the Lease by other machines:

- the leader holds leadership until ``renew_deadline`` after the *start* of its last successful renewal
  (``is_leader``, ``fence``); it renews every ``renew_period`` and retries every ``retry_period`` after a
  failure. A process that wakes from a pause therefore knows, before doing anything, that its lease
  expired: ``fence`` raises ``NotLeader``, whatever its elector thread has or has not noticed yet;
- a candidate takes the Lease when its holder is empty (released on shutdown) or when the Lease has not
  changed (same ``resourceVersion``) for ``leaseDurationSeconds`` since the candidate *saw* that version.

The leader stops acting ``renew_deadline`` after a renewal started; a candidate acts ``lease_duration``
after it observed that renewal, which is later. The difference (5 s by default) is the margin for clock
rates and for a check-then-write in flight; the new leader also bumps every execution record before it
drives (``store.claim_records``), so a write that passed the fence just before a pause still fails with a
conflict afterwards.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ..execution.store import RecordConflict
from ..kube.gateway import KubeConflict, KubeError, KubeGateway

log = logging.getLogger(__name__)


class NotLeader(RecordConflict):
    """This process does not hold the leader Lease (any more): nothing was written or sent."""

    reason = "NotLeader"


def boottime() -> float:
    """Seconds on a clock that never jumps and keeps counting through SIGSTOP and suspend."""
    if hasattr(time, "CLOCK_BOOTTIME"):
        return time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.monotonic()  # pragma: no cover  (not Linux)


def default_identity() -> str:
    """``$POD_NAME`` (or the host name) plus a random suffix: unique per process, so a restarted container
    never mistakes its predecessor's lease for its own."""
    base = os.environ.get("POD_NAME") or socket.gethostname() or "kafka-placement"
    return f"{base[:200]}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class LeaseTimings:
    """Seconds; ``lease_duration > renew_deadline > renew_period >= retry_period > 0``."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    renew_period: float = 5.0
    retry_period: float = 2.0

    def problems(self) -> list[str]:
        out: list[str] = []
        values = (self.lease_duration, self.renew_deadline, self.renew_period, self.retry_period)
        if not all(math.isfinite(v) and 0 < v <= 3600 for v in values):
            return ["every lease timing must be a number of seconds in (0, 3600]"]
        if self.lease_duration != int(self.lease_duration) or self.lease_duration < 1:
            out.append("the lease duration is a whole number of seconds (the Lease stores an integer)")
        if not self.renew_deadline < self.lease_duration:
            out.append(
                "the renew deadline must be shorter than the lease duration (that margin is the fence)"
            )
        if not self.renew_period < self.renew_deadline:
            out.append("the renew period must be shorter than the renew deadline")
        if not self.retry_period <= self.renew_period:
            out.append("the retry period must not be longer than the renew period")
        return out


@dataclass(frozen=True, slots=True)
class LeaseView:
    """What the elector reads from a Lease; ``version`` None = there is no Lease object."""

    version: str | None
    holder: str | None = None
    duration_s: int | None = None
    transitions: int = 0
    acquire_time: str | None = None

    @staticmethod
    def parse(body: dict[str, Any]) -> LeaseView:
        spec = body.get("spec") or {}
        return LeaseView(
            version=(body.get("metadata") or {}).get("resourceVersion"),
            holder=spec.get("holderIdentity") or None,
            duration_s=spec.get("leaseDurationSeconds"),
            transitions=int(spec.get("leaseTransitions") or 0),
            acquire_time=spec.get("acquireTime"),
        )


@dataclass(frozen=True, slots=True)
class Observation:
    """A candidate's memory: the Lease version it saw and when (its own clock) it first saw it."""

    version: str | None
    since: float


def observe(previous: Observation | None, view: LeaseView, now: float) -> Observation:
    if previous is not None and previous.version == view.version:
        return previous
    return Observation(view.version, now)


def may_acquire(
    view: LeaseView, identity: str, seen: Observation, now: float, default_duration: float
) -> bool:
    """May a candidate write itself into the Lease now? (No Lease, released, ours, or unchanged for a whole
    lease duration of our own clock since we first saw this version.)"""
    if view.version is None or not view.holder or view.holder == identity:
        return True
    duration = float(view.duration_s) if view.duration_s else default_duration
    return seen.version == view.version and now - seen.since >= duration


def micro_time(at: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339 with exactly six fraction digits)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_body(
    name: str, namespace: str, view: LeaseView, holder: str | None, duration: float, now: datetime
) -> dict[str, Any]:
    """The Lease to write: renewed (same holder), taken over (new holder) or released (holder None)."""
    taking = holder is not None and holder != view.holder
    spec: dict[str, Any] = {
        "holderIdentity": holder,
        "leaseDurationSeconds": int(duration) if holder is not None else 1,
        "renewTime": micro_time(now),
        "acquireTime": micro_time(now) if taking else view.acquire_time,
        "leaseTransitions": view.transitions + (1 if taking and view.version is not None else 0),
    }
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if view.version is not None:
        metadata["resourceVersion"] = view.version
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


class Leadership(Protocol):
    """What handlers ask: may this process write now? ``fence`` raises ``NotLeader`` when it may not."""

    @property
    def identity(self) -> str: ...

    def is_leader(self) -> bool: ...

    def fence(self) -> None: ...


class Unelected:
    """Leader election switched off (``--no-leader-election``): the one process always drives."""

    def __init__(self, identity: str | None = None) -> None:
        self._identity = identity or default_identity()

    @property
    def identity(self) -> str:
        return self._identity

    def is_leader(self) -> bool:
        return True

    def fence(self) -> None:
        return None


class LeaseElector:
    """Acquires and renews the Lease ``namespace/name`` in a daemon thread (see the module docstring).

    ``acquired`` is set when this process became leader; ``lost`` when it held leadership and lost it (the
    operator then stops and exits: a restart rejoins as a standby)."""

    def __init__(
        self,
        kube: KubeGateway,
        namespace: str,
        name: str,
        identity: str,
        timings: LeaseTimings = LeaseTimings(),
        clock: Callable[[], float] = boottime,
        on_fenced: Callable[[], None] = lambda: None,
    ) -> None:
        self.kube, self.namespace, self.name = kube, namespace, name
        self._identity, self.timings, self._clock, self._on_fenced = identity, timings, clock, on_fenced
        self._valid_until = -math.inf
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.acquired = threading.Event()
        self.lost = threading.Event()
        self.holder: str | None = None  # the holder last seen (for logs and the standby's messages)
        self._seen: Observation | None = None
        self._thread: threading.Thread | None = None
        self._on_lost: list[Callable[[], None]] = []

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    def on_lost(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (from the elector thread) when leadership is lost; at once if it already was."""
        with self._lock:
            self._on_lost.append(callback)
            already = self.lost.is_set()
        if already:
            callback()

    # ---- what the handlers ask ---------------------------------------------------------------------

    def is_leader(self) -> bool:
        return self._clock() < self._valid_until

    def fence(self) -> None:
        if not self.is_leader():
            self._on_fenced()
            raise NotLeader(
                f"{self._identity} does not hold {self.where} (held by {self.holder or 'nobody'} when last "
                "read): nothing was written"
            )

    # ---- the Lease ---------------------------------------------------------------------------------

    def _read(self) -> LeaseView:
        body = self.kube.read_lease(self.namespace, self.name, self.timings.retry_period)
        if body is None:
            return LeaseView(version=None)
        view = LeaseView.parse(body)
        self.holder = view.holder
        return view

    def _write(self, view: LeaseView, holder: str | None) -> None:
        body = lease_body(
            self.name, self.namespace, view, holder, self.timings.lease_duration, datetime.now(UTC)
        )
        self.kube.write_lease(self.namespace, body, self.timings.retry_period, create=view.version is None)
        self.holder = holder

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards (validity extended)."""
        started = self._clock()
        try:
            view = self._read()
            if self.acquired.is_set() and view.holder != self._identity:
                self._lose(f"the Lease is now held by {view.holder or 'nobody'}")
                return False
            self._seen = observe(self._seen, view, started)
            if not may_acquire(view, self._identity, self._seen, started, self.timings.lease_duration):
                log.debug("standby: %s is held by %s", self.where, view.holder)
                return False
            self._write(view, self._identity)
        except KubeConflict:
            log.debug("%s: lost the race for it", self.where)
            return False
        except KubeError as e:
            log.warning("%s: cannot update it: %s", self.where, e.message)
            return False
        except Exception as e:  # network errors, timeouts: retried; the validity runs out meanwhile
            log.warning("%s: cannot reach the apiserver: %s", self.where, str(e)[:300])
            return False
        with self._lock:
            if self.lost.is_set() or self._stop.is_set():
                return False
            self._valid_until = started + self.timings.renew_deadline
        if not self.acquired.is_set():
            self.acquired.set()
            log.info("%s acquired by %s: this process drives", self.where, self._identity)
        return True

    def _lose(self, why: str) -> None:
        with self._lock:
            self._valid_until = -math.inf
            # after stop() closed the fence (a release or a shutdown), a renewal thread waking from its
            # pause finds itself no longer leader: that is the stop, not a loss (a loss would skip the
            # release, and the standby would wait a whole lease duration instead of taking over at once)
            if not self.acquired.is_set() or self.lost.is_set() or self._stop.is_set():
                return
            self.lost.set()
            callbacks = list(self._on_lost)
        log.warning("%s: %s lost leadership (%s); it stops driving", self.where, self._identity, why)
        for callback in callbacks:
            callback()

    def _run(self) -> None:
        ok = False
        while not self._stop.is_set():
            if self.acquired.is_set():
                pause = self.timings.renew_period if ok else self.timings.retry_period
                if self._stop.wait(pause):
                    return
                if not self.is_leader():
                    self._lose(f"no renewal for {self.timings.renew_deadline:g}s")
                    return
                ok = self.try_acquire_or_renew()
                if self.lost.is_set():
                    return
            else:
                ok = self.try_acquire_or_renew()
                if not ok and self._stop.wait(self.timings.retry_period):
                    return

    def start(self) -> None:
        log.info(
            "leader election: %s competes for %s (lease %gs, renew deadline %gs)",
            self._identity,
            self.where,
            self.timings.lease_duration,
            self.timings.renew_deadline,
        )
        self._thread = threading.Thread(target=self._run, name="lease-elector", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        """The elector thread is alive (it stops only on ``stop`` or a lost Lease)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, release: bool) -> None:
        """Stop renewing; with ``release``, hand the Lease over at once (the fence closes first)."""
        with self._lock:
            self._stop.set()
            self._valid_until = -math.inf
        if self._thread is not None:
            self._thread.join(self.timings.retry_period * 2 + 1)
        if not (self.acquired.is_set() and (release or self.lost.is_set())):
            return
        try:
            view = self._read()  # after a loss: only to name the new holder
            if release and not self.lost.is_set() and view.holder == self._identity:
                self._write(view, None)
                log.info("%s released by %s", self.where, self._identity)
        except Exception as e:  # the standby then takes over after the lease duration instead
            log.warning("%s: could not release it: %s", self.where, str(e)[:300])


_CURRENT: Leadership = Unelected()


def install(leadership: Leadership) -> None:
    """Make ``leadership`` the one the handlers ask (``kafka-placement operator`` does this at start)."""
    global _CURRENT
    _CURRENT = leadership


def current() -> Leadership:
    return _CURRENT
