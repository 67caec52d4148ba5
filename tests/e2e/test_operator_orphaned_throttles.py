"""End to end: throttles whose execution record disappeared without its finalizer are removed (issue 51).

An operator's execution runs under throttles on the rig's brokers; its process is killed and its
KafkaCluster deleted with the finalizers stripped (as a namespace deleted while no operator ran), so
nothing of it remains in Kubernetes to end the execution. Its throttles stay in Kafka, each throttled
broker carrying the claim written beside them (kafka/throttle_claims.py). Another operator, in another
namespace, with a KafkaCluster on the same Kafka, finds the claims on its next full read, sees their owner
gone in the apiserver, and removes them: the rates back to what they were, the throttled-replica entries
gone, an Event saying so. A claim whose owner still exists is left alone. Nothing mocked.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import ROOT, KafkaRig, Operator, clear_cordons, get, strip_finalizers
from tests.e2e.test_operator import apply, cluster_manifest, execution_record, fill
from tests.integration.conftest import wait_for

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import ConfigChange, ConfigTarget, KafkaGateway
from kafka_placement.kafka.throttles import CLAIM_PREFIX, CLAIM_VALUE, DIR_RATE, LEADER_RATE, claim_key
from kafka_placement.model.throttle_state import ClaimOwner

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]
RATE = 1_000_000  # bytes/s: the execution is still moving when its operator is killed


def broker_throttles(rig: KafkaRig) -> dict[str, str]:
    """Every dynamic throttle rate and claim of the rig's brokers: ``broker key`` -> value."""
    with KafkaGateway(ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)) as gw:
        described = gw.describe_configs([ConfigTarget.broker(n.id) for n in rig.nodes])
    return {
        f"{t.name} {k}": e.value or ""
        for t, entries in described.items()
        for k, e in entries.items()
        if (e.is_dynamic and e.value and k.endswith("throttled.rate")) or k.startswith(CLAIM_PREFIX)
    }


def topic_entries(rig: KafkaRig, topic: str) -> str:
    with KafkaGateway(ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)) as gw:
        described = gw.describe_configs([ConfigTarget.topic(topic)])[ConfigTarget.topic(topic)]
    return ",".join(
        e.value or "" for k, e in described.items() if k.endswith("throttled.replicas") and e.is_dynamic
    )


@pytest.fixture
def other_namespace(k8s_api: Any) -> Iterator[str]:
    from kubernetes import client

    name = f"t-orphans-b-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(k8s_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    strip_finalizers(k8s_api, name)
    core.delete_namespace(name)


def test_throttles_of_a_vanished_execution_are_removed_by_the_next_operator_and_a_live_claim_kept(
    operator: Operator,
    other_namespace: str,
    k8s_namespace: str,
    k8s_rig: dict[str, Any],
    k8s_api: Any,
    kubectl: Any,
    kafka_rig: KafkaRig,
    new_topic: Any,
    tmp_path: Path,
) -> None:
    ns = k8s_namespace
    # 12 partitions with 4 MB each on brokers 1-2 and 3: moving those of broker 3 takes a while at 1 MB/s
    topic = new_topic([[1 + i % 3, 1 + (i + 1) % 3] for i in range(12)])
    fill(kafka_rig, topic, 12 * 400, size=10_000)
    apply(kubectl, ns, cluster_manifest("gone", kafka_rig.bootstrap_servers, throttle=RATE))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
        "spec: {clusterRef: {name: gone}, brokers: [3]}\n",
    )
    wait_for(
        "the execution throttled and moving",
        lambda: (
            (doc := execution_record(kubectl, ns, "gone")).get("inFlight")
            and doc.get("phase") not in ("Completed", "Failed", "Cancelled")
            and any(CLAIM_PREFIX in k for k in broker_throttles(kafka_rig))
        ),
        timeout=120,
        why=lambda: (
            f"record: {execution_record(kubectl, ns, 'gone')}\nstatus: "
            f"{get(kubectl, ns, 'brokerdecommission', 'retire-3').get('status')}\n{operator.tail()}"
        ),
    )
    gone_uid = get(kubectl, ns, "kafkacluster", "gone")["metadata"]["uid"]
    operator.kill(signal.SIGKILL)
    strip_finalizers(k8s_api, ns)  # the resources are gone without their finalizers having run
    wait_for("KafkaCluster gone deleted", lambda: not get(kubectl, ns, "kafkacluster", "gone"), timeout=60)
    left = broker_throttles(kafka_rig)
    assert any(f"{CLAIM_PREFIX}{ns}/gone/{gone_uid}/" in k for k in left), left
    assert any(k.endswith(LEADER_RATE) for k in left), left

    # a claim whose owner exists (a KafkaCluster no operator serves) on broker 2, for a dir rate it set
    apply(kubectl, ns, cluster_manifest("keeper", kafka_rig.bootstrap_servers))
    keeper = get(kubectl, ns, "kafkacluster", "keeper")["metadata"]
    owner = ClaimOwner(namespace=ns, name="keeper", uid=keeper["uid"])
    kept_key = claim_key(owner, {DIR_RATE: None})
    settings = ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers)
    with KafkaGateway(settings) as gw:
        assert not gw.incremental_alter_configs(
            {ConfigTarget.broker(2): [ConfigChange(kept_key, "SET", CLAIM_VALUE)]}
        )

    kubectl("apply", "-f", str(ROOT / "crds"))
    other = Operator(other_namespace, str(k8s_rig["kubeconfig"]), tmp_path / "operator-b.log")
    other.start()
    try:
        apply(kubectl, other_namespace, cluster_manifest("next", kafka_rig.bootstrap_servers))
        wait_for(
            "the vanished execution's rates and claims removed",
            lambda: set(broker_throttles(kafka_rig)) == {f"2 {kept_key}"},
            timeout=180,
            why=lambda: f"{broker_throttles(kafka_rig)}\n{other.tail()}",
        )
        # the entries naming brokers 1 and 3 go; those naming broker 2 stay while a live owner claims it
        wait_for(
            "its throttled-replica entries of brokers 1 and 3 removed",
            lambda: not [e for e in topic_entries(kafka_rig, topic).split(",") if e.endswith((":1", ":3"))],
            timeout=30,
        )
        events = kubectl(
            "-n", other_namespace, "get", "events", "--field-selector=reason=OrphanedThrottlesRemoved",
            "-o", "jsonpath={.items[*].message}",
        ).stdout  # fmt: skip
        assert f"KafkaCluster {ns}/gone" in events and "keeper" not in events, events
    finally:
        other.kill(signal.SIGTERM)
        with KafkaGateway(settings) as gw:
            gw.incremental_alter_configs({ConfigTarget.broker(2): [ConfigChange(kept_key, "DELETE")]})
        # the vanished decommission's cordon of broker 3 stays in Kafka too (claims cover throttles only)
        clear_cordons(settings)
