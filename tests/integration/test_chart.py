"""The Helm chart and the CRDs against the real kube-apiserver rig: lint, server-side validation of the
rendered manifests in both RBAC modes, an install, the examples, and rejection of invalid resources.

Needs `python tests/rig/k8s_rig.py up` (or `make rig-up`); nothing here is mocked. The operator's image
is not in the rig's node here (tests/e2e/test_helm_node.py loads it, runs the chart's pods and removes it
again), so the Deployments here are validated and stored; their pods do not start.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.k8s

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kafka-placement-operator"
CRD_NAMES = [
    "kafkaclusters.kafkaplacement.io",
    "logdircordons.kafkaplacement.io",
    "brokerdecommissions.kafkaplacement.io",
    "placementpolicies.kafkaplacement.io",
]

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]
Helm = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture(scope="session")
def helm(k8s_rig: dict[str, Any]) -> Helm:
    """helm(*args, check=True): the rig's helm with its kubeconfig."""

    def run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(k8s_rig["helm"]), "--kubeconfig", str(k8s_rig["kubeconfig"]), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"`helm {' '.join(args)}` exited {proc.returncode}:\n{proc.stderr}{proc.stdout}")
        return proc

    return run


@pytest.fixture(scope="module")
def crds_installed(kubectl: Kubectl) -> None:
    """The chart's CRDs applied (server-side, idempotent) and Established."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in CRD_NAMES])


@pytest.fixture
def extra_namespaces(kubectl: Kubectl) -> Iterator[list[str]]:
    """Two more fresh namespaces (for watchNamespaces), deleted afterwards."""
    names = [f"t-watch-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for n in names:
        kubectl("create", "namespace", n)
    yield names
    kubectl("delete", "namespace", *names, "--wait=false", check=False)


def _render(helm: Helm, namespace: str, *sets: str) -> str:
    args = ["template", "kpo", str(CHART), "--namespace", namespace]
    for s in sets:
        args += ["--set", s]
    return helm(*args).stdout


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def test_helm_lint_strict(helm: Helm) -> None:
    out = helm("lint", "--strict", str(CHART))
    assert "0 chart(s) failed" in out.stdout


def test_default_values_render_cluster_wide_rbac(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str, crds_installed: None
) -> None:
    text = _render(helm, k8s_namespace)
    docs = _docs(text)
    kinds = sorted(d["kind"] for d in docs)
    assert "ClusterRoleBinding" in kinds
    # the only namespaced Role is leader election's, in the release namespace
    roles = [(d["metadata"]["name"], d["metadata"]["namespace"]) for d in docs if d["kind"] == "Role"]
    assert roles == [("kpo-kafka-placement-operator-leader-election", k8s_namespace)]
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["operator", "--all-namespaces"]
    aggregated = {d["metadata"]["name"]: d["metadata"]["labels"] for d in docs if d["kind"] == "ClusterRole"}
    assert aggregated["kafka-placement-view"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert aggregated["kafka-placement-edit"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    out = kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    assert "deployment.apps/kpo-kafka-placement-operator created (server dry run)" in out.stdout


def test_watch_namespaces_render_roles_per_namespace(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str, extra_namespaces: list[str], crds_installed: None
) -> None:
    a, b = extra_namespaces
    text = _render(helm, k8s_namespace, f"watchNamespaces={{{a},{b}}}")
    docs = _docs(text)
    election = "kpo-kafka-placement-operator-leader-election"
    roles = sorted(
        d["metadata"]["namespace"] for d in docs if d["kind"] == "Role" and d["metadata"]["name"] != election
    )
    bindings = sorted(
        d["metadata"]["namespace"]
        for d in docs
        if d["kind"] == "RoleBinding" and d["metadata"]["name"] != election
    )
    assert roles == bindings == sorted([a, b])
    assert [d["metadata"]["namespace"] for d in docs if d["metadata"]["name"] == election] == [
        k8s_namespace
    ] * 2
    cluster_roles = [d for d in docs if d["kind"] == "ClusterRole"]
    discovery = next(d for d in cluster_roles if d["metadata"]["name"].endswith("-discovery"))
    assert [r["resources"] for r in discovery["rules"]] == [["customresourcedefinitions"]]
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    args = deploy["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["operator", "--namespace", a, "--namespace", b]
    kubectl("apply", "--dry-run=server", "-f", "-", input=text)


def test_spark_rbac_toggle_renders_valid_roles(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str, crds_installed: None
) -> None:
    text = _render(
        helm,
        k8s_namespace,
        "planner.spark.rbac.create=true",
        "planner.spark.driverServiceAccount.create=true",
        "planner.spark.exchange.claimName=kp-exchange",
        "planner.spark.conf.spark\\.executor\\.cores=2",
    )
    docs = _docs(text)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ServiceAccount", "kafka-placement-spark-driver") in names
    assert ("Role", "kpo-kafka-placement-operator-spark-driver") in names
    launcher = next(
        d
        for d in docs
        if (d["kind"], d["metadata"]["name"]) == ("Role", "kpo-kafka-placement-operator-spark-launcher")
    )
    rule = next(r for r in launcher["rules"] if "sparkapplications" in r["resources"])
    assert rule["apiGroups"] == ["sparkoperator.k8s.io"] and "create" in rule["verbs"]
    pods = next(r for r in launcher["rules"] if r["resources"] == ["pods"])  # the Pod launcher's driver
    assert {"create", "get", "delete"} <= set(pods["verbs"])
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM"] == "kp-exchange"
    assert env["KAFKA_PLACEMENT_SPARK_LAUNCHER"] == "Pod"
    assert json.loads(env["KAFKA_PLACEMENT_SPARK_CONF"] or "") == {"spark.executor.cores": 2}
    assert {"name": "exchange", "mountPath": env["KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR"]} in pod["containers"][
        0
    ]["volumeMounts"]
    assert {"name": "exchange", "persistentVolumeClaim": {"claimName": "kp-exchange"}} in pod["volumes"]
    kubectl("apply", "--dry-run=server", "-f", "-", input=text)


def test_default_pod_meets_the_restricted_pod_security_standard(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str
) -> None:
    """The apiserver's PodSecurity admission (enforce=restricted) accepts the operator's pod."""
    kubectl("label", "namespace", k8s_namespace, "pod-security.kubernetes.io/enforce=restricted")
    deploy = next(d for d in _docs(_render(helm, k8s_namespace)) if d["kind"] == "Deployment")
    template = deploy["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pss-check", **template["metadata"]}}
    pod["spec"] = template["spec"]
    # the ServiceAccount admission plugin wants the pod's service account to exist (the chart makes it)
    kubectl("create", "serviceaccount", template["spec"]["serviceAccountName"], "-n", k8s_namespace)
    proc = kubectl(
        "apply", "--dry-run=server", "-n", k8s_namespace, "-f", "-", input=yaml.safe_dump(pod), check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "violate" not in proc.stderr, proc.stderr
    spec = template["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in spec["containers"][0]["volumeMounts"]


def test_install_establishes_crds_and_accepts_the_examples(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str, crds_installed: None
) -> None:
    release = f"kpo-{uuid.uuid4().hex[:6]}"
    # Cluster-scoped names come from the release; the aggregated roles get a per-test prefix too.
    sets = ["--set", f"rbac.aggregatedRoles.namePrefix={release}"]
    helm("install", release, str(CHART), "--namespace", k8s_namespace, "--skip-crds", *sets)
    try:
        for crd in CRD_NAMES:
            cond = kubectl(
                "get", "crd", crd, "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}"
            )
            assert cond.stdout == "True", crd
        deploy = kubectl("get", "deployment", "-n", k8s_namespace, "-o", "name")
        assert f"deployment.apps/{release}-kafka-placement-operator" in deploy.stdout
        out = kubectl("apply", "-k", str(ROOT / "examples"), "-n", k8s_namespace)
        for created in (
            "kafkacluster.kafkaplacement.io/local",
            "logdircordon.kafkaplacement.io/broker-1-data-0",
            "brokerdecommission.kafkaplacement.io/retire-3",
            "placementpolicy.kafkaplacement.io/rack-spread",
        ):
            assert created in out.stdout
        listed = kubectl("get", "kafkaplacement", "-n", k8s_namespace)
        for column in ("PHASE", "PLAN", "PROGRESS", "MOVES", "AGE"):
            assert column in listed.stdout
        short = kubectl("get", "bdc", "-n", k8s_namespace, "-o", "jsonpath={.items[0].spec.approval}")
        assert short.stdout == "Automatic"
        # schema defaults are applied by the apiserver
        policy = kubectl("get", "kpp", "rack-spread", "-n", k8s_namespace, "-o", "yaml")
        assert yaml.safe_load(policy.stdout)["spec"]["paused"] is False
    finally:
        helm("uninstall", release, "--namespace", k8s_namespace, check=False)


INVALID = [
    ("BrokerDecommission", "{clusterRef: {name: local}, brokers: []}", "spec.brokers"),
    ("BrokerDecommission", "{clusterRef: {name: local}, brokers: [1], approval: Sometimes}", "spec.approval"),
    ("BrokerDecommission", "{clusterRef: {name: local}, brokers: [1, 1]}", "spec.brokers[1]"),
    ("BrokerDecommission", "{clusterRef: {name: local}, brokers: [-1]}", "spec.brokers[0]"),
    ("BrokerDecommission", "{clusterRef: {name: local}, brokers: [1], throttle: 0}", "spec.throttle"),
    ("BrokerDecommission", "{brokers: [1]}", "spec.clusterRef"),
    ("LogDirCordon", "{clusterRef: {name: local}, broker: 1, logDirs: [data/d1]}", "spec.logDirs[0]"),
    ("LogDirCordon", "{clusterRef: {name: local}, broker: 1, logDirs: ['*', /d1]}", "spec.logDirs"),
    ("LogDirCordon", "{clusterRef: {name: local}, broker: 1, logDirs: [/d1], typo: 1}", "spec.typo"),
    ("PlacementPolicy", "{clusterRef: {name: local}, mode: Maybe}", "spec.mode"),
    (
        "PlacementPolicy",
        "{clusterRef: {name: local}, rackAwareness: {levels: 9}}",
        "spec.rackAwareness.levels",
    ),
    ("PlacementPolicy", "{clusterRef: {name: local}, balance: {tolerance: 11}}", "spec.balance.tolerance"),
    ("PlacementPolicy", "{clusterRef: {name: local}, topics: {include: []}}", "spec.topics.include"),
    ("KafkaCluster", "{bootstrapServers: 'kafka:9092;other'}", "spec.bootstrapServers"),
    ("KafkaCluster", "{bootstrapServers: 'k:9092', sasl: {mechanism: GSSAPI}}", "spec.sasl"),
    ("KafkaCluster", "{bootstrapServers: 'k:9092', limits: {maxMovesInFlight: 0}}", "spec.limits"),
]


@pytest.mark.parametrize(("kind", "spec", "field"), INVALID, ids=[f"{k}-{f}" for k, _, f in INVALID])
def test_invalid_resources_are_rejected_naming_the_field(
    kubectl: Kubectl, k8s_namespace: str, crds_installed: None, kind: str, spec: str, field: str
) -> None:
    manifest = (
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: {kind}\nmetadata: {{name: bad}}\nspec: {spec}\n"
    )
    proc = kubectl("apply", "--dry-run=server", "-n", k8s_namespace, "-f", "-", input=manifest, check=False)
    assert proc.returncode != 0, f"accepted: {manifest}"
    assert field in proc.stderr, proc.stderr


def test_two_replicas_elect_a_leader_with_a_lease_role_and_downward_api_identity(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str, crds_installed: None
) -> None:
    """Defaults: replicaCount 2, leader election on, its timings passed as env, POD_NAME/POD_NAMESPACE from
    the downward API, and the service account may get/create/update Leases in the release namespace only
    (asked of the apiserver's RBAC authorizer)."""
    release = f"kpo-{uuid.uuid4().hex[:6]}"
    sets = [
        "--set",
        f"rbac.aggregatedRoles.namePrefix={release}",
        "--set",
        "leaderElection.leaseDurationSeconds=20",
    ]
    docs = _docs(helm("template", release, str(CHART), "--namespace", k8s_namespace, *sets).stdout)
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    assert deploy["spec"]["replicas"] == 2 and deploy["spec"]["strategy"]["type"] == "RollingUpdate"
    env = {e["name"]: e for e in deploy["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert env["KAFKA_PLACEMENT_LEASE_NAME"]["value"] == f"{release}-kafka-placement-operator"
    assert env["KAFKA_PLACEMENT_LEASE_DURATION"]["value"] == "20"
    assert env["KAFKA_PLACEMENT_RENEW_DEADLINE"]["value"] == "10"
    assert env["KAFKA_PLACEMENT_LEADER_ELECTION"]["value"] == "true"
    helm("install", release, str(CHART), "--namespace", k8s_namespace, "--skip-crds", *sets)
    try:
        sa = f"system:serviceaccount:{k8s_namespace}:{release}-kafka-placement-operator"

        def can(verb: str, ns: str) -> str:
            out = kubectl(
                "auth", "can-i", verb, "leases.coordination.k8s.io", "-n", ns, "--as", sa, check=False
            )
            return out.stdout.strip()

        assert [can(v, k8s_namespace) for v in ("get", "create", "update")] == ["yes", "yes", "yes"]
        assert can("delete", k8s_namespace) == "no"
        assert can("update", "kube-system") == "no"  # only the release namespace
    finally:
        helm("uninstall", release, "--namespace", k8s_namespace, check=False)


def test_two_replicas_without_leader_election_are_refused(helm: Helm, k8s_namespace: str) -> None:
    proc = helm(
        "template",
        "kpo",
        str(CHART),
        "--namespace",
        k8s_namespace,
        "--set",
        "leaderElection.enabled=false",
        check=False,
    )
    assert proc.returncode != 0 and "replicaCount > 1 needs leaderElection.enabled=true" in proc.stderr
    one = _docs(_render(helm, k8s_namespace, "leaderElection.enabled=false", "replicaCount=1"))
    deploy = next(d for d in one if d["kind"] == "Deployment")
    assert deploy["spec"]["strategy"]["type"] == "Recreate"
    assert not [d for d in one if d["metadata"]["name"].endswith("-leader-election")]
