"""End to end: an idle, converged cluster is not re-read from Kafka on every reconcile.

The operator re-reads Kafka and re-plans an idle cluster whose resources did not change at most every
``--resync-seconds`` (here 10 s, reconciles every 2 s): a spec change is acted on at the next reconcile,
placement drift made behind the operator's back within the resync period: someone's tool lifts the cordon of
the decommissioned broker and moves a replica back onto it (Kafka 4.4 refuses a reassignment onto a broker
whose every dir is cordoned, so the drift must uncordon first, as a user's tool would); the operator
cordons the broker again and moves the replica off.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, metric_samples, wait_phase
from tests.e2e.test_operator import apply, cluster_manifest, snapshot

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]


@pytest.fixture
def operator_env() -> dict[str, str]:
    return {"KP_RESYNC_SECONDS": "10"}


def reconciles(op: Operator, cluster: str) -> dict[str, float]:
    """kafka_placement_reconciles_total of ``cluster`` (namespace/name) by kind (full, execution, quiet)."""
    return {
        s.labels["kind"]: s.value
        for s in metric_samples(op, "kafka_placement_reconciles_total")
        if s.labels.get("cluster") == cluster
    }


def converged(kubectl: Any, ns: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        status: dict[str, Any] = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
        if "converged" in str(status.get("message")):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.5)


def test_idle_cluster_is_reread_only_when_its_resources_change_or_the_resync_period_ends(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_wait: Any,
) -> None:
    from kafka_placement.kafka.connection import ConnectionSettings
    from kafka_placement.kafka.gateway import CORDON_CONFIG, ConfigChange, ConfigTarget, KafkaGateway

    ns = k8s_namespace
    operator.kill(signal.SIGTERM)
    operator.metrics_port = free_port()
    operator.start()
    topic = new_topic([[3, 1], [1, 2]])
    apply(kubectl, ns, cluster_manifest("idle", kafka_rig.bootstrap_servers))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
        "spec: {clusterRef: {name: idle}, brokers: [3]}\n",
    )
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Completed",), timeout=180)
    first = converged(kubectl, ns)

    # idle and unchanged: the reconciles go on (every 2 s) without reading Kafka. Waited for two quiet
    # ones (a fixed 7 s held only one on a loaded machine); meanwhile a full reconcile comes only with a
    # resync, at most one per started resync period (10 s) of the time that took
    before, started = reconciles(operator, f"{ns}/idle"), time.monotonic()
    deadline = started + 60
    while (after := reconciles(operator, f"{ns}/idle")).get("quiet", 0) - before.get("quiet", 0) < 2:
        assert time.monotonic() < deadline, (before, after, operator.tail())
        time.sleep(0.5)
    resyncs = 1 + int((time.monotonic() - started) // 10)
    assert after.get("full", 0) - before.get("full", 0) <= resyncs, (before, after, resyncs)

    # drift behind the operator's back: broker 3 uncordoned and given a replica again; found within the
    # resync period: cordoned again and the replica moved off
    broker_3 = ConfigTarget.broker(3)
    refusals: list[object] = []

    def drifted() -> bool:
        """Uncordon broker 3 and move partition 1 back onto it; False when Kafka refused the move (a
        resync of the operator cordoned the broker again in between: tried again)."""
        with KafkaGateway(ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers)) as gw:
            gw.incremental_alter_configs({broker_3: [ConfigChange(CORDON_CONFIG, "DELETE")]})
            refused = gw.alter_reassignments({(topic, 1): [3, 2]})
        refusals.extend(refused.values())
        return not refused

    with KafkaGateway(ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers)) as gw:
        assert gw.describe_configs([broker_3])[broker_3][CORDON_CONFIG].value  # the decommission's cordon
    kafka_wait("partition 1 moved back onto broker 3", drifted, 60, why=lambda: str(refusals[-3:]))

    def replicas_of_1() -> tuple[int, ...]:
        return next(
            p.replicas for p in snapshot(kafka_rig).partitions if (p.topic, p.partition) == (topic, 1)
        )

    before_drift = reconciles(operator, f"{ns}/idle")
    kafka_wait("broker 3 back in partition 1", lambda: 3 in replicas_of_1())
    deadline = time.monotonic() + 90  # resync (10 s) + interval (2 s) + planning, on a loaded machine
    while True:
        status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
        if (status.get("plan") or {}).get("id") not in (None, first["plan"]["id"]):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"the drift was not re-planned within 90 s: {status}\n{operator.tail()}")
        time.sleep(0.5)
    # found by a resync, the only reconcile that reads Kafka while nothing changed in Kubernetes
    assert reconciles(operator, f"{ns}/idle").get("full", 0) > before_drift.get("full", 0)
    converged(kubectl, ns)
    assert all(3 not in p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic)
    with KafkaGateway(ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers)) as gw:
        assert gw.describe_configs([broker_3])[broker_3][CORDON_CONFIG].value  # cordoned again

    # a spec change is acted on at the next reconcile, inside the resync period
    before = reconciles(operator, f"{ns}/idle")
    kubectl(
        "-n", ns, "patch", "brokerdecommission", "retire-3", "--type=merge", "-p", '{"spec":{"priority":3}}'
    )
    deadline = time.monotonic() + 8
    while reconciles(operator, f"{ns}/idle").get("full", 0) == before.get("full", 0):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.3)
