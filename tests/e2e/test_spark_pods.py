"""The spark-k8s engine with real pods on the rig's node: a driver pod and the executor pods its Spark starts.

The project's image (built here, tests/rig/image_rig.py) is imported into the node. A namespace that
enforces the Restricted pod security standard gets the driver's service account and Role (as the chart
makes them) and the exchange volume: a PersistentVolumeClaim bound to a hostPath PersistentVolume on
this machine, so the CLI and the operator read and write the same files as the pods. Then:

- ``kafka-placement plan --engine spark-k8s`` (launcher Pod) plans a 6,000-partition scenario (``POD_CASES``;
  the standalone test plans every case) with its shards on two executor pods: the plan is the in-process
  sharded pipeline's (as on the standalone cluster), and the kubelet started executor pods of the run;
- infeasible intents: the driver exits 3 and the CLI exits 3 with the local engine's reason;
- executors that cannot be scheduled and a run that outlives its timeout: the driver pod is deleted and
  its executor pods go with it (garbage collection by owner);
- the operator with ``spec.planner.engine: spark-k8s`` completes a decommission of the rig's Kafka
  through driver and executor pods.

Needs `make rig-up` (with the node and Kafka). Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import TEST_JVM_OPTS
from tests.e2e.conftest import Operator, wait_phase
from tests.e2e.test_operator import apply, fill, no_throttle_left, snapshot
from tests.integration.conftest import KafkaRig
from tests.integration.test_spark_standalone import cases

from kafka_placement.model.errors import InfeasibleError
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.sharding import sharded_optimize

pytestmark = [pytest.mark.k8s, pytest.mark.spark]

CLI = Path(sys.executable).parent / "kafka-placement"
RUN_UID = 10001
SERVICE_ACCOUNT, CLAIM, MOUNT = "kp-spark", "kp-exchange", "/exchange"
# two cores on the rig's node: the driver and each executor ask for half a core
SMALL = [
    "spark.kubernetes.driver.request.cores=500m",
    "spark.kubernetes.executor.request.cores=500m",
    *(f"spark.{jvm}.extraJavaOptions={TEST_JVM_OPTS}" for jvm in ("driver", "executor")),  # tests/conftest.py
]

SETUP = """\
apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels: {{pod-security.kubernetes.io/enforce: restricted}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {sa}, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: kp-spark-driver, namespace: {ns}}}
rules:
  - apiGroups: [""]
    resources: ["pods", "services", "configmaps", "persistentvolumeclaims"]
    verbs: ["get", "list", "watch", "create", "delete", "deletecollection", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: kp-spark-driver, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: kp-spark-driver}}
subjects: [{{kind: ServiceAccount, name: {sa}, namespace: {ns}}}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {ns}-exchange}}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: kp-exchange-{ns}
  hostPath: {{path: '{path}', type: Directory}}
  claimRef: {{namespace: {ns}, name: {claim}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {claim}, namespace: {ns}}}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: kp-exchange-{ns}
  resources: {{requests: {{storage: 1Gi}}}}
