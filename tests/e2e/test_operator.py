"""End to end: the operator process, the real kube-apiserver and the real Kafka rig, nothing mocked.

Resources are applied with kubectl exactly as a user would; the tests read Kafka directly to check
the result (placement, cordons, throttles) and the resources' status, conditions and Events.
"""

from __future__ import annotations

import base64
import gzip
import json
import signal
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource, NewTopic, ResourceType
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.integration.conftest import SilentBroker, create_topics_everywhere, wait_for

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.kafka.throttles import CLAIM_PREFIX
from kafka_placement.reconcile.record_store import DOC_KEY, configmap_name

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]
THROTTLE_KEYS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)


def apply(kubectl: Any, ns: str, manifest: str) -> None:
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)


def cluster_manifest(name: str, bootstrap: str, throttle: int = 50_000_000) -> str:
    return (
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
        f"spec: {{bootstrapServers: '{bootstrap}', throttleBytesPerSecond: {throttle}}}\n"
    )


def fill(rig: KafkaRig | str, topic: str, records: int, size: int = 500) -> None:
    """``records`` records of ``size`` bytes into ``topic`` of the rig (or the bootstrap servers given)."""
    servers = rig if isinstance(rig, str) else rig.bootstrap_servers
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "acks": "all"})
    for i in range(records):
        producer.produce(topic, key=str(i).encode(), value=b"x" * size)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def snapshot(rig: KafkaRig) -> Any:
    with KafkaGateway(ConnectionSettings(bootstrap_servers=rig.bootstrap_servers)) as gw:
        return gw.snapshot()


def execution_record(kubectl: Any, ns: str, cluster: str, document: str = "execution") -> dict[str, Any]:
    """The progress document of the executor's record in the cluster's ConfigMap ({} if none); with
    ``document="lane"``, the new-partition lane's."""
    out = kubectl("-n", ns, "get", "configmap", configmap_name(cluster, document), "-o", "json", check=False)
    if out.returncode != 0:
        return {}
    data = json.loads(out.stdout).get("binaryData", {}).get(DOC_KEY)
    doc: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(data))) if data else {}
    return doc


def throttles_left(kafka_admin: Any, rig: KafkaRig) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in rig.nodes:  # librdkafka allows one broker resource per call
        resource = ConfigResource(ResourceType.BROKER, str(node.id))
        for key, entry in kafka_admin.describe_configs([resource])[resource].result(30).items():
            if key in THROTTLE_KEYS and entry.value not in (None, ""):
                found[f"broker {node.id} {key}"] = entry.value
            elif key.startswith(CLAIM_PREFIX):  # a throttle claim (its value reads back as null)
                found[f"broker {node.id} {key}"] = "claimed"
    return found


def no_throttle_left(kafka_admin: Any, rig: KafkaRig, timeout: float = 30) -> None:
    """Until no broker reports a throttle: the operator removes them before its execution ends, through the
    controller; each broker applies that from the metadata log moments later, so a describe read right
    after the execution ended may still show one. Strict all the same: only the operator removes them."""
    deadline = time.monotonic() + timeout
    while left := throttles_left(kafka_admin, rig):
        assert time.monotonic() < deadline, f"throttles left {timeout:.0f} s after the execution: {left}"
        time.sleep(0.5)


def cordoned_dirs(rig: KafkaRig, broker: int) -> list[bool]:
    """Each dir's IsCordoned as DescribeLogDirs reports it (KIP-1066), read through the gateway."""
    found = snapshot(rig).broker(broker)
    assert found is not None, f"broker {broker} is not alive"
    return [d.cordoned for d in found.log_dirs]


def wait_cordoned(rig: KafkaRig, broker: int, cordoned: bool, why: str, timeout: float = 30) -> None:
    """Until every dir of ``broker`` is (or none is) cordoned: brokers apply the config moments after the
    controller."""
    deadline = time.monotonic() + timeout
    while (dirs := cordoned_dirs(rig, broker)) != [cordoned] * len(dirs):
        assert time.monotonic() < deadline, f"broker {broker} dirs cordoned {dirs}: {why}"
        time.sleep(0.5)


def kafka_placed_topic(rig: KafkaRig, kafka_admin: Any, partitions: int, rf: int) -> tuple[str, list[Any]]:
    """A topic Kafka places itself (no explicit assignment) and its partitions once a snapshot shows them
    all (brokers learn new topics moments after the controller)."""
    name = f"it-kafka-placed-{uuid.uuid4().hex[:8]}"
    create_topics_everywhere(
        kafka_admin, [NewTopic(name, num_partitions=partitions, replication_factor=rf)], rig
    )
    deadline = time.monotonic() + 30
    # and every replica's dir known (DescribeLogDirs: its broker made the log), else a check of the dirs
    # would hold for want of a dir
    while True:
        found = [p for p in snapshot(rig).partitions if p.topic == name]
        if len(found) == partitions and all(None not in p.log_dirs for p in found):
            return name, found
        assert time.monotonic() < deadline, f"topic {name} never showed its {partitions} partitions: {found}"
        time.sleep(0.5)


