"""End to end: a KafkaCluster whose planner engine is spark-k8s, on the real kube-apiserver and Kafka.

The rig runs no pods and no spark-operator, so the test plays the spark-operator: it installs a minimal
SparkApplication CRD, waits for the operator to create the application, checks what it asks for, runs
the real planning job with `spark-submit --master local[2]` on the files the operator wrote to the
exchange dir (paths mapped from the Spark pods' mount to the local dir), and patches the application's
status. The operator then executes that plan against Kafka.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, get, wait_phase
from tests.e2e.test_operator import apply, fill, no_throttle_left, snapshot

from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.reconcile.record_store import DOC_KEY, configmap_name

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.spark]
ROOT = Path(__file__).resolve().parents[2]
SPARK_CRD = ROOT / "tests" / "testdata" / "sparkapplication-crd.yaml"
JOB = ROOT / "operator" / "kafka_placement" / "spark" / "job.py"
GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
MOUNT = "/exchange"


@pytest.fixture
def exchange(tmp_path: Path) -> Path:
    path = tmp_path / "exchange"
    path.mkdir()
    return path


@pytest.fixture
def operator_env(exchange: Path) -> dict[str, str]:
    """What the Helm chart sets with planner.spark.exchange.claimName, plus where the volume is here."""
    return {
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM": "kp-exchange",
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR": MOUNT,
        "KAFKA_PLACEMENT_SPARK_EXCHANGE_LOCAL_DIR": str(exchange),
        "KAFKA_PLACEMENT_SPARK_POLL_SECONDS": "0.5",
        "KAFKA_PLACEMENT_SPARK_LAUNCHER": "SparkApplication",  # the test plays the spark-operator
    }


@pytest.fixture
def spark_apps(kubectl: Any, k8s_api: Any) -> Any:
    from kubernetes import client

    kubectl("apply", "-f", str(SPARK_CRD))
    kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{GROUP}", "--timeout=60s")
    return client.CustomObjectsApi(k8s_api)


# A KafkaCluster planning with spark-k8s, and a decommission of broker 3 on it
RETIRE_3_WITH_SPARK_K8S = """\
apiVersion: kafkaplacement.io/v1alpha1
kind: KafkaCluster
metadata: {{name: big}}
spec:
  bootstrapServers: '{bootstrap}'
  throttleBytesPerSecond: 50000000
  planner:
    engine: spark-k8s
    spark: {{image: 'registry.example/kafka-placement:9.9', serviceAccount: kp-spark, executorInstances: 1,
             memory: 1g, timeoutSeconds: 600}}
