"""The operator as users deploy it: the image built here from the Dockerfile (tests/rig/image_rig.py),
imported into the rig's node under the chart's default name, and `helm install` with the chart's defaults
into a namespace that enforces the Restricted pod security standard. Both replicas become Ready (one
leads, one stands by), run as non-root on a read-only root filesystem, and the leader reconciles a
BrokerDecommission and a draining LogDirCordon of the rig's Kafka to Completed through the node's pod
network; with `planner.engine: spark` it plans inside its container what the local engine plans; the
metrics answer through the Service (the apiserver's service proxy), every metric the chart's alert rules
and dashboard name among them; the default PodDisruptionBudget covers both pods; `helm upgrade` rolls the
pods and turns the monitoring values around (ServiceMonitor, PrometheusRule and dashboard on, the budget
off; the prometheus-operator's kinds from stand-in CRDs made here);
deleting the leader's pod hands the Lease over; `helm uninstall` (after the custom resources are deleted,
their finalizers run by the pod) keeps the CRDs and removes everything else, leaving no throttle and no
cordon in Kafka.

The tests of this module run in order on one release. Needs `make rig-up` (with the node); the image
build needs network access to Debian's and PyPI's mirrors on a cold cache. Nothing is mocked.
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
from tests.e2e.conftest import clear_cordons
from tests.e2e.test_operator import no_throttle_left, snapshot
from tests.integration.chart_monitoring import (
    DASHBOARD_KEY,
    MONITORING_ON,
    dashboard,
    dashboard_exprs,
    exposed_names,
    metric_names,
    rule_exprs,
)
from tests.integration.conftest import KafkaRig, wait_for
from tests.rig.image_rig import chart_image

from kafka_placement.kafka.connection import ConnectionSettings

pytestmark = [pytest.mark.kafka, pytest.mark.k8s]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kafka-placement-operator"
RELEASE = "kpo"
FULLNAME = "kpo-kafka-placement-operator"
CRDS = ("kafkaclusters", "logdircordons", "brokerdecommissions", "placementpolicies")

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture(scope="module")
def release_ns(
    k8s_rig: dict[str, Any], rig_json: dict[str, Any], operator_image: str, monitoring_crds: None
) -> Iterator[str]:
    """A namespace enforcing the Restricted standard, for the release; deleted afterwards (before the
    stand-in monitoring CRDs go), and then no cordon is left on the rig's Kafka (the tests marked
    ``keeps_cordons`` leave theirs to the uninstall test, which may not have run)."""
    ns = f"t-helm-node-{uuid.uuid4().hex[:6]}"
    kubectl = [str(k8s_rig["kubectl"]), "--kubeconfig", str(k8s_rig["kubeconfig"])]
    subprocess.run([*kubectl, "create", "namespace", ns], check=True, capture_output=True)
    subprocess.run(
        [*kubectl, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted"],
        check=True, capture_output=True,
    )  # fmt: skip
    yield ns
    helm = [str(k8s_rig["helm"]), "--kubeconfig", str(k8s_rig["kubeconfig"])]
    subprocess.run([*helm, "uninstall", RELEASE, "-n", ns, "--wait"], capture_output=True, timeout=180)
    subprocess.run([*kubectl, "delete", "namespace", ns, "--wait=false"], capture_output=True)
    # not through the kafka_rig fixture: every test of the module would then clear the cordons after it
    clear_cordons(
        ConnectionSettings(bootstrap_servers=KafkaRig.from_json(rig_json["kafka"]).bootstrap_servers)
    )


MONITORING_CRDS = {"servicemonitors": "ServiceMonitor", "prometheusrules": "PrometheusRule"}
MONITORING_KINDS = ",".join(MONITORING_CRDS)


@pytest.fixture(scope="module")
def monitoring_crds(kubectl: Kubectl) -> Iterator[None]:
    """The prometheus-operator's ServiceMonitor and PrometheusRule kinds, absent on the rig: stand-in CRDs
    that accept any spec (the rules are checked by promtool in tests/integration/test_chart.py), made
    only when missing and deleted afterwards."""
    made = []
    for plural, kind in MONITORING_CRDS.items():
        name = f"{plural}.monitoring.coreos.com"
        if kubectl("get", "crd", name, check=False).returncode == 0:
            continue
        schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": "monitoring.coreos.com",
                "scope": "Namespaced",
                "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
            },
        }
        kubectl("apply", "-f", "-", input=json.dumps(crd))
        made.append(name)
    if made:
        kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in made])
    yield
    if made:
        kubectl("delete", "crd", *made, "--wait=false", check=False)


def monitoring_objects(kubectl: Kubectl, ns: str) -> list[str]:
    """The release's ServiceMonitor, PrometheusRule, PodDisruptionBudget and dashboard ConfigMap."""
    out = kubectl(
        "get", "servicemonitors,prometheusrules,poddisruptionbudgets,configmaps", "-n", ns,
        "-l", f"app.kubernetes.io/instance={RELEASE}", "-o", "name",
    ).stdout.split()  # fmt: skip
    return sorted(o.split("/", 1)[0].split(".", 1)[0] + "/" + o.split("/", 1)[1] for o in out)