def test_decommission_and_drain_planned_together_with_manual_approval(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
    kafka_py_admin: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 3], [3, 2], [2, 1], [3, 1]])
    fill(kafka_rig, topic, 8000)
    drained = kafka_rig.node(1).log_dirs[0]
    apply(kubectl, ns, cluster_manifest("prod", kafka_rig.bootstrap_servers))
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
            "spec: {clusterRef: {name: prod}, brokers: [3]}\n---\n"
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: LogDirCordon\nmetadata: {name: drain-1}\n"
            f"spec: {{clusterRef: {{name: prod}}, broker: 1, logDirs: ['{drained}'], drain: true, "
            "approval: Manual}\n"
        ),
    )
    waiting = wait_phase(kubectl, operator, ns, "logdircordon", "drain-1", ("AwaitingApproval",))
    # the BrokerDecommission cordons its broker from its acceptance, before anything moves (KIP-1066):
    # a topic created meanwhile gets no replica there (nor on the cordoned dir of broker 1)
    wait_cordoned(kafka_rig, 3, True, "the BrokerDecommission did not cordon its broker")
    wait_for(  # broker 1 applies the drained dir's cordon moments after the controller too
        f"{drained} of broker 1 cordoned",
        lambda: snapshot(kafka_rig).broker(1).dir(drained).cordoned,  # type: ignore[union-attr]
        30,
        why=operator.tail,
    )
    placed, partitions = kafka_placed_topic(kafka_rig, kafka_admin, partitions=6, rf=2)
    try:
        for p in partitions:
            assert 3 not in p.replicas and (1, drained) not in zip(p.replicas, p.log_dirs, strict=True), p
    finally:
        kafka_admin.delete_topics([placed])[placed].result(30)
    waiting = wait_phase(kubectl, operator, ns, "logdircordon", "drain-1", ("AwaitingApproval",))
    plan_id = waiting["status"]["plan"]["id"]
    assert f"spec.approvedPlan: {plan_id}" in waiting["status"]["message"]
    other = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("AwaitingApproval",))
    assert other["status"]["plan"]["id"] == plan_id  # one plan for both intents
    assert kafka_py_admin.list_partition_reassignments() == {}  # nothing moves before approval
    blocked = {c["type"]: c for c in waiting["status"]["conditions"]}["Blocked"]
    assert blocked["status"] == "True" and blocked["reason"] == "AwaitingApproval"
    # the estimate before approval (execution/copy_model.py), and the review ConfigMap's copy of it
    estimate = waiting["status"]["plan"]["estimate"]
    assert estimate["seconds"] > 0 and estimate["exact"] and estimate["throttled"], estimate
    assert (
        estimate["bytesPerSecond"] == 41_000_000
    )  # 0.82 of the throttle: brokers achieve less without the hold
    review = get(kubectl, ns, "configmap", waiting["status"]["plan"]["review"]["configMap"])
    assert json.loads(review["data"]["estimate.json"])["seconds"] == estimate["seconds"]

    kubectl(
        "-n",
        ns,
        "patch",
        "logdircordon",
        "drain-1",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"approvedPlan": plan_id}}),
    )
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Completed",), timeout=240)
    assert {c["type"]: c for c in done["status"]["conditions"]}["Ready"]["status"] == "True"
    drained_status = wait_phase(kubectl, operator, ns, "logdircordon", "drain-1", ("Completed",))["status"]
    # the estimate against what happened (status.lastExecution), the same on both intents
    last = done["status"]["lastExecution"]
    assert drained_status["lastExecution"] == last
    assert last["planId"] == plan_id and last["phase"] == "Completed", last
    assert last["estimatedSeconds"] == estimate["seconds"] and last["actualSeconds"] >= 0
    assert last["errorRatio"] == f"{last['actualSeconds'] / estimate['seconds']:.2f}"

    snap = snapshot(kafka_rig)
    for p in snap.partitions:
        assert 3 not in p.replicas, p
        assert not any(b == 1 and d == drained for b, d in zip(p.replicas, p.log_dirs, strict=True)), p
    assert snap.broker(1).dir(drained).cordoned  # type: ignore[union-attr]  # KIP-1066 cordon set
    assert all(d.cordoned for d in snap.broker(3).log_dirs)  # type: ignore[union-attr]  # until deleted
    no_throttle_left(kafka_admin, kafka_rig)
    events = kubectl(
        "-n", ns, "get", "events", "--field-selector", "involvedObject.name=retire-3", "-o", "json"
    )
    reasons = {e["reason"] for e in json.loads(events.stdout)["items"]}
    assert {"AwaitingApproval", "Executing", "Completed"} <= reasons

    kubectl("-n", ns, "delete", "logdircordon", "drain-1", "--timeout=60s")  # finalizer uncordons
    deadline = time.monotonic() + 30
    while snapshot(kafka_rig).broker(1).dir(drained).cordoned:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the dir stayed cordoned after its LogDirCordon was deleted"
        time.sleep(1)
    assert all(cordoned_dirs(kafka_rig, 3))  # the decommission still declares broker 3
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-3", "--timeout=60s")  # finalizer uncordons
    wait_cordoned(kafka_rig, 3, False, "broker 3 stayed cordoned after its BrokerDecommission was deleted")


