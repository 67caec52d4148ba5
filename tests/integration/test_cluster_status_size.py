"""The KafkaCluster status the operator builds for a large JBOD cluster is stored by the rig's real
kube-apiserver and etcd and reads back whole (reconcile/status_dirs.py bounds it): 1,000 brokers x 16 dirs
and 2,000 x 24, patched through the operator's ``KubeGateway`` as kopf patches the handler's result.
Without the bound, etcd refused such a patch ("request is too large": a 500), so every reconcile's status
patch of such a cluster failed. Nothing is mocked; a few seconds.

Needs the `k8s` section of rig.json; installs crds/ (the schema of ``status.dirTable``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.integration.conftest import wait_established
from tests.unit.reconcile.test_status_dirs import jbod

from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.cluster_status import STATUS_BROKERS_BUDGET
from kafka_placement.model.crd_parts import GROUP, PLURALS, VERSION
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.decide import decide
from kafka_placement.reconcile.decision import View

pytestmark = pytest.mark.k8s

ROOT = Path(__file__).resolve().parents[2]
MiB = 1024 * 1024
Kubectl = Any


@pytest.mark.parametrize(("brokers", "dirs"), [(1000, 16), (2000, 24)])
def test_a_large_jbod_clusters_status_is_stored_and_reads_back(
    kubectl: Kubectl, k8s_api: Any, k8s_namespace: str, brokers: int, dirs: int
) -> None:
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    wait_established(kubectl, f"crd/{PLURALS['KafkaCluster']}.{GROUP}")
    kube, ns, name, plural = KubeGateway(k8s_api), k8s_namespace, f"jbod-{dirs}", PLURALS["KafkaCluster"]
    kube.create_custom(
        GROUP, VERSION, ns, plural,
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "KafkaCluster", "metadata": {"name": name},
         "spec": {"bootstrapServers": "kafka.invalid:9092"}},
    )  # fmt: skip
    # what a reconcile returns for kopf to patch: the decision's part (phase, conditions) and the brokers'
    status = {**(decide(View([])).cluster or {}), **st.cluster_status(jbod(brokers, dirs), 3)}
    assert st.patch_problem(status) is None

    assert kube.patch_custom_status(GROUP, VERSION, ns, plural, name, status)  # the old status: a 500

    got = kube.get_custom(GROUP, VERSION, ns, plural, name)
    assert got is not None
    stored = got["status"]
    assert stored["brokers"] == status["brokers"] and stored["dirTable"] == status["dirTable"]
    assert stored["reassignmentsInFlight"] == 3 and stored["phase"] == status["phase"]
    assert len(json.dumps({k: stored[k] for k in ("brokers", "dirTable")}).encode()) <= STATUS_BROKERS_BUDGET
    assert len(json.dumps(got).encode()) < MiB // 2  # the whole object as served
    listed = {(b["id"], d["path"]) for b in stored["brokers"] for d in b.get("logDirs", ())}
    assert {(7, f"/var/lib/kafka/data-{d:02d}") for d in range(dirs)} <= listed  # the offline broker's
    assert not stored["dirTable"]["complete"] and stored["dirTable"]["brokersOmitted"] == 0
