"""End to end on the secure rig: the operator configured only through a KafkaCluster with TLS/SASL Secrets.

The operator process talks to the real kube-apiserver and to the secure Kafka cluster (SASL_SSL with
SCRAM-SHA-512, or mutual TLS with a client certificate from `spec.tls.certSecretRef`) as the operator's
least-privilege principal. A missing ACL must block the execution with a Blocked condition and a Warning
Event naming it, with nothing moved; no password ever appears in status, Events or the operator's log;
PEM files from Secrets are written once per content, not once per reconcile.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import Operator, get, wait_phase
from tests.integration.conftest import wait_for
from tests.integration.secure_rig import *  # noqa: F403  (the secure rig's fixtures)
from tests.integration.secure_rig import (
    SecureRig,
    SecureTopic,
    acl_removed,
    no_throttle_left,
    placement,
    reassignments,
    throttles_left,
)

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]


@pytest.fixture
def operator_env(tmp_path: Path) -> dict[str, str]:
    """The operator's own temp dir, so the test can count the PEM files it writes."""
    (tmp_path / "optmp").mkdir()
    return {"TMPDIR": str(tmp_path / "optmp")}


def apply(kubectl: Any, ns: str, manifest: str) -> None:
    kubectl("-n", ns, "apply", "-f", "-", input=manifest)


def secrets(kubectl: Any, ns: str, rig: SecureRig) -> None:
    sec = rig.security
    kubectl("-n", ns, "create", "secret", "generic", "kafka-ca", f"--from-file=ca.crt={sec['caFile']}")
    kubectl("-n", ns, "create", "secret", "tls", "kafka-client",
            f"--cert={sec['clientCertFile']}", f"--key={sec['clientKeyFile']}")  # fmt: skip
    kubectl("-n", ns, "create", "secret", "generic", "kafka-user",
            f"--from-literal=username={sec['operatorUser']}",
            f"--from-literal=password={rig.operator_password}")  # fmt: skip


def cluster_manifest(rig: SecureRig, listener: str) -> str:
    if listener == "sasl":
        conn = (
            f"bootstrapServers: '{rig.bootstrap}', tls: {{caSecretRef: {{name: kafka-ca}}}}, "
            "sasl: {mechanism: SCRAM-SHA-512, secretRef: {name: kafka-user}}"
        )
    else:
        conn = (
            f"bootstrapServers: '{rig.mtls_bootstrap}', "
            "tls: {caSecretRef: {name: kafka-ca}, certSecretRef: {name: kafka-client}}"
        )
    return (
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {name: secure}\n"
        f"spec: {{{conn}, throttleBytesPerSecond: 10000000}}\n"
    )


DECOMMISSION = (
    "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-2}\n"
    "spec: {clusterRef: {name: secure}, brokers: [2]}\n"
)


def everything_said(kubectl: Any, ns: str, op: Operator) -> str:
    """Status of every resource, every Event and the operator's log: where a secret must never appear."""
    out = [
        kubectl("-n", ns, "get", kind, "-o", "json").stdout
        for kind in ("kafkaclusters", "brokerdecommissions")
    ]
    out.append(kubectl("-n", ns, "get", "events", "-o", "json").stdout)
    out.append(op.log.read_text(errors="replace") if op.log.exists() else "")
    return "\n".join(out)


@pytest.mark.parametrize("listener", ["sasl", "mtls"])
def test_operator_decommissions_a_broker_over_a_secured_listener(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    secure_rig: SecureRig,
    secure_topic: SecureTopic,
    tmp_path: Path,
    listener: str,
) -> None:
    ns = k8s_namespace
    topic = secure_topic([[2], [2], [1]])
    secrets(kubectl, ns, secure_rig)
    apply(kubectl, ns, cluster_manifest(secure_rig, listener))
    apply(kubectl, ns, DECOMMISSION)
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=180)
    assert {c["type"]: c for c in done["status"]["conditions"]}["Ready"]["status"] == "True"
    assert placement(secure_rig, topic) == {0: (1,), 1: (1,), 2: (1,)}
    assert not reassignments(secure_rig)
    no_throttle_left(secure_rig, [topic])
    wait_for(  # the cluster's status patch follows the intents' status in a reconcile
        "the KafkaCluster Connected",
        lambda: (get(kubectl, ns, "kafkacluster", "secure").get("status") or {}).get("phase") == "Connected",
        30,
        why=lambda: f"{get(kubectl, ns, 'kafkacluster', 'secure').get('status')}\n{operator.tail()}",
    )
    time.sleep(5)  # a few more reconciles (interval 2 s): the PEM files are reused, not written again
    entries = sorted(p.name for p in (tmp_path / "optmp").glob("kafka-placement-*/*"))
    pems = [n for n in entries if n.endswith(".pem")]  # reconcile/secret_files.py
    assert len(pems) == (1 if listener == "sasl" else 3), entries  # CA (+ client cert and key)
    others = [n for n in entries if not n.endswith(".pem")]
    assert len(others) == 1 and others[0].startswith("kube-"), entries  # kube/key_files.py: the process's own
    for p in (tmp_path / "optmp").glob("kafka-placement-*/*.pem"):
        assert p.stat().st_mode & 0o077 == 0, oct(p.stat().st_mode)
    assert secure_rig.operator_password not in everything_said(kubectl, ns, operator)


def test_missing_acl_blocks_the_execution_and_nothing_moves(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    secure_rig: SecureRig,
    secure_admin: Any,
    secure_topic: SecureTopic,
) -> None:
    ns = k8s_namespace
    topic = secure_topic([[2], [2]])
    before = placement(secure_rig, topic)
    secrets(kubectl, ns, secure_rig)
    apply(kubectl, ns, cluster_manifest(secure_rig, "sasl"))
    with acl_removed(secure_rig, secure_admin, 0) as (rtype, name, operation, _):  # ALTER on the cluster
        apply(kubectl, ns, DECOMMISSION)
        body = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Failed",), timeout=90)
        blocked = {c["type"]: c for c in body["status"]["conditions"]}["Blocked"]
        assert blocked["status"] == "True" and blocked["reason"] == "KafkaNotAuthorized", blocked
        assert f"{operation} on {rtype} {name}" in blocked["message"], blocked
        events = json.loads(
            kubectl(
                "-n", ns, "get", "events", "--field-selector", "involvedObject.name=retire-2", "-o", "json"
            ).stdout
        )["items"]
        warnings = [e for e in events if e["type"] == "Warning" and e["reason"] == "KafkaNotAuthorized"]
        assert warnings and f"{operation} on {rtype}" in warnings[0]["message"], events
        deadline = time.monotonic() + 30  # the cluster's status patch follows the intents' status
        while (get(kubectl, ns, "kafkacluster", "secure").get("status") or {}).get(
            "phase"
        ) != "NotAuthorized":
            assert time.monotonic() < deadline, get(kubectl, ns, "kafkacluster", "secure").get("status")
            time.sleep(1)
        time.sleep(5)  # several reconciles while denied: still nothing moves
        assert placement(secure_rig, topic) == before
        assert not reassignments(secure_rig) and throttles_left(secure_rig, [topic]) == {}
        assert secure_rig.operator_password not in everything_said(kubectl, ns, operator)
    # the ACL is back: the same resource goes on and completes
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-2", ("Completed",), timeout=180)
    assert placement(secure_rig, topic) == {0: (1,), 1: (1,)}
    no_throttle_left(secure_rig, [topic])