def sets(values: tuple[str, ...]) -> list[str]:
    return [a for v in values for a in ("--set", v)]


def helm(k8s_rig: dict[str, Any], *args: str, timeout: float = 300) -> str:
    cmd = [str(k8s_rig["helm"]), "--kubeconfig", str(k8s_rig["kubeconfig"]), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"`helm {' '.join(args)}` exited {proc.returncode}:\n{proc.stderr}"
    return proc.stdout


def pods(kubectl: Kubectl, ns: str) -> list[dict[str, Any]]:
    out = kubectl("get", "pods", "-n", ns, "-l", "app.kubernetes.io/instance=" + RELEASE, "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def ready(pod: dict[str, Any]) -> bool:
    conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return conds.get("Ready") == "True"


def diagnose(kubectl: Kubectl, ns: str) -> str:
    listing = kubectl("get", "pods", "-n", ns, "-o", "wide", check=False).stdout[-2000:]
    events = kubectl("get", "events", "-n", ns, "--sort-by=.lastTimestamp", check=False).stdout[-3000:]
    out = [listing, events]
    for pod in pods(kubectl, ns):
        logs = kubectl("logs", pod["metadata"]["name"], "-n", ns, "--tail=30", check=False)
        out.append(f"--- {pod['metadata']['name']}\n{logs.stdout}{logs.stderr}")
    return "\n".join(out)


def lease_holder(kubectl: Kubectl, ns: str) -> str:
    out = kubectl("get", "lease", FULLNAME, "-n", ns, "-o", "jsonpath={.spec.holderIdentity}", check=False)
    return out.stdout.strip() if out.returncode == 0 else ""


def two_ready(kubectl: Kubectl, ns: str) -> list[dict[str, Any]] | None:
    found = pods(kubectl, ns)
    return found if len(found) == 2 and all(ready(p) for p in found) else None


def test_install_with_chart_defaults_runs_two_ready_non_root_read_only_pods(
    k8s_rig: dict[str, Any], kubectl: Kubectl, release_ns: str, operator_image: str
) -> None:
    ns = release_ns
    helm(k8s_rig, "install", RELEASE, str(CHART), "-n", ns, "--wait", "--timeout", "5m")
    found = wait_for("two Ready pods", lambda: two_ready(kubectl, ns), 240, why=lambda: diagnose(kubectl, ns))
    # of the monitoring values only the PodDisruptionBudget is on by default; it covers both pods
    assert monitoring_objects(kubectl, ns) == [f"poddisruptionbudget/{FULLNAME}"]

    def covered() -> dict[str, Any] | None:
        pdb: dict[str, Any] = json.loads(kubectl("get", "pdb", FULLNAME, "-n", ns, "-o", "json").stdout)
        status = pdb.get("status") or {}
        return pdb if status.get("expectedPods") == 2 and status.get("currentHealthy") == 2 else None

    pdb = wait_for("the budget counts two healthy pods", covered, 60, why=lambda: diagnose(kubectl, ns))
    assert pdb["status"]["disruptionsAllowed"] == 1, pdb["status"]
    holder = wait_for(
        "a Lease holder", lambda: lease_holder(kubectl, ns), 60, why=lambda: diagnose(kubectl, ns)
    )
    names = sorted(p["metadata"]["name"] for p in found)
    assert any(holder.startswith(n + "_") for n in names), (holder, names)
    for pod in found:
        status = pod["status"]["containerStatuses"][0]
        assert status["imageID"] and status["image"].endswith(chart_image()), status
        assert status["restartCount"] == 0, diagnose(kubectl, ns)
        name = pod["metadata"]["name"]
        ident = kubectl("exec", name, "-n", ns, "--", "id", "-u").stdout.strip()
        assert ident == "10001"
        write = kubectl("exec", name, "-n", ns, "--", "touch", "/opt/x", check=False)
        assert write.returncode != 0 and "Read-only file system" in write.stderr, write.stderr
        tmp = kubectl("exec", name, "-n", ns, "--", "sh", "-c", "echo ok > /tmp/probe && cat /tmp/probe")
        assert tmp.stdout.strip() == "ok"
        java = kubectl(
            "exec", name, "-n", ns, "--", "sh", "-c", '"$JAVA_HOME/bin/java" -version', check=False
        )
        assert java.returncode == 0 and "17." in java.stderr, java.stderr


def test_spark_inside_the_pod_plans_what_the_local_engine_plans(
    kubectl: Kubectl, release_ns: str, rig_json: dict[str, Any], new_topic: Any
) -> None:
    """Two clusters on the same Kafka, one planning with PySpark local inside the operator's container
    (read-only root, /tmp emptyDir, the chart's memory limit), one with the local engine: the same
    Advise-mode policy (raise the replication factor to 3) gets a plan of the same moves and bytes from
    each. Not the same plan id: each cluster reads Kafka itself, at its own moment, and what the two reads
    see may differ (the dir a new replica takes follows its broker's dir loads, which change as the rig's
    earlier topics roll and expire segments: the likely cause, not proven); the ids differed in 2 of 4
    suite runs, the moves and bytes never. That the engines plan one snapshot alike, to the id, is
    test_spark_pods.py's, which gives both the same file."""
    ns = release_ns
    bootstrap = rig_json["kafka"]["podBootstrapServers"]
    topic = new_topic([[1, 2] if i % 2 else [2, 1] for i in range(40)])  # RF 2, nothing on broker 3
    docs: list[dict[str, Any]] = []
    for engine in ("local", "spark"):
        docs.append(
            {
                "apiVersion": "kafkaplacement.io/v1alpha1",
                "kind": "KafkaCluster",
                "metadata": {"name": f"by-{engine}"},
                "spec": {"bootstrapServers": bootstrap, "planner": {"engine": engine}},
            }
        )
        docs.append(
            {
                "apiVersion": "kafkaplacement.io/v1alpha1",
                "kind": "PlacementPolicy",
                "metadata": {"name": f"spread-{engine}"},
                "spec": {
                    "clusterRef": {"name": f"by-{engine}"},
                    "topics": {"include": [topic]},
                    "replicationFactor": 3,  # every partition gains a replica on broker 3
                    "balance": {"brokers": True, "tolerance": 0.05},
                    "mode": "Advise",
                },
            }
        )
    kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(docs))

    def advised(engine: str) -> dict[str, Any] | None:
        out = kubectl("get", "placementpolicy", f"spread-{engine}", "-n", ns, "-o", "json").stdout
        plan = (json.loads(out).get("status") or {}).get("plan") or {}
        return plan if plan.get("id") else None

    spark = wait_for(
        "the spark engine's plan", lambda: advised("spark"), 600, why=lambda: diagnose(kubectl, ns)
    )
    local = wait_for(
        "the local engine's plan", lambda: advised("local"), 120, why=lambda: diagnose(kubectl, ns)
    )
    assert spark["moves"] == local["moves"] == 40 and spark["bytes"] == local["bytes"] == 0, (spark, local)
    leader = lease_holder(kubectl, ns).rsplit("_", 1)[0]
    jvm = "grep -l org.apache.spark.deploy.SparkSubmit /proc/[0-9]*/cmdline"  # the session's JVM
    ran = kubectl("exec", leader, "-n", ns, "--", "sh", "-c", jvm, check=False)
    assert ran.returncode == 0 and ran.stdout.strip(), f"no Spark JVM in the leader's container: {ran.stderr}"
    kubectl("delete", "placementpolicy", "spread-local", "spread-spark", "-n", ns, "--timeout=120s")
    kubectl("delete", "kafkacluster", "by-local", "by-spark", "-n", ns, "--timeout=120s")


@pytest.mark.keeps_cordons  # the uninstall test checks that the pod lifts them
def test_the_leader_pod_decommissions_a_broker_of_the_rigs_kafka(
    k8s_rig: dict[str, Any],
    kubectl: Kubectl,
    release_ns: str,
    rig_json: dict[str, Any],
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
) -> None:
    ns = release_ns
    bootstrap = rig_json["kafka"]["podBootstrapServers"]  # the brokers' listener on the node's bridge
    topic = new_topic([[1 + i % 3, 1 + (i + 1) % 3] for i in range(60)])
    drained = kafka_rig.node(2).log_dirs[0]
    docs = [
        {
            "apiVersion": "kafkaplacement.io/v1alpha1",
            "kind": "KafkaCluster",
            "metadata": {"name": "rig"},
            "spec": {"bootstrapServers": bootstrap, "throttleBytesPerSecond": 10_000_000},
        },
        {
            "apiVersion": "kafkaplacement.io/v1alpha1",
            "kind": "BrokerDecommission",
            "metadata": {"name": "retire-3"},
            "spec": {"clusterRef": {"name": "rig"}, "brokers": [3]},
        },
        {
            "apiVersion": "kafkaplacement.io/v1alpha1",
            "kind": "LogDirCordon",
            "metadata": {"name": "drain-2"},
            "spec": {"clusterRef": {"name": "rig"}, "broker": 2, "logDirs": [drained], "drain": True},
        },
    ]
    kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(docs))

    def finished(kind: str, name: str, timeout: float) -> str:
        def phase() -> str | None:
            out = kubectl("get", kind, name, "-n", ns, "-o", "json").stdout
            got = (json.loads(out).get("status") or {}).get("phase")
            return got if got in ("Completed", "Failed") else None

        return str(wait_for(f"{kind} {name} done", phase, timeout, why=lambda: diagnose(kubectl, ns)))

    assert finished("brokerdecommission", "retire-3", 300) == "Completed"
    assert finished("logdircordon", "drain-2", 120) == "Completed"
    snap = snapshot(kafka_rig)
    assert any(p.topic == topic for p in snap.partitions)
    for p in snap.partitions:
        assert 3 not in p.replicas, p
        assert (2, drained) not in zip(p.replicas, p.log_dirs, strict=True), p
    assert snap.broker(2).dir(drained).cordoned  # type: ignore[union-attr]  # the KIP-1066 cordon
    no_throttle_left(kafka_admin, kafka_rig)


