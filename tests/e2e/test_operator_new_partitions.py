"""End to end: the new-partition lane (reconcile/new_partitions.py) places a topic created after the policy
per the policy without waiting for the full re-plan: on an idle cluster, beside a running execution, and
only once approved when the policy's approval is Manual.

The operator runs with a resync period of an hour, so the full re-plan never runs during a test after
the first one: whatever places the new topic is the lane. The rig's racks are broker 1 /dc1/r1,
2 /dc1/r2, 3 /dc2/r1: a topic created with every replica on brokers 1 and 2 breaks a two-level spread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import execution_record, fill, no_throttle_left
from tests.e2e.test_operator_policies import apply, dcs_of, patch_spec, policy, resource, stays

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]
HOUR = {"KP_RESYNC_SECONDS": "3600"}
SPREAD_WAIT_S = 120.0  # a bound on the wait, not the claim: the lane's latency is printed


@pytest.fixture
def operator_env() -> dict[str, str]:
    return HOUR


def cluster(rig: KafkaRig, **spec: Any) -> dict[str, Any]:
    return resource("KafkaCluster", "prod", {"bootstrapServers": rig.bootstrap_servers, **spec})


def spread_within(rig: KafkaRig, topic: str, op: Operator, while_: Callable[[], None] | None = None) -> float:
    """Seconds until every partition of ``topic`` has a replica in both DCs (``while_`` is checked at that
    moment: what must still hold then)."""
    started = time.monotonic()
    deadline = started + SPREAD_WAIT_S  # a bound on the wait; the seconds are printed, never asserted
    while True:
        dcs = dcs_of(rig, topic)
        if dcs and all(d == {"dc1", "dc2"} for d in dcs.values()):
            if while_ is not None:
                while_()
            return time.monotonic() - started
        assert time.monotonic() < deadline, (dcs, op.tail())
        time.sleep(0.5)


def readable(rig: KafkaRig, topic: str, count: int) -> None:
    """Every record of ``topic`` is read back (from its replicas after the moves)."""
    c = Consumer(
        {
            "bootstrap.servers": rig.bootstrap_servers,
            "group.id": f"check-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    keys: set[bytes] = set()
    deadline = time.monotonic() + 60
    try:
        while len(keys) < count and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None and m.key() is not None:
                keys.add(m.key())
    finally:
        c.close()
    assert len(keys) == count


def lane_status(kubectl: Any, ns: str) -> dict[str, Any]:
    return (get(kubectl, ns, "kafkacluster", "prod").get("status") or {}).get("newPartitions") or {}


def test_a_new_topic_on_an_idle_cluster_is_spread_by_the_lane_without_a_replan(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns = k8s_namespace
    prefix = "it-np-idle-"
    apply(kubectl, ns, cluster(kafka_rig), policy("spread", "prod", f"{prefix}*"))
    wait_phase(kubectl, operator, ns, "placementpolicy", "spread", ("Completed",))
    topic = new_topic([[1, 2], [2, 1], [1, 2], [2, 1]], name_prefix=prefix)
    fill(kafka_rig, topic, 400)  # written to before the operator sees it
    took = spread_within(kafka_rig, topic, operator)
    print(f"new topic spread by the lane {took:.1f} s after its creation and first writes")
    readable(kafka_rig, topic, 400)
    status = lane_status(kubectl, ns)
    assert status.get("phase") in ("Executing", "Completed"), status
    body = get(kubectl, ns, "placementpolicy", "spread")
    assert body["status"]["phase"] == "Completed"  # the lane did it: no full re-plan, no new main plan
    assert execution_record(kubectl, ns, "prod") == {}


def test_with_manual_approval_the_lane_plan_waits_for_its_id(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns = k8s_namespace
    prefix = "it-np-manual-"
    apply(kubectl, ns, cluster(kafka_rig), policy("spread", "prod", f"{prefix}*", approval="Manual"))
    wait_phase(kubectl, operator, ns, "placementpolicy", "spread", ("Completed",))
    topic = new_topic([[1, 2], [2, 1]], name_prefix=prefix)
    deadline = time.monotonic() + 60
    while lane_status(kubectl, ns).get("phase") != "AwaitingApproval":
        assert time.monotonic() < deadline, (lane_status(kubectl, ns), operator.tail())
        time.sleep(1)
    status = lane_status(kubectl, ns)
    assert f"set spec.approvedPlan: {status['planId']} on PlacementPolicy/spread" in status["message"]
    stays(kubectl, ns, "placementpolicy", "spread", "Completed", seconds=6)  # nothing moved meanwhile
    assert all(d == {"dc1"} for d in dcs_of(kafka_rig, topic).values())
    patch_spec(kubectl, ns, "placementpolicy", "spread", {"approvedPlan": status["planId"]})
    spread_within(kafka_rig, topic, operator)


def test_a_new_topic_is_spread_while_a_long_execution_runs_beside_it(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
) -> None:
    """A throttled rebalance of a filled topic runs for minutes; a topic created meanwhile is spread by
    the lane while that execution is still Executing; the execution then completes with no move sent
    twice and no throttle left."""
    ns = k8s_namespace
    slow, fresh = "it-np-slow-", "it-np-fresh-"
    big = new_topic([[1, 2], [2, 1], [1, 2]], name_prefix=slow)
    fill(kafka_rig, big, 2000, size=1000)  # ~2 MB copied to broker 3 at 50 kB/s: about 40 s
    docs = [
        cluster(kafka_rig, throttleBytesPerSecond=50_000),
        policy("slow", "prod", f"{slow}*"),
        policy("fresh", "prod", f"{fresh}*"),
    ]
    apply(kubectl, ns, *docs)
    wait_phase(kubectl, operator, ns, "placementpolicy", "slow", ("Executing",))
    topic = new_topic([[1, 2], [2, 1]], name_prefix=fresh)
    fill(kafka_rig, topic, 100)

    def still_executing() -> None:
        assert get(kubectl, ns, "placementpolicy", "slow")["status"]["phase"] == "Executing"

    took = spread_within(kafka_rig, topic, operator, while_=still_executing)
    print(f"new topic spread by the lane {took:.1f} s after its creation, beside a running execution")
    readable(kafka_rig, topic, 100)
    body = wait_phase(kubectl, operator, ns, "placementpolicy", "slow", ("Completed", "Failed"), timeout=300)
    assert body["status"]["phase"] == "Completed", body["status"]
    assert all(d == {"dc1", "dc2"} for d in dcs_of(kafka_rig, big).values())
    counters = execution_record(kubectl, ns, "prod").get("counters") or {}
    assert counters.get("resubmitted", 0) == 0, counters
    no_throttle_left(kafka_admin, kafka_rig, timeout=60)