"""


@pytest.fixture(scope="module")
def spark_ns(
    k8s_rig: dict[str, Any],
    operator_image: str,  # tests/e2e/conftest.py
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    """The Restricted namespace the Spark pods run in, with the driver's account and the exchange volume
    (a host dir owned by the pods' uid, setgid so the run dirs the CLI makes are group-writable)."""
    ns = f"t-spark-pods-{uuid.uuid4().hex[:6]}"
    exchange = tmp_path_factory.mktemp("exchange")
    os.chown(exchange, RUN_UID, RUN_UID)
    exchange.chmod(0o2775)
    kubectl = [str(k8s_rig["kubectl"]), "--kubeconfig", str(k8s_rig["kubeconfig"])]
    manifest = SETUP.format(ns=ns, sa=SERVICE_ACCOUNT, claim=CLAIM, path=exchange)
    subprocess.run([*kubectl, "apply", "-f", "-"], input=manifest, text=True, check=True, capture_output=True)
    subprocess.run(
        [*kubectl, "-n", ns, "wait", "--for=jsonpath={.status.phase}=Bound", f"pvc/{CLAIM}", "--timeout=60s"],
        check=True, capture_output=True,
    )  # fmt: skip
    yield {"ns": ns, "exchange": exchange, "image": operator_image, "kubectl": kubectl}
    subprocess.run([*kubectl, "delete", "namespace", ns, "--wait=false"], capture_output=True)
    subprocess.run([*kubectl, "delete", "pv", f"{ns}-exchange", "--wait=false"], capture_output=True)


def plan_on_pods(
    spark: dict[str, Any],
    k8s_rig: dict[str, Any],
    snap: Path,
    intents: Path,
    out: Path,
    *extra: str,
    timeout: float = 900,
    executors: int = 1,
) -> subprocess.CompletedProcess[str]:
    """``plan --engine spark-k8s`` on the rig with ``executors`` executor pods (one unless a test needs
    tasks spread over several: each is a JVM on the node's two cores); a run still going after
    ``timeout`` s fails the test."""
    args = [
        str(CLI), "plan", "--snapshot", str(snap), "--intents", str(intents), "--engine", "spark-k8s",
        "--spark-image", spark["image"], "--spark-namespace", spark["ns"],
        "--spark-service-account", SERVICE_ACCOUNT, "--exchange-claim", CLAIM,
        "--exchange-dir", str(spark["exchange"]), "--exchange-mount", MOUNT,
        "--kubeconfig", str(k8s_rig["kubeconfig"]), "--spark-memory", "1g",
        "--spark-executors", str(executors),
        *[a for c in SMALL for a in ("--spark-conf", c)],
        "-o", str(out / "plan.json"), "--summary", str(out / "summary.json"), *extra,
    ]  # fmt: skip
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"plan --engine spark-k8s still running after {timeout:g} s")


