"""End to end: PlacementPolicy multi-level rack spread, Advise mode, approval after drift, pause, metrics.

The operator runs as a real process against the rig's kube-apiserver and Kafka; resources are applied
with kubectl and the tests read Kafka directly. Every test works on its own topics (PlacementPolicies
select only them); the rig's racks are broker 1 /dc1/r1, 2 /dc1/r2, 3 /dc2/r1, so a replica list [1, 2]
breaks a two-level spread and the repair puts one replica on broker 3.
"""

from __future__ import annotations

import json
import re
import signal
import time
import urllib.request
from typing import Any

import pytest
from kafka import TopicPartition
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, wait_phase
from tests.e2e.test_operator import fill, snapshot

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway
from kafka_placement.reconcile.record_store import configmap_name

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]
API_VERSION = "kafkaplacement.io/v1alpha1"
TWO_LEVELS = {"separator": "/", "levels": 2}


def apply(kubectl: Any, ns: str, *docs: dict[str, Any]) -> None:
    kubectl(
        "-n", ns, "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    )


def resource(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}


def policy(name: str, cluster: str, topic: str, **spec: Any) -> dict[str, Any]:
    return resource(
        "PlacementPolicy",
        name,
        {
            "clusterRef": {"name": cluster},
            "topics": {"include": [topic]},
            "rackAwareness": TWO_LEVELS,
            **spec,
        },
    )


def patch_spec(kubectl: Any, ns: str, kind: str, name: str, spec: dict[str, Any]) -> None:
    kubectl("-n", ns, "patch", kind, name, "--type=merge", "-p", json.dumps({"spec": spec}))


def replicas_of(rig: KafkaRig, topic: str) -> dict[int, tuple[int, ...]]:
    return {p.partition: p.replicas for p in snapshot(rig).partitions if p.topic == topic}


def dcs_of(rig: KafkaRig, topic: str) -> dict[int, set[str]]:
    """The data centres (first rack level) each partition of ``topic`` has a replica in."""
    racks = {n.id: n.rack for n in rig.nodes}
    return {
        p: {racks[b].strip("/").split("/")[0] for b in reps} for p, reps in replicas_of(rig, topic).items()
    }


def reassigning(kafka_py_admin: Any, topic: str) -> list[Any]:
    return [tp for tp in kafka_py_admin.list_partition_reassignments() if tp.topic == topic]


def completed(
    kubectl: Any, op: Operator, ns: str, kind: str, name: str, timeout: float = 90
) -> dict[str, Any]:
    body = wait_phase(kubectl, op, ns, kind, name, ("Completed", "Failed"), timeout=timeout)
    assert body["status"]["phase"] == "Completed", body["status"]
    return body


def stays(
    kubectl: Any, ns: str, kind: str, name: str, phase: str, seconds: float = 8, passing: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The resource shows only ``phase`` (or one of the ``passing`` phases, e.g. Pending right after a spec
    change) for ``seconds`` (several reconcile intervals of 2 s) and ends in ``phase``."""
    deadline = time.monotonic() + seconds
    body: dict[str, Any] = {}
    while True:
        body = get(kubectl, ns, kind, name)
        assert body["status"]["phase"] in (phase, *passing), body["status"]
        if time.monotonic() > deadline and body["status"]["phase"] == phase:
            return body
        assert time.monotonic() < deadline + 10, body["status"]
        time.sleep(1)


def test_multi_level_rack_policy_spreads_every_partition_over_both_dcs(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2], [2, 1], [1, 3]])
    fill(kafka_rig, topic, 300)
    assert dcs_of(kafka_rig, topic) == {0: {"dc1"}, 1: {"dc1"}, 2: {"dc1", "dc2"}}
    apply(kubectl, ns, *_cluster(kafka_rig), policy("spread", "prod", topic))
    completed(kubectl, operator, ns, "placementpolicy", "spread")
    assert all(dcs == {"dc1", "dc2"} for dcs in dcs_of(kafka_rig, topic).values()), dcs_of(kafka_rig, topic)
    after = replicas_of(kafka_rig, topic)
    assert after[2] == (1, 3)  # a partition that breaks no rule is not touched
    assert all(len(r) == 2 and 3 in r for r in after.values()), after  # RF kept, one replica moved to dc2


def test_advise_policy_reports_what_would_move_and_moves_nothing(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_py_admin: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2], [2, 1]])
    fill(kafka_rig, topic, 300)
    before = replicas_of(kafka_rig, topic)
    apply(kubectl, ns, *_cluster(kafka_rig), policy("advice", "prod", topic, mode="Advise"))
    body = completed(kubectl, operator, ns, "placementpolicy", "advice")
    message = body["status"]["message"]
    found = re.search(r"advice: (\d+) partitions, (\d+) bytes would move to meet this policy", message)
    assert found, message
    assert int(found[1]) == 2 and int(found[2]) > 0, message
    assert "nothing is moved" in message
    ready = {c["type"]: c for c in body["status"]["conditions"]}["Ready"]
    assert ready["status"] == "True" and ready["reason"] == "Advised"
    assert body["status"]["plan"]["moves"] == 2  # the advised moves, shown and never executed
    stays(kubectl, ns, "placementpolicy", "advice", "Completed")
    assert reassigning(kafka_py_admin, topic) == []
    assert replicas_of(kafka_rig, topic) == before
    assert kubectl("-n", ns, "get", "configmap", configmap_name("prod"), check=False).returncode != 0


def review_of(kubectl: Any, ns: str, body: dict[str, Any], plan_id: str) -> dict[str, str]:
    """The data of the review ConfigMap the intent's status names, checked to show plan ``plan_id``."""
    review = body["status"]["plan"]["review"]
    assert review["configMap"] == configmap_name("prod", "plan") and review["brokersChanging"], review
    out = kubectl("-n", ns, "get", "configmap", review["configMap"], "-o", "json")
    data: dict[str, str] = json.loads(out.stdout)["data"]
    assert data["planId"] == plan_id and json.loads(data["summary.json"])["partitionsChanged"] >= 1
    return data


def test_drift_asks_for_a_new_approval_and_a_stale_approval_runs_nothing(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_py_admin: Any,
    kafka_wait: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2], [1, 3], [2, 1], [3, 1]])
    fill(kafka_rig, topic, 200)
    # drain the dir of broker 1 holding the most of this topic's replicas (>= 2 of 4 on 2 dirs)
    on_dir: dict[str, list[int]] = {}
    for p in snapshot(kafka_rig).partitions:
        if p.topic == topic:
            on_dir.setdefault(str(p.log_dirs[p.replicas.index(1)]), []).append(p.partition)
    drained, parts = max(on_dir.items(), key=lambda kv: len(kv[1]))
    assert len(parts) >= 2, on_dir
    cordon = resource(
        "LogDirCordon",
        "drain-1",
        {
            "clusterRef": {"name": "prod"},
            "broker": 1,
            "logDirs": [drained],
            "drain": True,
            "approval": "Manual",
        },
    )
    apply(kubectl, ns, *_cluster(kafka_rig), cordon)
    cleaned = False
    try:
        waiting = wait_phase(kubectl, operator, ns, "logdircordon", "drain-1", ("AwaitingApproval", "Failed"))
        assert waiting["status"]["phase"] == "AwaitingApproval", waiting["status"]
        plan_a = waiting["status"]["plan"]["id"]
        # the plan can be read before it is approved: its review ConfigMap, named in the status
        review = review_of(kubectl, ns, waiting, plan_a)
        (one,) = [b for b in json.loads(review["brokers.json"])["brokers"] if b["broker"] == 1]
        assert one["bytesOut"] or one["dirBytes"], one  # what leaves the drained dir
        assert "<svg" in review["report.html"] and plan_a in review["report.html"]

        # drift: move one of the drained partitions off broker 1 behind the operator's back
        moved = parts[0]
        current = replicas_of(kafka_rig, topic)[moved]
        target = [next(b for b in (2, 3) if b not in current) if b == 1 else b for b in current]
        tp = TopicPartition(topic, moved)
        kafka_py_admin.alter_partition_reassignments({tp: target})
        kafka_wait(
            f"reassignment of {topic}-{moved} to {target}",
            lambda: (
                not reassigning(kafka_py_admin, topic)
                and replicas_of(kafka_rig, topic)[moved] == tuple(target)
            ),
        )

        def new_plan() -> dict[str, Any]:
            status = get(kubectl, ns, "logdircordon", "drain-1").get("status") or {}
            plan_id = (status.get("plan") or {}).get("id")
            return (
                status if plan_id and plan_id != plan_a and status.get("phase") == "AwaitingApproval" else {}
            )

        kafka_wait("a new plan id after the drift", new_plan)

        # approving the stale plan runs nothing: the message names the current plan
        patch_spec(kubectl, ns, "logdircordon", "drain-1", {"approvedPlan": plan_a})
        # the update handler resets the phase to Pending; the next reconcile plans again
        body = stays(
            kubectl, ns, "logdircordon", "drain-1", "AwaitingApproval", passing=("Pending", "Planning")
        )
        # the current plan: the one after the drift, or a later one if the snapshot changed again meanwhile
        # (a loaded machine once showed a third id here; the cause was not found)
        current_id = body["status"]["plan"]["id"]
        assert current_id != plan_a
        assert f"spec.approvedPlan: {current_id}" in body["status"]["message"]
        assert plan_a not in body["status"]["message"]
        review_of(kubectl, ns, body, current_id)  # the review follows the changed plan
        assert kubectl("-n", ns, "get", "configmap", configmap_name("prod"), check=False).returncode != 0
        still = {
            p.partition: p.log_dirs[p.replicas.index(1)]
            for p in snapshot(kafka_rig).partitions
            if p.topic == topic and 1 in p.replicas
        }
        assert all(still[p] == drained for p in parts if p != moved), still

        patch_spec(kubectl, ns, "logdircordon", "drain-1", {"approvedPlan": current_id})
        done = completed(kubectl, operator, ns, "logdircordon", "drain-1")
        message = done["status"]["message"]  # executed, or converged after it: the plan is named either way
        named = (f"plan {current_id} executed", f"converged: plan {current_id} executed")
        assert message.startswith(named), message
        for p in snapshot(kafka_rig).partitions:
            if p.topic == topic and 1 in p.replicas:
                assert p.log_dirs[p.replicas.index(1)] != drained, p

        kubectl("-n", ns, "delete", "logdircordon", "drain-1", "--timeout=60s")  # finalizer uncordons
        kafka_wait(
            f"{drained} uncordoned",
            lambda: not snapshot(kafka_rig).broker(1).dir(drained).cordoned,
            timeout=30,
        )
        cleaned = True
    finally:
        if not cleaned:  # a failed test must not leave the rig's dir cordoned
            with KafkaGateway(ConnectionSettings(bootstrap_servers=kafka_rig.bootstrap_servers)) as gw:
                if gw.supports_cordon():
                    gw.set_cordon(1, [drained], False)