def test_metrics_answer_through_the_service(
    k8s_rig: dict[str, Any], kubectl: Kubectl, release_ns: str
) -> None:
    path = f"/api/v1/namespaces/{release_ns}/services/{FULLNAME}-metrics:metrics/proxy/metrics"
    text = kubectl("get", "--raw", path).stdout
    assert "kafka_placement_leader " in text and "kafka_placement_reconciles_total" in text
    # every metric the chart's alert rules and dashboard name is one the running operator declares
    rendered = helm(k8s_rig, "template", RELEASE, str(CHART), "-n", release_ns, *sets(MONITORING_ON))
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    named = metric_names(rule_exprs(docs) + dashboard_exprs(dashboard(docs)))
    assert len(named) >= 15, named
    assert named - exposed_names(text) == set(), text


def test_upgrade_with_changed_values_rolls_both_pods(
    k8s_rig: dict[str, Any], kubectl: Kubectl, release_ns: str
) -> None:
    ns = release_ns
    before = {p["metadata"]["name"] for p in pods(kubectl, ns)}
    helm(
        k8s_rig, "upgrade", RELEASE, str(CHART), "-n", ns, "--reuse-values",
        "--set", "resources.limits.memory=3Gi", *sets(MONITORING_ON[:3]),
        "--set", "podDisruptionBudget.enabled=false", "--wait", "--timeout", "5m",
    )  # fmt: skip
    assert monitoring_objects(kubectl, ns) == [
        f"configmap/{FULLNAME}-dashboard",
        f"prometheusrule/{FULLNAME}",
        f"servicemonitor/{FULLNAME}",
    ]
    board = kubectl("get", "configmap", f"{FULLNAME}-dashboard", "-n", ns, "-o", "json").stdout
    assert json.loads(json.loads(board)["data"][DASHBOARD_KEY])["panels"]

    def rolled() -> list[dict[str, Any]] | None:
        found = two_ready(kubectl, ns)
        if not found or {p["metadata"]["name"] for p in found} & before:
            return None
        return found

    found = wait_for("two new Ready pods", rolled, 300, why=lambda: diagnose(kubectl, ns))
    for pod in found:
        assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == "3Gi"
    names = [p["metadata"]["name"] for p in found]

    def new_holder() -> str | None:  # the old pods release the Lease as they terminate
        holder = lease_holder(kubectl, ns)
        return holder if any(holder.startswith(n + "_") for n in names) else None

    wait_for("a new pod holds the Lease", new_holder, 90, why=lambda: diagnose(kubectl, ns))


