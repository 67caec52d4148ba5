"""The leader Lease and its fence against the real kube-apiserver (and Kafka for the gateway fence).

Electors run in this process with short timings (lease 3 s, renew deadline 2 s). A paused leader is an
elector that acquired once and then never renews (its thread is not running), exactly what SIGSTOP does
to a process; the process-level tests with real operators are in tests/e2e/test_operator_leader.py.
A candidate driven by hand (``try_acquire_or_renew``, no thread) shows when it may take the Lease by the
outcome of each attempt; the paused-leader test moves the electors' own clock (``ManualClock``) instead
of waiting, so no assertion depends on how fast this machine is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from kafka_placement.execution.store import RecordConflict
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.reconcile.fencing import FencedGateway
from kafka_placement.reconcile.leader import LeaseElector, LeaseTimings, NotLeader, boottime
from kafka_placement.reconcile.record_store import (
    LEADER,
    WRITER,
    ConfigMapStore,
    claim_records,
    configmap_name,
)

pytestmark = [pytest.mark.k8s]
FAST = LeaseTimings(lease_duration=3, renew_deadline=2, renew_period=1, retry_period=0.5)
# a hand-over by release must not be mistaken for one by expiry, nor a leader that misses its short
# renew deadline on a loaded machine (it then loses the Lease instead of releasing it) for either
HANDOVER = LeaseTimings(lease_duration=10, renew_deadline=6, renew_period=1, retry_period=0.5)


def wait(what: str, check: Any, timeout: float = 15) -> None:
    """Poll ``check`` until it holds; fail naming ``what`` once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:g} s")
        time.sleep(0.05)


class ManualClock:
    """An elector's clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def elector(
    k8s_api: Any, ns: str, identity: str, timings: LeaseTimings = FAST, clock: Callable[[], float] = boottime
) -> LeaseElector:
    return LeaseElector(KubeGateway(k8s_api), ns, "kpo-test", identity, timings, clock=clock)


def lease_spec(k8s_api: Any, ns: str) -> dict[str, Any]:
    from kubernetes import client

    spec = client.CoordinationV1Api(k8s_api).read_namespaced_lease("kpo-test", ns).spec
    return {
        "holder": spec.holder_identity,
        "duration": spec.lease_duration_seconds,
        "transitions": spec.lease_transitions,
    }


def test_one_leader_at_a_time_release_hands_over_at_once(k8s_api: Any, k8s_namespace: str) -> None:
    timings = HANDOVER
    a, b = (elector(k8s_api, k8s_namespace, name, timings) for name in ("a_1", "b_2"))
    a.start()
    wait("a acquires the new Lease", a.is_leader)
    try:
        assert not b.try_acquire_or_renew()  # b, a candidate driven by hand, sees a's Lease
        time.sleep(timings.lease_duration + 1)  # a keeps renewing: a whole lease duration later...
        assert not b.try_acquire_or_renew()  # ...b still may not take it
        assert a.is_leader() and not b.is_leader() and not b.acquired.is_set()
        assert lease_spec(k8s_api, k8s_namespace) == {"holder": "a_1", "duration": 10, "transitions": 0}
        a.stop(release=True)
        assert not a.is_leader()  # the fence closes before the release is written
        # released (no holder) by the time stop returns, a's last renewal still fresh: b's very next
        # attempt takes the Lease, where an expiry would have it wait a whole lease duration
        assert lease_spec(k8s_api, k8s_namespace) == {"holder": None, "duration": 1, "transitions": 0}
        assert b.try_acquire_or_renew() and b.is_leader()
        assert lease_spec(k8s_api, k8s_namespace) == {"holder": "b_2", "duration": 10, "transitions": 1}
        assert not a.lost.is_set()  # a released; it did not lose
    finally:
        a.stop(release=False)
        b.stop(release=False)


def test_a_paused_leader_is_fenced_by_its_clock_and_by_the_record_version(
    k8s_api: Any, k8s_namespace: str, kafka_rig: Any, kafka_py_admin: Any
) -> None:
    from kubernetes import client

    core, ns = client.CoreV1Api(k8s_api), k8s_namespace
    clock = ManualClock()  # both electors' own clock: time passes only when the test says so
    stale = elector(k8s_api, ns, "stale_1", clock=clock)
    assert stale.try_acquire_or_renew() and stale.is_leader()  # acquired once, then paused: no thread
    store = ConfigMapStore(KubeGateway(core.api_client), ns, "c1", {}, fence=stale.fence, writer="stale_1")
    store.load()
    store.save(b'{"by": "stale, while leading"}')
    cm = core.read_namespaced_config_map(configmap_name("c1"), ns)
    assert cm.metadata.annotations[WRITER] == "stale_1"
    # two saves prepared by the leader before its pause: one checks the fence after waking, the other
    # passed the fence just before the pause (its fence is a no-op here)
    late = ConfigMapStore(KubeGateway(core.api_client), ns, "c1", {}, fence=stale.fence, writer="stale_1")
    passed = ConfigMapStore(KubeGateway(core.api_client), ns, "c1", {}, writer="stale_1")
    late.load(), passed.load()

    new = elector(k8s_api, ns, "new_2", clock=clock)
    try:
        assert not new.try_acquire_or_renew()  # held, and first seen now: not taken before it expires
        clock.advance(FAST.lease_duration - 0.5)
        assert not stale.is_leader()  # its renew deadline (2 s) runs out before the lease duration (3 s)
        assert not new.try_acquire_or_renew()  # unchanged, but not yet for a whole lease duration
        clock.advance(0.5)
        assert new.try_acquire_or_renew() and new.is_leader()  # unrenewed for a whole lease duration
        assert not stale.is_leader()
        assert claim_records(KubeGateway(core.api_client), [ns], "new_2") == [f"{ns}/{configmap_name('c1')}"]
        claimed = core.read_namespaced_config_map(configmap_name("c1"), ns)
        assert claimed.metadata.annotations[LEADER].startswith("new_2 ")
        mine = ConfigMapStore(KubeGateway(core.api_client), ns, "c1", {}, fence=new.fence, writer="new_2")
        mine.load()
        mine.save(b'{"by": "new leader"}')
        after = core.read_namespaced_config_map(configmap_name("c1"), ns).metadata.resource_version

        with pytest.raises(NotLeader, match="stale_1 does not hold Lease"):
            late.save(b'{"by": "stale, after waking"}')
        with pytest.raises(RecordConflict, match="changed by another writer"):
            passed.save(b'{"by": "stale, fence passed before the pause"}')
        final = core.read_namespaced_config_map(configmap_name("c1"), ns)
        assert final.metadata.resource_version == after  # neither stale save wrote anything
        assert final.metadata.annotations[WRITER] == "new_2"
        assert mine.load() == b'{"by": "new leader"}'

        # and a Kafka submission of the stale leader never reaches Kafka
        with (
            FencedGateway(
                ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers), stale.fence
            ) as gw,
            pytest.raises(NotLeader),
        ):
            gw.alter_reassignments({("any-topic", 0): [1, 2]})
        assert kafka_py_admin.list_partition_reassignments() == {}
        # on waking, its own renewal finds the Lease taken and it steps down
        assert not stale.try_acquire_or_renew()
        assert stale.lost.is_set() and stale.holder == "new_2"
    finally:
        new.stop(release=False)
