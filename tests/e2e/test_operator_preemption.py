"""End to end: an urgent intent supersedes a running execution without reverting its moves in flight.

A PlacementPolicy rebalances a topic whose 12 partitions all sit on brokers 1 and 2 (replicas move to
broker 3) under a low throttle, two moves per broker at a time, so it runs for a while. A BrokerDecommission
of broker 2 with ``priority: 10`` arrives meanwhile: it must not wait for the rebalance to end. The operator
plans both intents again from where the moves in flight will be, and replaces the running plan by the new
one in one save of the record: the moves in flight go on (no cancel, none sent twice), the moves not yet
submitted are replaced, the record says which plan was superseded, and an Event on the policy says so.
Both intents end Completed with no replica on broker 2 and every partition in sync.

The failure-day variant: the rebalance's moves in flight go to broker 3, which is SIGKILLed. Those moves
can never finish; self-healing's heal (a BrokerDecommission of broker 3, ``afterSeconds: 5``) supersedes
the rebalance, and its plan gives each stranded move a new target submitted over the old reassignment.
The heal completes with no replica on broker 3, every partition in sync, nothing cancelled, nothing sent
twice.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import apply, execution_record, fill, no_throttle_left, snapshot, throttles_left
from tests.integration.conftest import confluent_admin, wait_for
from tests.integration.test_executor_broker_down import rig_node

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]


def in_sync_without(rig: KafkaRig, topic: str, broker: int, op: Operator) -> None:
    """The topic's 12 partitions at RF 2 without ``broker``, every replica in sync: the placement is final
    once the intent Completed; the ISR is waited for (a follower that caught up joins it moments later,
    and a broker's metadata follows the controller's)."""

    def wrong() -> list[Any] | str:
        parts = [p for p in snapshot(rig).partitions if p.topic == topic]
        if len(parts) != 12:
            return f"{len(parts)} partitions"
        return [
            p for p in parts if broker in p.replicas or len(p.replicas) != 2 or set(p.isr) != set(p.replicas)
        ]

    wait_for(
        f"{topic} at RF 2 without broker {broker}, in sync",
        lambda: not wrong(),
        60,
        why=lambda: f"{wrong()}\n{op.tail()}",
    )


def test_an_urgent_decommission_supersedes_a_running_rebalance_keeping_its_moves_in_flight(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2] if p % 2 else [2, 1] for p in range(12)])
    fill(kafka_rig, topic, 24_000)  # ~1 MB per partition at 300 kB/s: batches of seconds each
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: busy}\n"
        f"spec: {{bootstrapServers: '{kafka_rig.bootstrap_servers}', throttleBytesPerSecond: 300000, "
        "limits: {maxMovesPerBroker: 2}}\n",
    )
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: spread}\n"
        f"spec: {{clusterRef: {{name: busy}}, topics: {{include: ['{topic}']}}, "
        "balance: {brokers: true, tolerance: 0.05}}\n",
    )
    wait_phase(kubectl, operator, ns, "placementpolicy", "spread", ("Executing",), timeout=120)

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, "busy")

    deadline = time.monotonic() + 60
    while not record().get("inFlight"):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.3)
    first = record()
    assert first["phase"] not in ("Completed", "Cancelled", "Failed"), "finished before the urgent intent"
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
        "spec: {clusterRef: {name: busy}, brokers: [2], priority: 10}\n",
    )
    deadline = time.monotonic() + 90
    while (after := record()).get("planId") == first["planId"]:  # the version read is the one checked
        assert after["phase"] != "Completed", (
            f"the rebalance ended before it was superseded\n{operator.tail()}"
        )
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.3)
    (history,) = after["superseded"]
    assert history["planId"] == first["planId"] and history["adopted"] == len(after["adopted"])
    assert history["adopted"] >= 1, history  # moves were in flight: taken over, not reverted
    assert after["counters"]["cancels"] == 0  # nothing reverted

    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=300)
    wait_phase(kubectl, operator, ns, "placementpolicy", "spread", ("Completed",), timeout=120)
    final = record()
    assert final["counters"]["resubmitted"] == 0 and final["counters"]["cancels"] == 0
    events = kubectl(
        "-n", ns, "get", "events", "--field-selector", "involvedObject.name=spread", "-o", "json"
    )
    assert "Superseded" in {e["reason"] for e in json.loads(events.stdout)["items"]}
    in_sync_without(kafka_rig, topic, 2, operator)
    no_throttle_left(confluent_admin(kafka_rig), kafka_rig)  # a fresh client: brokers restart
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-2", "--timeout=60s")  # uncordons broker 2


def test_a_heal_supersedes_a_rebalance_whose_moves_in_flight_go_to_the_broker_that_died(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2] if p % 2 else [2, 1] for p in range(12)], config={"min.insync.replicas": "1"})
    fill(kafka_rig, topic, 24_000)
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: busy}\n"
        f"spec: {{bootstrapServers: '{kafka_rig.bootstrap_servers}', throttleBytesPerSecond: 300000, "
        "limits: {maxMovesPerBroker: 2}, selfHealing: {brokerFailure: {enabled: true, afterSeconds: 5}, "
        "approval: Automatic}}\n---\n"
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: spread}\n"
        f"spec: {{clusterRef: {{name: busy}}, topics: {{include: ['{topic}']}}, "
        "balance: {brokers: true, tolerance: 0.05}}\n",
    )

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, "busy")

    def moving_to_3() -> bool:
        doc = record()
        return bool(doc.get("inFlight")) and doc.get("phase") not in ("Completed", "Cancelled", "Failed")

    wait_for("the rebalance moving replicas to broker 3", moving_to_3, 120, why=operator.tail)
    first = record()
    stop = rig_node("stop-node", kafka_rig, 3, "--kill")
    assert stop.returncode == 0, stop.stderr + stop.stdout
    try:

        def superseded() -> dict[str, Any] | None:
            doc = record()
            return doc if doc.get("planId") != first["planId"] and doc.get("superseded") else None

        def why() -> str:
            out = kubectl("-n", ns, "get", "placementpolicy,brokerdecommission,kafkacluster", "-o", "json")
            statuses = [
                (i["kind"], i["metadata"]["name"], i.get("status")) for i in json.loads(out.stdout)["items"]
            ]
            doc = record()
            brief = {
                k: doc.get(k) for k in ("planId", "phase", "lastError", "inFlight", "superseded", "retarget")
            }
            return f"statuses: {statuses}\nrecord: {brief}\n{operator.tail()}"

        after = wait_for("the heal superseding the rebalance", superseded, 120, why=why)
        (history,) = after["superseded"]
        assert history["planId"] == first["planId"]
        assert history["retargeted"] >= 1, history  # moves toward broker 3 were in flight: re-targeted
        assert history["adopted"] == len(after["adopted"])
        heal = wait_for(
            "the heal BrokerDecommission",
            lambda: json.loads(kubectl("-n", ns, "get", "brokerdecommissions", "-o", "json").stdout)["items"],
            30,
        )[0]["metadata"]["name"]
        wait_for(
            "the heal Completed",
            lambda: (
                (get(kubectl, ns, "brokerdecommission", heal).get("status") or {}).get("phase") == "Completed"
            ),
            300,
            why=why,
        )
        final = record()
        assert final["counters"]["resubmitted"] == 0 and final["counters"]["cancels"] == 0, final["counters"]
        in_sync_without(kafka_rig, topic, 3, operator)
    finally:
        started = rig_node("start-node", kafka_rig, 3)
        assert started.returncode == 0 or "already running" in started.stderr, started.stderr
    kubectl("-n", ns, "delete", "placementpolicy", "spread", "--timeout=120s")
    admin = confluent_admin(kafka_rig)
    wait_for(
        "no throttle left once broker 3 is back",
        lambda: throttles_left(admin, kafka_rig) == {},
        60,
        why=lambda: (
            f"{throttles_left(admin, kafka_rig)}; record: {record().get('throttles')}\n{operator.tail()}"
        ),
    )
    kubectl("-n", ns, "delete", "brokerdecommission", "--all", "--timeout=120s")  # uncordons broker 3