def test_operator_killed_mid_execution_resumes_without_resubmitting(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[2, 1], [1, 2], [2, 3]])
    fill(kafka_rig, topic, 12000)  # ~6 MB at 300 kB/s: long enough to kill the operator mid-move
    apply(kubectl, ns, cluster_manifest("slow", kafka_rig.bootstrap_servers, throttle=300_000))
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
            "spec: {clusterRef: {name: slow}, brokers: [2]}\n"
        ),
    )
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Executing",))

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, "slow")

    deadline = time.monotonic() + 60
    while not record().get("inFlight"):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)
    operator.kill(signal.SIGKILL)
    assert record()["phase"] not in ("Completed", "Cancelled", "Failed"), "finished before the kill"
    operator.start()
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=300)
    final = record()
    assert final["phase"] == "Completed"
    assert final["counters"]["submissions"] >= 1 and final["counters"]["resubmitted"] == 0
    assert all(2 not in p.replicas for p in snapshot(kafka_rig).partitions)
    no_throttle_left(kafka_admin, kafka_rig)


def test_invalid_resources_are_rejected_or_reported_and_nothing_moves(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, kafka_py_admin: Any
) -> None:
    ns = k8s_namespace
    apply(kubectl, ns, cluster_manifest("prod", kafka_rig.bootstrap_servers))

    def refused(manifest: str) -> Any:
        """``kubectl apply`` of a manifest the CRD schema must refuse: the failed run."""
        return kubectl("-n", ns, "apply", "-f", "-", check=False, input=manifest)

    bad = refused(
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: LogDirCordon\nmetadata: {name: rel}\n"
        "spec: {clusterRef: {name: prod}, broker: 1, logDirs: [data-0]}\n"
    )
    assert bad.returncode != 0 and "logDirs" in bad.stderr  # the CRD schema rejects a relative path
    effort = refused(
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: careless}\n"
        f"spec: {{bootstrapServers: '{kafka_rig.bootstrap_servers}', planner: {{effort: fast}}}}\n"
    )
    assert effort.returncode != 0 and "spec.planner.effort" in effort.stderr  # the schema's enum
    assert '"Exhaustive"' in effort.stderr  # the apiserver lists the choices
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: ghost}\n"
            "spec: {clusterRef: {name: prod}, brokers: [42]}\n"
        ),
    )
    failed = wait_phase(kubectl, operator, ns, "brokerdecommission", "ghost", ("Failed",))
    assert "unknown broker 42" in failed["status"]["message"]
    conditions = {c["type"]: c for c in failed["status"]["conditions"]}
    assert conditions["Degraded"]["status"] == "True" and conditions["Ready"]["status"] == "False"
    assert kafka_py_admin.list_partition_reassignments() == {}


def unreachable(status: dict[str, Any]) -> bool:
    """An intent's status says Kafka does not answer (``Pending``, reason ``ClusterUnreachable``)."""
    ready = [c for c in status.get("conditions") or () if c.get("type") == "Ready"]
    return bool(ready) and ready[0].get("reason") == "ClusterUnreachable"