def events(spark: dict[str, Any]) -> list[dict[str, Any]]:
    got = subprocess.run(
        [*spark["kubectl"], "-n", spark["ns"], "get", "events", "-o", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    items: list[dict[str, Any]] = json.loads(got.stdout)["items"]
    return items


def pods_of(spark: dict[str, Any], run_id: str) -> list[str]:
    got = subprocess.run(
        [*spark["kubectl"], "-n", spark["ns"], "get", "pods", "-l", f"kafkaplacement.io/run-id={run_id}",
         "-o", "jsonpath={.items[*].metadata.name}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return got.stdout.split()


# a sharded case (4,182 partitions to repair) on two executor pods: every case's plan, one shard or many, is
# checked on a real Spark cluster by tests/integration/test_spark_standalone.py (all in one application,
# lane kafka); what pods add (launcher, exchange volume, executor pods, the run's clean-up) is the same for
# every case, and each run here starts a driver and executors (a minute or more on the node's two cores,
# about 40 CPU s: the one-shard golden `all` ran here too until 2026-12-06; the cluster-mode test below
# checks a one-shard plan from pods against the local engine's)
POD_CASES = ("all-6000",)


@pytest.mark.parametrize("name", POD_CASES)
def test_plans_on_driver_and_executor_pods_equal_the_engines_plans(
    spark_ns: dict[str, Any], k8s_rig: dict[str, Any], tmp_path: Path, name: str
) -> None:
    snap, intents, text = cases()[name]
    (tmp_path / "snapshot.json").write_text(snap.dumps())
    (tmp_path / "intents.yaml").write_text(text)
    # the sharded case's shards run as tasks on two executor pods
    executors = 2 if name == "all-6000" else 1
    snap_file, intents_file = tmp_path / "snapshot.json", tmp_path / "intents.yaml"
    proc = plan_on_pods(spark_ns, k8s_rig, snap_file, intents_file, tmp_path, executors=executors)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "engine spark-k8s" in proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    plan = Plan.loads((tmp_path / "plan.json").read_text(), source="plan.json")
    driver = summary["sparkDriverPod"].split("/", 1)[1]
    assert summary["sparkDriverPod"].startswith(spark_ns["ns"] + "/")

    local = compute_plan(snap, intents)
    shards = summary["sharding"]["shards"]
    assert summary["hardViolationsAfter"] == 0
    if shards == 1:
        assert plan.plan_id == local.plan.plan_id
    else:
        assert plan.plan_id == sharded_optimize(snap, intents.enforced_only(), shards).plan_id
        assert summary["bytesToMove"] <= 1.01 * local.summary.bytes_to_move

    # the executors were pods of this run, started by the kubelet; the completed run leaves no pod
    started = {
        e["involvedObject"]["name"]
        for e in events(spark_ns)
        if e.get("reason") == "Started" and e["involvedObject"]["name"].startswith(f"{driver}-exec-")
    }
    assert len(started) >= 1, f"no executor pod of {driver} started"
    run_id = driver.removeprefix("kafka-placement-")
    # the driver read the Parquet snapshot the CLI wrote to the volume; the inputs went afterwards
    assert sorted(p.name for p in (spark_ns["exchange"] / run_id).iterdir()) == ["plan.json", "summary.json"]
    deadline = time.monotonic() + 60
    while pods_of(spark_ns, run_id):
        assert time.monotonic() < deadline, pods_of(spark_ns, run_id)
        time.sleep(1)


def test_infeasible_intents_exit_3_with_the_local_engines_reason(
    spark_ns: dict[str, Any], k8s_rig: dict[str, Any], tmp_path: Path
) -> None:
    snap, _, _ = cases()["decommission"]
    keep = sorted(b.id for b in snap.brokers)[:1]  # every broker but one, with replication factor > 1
    text = (
        f"kind: BrokerDecommission\nspec: {{brokers: {[b.id for b in snap.brokers if b.id not in keep]}}}\n"
    )
    with pytest.raises(InfeasibleError) as local:
        compute_plan(snap, Intents.loads(text))
    (tmp_path / "snapshot.json").write_text(snap.dumps())
    (tmp_path / "intents.yaml").write_text(text)
    proc = plan_on_pods(spark_ns, k8s_rig, tmp_path / "snapshot.json", tmp_path / "intents.yaml", tmp_path)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == f"kafka-placement plan: error: {local.value.message}"
    assert not (tmp_path / "plan.json").exists()


def test_a_run_past_its_timeout_is_deleted_with_its_executor_pods(
    spark_ns: dict[str, Any], k8s_rig: dict[str, Any], tmp_path: Path
) -> None:
    snap, _, text = cases()["all-6000"]
    (tmp_path / "snapshot.json").write_text(snap.dumps())
    (tmp_path / "intents.yaml").write_text(text)
    proc = plan_on_pods(
        spark_ns, k8s_rig, tmp_path / "snapshot.json", tmp_path / "intents.yaml", tmp_path,
        # the run's own timeout is 120 s: long enough for a driver started on a loaded node to ask for its
        # executors (once, three lanes beside it, 60 s was not); a run that ignored it fails at 300 s
        "--spark-timeout", "120", "--spark-conf", "spark.executor.memory=200g",  # no node fits an executor
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert "did not finish within 120 s" in last and "it was deleted" in last, last
    driver = last.split("Spark driver pod ", 1)[1].split(" ", 1)[0].split("/", 1)[1]
    run_id = driver.removeprefix("kafka-placement-")
    pending = {
        e["involvedObject"]["name"]
        for e in events(spark_ns)
        if e.get("reason") == "FailedScheduling" and e["involvedObject"]["name"].startswith(f"{driver}-exec-")
    }
    seen = sorted({(e["involvedObject"]["name"], e.get("reason")) for e in events(spark_ns)})
    assert pending, f"the executor pods were never asked for; events: {seen}"
    deadline = time.monotonic() + 90
    while left := pods_of(spark_ns, run_id):
        assert time.monotonic() < deadline, f"left behind: {left}"
        time.sleep(1)
    assert not (tmp_path / "plan.json").exists()


def test_a_cluster_mode_driver_pod_runs_the_job_through_the_images_driver_entry(
    spark_ns: dict[str, Any], k8s_rig: dict[str, Any], tmp_path: Path
) -> None:
    """What a SparkApplication's driver is: ``spark-submit --deploy-mode cluster`` (run here, as the
    spark-operator would) makes a driver pod whose arguments start with ``driver``; the image's entry runs
    the job in client mode on the pod's address, with executor pods, and the plan lands on the volume."""
    from kafka_placement.spark.driver_pod import SNAPSHOT, executor_template
    from kafka_placement.spark.io import write_parquet
    from kafka_placement.spark.pod_entry import spark_home

    snap, intents, text = cases()["decommission"]
    run = f"cluster-{uuid.uuid4().hex[:6]}"
    run_dir = spark_ns["exchange"] / run
    run_dir.mkdir()
    run_dir.chmod(0o2775)
    write_parquet(snap, run_dir / SNAPSHOT)  # as spark.k8s writes a SparkApplication's inputs
    (run_dir / "intents.yaml").write_text(text)
    labels = {"kafkaplacement.io/run-id": run}
    template = yaml.safe_load(executor_template(labels))
    (tmp_path / "executor.yaml").write_text(yaml.safe_dump(template))
    driver_template = {**template, "spec": {**template["spec"], "containers": [
        {**template["spec"]["containers"][0], "name": "driver"}
    ]}}  # fmt: skip
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver_template))
    vol = "spark.kubernetes.{}.volumes.persistentVolumeClaim.exchange"
    conf = {
        "spark.kubernetes.namespace": spark_ns["ns"],
        "spark.kubernetes.container.image": spark_ns["image"],
        "spark.kubernetes.authenticate.driver.serviceAccountName": SERVICE_ACCOUNT,
        "spark.kubernetes.driver.podTemplateFile": str(tmp_path / "driver.yaml"),
        "spark.kubernetes.driver.podTemplateContainerName": "driver",
        "spark.kubernetes.executor.podTemplateFile": str(tmp_path / "executor.yaml"),
        "spark.kubernetes.executor.podTemplateContainerName": "executor",
        "spark.kubernetes.driver.pod.name": f"kafka-placement-{run}",
        "spark.kubernetes.executor.podNamePrefix": f"kafka-placement-{run}",
        "spark.kubernetes.submission.waitAppCompletion": "true",
        "spark.executor.instances": "1",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "1g",
        "spark.pyspark.python": "python3",
        **dict(c.split("=", 1) for c in SMALL),
        vol.format("driver") + ".options.claimName": CLAIM,
        vol.format("driver") + ".mount.path": MOUNT,
    }
    submit = [
        str(Path(sys.executable).parent / "spark-submit"), "--master", f"k8s://{k8s_rig['server']}",
        "--deploy-mode", "cluster", "--name", f"kafka-placement-{run}",
        *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")],
        "local:///opt/kafka-placement/job.py", "--snapshot", f"{MOUNT}/{run}/{SNAPSHOT}",
        "--intents", f"{MOUNT}/{run}/intents.yaml", "-o", f"{MOUNT}/{run}/plan.json",
        "--summary", f"{MOUNT}/{run}/summary.json",
    ]  # fmt: skip
    env = {
        **os.environ,
        "KUBECONFIG": str(k8s_rig["kubeconfig"]),
        "SPARK_HOME": str(spark_home()),
    }
    env.pop("PYSPARK_PYTHON", None)  # the pods' Python is the image's (spark.pyspark.python)
    proc = subprocess.run(submit, capture_output=True, text=True, env=env, timeout=900)
    driver = f"kafka-placement-{run}"
    log = subprocess.run(
        [*spark_ns["kubectl"], "-n", spark_ns["ns"], "logs", driver], capture_output=True, text=True
    ).stdout  # fmt: skip
    causes = "\n".join(line for line in log.splitlines() if "Caused by" in line or "Exception" in line)
    assert proc.returncode == 0 and (run_dir / "plan.json").is_file(), causes[-3000:] + log[-3000:]
    got = Plan.loads((run_dir / "plan.json").read_text(), source="plan.json")
    assert got.plan_id == compute_plan(snap, intents).plan.plan_id  # one shard: the local engine's plan
    phase = subprocess.run(
        [*spark_ns["kubectl"], "-n", spark_ns["ns"], "get", "pod", driver, "-o", "jsonpath={.status.phase}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert phase == "Succeeded"
    started = started_pods(spark_ns)
    assert any(n.startswith(driver) and "-exec-" in n for n in started), started  # its executors
    subprocess.run([*spark_ns["kubectl"], "-n", spark_ns["ns"], "delete", "pod", driver, "--wait=false"])


# ------------------------------------------------------------------------------------------ the operator

RETIRE_3_ON_PODS = """\
apiVersion: kafkaplacement.io/v1alpha1
kind: KafkaCluster
metadata: {{name: pods}}
spec:
  bootstrapServers: '{bootstrap}'
  throttleBytesPerSecond: 50000000
  planner:
    engine: spark-k8s
    spark: {{launcher: Pod, image: '{image}', namespace: {spark_ns}, serviceAccount: {sa},
             executorInstances: 1, memory: 1g, timeoutSeconds: 600}}
---
apiVersion: kafkaplacement.io/v1alpha1
kind: BrokerDecommission
metadata: {{name: retire-3}}
spec: {{clusterRef: {{name: pods}}, brokers: [3]}}
"""


@pytest.fixture
def operator_env(spark_ns: dict[str, Any]) -> dict[str, str]:
    """What the Helm chart sets with planner.spark.exchange.claimName, plus where the volume is here."""
    return {
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM": CLAIM,
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR": MOUNT,
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_LOCAL_DIR": str(spark_ns["exchange"]),
        "KAFKA_PLACEMENT_SPARK_POLL_SECONDS": "1",
        "KAFKA_PLACEMENT_SPARK_CONF": json.dumps(dict(c.split("=", 1) for c in SMALL)),  # the chart's toJson
    }


@pytest.mark.kafka
def test_the_operator_decommissions_a_broker_planned_by_driver_and_executor_pods(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
    spark_ns: dict[str, Any],
) -> None:
    ns = k8s_namespace
    before = started_pods(spark_ns)
    topic = new_topic([[3, 1], [1, 3], [3, 2], [2, 3]])
    fill(kafka_rig, topic, 2000)
    manifest = RETIRE_3_ON_PODS.format(
        bootstrap=kafka_rig.bootstrap_servers,
        image=spark_ns["image"],
        spark_ns=spark_ns["ns"],
        sa=SERVICE_ACCOUNT,
    )
    apply(kubectl, ns, manifest)
    # Planning starts with "planning with all active intents"; the next status names the driver pod.
    wait_phase(
        kubectl,
        operator,
        ns,
        "brokerdecommission",
        "retire-3",
        ("Planning",),
        timeout=120,
        until=lambda status: "Spark driver pod" in str(status.get("message")),
    )
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Completed",), timeout=600)
    assert done["status"]["plan"]["moves"] >= 4
    assert all(3 not in p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic)
    no_throttle_left(kafka_admin, kafka_rig)
    new = started_pods(spark_ns) - before
    drivers = {n for n in new if "-exec-" not in n}
    executors = {n for n in new if any(n.startswith(f"{d}-exec-") for d in drivers)}
    assert drivers and executors, new  # the plan came from a driver pod with executor pods


def started_pods(spark: dict[str, Any]) -> set[str]:
    return {e["involvedObject"]["name"] for e in events(spark) if e.get("reason") == "Started"}
