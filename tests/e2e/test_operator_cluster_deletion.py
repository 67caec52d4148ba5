"""End to end: a KafkaCluster deleted while its execution runs leaves nothing of ours in Kafka; one whose
spec only the operator's parser refuses (an unknown time zone) shows it and still lets go of its intents.

A GitOps prune deletes an intent and its KafkaCluster together. Deleting the intent only asks for a
cancel, which the cluster's next tick carries out; before the KafkaCluster had a finalizer of its own,
deleting it right after stopped those ticks and garbage-collected the execution record, so the throttles
the execution had set stayed on the brokers for good (found by the Helm test: a dir throttle left on
broker 2). Now the KafkaCluster's deletion waits for the cancel: the moves in flight are reverted, no
reassignment is left running, no throttle is left, and then the cluster and its record go.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
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


def cordoned(rig: KafkaRig, broker: int, path: str) -> bool:
    return bool(snapshot(rig).broker(broker).dir(path).cordoned)  # type: ignore[union-attr]


def test_an_invalid_spec_is_shown_and_deleting_its_cordon_and_cluster_is_not_held(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig
) -> None:
    """An unknown IANA zone in a window (the CRD's schema cannot check it): the KafkaCluster goes
    ``Invalid`` with a Warning Event naming the field; deleting its LogDirCordon removes the cordon it set in
    Kafka all the same (the connection is all that takes), and then the cluster goes too."""
    ns, path = k8s_namespace, kafka_rig.node(1).log_dirs[0]
    apply(kubectl, ns, cluster_manifest("zbad", kafka_rig.bootstrap_servers))
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: LogDirCordon\nmetadata: {name: zbad-ldc}\n"
        f"spec: {{clusterRef: {{name: zbad}}, broker: 1, logDirs: ['{path}']}}\n",
    )
    wait_for(f"{path} of broker 1 cordoned", lambda: cordoned(kafka_rig, 1, path), 60, why=operator.tail)
    window = {"days": ["Mon"], "start": "01:00", "end": "02:00", "timeZone": "Europe/Pariss"}
    patch = json.dumps({"spec": {"execution": {"windows": [window]}}})
    kubectl("-n", ns, "patch", "kafkacluster", "zbad", "--type=merge", "-p", patch)  # the apiserver takes it
    field = "spec.execution.windows[0].timeZone: unknown time zone 'Europe/Pariss'"
    bad = wait_phase(kubectl, operator, ns, "kafkacluster", "zbad", ("Invalid",), timeout=30)
    ready = {c["type"]: c for c in bad["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec") and field in ready["message"]

    def told() -> list[dict[str, Any]]:
        out = kubectl("-n", ns, "get", "events", "--field-selector", "involvedObject.name=zbad", "-o", "json")
        return [e for e in json.loads(out.stdout)["items"] if e["reason"] == "InvalidSpec"]

    (event,) = wait_for("the InvalidSpec Event on the KafkaCluster", told, 30, every=1, why=operator.tail)
    assert event["type"] == "Warning" and field in event["message"], event

    # each deletion bounded by kubectl's own wait (it fails past 30 s): before the fix the first hung
    kubectl("-n", ns, "delete", "logdircordon", "zbad-ldc", "--timeout=30s")  # its finalizer uncordons
    wait_for(f"{path} of broker 1 uncordoned", lambda: not cordoned(kafka_rig, 1, path), 30)
    # reconciles ran meanwhile (every 2 s): the same message was not told again
    assert [e.get("count") or 1 for e in told()] == [1]
    kubectl("-n", ns, "delete", "kafkacluster", "zbad", "--timeout=30s")
    assert not get(kubectl, ns, "kafkacluster", "zbad") and not get(kubectl, ns, "logdircordon", "zbad-ldc")
