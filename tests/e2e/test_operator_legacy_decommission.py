"""End to end: a BrokerDecommission on a cluster without KIP-1066 (the legacy rig, metadata.version 4.2).

Kafka below 4.3 cannot keep new replicas off a broker that is being drained, so the decommission's cordon
is reactive: a topic created with a replica on the decommissioned broker after it was emptied gets that
replica moved off by the operator (the decommission goes back to Executing, then Completed), with no user
action. On the main rig Kafka's own placement skips the cordoned broker (test_operator.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from tests.e2e.conftest import KafkaRig, Operator, wait_phase
from tests.e2e.test_operator import apply, cluster_manifest
from tests.integration.conftest import confluent_admin, create_topics_everywhere, wait_for

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(300)]


def replicas_of(rig: KafkaRig, topic: str) -> list[tuple[int, ...]]:
    with KafkaGateway(ConnectionSettings(rig.bootstrap_servers)) as gw:
        return [p.replicas for p in gw.snapshot().partitions if p.topic == topic]


def test_a_topic_created_on_a_decommissioned_broker_is_moved_off_on_a_legacy_cluster(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_legacy_rig: KafkaRig
) -> None:
    rig, ns = kafka_legacy_rig, k8s_namespace
    admin = confluent_admin(rig)
    first, late = (f"it-legacy-{what}-{uuid.uuid4().hex[:6]}" for what in ("first", "late"))
    created = []
    try:
        created.append(first)
        create_topics_everywhere(
            admin, [NewTopic(first, num_partitions=2, replica_assignment=[[2], [1]])], rig
        )
        apply(kubectl, ns, cluster_manifest("legacy", rig.bootstrap_servers))
        apply(
            kubectl,
            ns,
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
            "spec: {clusterRef: {name: legacy}, brokers: [2]}\n",
        )
        wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=120)
        assert all(2 not in r for r in replicas_of(rig, first))

        # Kafka 4.2 places a new replica on broker 2 when asked to: the operator moves it off
        created.append(late)
        create_topics_everywhere(admin, [NewTopic(late, num_partitions=1, replica_assignment=[[2]])], rig)
        wait_for(
            "the late topic's replica moved off broker 2",
            lambda: replicas_of(rig, late) == [(1,)],
            120,
            why=operator.tail,
        )
        wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=120)
    finally:
        kubectl("-n", ns, "delete", "brokerdecommission", "retire-2", "--timeout=60s", check=False)
        if created:
            for f in admin.delete_topics(created, request_timeout=30).values():
                f.result(30)