---
apiVersion: kafkaplacement.io/v1alpha1
kind: BrokerDecommission
metadata: {{name: retire-3}}
spec: {{clusterRef: {{name: big}}, brokers: [3]}}
"""


def wait_application(op: Operator, apps: Any, ns: str, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        items = apps.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
        if items:
            assert len(items) == 1, [i["metadata"]["name"] for i in items]
            app: dict[str, Any] = items[0]
            return app
        time.sleep(0.5)
    pytest.fail(f"no SparkApplication in {ns}\noperator log:\n{op.tail()}", pytrace=False)


def set_state(apps: Any, ns: str, name: str, state: str, message: str = "") -> None:
    app_state = {"state": state, **({"errorMessage": message} if message else {})}
    apps.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, name, {"status": {"applicationState": app_state}}
    )


def run_job(arguments: list[str], exchange: Path) -> subprocess.CompletedProcess[str]:
    """The job as the spark-operator's driver would run it, with the pods' mount mapped to ``exchange``."""
    local = [str(exchange) + a[len(MOUNT) :] if a.startswith(MOUNT + "/") else a for a in arguments]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    submit = [str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]"]
    return subprocess.run(
        [*submit, "--conf", "spark.driver.host=127.0.0.1", str(JOB), *local],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def play_spark_operator(apps: Any, ns: str, app: dict[str, Any], exchange: Path) -> None:
    name = app["metadata"]["name"]
    set_state(apps, ns, name, "RUNNING")
    job = run_job(app["spec"]["arguments"], exchange)
    assert job.returncode == 0, job.stderr[-2000:]
    set_state(apps, ns, name, "COMPLETED")


def test_spark_k8s_engine_plans_through_a_spark_application_and_the_plan_is_executed(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_admin: Any,
    spark_apps: Any,
    exchange: Path,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[3, 1], [1, 3], [3, 2]])
    fill(kafka_rig, topic, 2000)
    apply(kubectl, ns, RETIRE_3_WITH_SPARK_K8S.format(bootstrap=kafka_rig.bootstrap_servers))
    app = wait_application(operator, spark_apps, ns)
    name, spec = app["metadata"]["name"], app["spec"]
    assert spec["image"] == "registry.example/kafka-placement:9.9"
    assert spec["driver"]["serviceAccount"] == "kp-spark"
    assert spec["driver"]["memory"] == spec["executor"]["memory"] == "1g"
    assert spec["executor"]["instances"] == 1
    assert spec["volumes"] == [{"name": "exchange", "persistentVolumeClaim": {"claimName": "kp-exchange"}}]
    assert "--reactive-cordon" not in spec["arguments"]  # the main rig supports KIP-1066
    # the reconcile that submitted the application writes the status after it: waited for, not read once
    wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Planning",), timeout=30)

    play_spark_operator(spark_apps, ns, app, exchange)
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Completed",), timeout=240)
    assert done["status"]["plan"]["moves"] >= 3
    assert all(3 not in p.replicas for p in snapshot(kafka_rig).partitions)
    no_throttle_left(kafka_admin, kafka_rig)

    # The placement changed, so the next reconcile verifies it with one more job: an empty plan.
    check = wait_application(operator, spark_apps, ns)
    assert check["metadata"]["name"] != name
    play_spark_operator(spark_apps, ns, check, exchange)
    deadline = time.monotonic() + 60
    while spark_apps.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]:
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)
    status: dict[str, Any] = {}
    while time.monotonic() < deadline + 30 and "converged" not in str(status.get("message")):
        time.sleep(0.5)
        status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
    # the empty plan converged; the status keeps naming the executed plan until a new one replaces it
    assert status["phase"] == "Completed", status
    assert status["plan"]["id"] == done["status"]["plan"]["id"], status
    time.sleep(6)  # three more reconciles: unchanged placement, so no new job
    assert spark_apps.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"] == []


def test_a_running_application_is_polled_across_reconciles_and_survives_an_operator_restart(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    k8s_api: Any,
    kafka_rig: KafkaRig,
    new_topic: Any,
    spark_apps: Any,
    exchange: Path,
) -> None:
    """No reconcile waits for Spark: the run id is in the planning record, each reconcile reads the
    application's state once; a restarted operator picks the same run up instead of submitting another."""
    ns = k8s_namespace
    new_topic([[3, 1], [1, 3]])
    apply(kubectl, ns, RETIRE_3_WITH_SPARK_K8S.format(bootstrap=kafka_rig.bootstrap_servers))
    app = wait_application(operator, spark_apps, ns)
    name, run_id = app["metadata"]["name"], app["metadata"]["labels"]["kafkaplacement.io/run-id"]
    record = KubeGateway(k8s_api).read_config_map(ns, configmap_name("big", "planning"))
    assert record is not None, operator.tail()
    run = json.loads(gzip.decompress(base64.b64decode(record["binaryData"][DOC_KEY])))
    assert (run["run_id"], run["state"], run["version"]) == (run_id, "Submitted", 1)

    set_state(spark_apps, ns, name, "RUNNING")  # a blocked reconcile would never show this state
    deadline = time.monotonic() + 60
    while "RUNNING" not in str(get(kubectl, ns, "brokerdecommission", "retire-3")["status"].get("message")):
        assert time.monotonic() < deadline, operator.tail()
        time.sleep(0.5)

    operator.kill()
    operator.start()
    time.sleep(8)  # several reconciles of the new process
    items = spark_apps.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
    assert [i["metadata"]["name"] for i in items] == [name], operator.tail()
    play_spark_operator(spark_apps, ns, app, exchange)
    done = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Completed",), timeout=240)
    assert done["status"]["plan"]["moves"] >= 2


def test_failed_spark_application_fails_the_intent_with_its_message_and_nothing_moves(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    new_topic: Any,
    kafka_py_admin: Any,
    spark_apps: Any,
) -> None:
    ns = k8s_namespace
    topic = new_topic([[3, 1], [1, 3]])
    apply(kubectl, ns, RETIRE_3_WITH_SPARK_K8S.format(bootstrap=kafka_rig.bootstrap_servers))
    app = wait_application(operator, spark_apps, ns)
    set_state(spark_apps, ns, app["metadata"]["name"], "FAILED", "driver OOMKilled")
    failed = wait_phase(kubectl, operator, ns, "brokerdecommission", "retire-3", ("Failed",))
    message = failed["status"]["message"]
    assert "driver OOMKilled" in message and "(state FAILED)" in message
    assert kafka_py_admin.list_partition_reassignments() == {}
    assert any(3 in p.replicas for p in snapshot(kafka_rig).partitions if p.topic == topic)
