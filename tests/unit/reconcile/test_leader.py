"""Leader election logic that needs no rig: lease timings, when a candidate may take the Lease, the Lease
bodies written, that every writing call of the Kafka gateway passes the fence (reconcile/leader.py,
reconcile/fencing.py), and, on an in-memory Lease store, that a release is never taken for a loss
whenever the renewal thread wakes. The guarantees themselves are shown against the real apiserver in
tests/integration/test_leader_lease.py and tests/e2e/test_operator_leader.py."""

from __future__ import annotations

import copy
import inspect
import threading
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kafka_placement.execution.store import RecordConflict
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.reconcile.fencing import FENCED, READ_ONLY, FencedGateway
from kafka_placement.reconcile.leader import (
    LeaseElector,
    LeaseTimings,
    LeaseView,
    NotLeader,
    Observation,
    lease_body,
    may_acquire,
    micro_time,
    observe,
)


def test_default_timings_are_valid_and_bad_ones_are_named() -> None:
    assert LeaseTimings().problems() == []
    assert any("shorter than the lease duration" in p for p in LeaseTimings(10, 10, 5, 2).problems())
    assert any("renew period" in p for p in LeaseTimings(15, 10, 10, 2).problems())
    assert any("retry period" in p for p in LeaseTimings(15, 10, 5, 6).problems())
    assert any("whole number" in p for p in LeaseTimings(15.5, 10, 5, 2).problems())
    assert any("(0, 3600]" in p for p in LeaseTimings(float("nan"), 10, 5, 2).problems())


def test_a_candidate_waits_a_whole_lease_duration_of_its_own_clock_on_an_unchanged_lease() -> None:
    held = LeaseView(version="7", holder="op-a_1", duration_s=15)
    seen = observe(None, held, now=100.0)
    assert not may_acquire(held, "op-b_2", seen, 100.0, 15)
    assert not may_acquire(held, "op-b_2", observe(seen, held, 114.9), 114.9, 15)
    assert may_acquire(held, "op-b_2", observe(seen, held, 115.0), 115.0, 15)
    renewed = LeaseView(version="8", holder="op-a_1", duration_s=15)  # a renewal restarts the wait
    seen2 = observe(seen, renewed, 114.0)
    assert seen2 == Observation("8", 114.0)
    assert not may_acquire(renewed, "op-b_2", seen2, 128.0, 15)
    assert may_acquire(renewed, "op-b_2", seen2, 129.0, 15)


def test_a_missing_released_or_own_lease_is_taken_at_once() -> None:
    seen = Observation("1", 0.0)
    assert may_acquire(LeaseView(version=None), "me", Observation(None, 0.0), 0.0, 15)
    assert may_acquire(LeaseView(version="1", holder=None, duration_s=1), "me", seen, 0.0, 15)
    assert may_acquire(LeaseView(version="1", holder="me", duration_s=15), "me", seen, 0.0, 15)
    # the lease's own duration counts, not ours
    assert may_acquire(LeaseView(version="1", holder="x", duration_s=5), "me", seen, 5.0, 15)


def test_lease_bodies_for_takeover_renewal_and_release() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert micro_time(at) == "2026-01-02T03:04:05.000000Z"  # six digits even with no microseconds
    old = LeaseView(version="9", holder="a", duration_s=15, transitions=3, acquire_time="T0")
    taken = lease_body("l", "ns", old, "b", 15, at)
    assert taken["metadata"] == {"name": "l", "namespace": "ns", "resourceVersion": "9"}
    assert taken["spec"]["holderIdentity"] == "b" and taken["spec"]["leaseTransitions"] == 4
    assert taken["spec"]["acquireTime"] == taken["spec"]["renewTime"] == micro_time(at)
    renewed = lease_body("l", "ns", old, "a", 15, at)["spec"]
    assert renewed["acquireTime"] == "T0" and renewed["leaseTransitions"] == 3
    released = lease_body("l", "ns", old, None, 15, at)["spec"]
    assert released["holderIdentity"] is None and released["leaseDurationSeconds"] == 1
    first = lease_body("l", "ns", LeaseView(version=None), "a", 15, at)
    assert "resourceVersion" not in first["metadata"] and first["spec"]["leaseTransitions"] == 0


def test_every_public_gateway_call_is_classified_and_every_writing_call_is_fenced() -> None:
    public = {n for n, _ in inspect.getmembers(KafkaGateway) if not n.startswith("_")} - {"settings"}
    unclassified = public - set(FENCED) - set(READ_ONLY)
    assert not unclassified, f"classify these KafkaGateway calls in reconcile/fencing.py: {unclassified}"
    for name in FENCED:
        assert name in FencedGateway.__dict__, f"FencedGateway does not fence {name}"


@pytest.mark.parametrize("call", FENCED)
def test_a_fenced_call_raises_before_reaching_kafka(call: str) -> None:
    def refuse() -> None:
        raise NotLeader("not the leader")

    # nothing listens on port 1: reaching Kafka would be a KafkaUnavailableError, not NotLeader
    gw = FencedGateway(ConnectionSettings(bootstrap_servers="127.0.0.1:1"), refuse)
    args: dict[str, tuple[object, ...]] = {
        "alter_reassignments": ({("t", 0): [1, 2]},),
        "alter_replica_log_dirs": ({("t", 0, 1): "/d"},),
        "incremental_alter_configs": ({},),
        "elect_preferred_leaders": (None,),
        "set_cordon": (1, ["/d"], True),
    }
    with pytest.raises(NotLeader) as e:
        getattr(gw, call)(*args[call])
    assert isinstance(e.value, RecordConflict)  # handled like a lost compare-and-swap: nothing written


class _Leases:
    """An in-memory Lease store with the gateway's two Lease calls (a CAS on the resourceVersion)."""

    def __init__(self) -> None:
        self.body: dict[str, Any] | None = None

    def read_lease(self, ns: str, name: str, timeout: float) -> dict[str, Any] | None:
        return None if self.body is None else copy.deepcopy(self.body)

    def write_lease(self, ns: str, body: dict[str, Any], timeout: float, create: bool) -> None:
        version = int((self.body or {}).get("metadata", {}).get("resourceVersion", "0"))
        self.body = {**body, "metadata": {**body["metadata"], "resourceVersion": str(version + 1)}}


class _Pause(threading.Event):
    """The elector's stop event, whose pauses end only when the test opens ``gate`` (as a timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.gate.wait(10)
        return False


def test_a_release_is_not_a_loss_when_the_renewal_thread_wakes_during_the_stop() -> None:
    # s81: the renewal thread's pause ended just as stop(release=True) closed the fence; the thread found
    # itself no longer leader, recorded a loss ("no renewal for 6s"), and the release was skipped: the
    # standby would have waited a whole lease duration. Here its pause ends exactly then, every time.
    leases = _Leases()
    timings = LeaseTimings(lease_duration=10, renew_deadline=6, renew_period=1, retry_period=0.5)
    elector = LeaseElector(cast(KubeGateway, leases), "ns", "kpo", "a_1", timings)
    pause = elector._stop = _Pause()
    elector.start()
    assert elector.acquired.wait(10) and elector.is_leader()
    thread = elector._thread
    assert thread is not None

    def join(timeout: float | None = None) -> None:  # stop() waits for the thread: its pause ends now
        pause.gate.set()
        thread.join(timeout)

    elector._thread = cast(threading.Thread, SimpleNamespace(join=join))
    elector.stop(release=True)
    assert not thread.is_alive() and not elector.is_leader()
    assert not elector.lost.is_set()
    assert leases.body is not None and leases.body["spec"]["holderIdentity"] is None  # released
