"""End to end: a third party deletes the operator's throttles mid-move (as a Strimzi Topic Operator or a
script would). The operator puts them back, posts a Warning Event `OwnedConfigChanged` on the intent,
increments `kafka_placement_owned_config_reapplied_total`, completes the move and leaves no throttle.
A plan that would take a topic below its min.insync.replicas fails with the reason and moves nothing.
Real apiserver and Kafka only.
"""

from __future__ import annotations

import json
import signal
import time
import urllib.request
from typing import Any

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.conftest import KafkaRig, Operator, free_port, wait_phase
from tests.e2e.test_operator import (
    apply,
    cluster_manifest,
    execution_record,
    fill,
    no_throttle_left,
    snapshot,
    throttles_left,
)
from tests.integration.conftest import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]

# the leader side only: the receiving broker's follower throttle keeps the move slow enough to observe
RATES = ("leader.replication.throttled.rate",)
DYNAMIC_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG.value


def delete_rates(kafka_admin: Any, rig: KafkaRig) -> int:
    """Delete the leader throttle rate on every broker that has it; returns how many were deleted."""
    deleted = 0
    for node in rig.nodes:
        resource = ConfigResource(ResourceType.BROKER, str(node.id))
        present = kafka_admin.describe_configs([resource])[resource].result(30)
        names = [k for k in RATES if present.get(k) is not None and present[k].source == DYNAMIC_BROKER]
        if not names:
            continue
        entries = [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in names]
        change = ConfigResource(ResourceType.BROKER, str(node.id), incremental_configs=entries)
        kafka_admin.incremental_alter_configs([change])[change].result(30)
        deleted += len(names)
    return deleted


def events_of(kubectl: Any, ns: str, name: str) -> list[dict[str, Any]]:
    out = kubectl("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def test_throttles_deleted_mid_move_are_reapplied_with_an_event_and_a_metric(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
) -> None:
    ns = k8s_namespace
    operator.kill(signal.SIGTERM)
    operator.metrics_port = free_port()
    operator.start()
    topic = new_topic([[2, 1], [1, 2]], config={"min.insync.replicas": "1"})
    fill(kafka_rig, topic, 16000)  # ~8 MB at 300 kB/s: the move outlasts the deletion and the next tick
    apply(kubectl, ns, cluster_manifest("fenced", kafka_rig.bootstrap_servers, throttle=300_000))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
        "spec: {clusterRef: {name: fenced}, brokers: [2]}\n",
    )
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Executing",))
    deadline = time.monotonic() + 60
    while not execution_record(kubectl, ns, "fenced").get("inFlight") or not throttles_left(
        kafka_admin, kafka_rig
    ):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)
    assert delete_rates(kafka_admin, kafka_rig) > 0

    deadline = time.monotonic() + 60
    while not any(e["reason"] == "OwnedConfigChanged" for e in events_of(kubectl, ns, "retire-2")):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)
    event = next(e for e in events_of(kubectl, ns, "retire-2") if e["reason"] == "OwnedConfigChanged")
    assert event["type"] == "Warning"
    assert "leader.replication.throttled.rate deleted" in event["message"], event["message"]
    # put back: the operator re-set the rate through the controller (the Event says so); the brokers apply
    # it moments later, so waited for. (Only the leader rate was deleted: any throttle left would not do.)
    wait_for(
        "the leader throttle rate put back on a broker",
        lambda: any(k.endswith(RATES[0]) for k in throttles_left(kafka_admin, kafka_rig)),
        30,
        why=operator.tail,
    )
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    samples = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples.get("kafka_placement_owned_config_reapplied_total", 0) >= 1, text

    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=300)
    record = execution_record(kubectl, ns, "fenced")
    assert record["defence"]["reapplied"] >= 1 and record["counters"]["resubmitted"] == 0
    assert all(2 not in p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic)
    no_throttle_left(kafka_admin, kafka_rig)


def test_plan_below_min_insync_replicas_fails_and_moves_nothing(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
) -> None:
    """RF 2 -> 1 by a PlacementPolicy on a topic with min.insync.replicas 2: refused before moving."""
    ns = k8s_namespace
    topic = new_topic([[1, 2], [2, 3]], config={"min.insync.replicas": "2"})
    before = {p.partition: p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic}
    apply(kubectl, ns, cluster_manifest("isr", kafka_rig.bootstrap_servers))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: shrink}\n"
        f"spec: {{clusterRef: {{name: isr}}, topics: {{include: ['{topic}']}}, replicationFactor: 1}}\n",
    )
    failed = wait_phase(
        kubectl, operator, ns, "placementpolicy", "shrink", ("Failed", "Blocked"), timeout=120
    )
    status = failed["status"]  # the status that reached the phase (not a second read)
    assert "min.insync.replicas" in status.get("message", ""), status
    after = {p.partition: p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic}
    assert after == before
