"""The spark-k8s Pod launcher's manifests, its reading of a driver pod's state, and the image's entries
for Spark's executor and cluster-mode driver pods (spark/driver_pod.py, spark/pod_entry.py), without a rig.
The same code runs for real on the node in tests/e2e/test_spark_pods.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_placement.model.errors import BadInputError, InfeasibleError, PlacementError
from kafka_placement.spark import driver_pod as pods
from kafka_placement.spark.k8s import RunState, SparkK8sSettings, describe, outcome
from kafka_placement.spark.pod_entry import EXECUTOR_BACKEND, driver_command, executor_command

SETTINGS = SparkK8sSettings(
    namespace="jobs",
    image="reg.example/kpo:1",
    exchange_claim="kp-exchange",
    exchange_dir=Path("/x"),
    exchange_mount="/exchange/",
    service_account="kp-spark",
    executor_instances=3,
    driver_memory="2g",
    executor_memory="1536m",
    extra_arguments=("--reactive-cordon",),
)
LABELS = {"app.kubernetes.io/name": "kafka-placement", "kafkaplacement.io/run-id": "r1"}


def test_driver_pod_runs_the_cli_in_client_mode_on_its_own_ip_with_the_run_files() -> None:
    pod = pods.driver_pod("r1", "kafka-placement-r1", LABELS, SETTINGS)
    assert pod["metadata"]["name"] == "kafka-placement-r1" and pod["metadata"]["namespace"] == "jobs"
    assert pod["metadata"]["labels"]["kafkaplacement.io/role"] == "spark-driver"
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Never" and spec["serviceAccountName"] == "kp-spark"
    (c,) = spec["containers"]
    args = c["args"]
    assert args[:3] == ["plan", "--snapshot", "/exchange/r1/snapshot"]
    assert args[args.index("--engine") + 1] == "spark"
    assert args[args.index("--spark-master") + 1] == (
        "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"
    )
    conf = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--spark-conf")
    assert (
        conf["spark.driver.host"] == "$(KP_POD_IP)"
        and conf["spark.kubernetes.driver.pod.name"] == "$(KP_POD_NAME)"
    )
    assert conf["spark.executor.instances"] == "3" and conf["spark.executor.memory"] == "1536m"
    assert conf["spark.kubernetes.container.image"] == "reg.example/kpo:1"
    assert conf["spark.kubernetes.executor.podTemplateFile"] == "/exchange/r1/executor-pod.yaml"
    assert conf["spark.kubernetes.executor.podNamePrefix"] == "kafka-placement-r1"
    assert args[-1] == "--reactive-cordon"
    assert {e["name"] for e in c["env"]} == {"KP_POD_NAME", "KP_POD_IP"}  # what the $(...) refer to
    assert c["resources"]["limits"]["memory"] == "4096Mi"  # 2g heap + as much for the planner's Python
    assert c["securityContext"]["readOnlyRootFilesystem"] and c["securityContext"]["runAsNonRoot"]
    assert c["terminationMessagePolicy"] == "FallbackToLogsOnError"
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    assert mounts == {"exchange": "/exchange/", "tmp": "/tmp"}
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v
    ]
    assert claims == ["kp-exchange"]


def test_executor_template_is_restricted_and_labelled() -> None:
    t = yaml.safe_load(pods.executor_template(LABELS))
    assert t["metadata"]["labels"] == LABELS
    (c,) = t["spec"]["containers"]
    assert c["name"] == "executor" and c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert t["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


@pytest.mark.parametrize(
    ("memory", "mib"), [("2g", 2048), ("512m", 512), ("1G", 1024), ("1048576", 1), ("1t", 1024 * 1024)]
)
def test_memory_sizes(memory: str, mib: int) -> None:
    assert pods.memory_mib(memory) == mib
    assert pods.driver_pod_memory_mib(memory) == mib + max(1024, mib)


def pod(phase: str, **container_state: Any) -> dict[str, Any]:
    return {"status": {"phase": phase, "containerStatuses": [{"state": container_state}]}}


LOG_TAIL = """26/11/25 10:00:01 WARN NativeCodeLoader: Unable to load native-hadoop library
26/11/25 10:00:09 WARN ExecutorPodsSnapshotsStoreImpl: something
kafka-placement plan: error: [rack-spread] cannot place t-3: 2 racks for RF 3
"""


def test_pod_states() -> None:
    assert pods.pod_state(pod("Succeeded")) == ("COMPLETED", "", 0)
    assert pods.pod_state(pod("Running", running={})) == ("Running", "", None)
    assert pods.pod_state(pod("Pending", waiting={"reason": "ContainerCreating"})) == (
        "Pending (ContainerCreating)", "", None
    )  # fmt: skip
    unschedulable = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes: memory"}
    ]}}  # fmt: skip
    assert pods.pod_state(unschedulable)[0] == "Pending (Unschedulable: 0/1 nodes: memory)"
    assert pods.pod_state({}) == ("Pending", "", None)
    state, message, code = pods.pod_state(pod("Failed", terminated={"exitCode": 3, "message": LOG_TAIL}))
    assert (state, message, code) == ("FAILED", "[rack-spread] cannot place t-3: 2 racks for RF 3", 3)
    oom = pods.pod_state(pod("Failed", terminated={"exitCode": 137, "reason": "OOMKilled"}))
    assert oom == ("FAILED", "OOMKilled", 137)
    evicted = {"status": {"phase": "Failed", "reason": "Evicted", "message": "low on memory"}}
    assert pods.pod_state(evicted) == ("FAILED", "Evicted low on memory", None)
    never = pods.pod_state(pod("Pending", waiting={"reason": "ErrImageNeverPull", "message": "no image x"}))
    assert never[0] == "FAILED" and "ErrImageNeverPull: no image x" in never[1]


def test_outcome_maps_the_drivers_exit_code_to_the_clis_error_kinds() -> None:
    what = describe(SETTINGS, "r1")
    assert what == "Spark driver pod jobs/kafka-placement-r1"
    assert outcome(RunState("COMPLETED", "", 0), what) == "completed"
    assert outcome(RunState("Running"), what) == "running"
    bad = outcome(RunState("FAILED", "intents.yaml: unknown broker 9", 2), what)
    assert type(bad) is BadInputError and bad.message == "intents.yaml: unknown broker 9"
    infeasible = outcome(RunState("FAILED", "no rack left", 3), what)
    assert type(infeasible) is InfeasibleError and infeasible.message == "no rack left"
    other = outcome(RunState("FAILED", "OOMKilled", 137), what)
    assert type(other) is PlacementError
    assert other.message == f"{what} failed: OOMKilled (state FAILED, exit code 137)"
    gone = outcome(None, what)
    assert isinstance(gone, PlacementError) and "disappeared" in gone.message


EXECUTOR_ENV = {
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@10.250.0.9:7078",
    "SPARK_EXECUTOR_ID": "2",
    "SPARK_EXECUTOR_CORES": "1",
    "SPARK_EXECUTOR_MEMORY": "1536m",
    "SPARK_APPLICATION_ID": "spark-app-1",
    "SPARK_EXECUTOR_POD_IP": "10.250.0.11",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_EXECUTOR_POD_NAME": "kafka-placement-r1-exec-2",
    "SPARK_JAVA_OPT_10": "-Dspark.late=1",
    "SPARK_JAVA_OPT_2": "-Dspark.driver.port=7078",
    "SPARK_JAVA_OPT_0": "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "JAVA_HOME": "/usr/lib/jvm/j17",
}


def test_executor_command_from_the_pod_environment() -> None:
    cmd = executor_command(EXECUTOR_ENV, Path("/site/pyspark"))
    assert cmd[:3] == ["/usr/lib/jvm/j17/bin/java", "-Xms1536m", "-Xmx1536m"]
    assert cmd[3:6] == [
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        "-Dspark.driver.port=7078",
        "-Dspark.late=1",
    ]
    assert cmd[6:9] == ["-cp", "/site/pyspark/jars/*", EXECUTOR_BACKEND]
    options = dict(zip(cmd[9::2], cmd[10::2], strict=True))
    assert options == {
        "--driver-url": "spark://CoarseGrainedScheduler@10.250.0.9:7078",
        "--executor-id": "2",
        "--cores": "1",
        "--app-id": "spark-app-1",
        "--hostname": "10.250.0.11",
        "--resourceProfileId": "0",
        "--podName": "kafka-placement-r1-exec-2",
    }


@pytest.mark.parametrize("missing", ["SPARK_DRIVER_URL", "SPARK_EXECUTOR_MEMORY", "SPARK_EXECUTOR_POD_IP"])
def test_executor_command_names_a_missing_variable(missing: str) -> None:
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != missing}
    with pytest.raises(BadInputError, match=f"{missing} is not set"):
        executor_command(env, Path("/site/pyspark"))


def test_driver_command_is_client_mode_on_the_pod_address() -> None:
    cmd = driver_command({"SPARK_DRIVER_BIND_ADDRESS": "10.250.0.7"}, Path("/p"), ["--class", "X", "app.py"])
    assert cmd == [
        "/p/bin/spark-submit", "--deploy-mode", "client", "--conf", "spark.driver.bindAddress=10.250.0.7",
        "--conf", "spark.driver.host=10.250.0.7", "--class", "X", "app.py",
    ]  # fmt: skip
    in_cluster = {"SPARK_DRIVER_BIND_ADDRESS": "10.250.0.7", "KUBERNETES_SERVICE_HOST": "10.96.0.1"}
    cmd = driver_command({**in_cluster, "KUBERNETES_SERVICE_PORT": "443"}, Path("/p"), ["app.py"])
    assert cmd[3:7] == [
        "--master",
        "k8s://https://10.96.0.1:443",
        "--conf",
        "spark.kubernetes.driver.master=https://10.96.0.1:443",
    ]
    v6 = driver_command({**in_cluster, "KUBERNETES_SERVICE_HOST": "fd00::1"}, Path("/p"), ["app.py"])
    assert v6[3:5] == ["--master", "k8s://https://[fd00::1]:443"]
    with pytest.raises(BadInputError, match="SPARK_DRIVER_BIND_ADDRESS"):
        driver_command({}, Path("/p"), [])


def test_the_driver_entry_takes_every_argument_as_spark_submits() -> None:
    """Spark starts a cluster-mode driver pod with ``driver --properties-file ... --class ... app args``."""
    from kafka_placement.cli import build_parser

    spark = [
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "PythonRunner",
        "x.py",
        "-o",
        "p",
    ]
    assert build_parser().parse_args(["driver", *spark]).spark_args == spark
    assert build_parser().parse_args(["executor"]).command == "executor"


def test_the_run_dir_gets_a_parquet_snapshot_read_back_unchanged_and_its_inputs_go_afterwards(
    tmp_path: Path,
) -> None:
    """The exchange's snapshot is a Parquet directory (what ``job_file_args`` names): the job reads back the
    very snapshot; ``remove_inputs`` takes it, the intents, the executors' template and an older operator's
    ``snapshot.json``, and leaves the outputs."""
    from kafka_placement.model.snapshot import ClusterSnapshot
    from kafka_placement.spark.io import read_snapshot
    from kafka_placement.spark.k8s import remove_inputs, write_inputs

    golden = Path(__file__).parents[2] / "testdata" / "golden" / "all" / "snapshot.json"
    snap = ClusterSnapshot.loads(golden.read_text(), source=str(golden))
    run_dir = tmp_path / "r1"
    write_inputs(run_dir, snap, "kind: X\n", {pods.EXECUTOR_TEMPLATE: "t"})
    assert pods.job_file_args("/exchange/r1")[:2] == ["--snapshot", f"/exchange/r1/{pods.SNAPSHOT}"]
    assert sorted(p.name for p in (run_dir / pods.SNAPSHOT).iterdir()) == [
        "brokers.json",
        "partitions.parquet",
    ]
    assert read_snapshot(run_dir / pods.SNAPSHOT) == snap
    assert run_dir.stat().st_mode & 0o2775 == 0o2775  # the pods' group writes the outputs here
    for name in ("snapshot.json", "plan.json", "summary.json"):
        (run_dir / name).write_text("{}")
    remove_inputs(run_dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["plan.json", "summary.json"]
    with pytest.raises(PlacementError, match="cannot write the Spark job's inputs"):
        write_inputs(run_dir, snap, "kind: X\n", {})  # (the run dir exists: one run, one dir)
    assert sorted(p.name for p in run_dir.iterdir()) == ["plan.json", "summary.json"]  # (not another's)


def test_inputs_that_cannot_be_written_leave_no_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_placement.model.snapshot import ClusterSnapshot
    from kafka_placement.spark import k8s

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(k8s, "write_parquet", full)
    with pytest.raises(PlacementError, match="No space left on device"):
        k8s.write_inputs(tmp_path / "r2", ClusterSnapshot((), ()), "kind: X\n", {})
    assert list(tmp_path.iterdir()) == []
