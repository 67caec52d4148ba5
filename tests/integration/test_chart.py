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
from tests.integration.chart_monitoring import (
    DASHBOARD_KEY,
    MONITORING_OFF,
    MONITORING_ON,
    dashboard,
    dashboard_exprs,
    rule_exprs,
)
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.k8s

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kafka-placement-operator"
# what this module's installs run: an image no node has, so that their pods never start an operator (that
# would reconcile the examples against the rig's Kafka), whatever the node rig has loaded
# (tests/e2e/conftest.py's operator_image stays loaded for the session)
NO_IMAGE = ("--set", "image.repository=kafka-placement-operator-never-loaded")
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
    helm("install", release, str(CHART), "--namespace", k8s_namespace, "--skip-crds", *sets, *NO_IMAGE)
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
    helm("install", release, str(CHART), "--namespace", k8s_namespace, "--skip-crds", *sets, *NO_IMAGE)
    try:
        sa = f"system:serviceaccount:{k8s_namespace}:{release}-kafka-placement-operator"

        def can(verb: str, ns: str) -> str:
            out = kubectl(
                "auth", "can-i", verb, "leases.coordination.k8s.io", "-n", ns, "--as", sa, check=False
            )
            return out.stdout.strip()

        # the apiserver's RBAC authorizer reads from its informer cache: the release's RoleBinding counts
        # moments after helm created it, so waited for
        wait_for(
            "get/create/update on Leases granted",
            lambda: [can(v, k8s_namespace) for v in ("get", "create", "update")] == ["yes", "yes", "yes"],
            30,
        )
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


# ---- monitoring: ServiceMonitor, PrometheusRule, Grafana dashboard, PodDisruptionBudget ------------------

MONITORING_KINDS = ("ServiceMonitor", "PrometheusRule", "PodDisruptionBudget")


