"""A plan awaiting approval survives a leader change (issue 41; reconcile/plan_review.py, ``keptPlan``).

Each ``Reconciler`` here stands for one operator process: a leader that loses its Lease exits, so a new
leader starts with nothing in memory. They reconcile a real KafkaCluster on the rig's apiserver against
the rig's Kafka; the traffic sampler's estimates are handed in (``rates=``) so that the drift between
leaders is known and within the bound. The new leader keeps the plan shown from the review ConfigMap's
record and the plan's blob: it does not plan (``kafka_placement_planning_seconds`` counts no plan) and
shows the same plan. Without the record it plans again (on three brokers this small drift happens to give
the same plan; tests/unit/reconcile/test_kept_plan.py has a cluster where it gives another). A record
whose blob is gone is told in an Event and the cluster is planned afresh; one made from other intents is
planned afresh quietly."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from tests.integration.conftest import KafkaRig, TopicFactory, wait_established

from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.crd_parts import GROUP, PLURALS, VERSION
from kafka_placement.model.traffic_looks import PartitionKey
from kafka_placement.planning.traffic_rates import Traffic
from kafka_placement.reconcile import plan_review
from kafka_placement.reconcile.reconciler import Reconciler

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]

ROOT = Path(__file__).resolve().parents[2]
PARTS = 12
# hot partitions led by broker 1; broker 1's network in is 1.3x the mean
ASSIGNMENT = [[1, 2] if i < 3 else [1, 3] if i < 6 else [2, 3] if i % 2 else [3, 2] for i in range(PARTS)]


def skewed(topic: str, seed: int | None = None, amplitude: float = 0.05) -> dict[PartitionKey, Traffic]:
    """Hot partitions 0-5 at about 30 kB/s, the others at 5 kB/s; with ``seed``, each moved at random by
    up to +-``amplitude`` (within plan_keeping's bound for tolerance 0.2)."""
    rng = random.Random(seed)
    out = {}
    for i in range(PARTS):
        rate = (30_000.0 if i < 6 else 5_000.0) * (1 + i / 100)
        if seed is not None:
            rate *= 1 + amplitude * (2 * rng.random() - 1)
        out[(topic, i)] = Traffic(rate, 0)
    return out


class Leader:
    """One operator process: a Reconciler of its own, its Events recorded."""

    def __init__(self, api: Any, rates: Mapping[PartitionKey, Traffic]) -> None:
        self.events: list[tuple[str, str]] = []
        kube = KubeGateway(api, event_sink=lambda _o, _t, reason, msg: self.events.append((reason, msg)))
        self.rec = Reconciler(kube, rates=lambda _cluster: rates)

    def reconcile(self, ns: str) -> dict[str, Any]:
        """Reconcile the cluster; the policy's status.plan afterwards."""
        cluster = self.rec.cluster(ns, "kept")
        assert cluster is not None
        self.rec.reconcile(cluster)
        policy = self.rec.kube.get_custom(GROUP, VERSION, ns, PLURALS["PlacementPolicy"], "net")
        assert policy is not None
        status = policy["status"]
        assert status["phase"] == "AwaitingApproval", status
        return dict(status["plan"])


def plans_made() -> float:
    """How many plans this process made (the operator's histogram of planning times: one per plan)."""
    return float(REGISTRY.get_sample_value("kafka_placement_planning_seconds_count") or 0)


def review(api: Any, ns: str) -> dict[str, str]:
    cm = KubeGateway(api).read_config_map(ns, plan_review.name_of("kept"))
    assert cm is not None
    return dict(cm["data"])


def test_a_new_leader_keeps_the_plan_awaiting_approval_and_plans_afresh_without_its_blob(
    k8s_api: Any, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: TopicFactory
) -> None:
    ns = k8s_namespace
    kubectl("apply", "-f", str(ROOT / "crds"))
    crds = [f"crd/{plural}.{GROUP}" for plural in PLURALS.values()]
    wait_established(kubectl, *crds)
    topic = new_topic(ASSIGNMENT)
    manifest = (
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: kept}\n"
        f"spec: {{bootstrapServers: '{kafka_rig.bootstrap_servers}', traffic: {{enabled: true}}}}\n"
        "---\napiVersion: kafkaplacement.io/v1alpha1\nkind: PlacementPolicy\nmetadata: {name: net}\n"
        f"spec: {{clusterRef: {{name: kept}}, topics: {{include: ['{topic}']}}, "
        "balance: {networkIn: true, tolerance: 0.2}, approval: Manual}\n"
    )
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)

    first = Leader(k8s_api, skewed(topic)).reconcile(ns)
    data = review(k8s_api, ns)
    record = json.loads(data[plan_review.KEPT_PLAN])
    assert record["plan_id"] == first["id"] == data["planId"] and record["version"] == 1
    assert set(record["loads"]) == {"1", "2", "3"} and record["summary"]["replicaMoves"] > 0

    drifted = skewed(topic, seed=1)
    later = Leader(k8s_api, drifted)
    planned = plans_made()
    assert later.reconcile(ns) == first, later.events  # the same plan, moves and review shown
    assert plans_made() == planned and later.events == []  # kept, not planned again
    assert later.reconcile(ns) == first and plans_made() == planned  # and kept in memory from then on

    # the same drift without the record (as before it existed): planned again
    kubectl("-n", ns, "patch", "configmap", plan_review.name_of("kept"), "--type=json",
            "-p", '[{"op": "remove", "path": "/data/keptPlan"}]')  # fmt: skip
    afresh = Leader(k8s_api, drifted).reconcile(ns)
    assert plans_made() == planned + 1
    assert json.loads(review(k8s_api, ns)[plan_review.KEPT_PLAN])["plan_id"] == afresh["id"]  # written

    # the plan's blob gone: the next leader says so and plans afresh, never keeps what it cannot read
    kubectl("-n", ns, "delete", "configmap", f"kafka-placement-kept-blob-plan-{afresh['id']}-0")
    gone = Leader(k8s_api, skewed(topic, seed=2))
    plan = gone.reconcile(ns)
    assert plans_made() == planned + 2
    assert [r for r, _ in gone.events] == ["KeptPlanNotUsed"], gone.events
    assert f"the blob of plan {afresh['id']} is missing" in gone.events[0][1]
    assert review(k8s_api, ns)["planId"] == plan["id"]

    # the intents changed since the record was written: planned afresh, quietly (nothing is wrong)
    kubectl("-n", ns, "patch", "placementpolicy", "net", "--type=merge",
            "-p", '{"spec": {"balance": {"tolerance": 0.15}}}')  # fmt: skip
    changed = Leader(k8s_api, skewed(topic, seed=2))
    changed.reconcile(ns)
    assert plans_made() == planned + 3 and changed.events == []