def test_unreachable_cluster_is_reported_on_every_intent(
    operator: Operator, kubectl: Any, k8s_namespace: str
) -> None:
    ns = k8s_namespace
    apply(kubectl, ns, cluster_manifest("gone", "127.0.0.1:1"))
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire}\n"
            "spec: {clusterRef: {name: gone}, brokers: [1]}\n"
        ),
    )
    # Kafka not answering is transient (a whole-cluster restart): the intent waits Pending, not Failed
    waiting = wait_phase(
        kubectl, operator, ns, "brokerdecommission", "retire", ("Pending",), timeout=90, until=unreachable
    )
    assert "cannot reach Kafka at 127.0.0.1:1" in waiting["status"]["message"]
    conditions = {c["type"]: c["status"] for c in waiting["status"]["conditions"]}
    assert conditions["Reconciling"] == "True" and conditions["Stalled"] == "False", conditions  # InProgress
    # the cluster's own status is written after its intents' in a reconcile: waited for, not read once
    wait_phase(kubectl, operator, ns, "kafkacluster", "gone", ("Unreachable",), timeout=30)


def test_a_cluster_deleted_mid_reconcile_is_gone_once_the_reconcile_ends(
    operator: Operator, kubectl: Any, k8s_namespace: str
) -> None:
    """A KafkaCluster whose "broker" accepts connections and never answers holds each reconcile until the
    Kafka client's connect timeout. Deleted during its second reconcile, the cluster keeps kopf's
    finalizer until that reconcile ends and goes after it (bounded by the wait); the closed gateways leave no
    client behind that would go on connecting to the deleted cluster's brokers (before the fix every
    failed reconcile left one, reconnecting every 11 s)."""
    ns = k8s_namespace
    with SilentBroker() as silent:
        apply(kubectl, ns, cluster_manifest("silent", silent.address))
        wait_phase(kubectl, operator, ns, "kafkacluster", "silent", ("Unreachable",))
        reported = time.monotonic()
        while not any(t > reported for t in silent.opened) and time.monotonic() - reported < 60:
            time.sleep(0.1)
        in_flight = silent.open_now()
        assert len(in_flight) == 1, f"not one reconcile connected: {silent.opened} {silent.closed}"
        kubectl("-n", ns, "delete", "kafkacluster", "silent", "--wait=false")
        deleted = time.monotonic()
        while get(kubectl, ns, "kafkacluster", "silent") and time.monotonic() - deleted < 150:
            time.sleep(0.5)
        gone = time.monotonic()
        time.sleep(5)  # a client left open reconnects after ~1 s
        late = [t - gone for t in silent.opened if t > gone]
    assert not get(kubectl, ns, "kafkacluster", "silent"), f"never deleted:\n{operator.tail()}"
    ended = silent.closed.get(in_flight[0])
    assert ended is not None and ended > deleted, "the reconcile was not in flight when deleted"
    assert gone > ended, (  # kopf's finalizer held the cluster until the reconcile in flight ended
        f"deleted {gone - deleted:.1f}s after the request, its reconcile ended at {ended - deleted:.1f}s"
    )
    assert not late, f"connections to the deleted cluster's broker after it was gone: {late}"


def test_deleting_a_decommission_mid_flight_reverts_its_moves(
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
    apply(kubectl, ns, cluster_manifest("slow", kafka_rig.bootstrap_servers, throttle=200_000))
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
            "spec: {clusterRef: {name: slow}, brokers: [2]}\n"
        ),
    )

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, "slow")

    deadline = time.monotonic() + 90
    while not record().get("inFlight"):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-2", "--timeout=60s")  # finalizer: cancel
    deadline = time.monotonic() + 180
    while record().get("phase") != "Cancelled":
        assert time.monotonic() < deadline, (
            f"{record().get('phase')}: {record().get('lastError')}\n{operator.tail()}"
        )
        time.sleep(1)
    assert kafka_py_admin.list_partition_reassignments() == {}
    snap = snapshot(kafka_rig)
    assert [list(snap.partition(topic, n).replicas) for n in range(3)] == assignment  # type: ignore[union-attr]
    no_throttle_left(kafka_admin, kafka_rig)


def test_infeasible_intents_are_blocked_with_the_reason_and_nothing_moves(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_py_admin: Any,
) -> None:
    ns = k8s_namespace
    new_topic([[1, 2], [2, 3]])
    apply(kubectl, ns, cluster_manifest("prod", kafka_rig.bootstrap_servers))
    apply(
        kubectl,
        ns,
        (
            "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: too-many}\n"
            "spec: {clusterRef: {name: prod}, brokers: [1, 2]}\n"
        ),
    )
    failed = wait_phase(kubectl, operator, ns, "brokerdecommission", "too-many", ("Failed",))
    message = failed["status"]["message"]
    assert "replication factor 2 needs 2 brokers" in message and "1 remain" in message, message
    blocked = {c["type"]: c for c in failed["status"]["conditions"]}["Blocked"]
    assert blocked["status"] == "True" and blocked["reason"] == "Infeasible"
    assert kafka_py_admin.list_partition_reassignments() == {}
