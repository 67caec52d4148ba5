"""End to end: a KafkaCluster deleted while its execution runs leaves nothing of ours in Kafka.

A GitOps prune deletes an intent and its KafkaCluster together. Deleting the intent only asks for a
cancel, which the cluster's next tick carries out; before the KafkaCluster had a finalizer of its own,
deleting it right after stopped those ticks and garbage-collected the execution record, so the throttles
the execution had set stayed on the brokers for good (found by the Helm test: a dir throttle left on
broker 2). Now the KafkaCluster's deletion waits for the cancel: the moves in flight are reverted, no
reassignment is left running, no throttle is left, and then the cluster and its record go.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get
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

from kafka_placement.reconcile.record_store import configmap_name

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(300)]


def test_deleting_the_cluster_with_its_intent_mid_flight_reverts_and_clears_everything(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
    kafka_py_admin: Any,
) -> None:
    ns = k8s_namespace
    assignment = [[2, 1], [1, 2], [2, 1]]
    topic = new_topic(assignment)
    fill(kafka_rig, topic, 12000)
    apply(kubectl, ns, cluster_manifest("pruned", kafka_rig.bootstrap_servers, throttle=200_000))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
        "spec: {clusterRef: {name: pruned}, brokers: [2]}\n",
    )
    wait_for(
        "moves in flight",
        lambda: execution_record(kubectl, ns, "pruned").get("inFlight"),
        90,
        why=operator.tail,
    )
    # the execution set its throttles before it submitted (the brokers apply them moments after the
    # controller, so waited for): without them the check that none is left would prove nothing
    wait_for("the execution's throttles on the brokers", lambda: throttles_left(kafka_admin, kafka_rig), 30)
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-2", "--wait=false")
    kubectl("-n", ns, "delete", "kafkacluster", "pruned", "--timeout=120s")  # waits for its finalizer
    assert not get(kubectl, ns, "kafkacluster", "pruned")
    assert execution_record(kubectl, ns, "pruned") == {} or wait_for(
        "the record garbage-collected", lambda: execution_record(kubectl, ns, "pruned") == {}, 60
    )
    review = configmap_name("pruned", "plan")  # the plan's review ConfigMap goes with its cluster too
    wait_for(
        f"{review} garbage-collected",
        lambda: kubectl("-n", ns, "get", "configmap", review, check=False).returncode != 0,
        60,
    )
    assert kafka_py_admin.list_partition_reassignments() == {}
    snap = snapshot(kafka_rig)
    assert [list(snap.partition(topic, n).replicas) for n in range(3)] == assignment  # type: ignore[union-attr]
    no_throttle_left(kafka_admin, kafka_rig)