def _monitoring(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The monitoring objects rendered, by kind (the dashboard's ConfigMap as ``Dashboard``)."""
    out = {d["kind"]: d for d in docs if d["kind"] in MONITORING_KINDS}
    for d in docs:
        if d["kind"] == "ConfigMap" and DASHBOARD_KEY in d.get("data", {}):
            out["Dashboard"] = d
    return out


def test_each_monitoring_value_renders_its_object_only_when_on(
    helm: Helm, kubectl: Kubectl, k8s_namespace: str
) -> None:
    """Defaults: the PodDisruptionBudget only (the others need Prometheus or Grafana); each value on
    renders its object, off removes it; the selectors find this release's Service and pods."""
    assert set(_monitoring(_docs(_render(helm, k8s_namespace)))) == {"PodDisruptionBudget"}
    assert _monitoring(_docs(_render(helm, k8s_namespace, *MONITORING_OFF))) == {}
    single = _render(helm, k8s_namespace, "replicaCount=1", "leaderElection.enabled=false")
    assert _monitoring(_docs(single)) == {}  # one pod: a budget would only block drains

    text = _render(helm, k8s_namespace, *MONITORING_ON)
    docs = _docs(text)
    found = _monitoring(docs)
    assert set(found) == {*MONITORING_KINDS, "Dashboard"}
    service = next(d for d in docs if d["kind"] == "Service")
    deploy = next(d for d in docs if d["kind"] == "Deployment")
    monitor = found["ServiceMonitor"]["spec"]
    assert monitor["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["namespaceSelector"]["matchNames"] == [k8s_namespace]
    assert [e["port"] for e in monitor["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]
    # the Service's pods-only labels do not select it: the component label does
    assert "app.kubernetes.io/component" in monitor["selector"]["matchLabels"]
    pdb = found["PodDisruptionBudget"]["spec"]
    assert pdb["selector"]["matchLabels"] == deploy["spec"]["selector"]["matchLabels"]
    assert pdb["maxUnavailable"] == 1
    # the rules select the series of the job the ServiceMonitor makes (named after the Service)
    job = f'job="{service["metadata"]["name"]}", namespace="{k8s_namespace}"'
    assert all(job in e for e in rule_exprs(docs))
    assert found["Dashboard"]["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = dashboard(docs)
    assert board["uid"] == "kafka-placement-operator" and dashboard_exprs(board)
    # what the apiserver knows (the budget and the dashboard) is valid there; the prometheus-operator's
    # kinds are not installed on the rig (tests/e2e/test_helm_node.py installs them with stand-in CRDs)
    known = [d for d in docs if d["kind"] not in ("ServiceMonitor", "PrometheusRule")]
    out = kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(known))
    assert "poddisruptionbudget.policy/kpo-kafka-placement-operator created (server dry run)" in out.stdout
    assert "configmap/kpo-kafka-placement-operator-dashboard created (server dry run)" in out.stdout

    moved = _docs(_render(helm, k8s_namespace, *MONITORING_ON, "metrics.grafanaDashboard.namespace=grafana"))
    assert _monitoring(moved)["Dashboard"]["metadata"]["namespace"] == "grafana"
    refused = helm(
        "template", "kpo", str(CHART), "--set", "metrics.serviceMonitor.enabled=true",
        "--set", "metrics.service.enabled=false", check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "metrics.serviceMonitor.enabled needs" in refused.stderr


def promtool() -> str:
    """promtool from Debian's prometheus package, unpacked into the cache by `make rig-build`."""
    proc = subprocess.run(
        ["bash", str(ROOT / "tests" / "rig" / "prometheus" / "fetch-promtool.sh")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, f"fetch-promtool.sh failed:\n{proc.stderr}"
    return proc.stdout.strip().splitlines()[-1]


# The alerts on series that show each condition, and on series that do not (promtool test rules): the
# gauges of a process that no longer leads (instance b), Paused for less than the hold (c3), a constant
# error count (c2), a few re-applications. Series: (metric, instance, cluster, phase, values).
def _series(*rows: tuple[str, str, str, str, str]) -> list[dict[str, str]]:
    out = []
    for metric, instance, cluster, phase, values in rows:
        labels = [f'job="J", instance="{instance}"']
        labels += [f'cluster="{cluster}"'] if cluster else []
        labels += [f'phase="{phase}"'] if phase else []
        out.append({"series": f"kafka_placement_{metric}{{{', '.join(labels)}}}", "values": values})
    return out


def _expect(at: str, alert: str, *labels: dict[str, str]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": x} for x in labels]}


WARNING, CRITICAL = {"severity": "warning"}, {"severity": "critical"}
ALERT_TESTS: list[dict[str, Any]] = [
    {
        "interval": "1m",
        "input_series": _series(
            ("leader", "a", "", "", "1x60"),
            ("leader", "b", "", "", "0x60"),
            ("execution_phase", "a", "c1", "Paused", "1x60"),
            ("execution_phase", "b", "c2", "Paused", "1x60"),
            ("execution_phase", "a", "c3", "Paused", "0x20 1x40"),
            ("execution_phase", "a", "c1", "Failed", "0x60"),
            ("execution_phase", "a", "c2", "Failed", "1x60"),
            ("owned_config_reapplied_total", "a", "", "", "0+1x60"),
            ("under_replicated_partitions_not_ours", "a", "c1", "", "4x60"),
            ("under_replicated_partitions_not_ours", "a", "c2", "", "0x60"),
            ("reconcile_errors_total", "a", "c1", "", "0+2x60"),
            ("reconcile_errors_total", "a", "c2", "", "3x60"),
        ),
        "alert_rule_test": [
            _expect("45m", "KafkaPlacementExecutionPaused", {**WARNING, "cluster": "c1"}),
            _expect("45m", "KafkaPlacementExecutionFailed", {**CRITICAL, "cluster": "c2"}),
            _expect("45m", "KafkaPlacementUnderReplicatedNotMoving", {**WARNING, "cluster": "c1"}),
            _expect("45m", "KafkaPlacementReconcileErrors", {**WARNING, "cluster": "c1"}),
            _expect("45m", "KafkaPlacementOwnedConfigReapplied", WARNING),
            _expect("45m", "KafkaPlacementNoLeader"),
        ],
    },
    {
        "interval": "1m",
        "input_series": _series(
            ("leader", "a", "", "", "1x5 0x30"),
            ("owned_config_reapplied_total", "a", "", "", "0 1 2 2x30"),
        ),
        "alert_rule_test": [
            _expect("4m", "KafkaPlacementNoLeader"),
            _expect("10m", "KafkaPlacementNoLeader", CRITICAL),
            _expect("20m", "KafkaPlacementOwnedConfigReapplied"),
        ],
    },
    {  # a dir above its cluster's limit fires once it lasts; one under it, or of a former leader, does not
        "interval": "1m",
        "input_series": [
            *_series(
                ("leader", "a", "", "", "1x30"),
                ("leader", "b", "", "", "0x30"),
                ("dir_usage_limit_ratio", "a", "c1", "", "0.85x30"),
                ("dir_usage_limit_ratio", "b", "c2", "", "0.85x30"),
            ),
            *(
                {
                    "series": f'kafka_placement_dir_usage_ratio{{job="J", instance="{i}", cluster="{c}", '
                    f'broker="{b}", dir="/d{b}"}}',
                    "values": v,
                }
                for i, c, b, v in (
                    ("a", "c1", 2, "0.8 0.9x29"),
                    ("a", "c1", 1, "0.5x30"),
                    ("b", "c2", 3, "0.99x30"),
                )
            ),
        ],
        "alert_rule_test": [
            _expect("3m", "KafkaPlacementDirAboveDiskLimit"),
            _expect(
                "10m",
                "KafkaPlacementDirAboveDiskLimit",
                {**WARNING, "cluster": "c1", "broker": "2", "dir": "/d2"},
            ),
        ],
    },
]


ALERT_TESTS.append(
    {  # self-healing: a dead broker and an unreachable one once they last; the condition's critical reasons
        # at once; a former leader's gauges (instance b) never
        "interval": "1m",
        "input_series": [
            *_series(
                ("leader", "a", "", "", "1x30"),
                ("leader", "b", "", "", "0x30"),
                ("dead_brokers", "a", "c1", "", "1x30"),
                ("dead_brokers", "a", "c2", "", "0 1x2 0x27"),
                ("dead_brokers", "b", "c3", "", "1x30"),
                ("unreachable_brokers", "a", "c2", "", "2x30"),
            ),
            *(
                {
                    "series": f'kafka_placement_self_healing{{job="J", instance="{i}", cluster="{c}", '
                    f'reason="{r}"}}',
                    "values": v,
                }
                for i, c, r, v in (
                    ("a", "c1", "DataLost", "1x30"),
                    ("a", "c2", "NoInSyncReplica", "1x30"),
                    ("a", "c2", "CorrelatedFailure", "0x30"),
                    ("b", "c3", "CorrelatedFailure", "1x30"),
                )
            ),
        ],
        "alert_rule_test": [
            _expect("3m", "KafkaPlacementBrokerDead"),
            _expect("10m", "KafkaPlacementBrokerDead", {**WARNING, "cluster": "c1"}),
            _expect("10m", "KafkaPlacementBrokersUnreachable", {**WARNING, "cluster": "c2"}),
            _expect("1m", "KafkaPlacementDataLost", {**CRITICAL, "cluster": "c1"}),
            _expect("1m", "KafkaPlacementNoInSyncReplica", {**CRITICAL, "cluster": "c2"}),
            _expect("10m", "KafkaPlacementCorrelatedFailure"),
        ],
    }
)


def test_the_alert_rules_pass_promtool(helm: Helm, tmp_path: Path) -> None:
    """`promtool check rules` on the rendered rules, and `promtool test rules`: each alert fires on the
    series that show its condition and stays silent otherwise (the job selector set to the tests')."""
    docs = _docs(
        _render(helm, "N", "metrics.prometheusRule.enabled=true", 'metrics.prometheusRule.selector=job="J"')
    )
    spec = next(d for d in docs if d["kind"] == "PrometheusRule")["spec"]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(spec))
    tool = promtool()

    def run(*args: str) -> str:
        proc = subprocess.run([tool, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"promtool {' '.join(args)}:\n{proc.stdout}{proc.stderr}"
        return proc.stdout + proc.stderr

    assert "SUCCESS: 12 rules found" in run("check", "rules", "rules.yaml")
    # the expressions are tested; the annotations (text) would have to be repeated verbatim
    for group in spec["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations")
    (tmp_path / "bare.yaml").write_text(yaml.safe_dump(spec))
    tests = {"rule_files": ["bare.yaml"], "evaluation_interval": "1m", "tests": ALERT_TESTS}
    (tmp_path / "alerts_test.yaml").write_text(yaml.safe_dump(tests))
    assert "SUCCESS" in run("test", "rules", "alerts_test.yaml")