def test_deleting_the_leader_pod_hands_the_lease_over(kubectl: Kubectl, release_ns: str) -> None:
    """The deleted leader releases the Lease as it stops; a live pod takes it: the standby, or the
    replacement pod if that asks first (both are fair: a released Lease goes to the first candidate)."""
    ns = release_ns
    holder = lease_holder(kubectl, ns)
    leader = holder.rsplit("_", 1)[0]
    kubectl("delete", "pod", leader, "-n", ns, "--wait=false")

    def taken_over() -> str | None:
        now = lease_holder(kubectl, ns)
        live = {p["metadata"]["name"] for p in pods(kubectl, ns)} - {leader}
        return now if now.rsplit("_", 1)[0] in live else None

    new = wait_for("a live pod takes the Lease", taken_over, 90, why=lambda: diagnose(kubectl, ns))
    assert new != holder
    wait_for("two Ready pods again", lambda: two_ready(kubectl, ns), 240, why=lambda: diagnose(kubectl, ns))


def test_uninstall_keeps_the_crds_and_removes_the_rest(
    k8s_rig: dict[str, Any],
    kubectl: Kubectl,
    release_ns: str,
    kafka_rig: KafkaRig,
    kafka_admin: Any,
) -> None:
    ns = release_ns

    def cordoned() -> list[tuple[int, str]]:
        return [(b.id, d.path) for b in snapshot(kafka_rig).brokers for d in b.log_dirs if d.cordoned]

    kept = cordoned()  # what the decommission test's resources declared: broker 3 whole, a dir of broker 2
    assert {b for b, _ in kept} == {2, 3} and len(kept) == 1 + len(kafka_rig.node(3).log_dirs), kept
    kubectl("delete", "brokerdecommission,logdircordon", "--all", "-n", ns, "--timeout=120s")
    kubectl("delete", "kafkacluster", "--all", "-n", ns, "--timeout=120s")
    helm(k8s_rig, "uninstall", RELEASE, "-n", ns, "--wait", "--timeout", "3m")
    for crd in CRDS:
        kubectl("get", "crd", f"{crd}.kafkaplacement.io")
    left = kubectl(
        "get", f"deployment,serviceaccount,service,role,rolebinding,configmap,pdb,{MONITORING_KINDS}",
        "-n", ns,
        "-l", f"app.kubernetes.io/instance={RELEASE}", "-o", "name",
    ).stdout.split()  # fmt: skip
    assert left == []
    cluster_wide = kubectl(
        "get", "clusterrole,clusterrolebinding", "-l", f"app.kubernetes.io/instance={RELEASE}", "-o", "json"
    ).stdout
    mine = [i for i in json.loads(cluster_wide)["items"] if ns in json.dumps(i)]
    assert mine == []
    wait_for("no operator pod", lambda: pods(kubectl, ns) == [], 120, why=lambda: diagnose(kubectl, ns))
    no_throttle_left(kafka_admin, kafka_rig)
    # the resources' finalizers, run by the pod, lifted their cordons (through the controller; each broker
    # applies that moments later, so waited for; strict: nothing else lifts them)
    wait_for("no cordon left", lambda: cordoned() == [], 30, why=lambda: f"cordoned: {cordoned()}")
