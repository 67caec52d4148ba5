"""The ``spark-k8s`` engine (``kafka_placement.spark.k8s``) against the real kube-apiserver rig.

The rig runs no pods and no spark-operator, so a minimal SparkApplication CRD
(tests/testdata/sparkapplication-crd.yaml) is installed and the test plays the spark-operator: it reads
the inputs ``run_on_kubernetes`` wrote to the exchange dir, runs the real planner on them, writes
plan.json / summary.json and patches the application's status. The API error mapping and the output
parsing are also tested pure (no rig). Needs `python tests/rig/k8s_rig.py up` for the k8s-marked tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafka_placement.kube.gateway import KubeError, KubeGateway
from kafka_placement.model.errors import PlacementError
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.spark.io import read_snapshot
from kafka_placement.spark.k8s import (
    API_VERSION,
    GROUP,
    PLURAL,
    VERSION,
    SparkK8sSettings,
    api_error,
    application_name,
    read_outputs,
    spark_application,
)
from kafka_placement.spark.k8s import run_on_kubernetes as run_k8s

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "tests" / "testdata" / "sparkapplication-crd.yaml"
CRD_NAME = f"{PLURAL}.{GROUP}"
SCENARIO = ROOT / "tests" / "testdata" / "golden" / "decommission"
WAIT_S = 60.0


def poll(what: str, check: Callable[[], Any], timeout: float = WAIT_S, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}", pytrace=False)


@pytest.fixture(scope="module")
def spark_crd(kubectl: Any) -> str:
    """The minimal SparkApplication CRD, applied and Established (left installed: apply is idempotent)."""
    kubectl("apply", "-f", str(CRD_FILE))
    kubectl("wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=60s")
    return CRD_NAME


@pytest.fixture
def custom(k8s_api: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(k8s_api)


@pytest.fixture
def background() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(max_workers=1)
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


def settings_for(namespace: str, exchange: Path, **kw: Any) -> SparkK8sSettings:
    base: dict[str, Any] = {
        "namespace": namespace,
        "image": "registry.example/kafka-placement:1.2.3",
        "service_account": "kp-spark-driver",
        "exchange_claim": "kp-exchange",
        "exchange_mount": "/exchange",
        "exchange_dir": exchange,
        "timeout_s": 60.0,
        "poll_s": 0.2,
        "ttl": 600,
        "launcher": "SparkApplication",
    }
    base.update(kw)
    return SparkK8sSettings(**base)


def scenario() -> tuple[ClusterSnapshot, str]:
    snap = ClusterSnapshot.loads((SCENARIO / "snapshot.json").read_text(), source="snapshot.json")
    return snap, (SCENARIO / "intents.yaml").read_text()


def get_app(custom: Any, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes.client.exceptions import ApiException

    try:
        app: dict[str, Any] = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        return app
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def set_state(custom: Any, namespace: str, name: str, state: str, message: str = "") -> None:
    app_state: dict[str, Any] = {"state": state}
    if message:
        app_state["errorMessage"] = message
    custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, {"status": {"applicationState": app_state}}
    )


# ---------------------------------------------------------------------------------------------- rig tests


@pytest.mark.k8s
def test_completed_application_returns_the_plan(
    spark_crd: str, k8s_api: Any, k8s_namespace: str, custom: Any, background: ThreadPoolExecutor,
    tmp_path: Path,
) -> None:  # fmt: skip
    snap, intents_text = scenario()
    settings = settings_for(k8s_namespace, tmp_path)
    run_id = "it-complete-1"
    name = application_name(run_id)
    future: Future[tuple[Plan, dict[str, Any]]] = background.submit(
        run_k8s, KubeGateway(k8s_api), snap, intents_text, settings, run_id
    )

    app = poll(f"SparkApplication {name}", lambda: future.done() or get_app(custom, k8s_namespace, name))
    assert isinstance(app, dict), future.result()  # a done future here is an early failure: show it
    assert app["apiVersion"] == API_VERSION and app["kind"] == "SparkApplication"
    assert app["metadata"]["labels"] == {
        "app.kubernetes.io/name": "kafka-placement",
        "kafkaplacement.io/run-id": run_id,
    }
    spec = app["spec"]
    assert spec["type"] == "Python" and spec["mode"] == "cluster" and spec["pythonVersion"] == "3"
    assert spec["image"] == "registry.example/kafka-placement:1.2.3"
    assert spec["imagePullPolicy"] == "IfNotPresent"
    assert spec["mainApplicationFile"] == "local:///opt/kafka-placement/job.py"
    assert spec["sparkVersion"] == "4.0.0"
    assert spec["restartPolicy"] == {"type": "Never"}
    assert spec["timeToLiveSeconds"] == 600
    assert spec["arguments"] == [
        "--snapshot", f"/exchange/{run_id}/snapshot",
        "--intents", f"/exchange/{run_id}/intents.yaml",
        "-o", f"/exchange/{run_id}/plan.json",
        "--summary", f"/exchange/{run_id}/summary.json",
    ]  # fmt: skip
    assert spec["volumes"] == [{"name": "exchange", "persistentVolumeClaim": {"claimName": "kp-exchange"}}]
    assert spec["driver"]["serviceAccount"] == "kp-spark-driver"
    for role in ("driver", "executor"):
        pod = spec[role]
        assert pod["volumeMounts"] == [{"name": "exchange", "mountPath": "/exchange"}]
        sc = pod["securityContext"]
        assert sc["runAsNonRoot"] is True and sc["runAsUser"] == 10001
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["executor"]["instances"] == 2

    # play the spark-operator + job: plan the files run_on_kubernetes wrote, write the outputs
    run_dir = tmp_path / run_id
    written = read_snapshot(run_dir / "snapshot")  # a Parquet snapshot directory
    intents = Intents.loads((run_dir / "intents.yaml").read_text(), source="exchange intents")
    assert written == snap
    set_state(custom, k8s_namespace, name, "SUBMITTED")
    set_state(custom, k8s_namespace, name, "RUNNING")
    result = compute_plan(written, intents)
    written_summary = replace(result.summary, engine="spark").to_json()
    (run_dir / "plan.json").write_text(json.dumps(result.plan.to_json(), indent=1) + "\n")
    (run_dir / "summary.json").write_text(json.dumps(written_summary, indent=1) + "\n")
    time.sleep(0.5)  # the function sees RUNNING at least once, keeps waiting
    assert not future.done()
    set_state(custom, k8s_namespace, name, "COMPLETED")

    plan, summary = future.result(timeout=WAIT_S)
    assert plan == result.plan
    assert plan.to_json() == result.plan.to_json() and not plan.empty
    assert summary.engine == "spark-k8s"
    assert summary.spark_application == f"{k8s_namespace}/{name}"
    assert replace(summary, engine=None, spark_application=None) == result.summary
    poll(f"deletion of {name}", lambda: get_app(custom, k8s_namespace, name) is None)
    assert sorted(p.name for p in run_dir.iterdir()) == ["plan.json", "summary.json"]  # inputs removed


@pytest.mark.k8s
def test_failed_application_raises_with_its_error_message(
    spark_crd: str, k8s_api: Any, k8s_namespace: str, custom: Any, background: ThreadPoolExecutor,
    tmp_path: Path,
) -> None:  # fmt: skip
    snap, intents_text = scenario()
    settings = settings_for(k8s_namespace, tmp_path)
    future = background.submit(
        run_k8s, KubeGateway(k8s_api), snap, intents_text, settings
    )  # a generated run id

    def listed() -> Any:
        if future.done():
            return True
        items = custom.list_namespaced_custom_object(
            GROUP, VERSION, k8s_namespace, PLURAL, label_selector="app.kubernetes.io/name=kafka-placement"
        )["items"]
        return items[0] if items else None

    app = poll("the SparkApplication", listed)
    assert isinstance(app, dict), future.result()
    name = app["metadata"]["name"]
    run_id = app["metadata"]["labels"]["kafkaplacement.io/run-id"]
    assert name == application_name(run_id)
    assert (tmp_path / run_id / "snapshot" / "partitions.parquet").is_file()
    set_state(custom, k8s_namespace, name, "RUNNING")
    set_state(custom, k8s_namespace, name, "FAILED", "driver OOMKilled")

    with pytest.raises(PlacementError) as err:
        future.result(timeout=WAIT_S)
    assert name in err.value.message and "driver OOMKilled" in err.value.message
    assert "FAILED" in err.value.message
    assert get_app(custom, k8s_namespace, name) is not None  # left for its logs; the TTL removes it
    assert not (tmp_path / run_id / "snapshot").exists()


@pytest.mark.k8s
@pytest.mark.timeout(90)  # the run's own timeout is 3 s; only a run that ignored it would reach this
def test_timeout_deletes_the_application(
    spark_crd: str, k8s_api: Any, k8s_namespace: str, custom: Any, tmp_path: Path
) -> None:
    snap, intents_text = scenario()
    settings = settings_for(k8s_namespace, tmp_path, timeout_s=3.0, poll_s=0.5)
    run_id = "it-timeout-1"
    with pytest.raises(PlacementError) as err:
        run_k8s(KubeGateway(k8s_api), snap, intents_text, settings, run_id)
    assert "did not finish within 3 s" in err.value.message and "it was deleted" in err.value.message
    assert application_name(run_id) in err.value.message
    assert get_app(custom, k8s_namespace, application_name(run_id)) is None
    assert not (tmp_path / run_id / "snapshot").exists()  # the run's inputs went with it


@pytest.mark.k8s
def test_existing_application_name_is_a_clear_error(
    spark_crd: str, k8s_api: Any, k8s_namespace: str, custom: Any, tmp_path: Path
) -> None:
    snap, intents_text = scenario()
    settings = settings_for(k8s_namespace, tmp_path / "a")
    body = spark_application("it-dup-1", settings)
    custom.create_namespaced_custom_object(GROUP, VERSION, k8s_namespace, PLURAL, body)
    with pytest.raises(PlacementError, match="already exists"):
        run_k8s(KubeGateway(k8s_api), snap, intents_text, settings, "it-dup-1")


# ---------------------------------------------------------------------------------------------- pure


def test_api_error_mapping() -> None:
    def ApiException(status: int, reason: str = "") -> KubeError:
        return KubeError(f"Kubernetes API: cannot do it: {status} {reason}", status)

    apps = settings_for("ns1", Path("/x"))
    missing = api_error(ApiException(status=404, reason="Not Found"), "create", apps, "kafka-placement-x")
    assert missing.message == (
        "the SparkApplication CRD (sparkoperator.k8s.io/v1beta2) is not installed: install the Kubeflow "
        "spark-operator, or use the Pod launcher (spec.planner.spark.launcher: Pod) or --engine spark"
    )
    forbidden = api_error(ApiException(status=403, reason="Forbidden"), "create", apps, "kafka-placement-x")
    assert "forbidden" in forbidden.message and "ns1" in forbidden.message
    assert "create" in forbidden.message and "sparkapplications.sparkoperator.k8s.io" in forbidden.message
    gone = api_error(ApiException(status=404), "get", apps, "kafka-placement-x")
    assert "kafka-placement-x" in gone.message and "not found" in gone.message
    other = api_error(ApiException(status=500, reason="Internal Server Error"), "create", apps)
    assert "500" in other.message
    pods = settings_for("ns1", Path("/x"), launcher="Pod")
    no_ns = api_error(ApiException(status=404, reason="Not Found"), "create", pods, "kafka-placement-x")
    assert no_ns.message == "cannot create the Spark driver pod: namespace ns1 not found"
    pod_forbidden = api_error(ApiException(status=403), "create", pods, "kafka-placement-x")
    assert "may not create pods in namespace ns1" in pod_forbidden.message


def test_manifest_paths_and_invalid_run_id(tmp_path: Path) -> None:
    settings = settings_for("ns1", tmp_path, exchange_mount="/data/x/", extra_arguments=("--shards", "8"))
    app = spark_application("r1", settings)
    assert app["metadata"]["name"] == "kafka-placement-r1" and app["metadata"]["namespace"] == "ns1"
    assert app["spec"]["arguments"][:2] == ["--snapshot", "/data/x/r1/snapshot"]
    assert app["spec"]["arguments"][-2:] == ["--shards", "8"]
    with pytest.raises(PlacementError, match="invalid run id"):
        spark_application("Bad_ID", settings)


def test_missing_or_invalid_plan_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PlacementError, match="completed but wrote no plan"):
        read_outputs(tmp_path, "kafka-placement-r1")
    (tmp_path / "plan.json").write_text("{not json")
    with pytest.raises(PlacementError, match="wrote an invalid plan") as err:
        read_outputs(tmp_path, "kafka-placement-r1")
    assert type(err.value) is PlacementError  # not BadInputError: the user's input was fine


@pytest.mark.k8s
def test_cli_plan_on_kubernetes_waits_for_the_application_and_writes_its_plan(
    spark_crd: str, k8s_rig: dict[str, Any], k8s_namespace: str, custom: Any, tmp_path: Path
) -> None:
    """``kafka-placement plan --engine spark-k8s`` (the CLI blocks, unlike the operator), through the
    kubeconfig it is given; a second run whose application fails exits 1 with the application's message."""
    cli = Path(sys.executable).parent / "kafka-placement"
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    args = [
        str(cli), "plan", "--snapshot", str(SCENARIO / "snapshot.json"), "--intents",
        str(SCENARIO / "intents.yaml"), "--engine", "spark-k8s", "--spark-image", "registry.example/kp:1",
        "--exchange-claim", "kp-exchange", "--exchange-dir", str(exchange), "--spark-namespace",
        k8s_namespace, "--kubeconfig", str(k8s_rig["kubeconfig"]), "--spark-launcher", "SparkApplication",
    ]  # fmt: skip

    seen: set[str] = set()

    def one_app() -> dict[str, Any] | None:
        """The application of the CLI run under way (a failed one stays behind for its logs)."""
        items = custom.list_namespaced_custom_object(GROUP, VERSION, k8s_namespace, PLURAL)["items"]
        new = [i for i in items if i["metadata"]["name"] not in seen]
        if not new:
            return None
        seen.add(new[0]["metadata"]["name"])
        return dict(new[0])

    out = tmp_path / "plan.json"
    proc = subprocess.Popen(
        [*args, "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        app = poll("the CLI's SparkApplication", lambda: proc.poll() is not None or one_app())
        assert isinstance(app, dict), proc.communicate()
        run_dir = exchange / app["metadata"]["labels"]["kafkaplacement.io/run-id"]
        snap = read_snapshot(run_dir / "snapshot")
        result = compute_plan(snap, Intents.loads((run_dir / "intents.yaml").read_text(), source="intents"))
        (run_dir / "plan.json").write_text(json.dumps(result.plan.to_json()) + "\n")
        (run_dir / "summary.json").write_text(json.dumps(result.summary.to_json()) + "\n")
        set_state(custom, k8s_namespace, app["metadata"]["name"], "COMPLETED")
        _, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert Plan.loads(out.read_text(), source="plan.json") == result.plan and not result.plan.empty
    assert "engine spark-k8s" in err

    failing = subprocess.Popen([*args, "-o", str(tmp_path / "p2.json")], stderr=subprocess.PIPE, text=True)
    try:
        app = poll("the second SparkApplication", lambda: failing.poll() is not None or one_app())
        assert isinstance(app, dict), failing.communicate()
        set_state(custom, k8s_namespace, app["metadata"]["name"], "FAILED", "executor lost")
        _, err = failing.communicate(timeout=WAIT_S)
    finally:
        failing.kill()
    assert failing.returncode == 1 and "executor lost" in err and "(state FAILED)" in err, err
    assert not (tmp_path / "p2.json").exists()

    # a job that completes without its summary is a broken run, said as such (was: KeyError, exit 1)
    broken = subprocess.Popen([*args, "-o", str(tmp_path / "p3.json")], stderr=subprocess.PIPE, text=True)
    try:
        app = poll("the third SparkApplication", lambda: broken.poll() is not None or one_app())
        assert isinstance(app, dict), broken.communicate()
        run_dir = exchange / app["metadata"]["labels"]["kafkaplacement.io/run-id"]
        (run_dir / "plan.json").write_text(json.dumps(result.plan.to_json()) + "\n")
        set_state(custom, k8s_namespace, app["metadata"]["name"], "COMPLETED")
        _, err = broken.communicate(timeout=WAIT_S)
    finally:
        broken.kill()
    assert broken.returncode == 1 and "completed but wrote no summary" in err, err
    assert "unexpected" not in err and not (tmp_path / "p3.json").exists()