def test_paused_policy_moves_nothing_until_unpaused(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_py_admin: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[1, 2], [2, 1]])
    fill(kafka_rig, topic, 200)
    before = replicas_of(kafka_rig, topic)
    apply(kubectl, ns, *_cluster(kafka_rig), policy("held", "prod", topic, paused=True))
    body = wait_phase(
        kubectl, operator, ns, "placementpolicy", "held", ("Paused", "Executing", "Completed", "Failed")
    )
    assert body["status"]["phase"] == "Paused", body["status"]
    assert "spec.paused is true" in body["status"]["message"]
    assert body["status"]["plan"]["moves"] == 2
    stays(kubectl, ns, "placementpolicy", "held", "Paused")
    assert reassigning(kafka_py_admin, topic) == []
    assert replicas_of(kafka_rig, topic) == before

    patch_spec(kubectl, ns, "placementpolicy", "held", {"paused": False})
    completed(kubectl, operator, ns, "placementpolicy", "held")
    assert all(dcs == {"dc1", "dc2"} for dcs in dcs_of(kafka_rig, topic).values()), dcs_of(kafka_rig, topic)


def test_metrics_endpoint_reports_planning_time_and_reconcile_errors(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns = k8s_namespace
    operator.kill(signal.SIGTERM)
    operator.metrics_port = free_port()
    operator.start()
    topic = new_topic([[1, 3]])  # already spread: planned, nothing moves
    apply(
        kubectl,
        ns,
        *_cluster(kafka_rig),
        policy("spread", "prod", topic),
        resource("KafkaCluster", "gone", {"bootstrapServers": "127.0.0.1:1"}),
        resource("BrokerDecommission", "retire", {"clusterRef": {"name": "gone"}, "brokers": [1]}),
    )
    completed(kubectl, operator, ns, "placementpolicy", "spread")
    wait_phase(  # Kafka not answering: the intent waits (no failure), the reconcile errors are counted
        kubectl,
        operator,
        ns,
        "brokerdecommission",
        "retire",
        ("Pending",),
        timeout=90,
        until=lambda s: "cannot reach Kafka" in (s.get("message") or ""),
    )

    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    assert "kafka_placement_planning_seconds" in text and "kafka_placement_reconcile_errors_total" in text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("kafka_placement_planning_seconds_count", ())] >= 1, text
    # labelled namespace/name: a cluster of the same name in another namespace is another series
    assert samples[("kafka_placement_reconcile_errors_total", (("cluster", f"{ns}/gone"),))] >= 1, text

    # a deleted cluster's series go with it (its decommission stays: deleting it would have the release
    # remove its cordon through the unreachable Kafka, for up to RELEASE_TIMEOUT_S)
    kubectl("-n", ns, "delete", "kafkacluster", "gone", "--timeout=120s")

    def series_of_gone() -> list[str]:
        with urllib.request.urlopen(url, timeout=10) as response:
            families = text_string_to_metric_families(response.read().decode())
        return [s.name for f in families for s in f.samples if s.labels.get("cluster") == f"{ns}/gone"]

    deadline = time.monotonic() + 30  # the delete handler removes them once it let the cluster go
    while left := series_of_gone():
        assert time.monotonic() < deadline, f"series of the deleted cluster: {left}"
        time.sleep(0.5)


def _cluster(rig: KafkaRig, name: str = "prod") -> list[dict[str, Any]]:
    """The KafkaCluster ``name`` on the rig (a manifest for ``apply``)."""
    return [resource("KafkaCluster", name, {"bootstrapServers": rig.bootstrap_servers})]
