"""The ``spark-k8s`` engine: the Spark planning job (``spark/job.py``) as a SparkApplication on Kubernetes.

The Kubeflow spark-operator runs the job from a ``SparkApplication`` (``sparkoperator.k8s.io/v1beta2``)
this module creates. Snapshot, intents and plan are exchanged through a shared volume, the *exchange
dir*: a PersistentVolumeClaim mounted at ``exchange_mount`` in the Spark driver and executors, and
visible to this process at ``exchange_dir`` (the same claim mounted in the operator pod, or any local
path holding the same files). One run uses the sub-directory ``<run_id>``::

    <exchange>/<run_id>/snapshot.json   written here, read by the job
    <exchange>/<run_id>/intents.yaml    written here, read by the job
    <exchange>/<run_id>/plan.json       written by the job, read here
    <exchange>/<run_id>/summary.json    written by the job, read here

The steps: ``submit`` writes the inputs and creates the application; ``application_state`` reads its
``.status.applicationState`` and ``outcome`` says whether it completed, still runs or failed; ``collect``
reads the plan (and deletes a completed application); ``delete_application`` ends one that timed out.
``run_on_kubernetes`` (the CLI) loops over them until COMPLETED, a failure state or the timeout; the
operator runs one step per reconcile (handlers/planner.py), so no reconcile waits for Spark. The
inputs are removed afterwards (unless ``keep_inputs``); the outputs stay. The driver and executors
run non-root (uid 10001, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp);
the exchange dir must be readable and
writable by that uid (the run dir is created group-writable and the pods get ``fsGroup`` 10001).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..kube.gateway import KubeError, KubeGateway
from ..model.errors import PlacementError
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot

GROUP = "sparkoperator.k8s.io"
VERSION = "v1beta2"
PLURAL = "sparkapplications"
KIND = "SparkApplication"
API_VERSION = f"{GROUP}/{VERSION}"
NAME_PREFIX = "kafka-placement-"
RUN_ID_LABEL = "kafkaplacement.io/run-id"
APP_LABEL = "app.kubernetes.io/name"
RUN_UID = 10001

COMPLETED = "COMPLETED"
FAILED_STATES = frozenset({"FAILED", "SUBMISSION_FAILED", "FAILING", "INVALIDATING", "UNKNOWN"})

_RUN_ID = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


@dataclass(frozen=True)
class SparkK8sSettings:
    """Where and how the SparkApplication runs, and how this process waits for it.

    ``main_file`` is the job's path *inside the image* (``local://`` = a file baked into the image): it
    must match where the image installs ``kafka_placement/spark/job.py``. ``exchange_claim`` is the PVC
    mounted at ``exchange_mount`` in the Spark pods; ``exchange_dir`` is the same volume as seen by this
    process. ``ttl`` is the application's ``timeToLiveSeconds`` (the spark-operator deletes it that
    long after it terminated; a failed application is left for its logs until then).
    """

    namespace: str
    image: str
    exchange_claim: str
    exchange_dir: Path
    exchange_mount: str = "/exchange"
    service_account: str = "kafka-placement-spark"
    driver_cores: int = 1
    driver_memory: str = "2g"
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "2g"
    spark_version: str = "4.0.0"
    main_file: str = "local:///opt/kafka-placement/job.py"
    image_pull_policy: str = "IfNotPresent"
    extra_arguments: tuple[str, ...] = ()  # appended to the job's arguments, e.g. ("--shards", "64")
    timeout_s: float = 1800.0
    poll_s: float = 5.0
    ttl: int = 3600
    keep_application: bool = False  # keep a COMPLETED application (default: delete it once read)
    keep_inputs: bool = False  # keep snapshot.json / intents.yaml in the run dir


def new_run_id() -> str:
    """A short, DNS-label-safe run id: seconds since the epoch (hex) and random hex."""
    return f"{int(time.time()):x}-{secrets.token_hex(3)}"


def application_name(run_id: str) -> str:
    return f"{NAME_PREFIX}{run_id}"


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.match(run_id):
        raise PlacementError(
            f"invalid run id '{run_id}': at most 40 lowercase letters, digits and '-' "
            "(it names the SparkApplication and the exchange sub-directory)"
        )
    return run_id


def _security_context() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_UID,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def spark_application(run_id: str, settings: SparkK8sSettings) -> dict[str, Any]:
    """The SparkApplication manifest running the planning job on the run's exchange files."""
    check_run_id(run_id)
    run_dir = f"{settings.exchange_mount.rstrip('/')}/{run_id}"
    mounts = [{"name": "exchange", "mountPath": settings.exchange_mount}]
    pod_security = {"fsGroup": RUN_UID, "runAsNonRoot": True, "runAsUser": RUN_UID}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": application_name(run_id),
            "namespace": settings.namespace,
            "labels": {APP_LABEL: "kafka-placement", RUN_ID_LABEL: run_id},
        },
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": settings.image,
            "imagePullPolicy": settings.image_pull_policy,
            "mainApplicationFile": settings.main_file,
            "arguments": [
                "--snapshot",
                f"{run_dir}/snapshot.json",
                "--intents",
                f"{run_dir}/intents.yaml",
                "-o",
                f"{run_dir}/plan.json",
                "--summary",
                f"{run_dir}/summary.json",
                *settings.extra_arguments,
            ],
            "sparkVersion": settings.spark_version,
            "restartPolicy": {"type": "Never"},
            "volumes": [
                {"name": "exchange", "persistentVolumeClaim": {"claimName": settings.exchange_claim}}
            ],
            "driver": {
                "cores": settings.driver_cores,
                "memory": settings.driver_memory,
                "serviceAccount": settings.service_account,
                "labels": {APP_LABEL: "kafka-placement", RUN_ID_LABEL: run_id},
                "volumeMounts": list(mounts),
                "securityContext": _security_context(),
                "podSecurityContext": dict(pod_security),
            },
            "executor": {
                "instances": settings.executor_instances,
                "cores": settings.executor_cores,
                "memory": settings.executor_memory,
                "labels": {APP_LABEL: "kafka-placement", RUN_ID_LABEL: run_id},
                "volumeMounts": list(mounts),
                "securityContext": _security_context(),
                "podSecurityContext": dict(pod_security),
            },
            "timeToLiveSeconds": settings.ttl,
        },
    }


def api_error(e: KubeError, verb: str, namespace: str, name: str = "") -> PlacementError:
    """A clear PlacementError for a Kubernetes API failure of ``verb`` on sparkapplications."""
    status = e.status
    what = f"SparkApplication {name}" if name else "SparkApplications"
    if status == 404 and verb == "create":
        return PlacementError(
            f"the SparkApplication CRD ({API_VERSION}) is not installed: "
            "install the Kubeflow spark-operator or use --engine spark"
        )
    if status == 404:
        return PlacementError(f"{what} in namespace {namespace} not found (deleted while planning?)")
    if status == 403:
        return PlacementError(
            f"forbidden: this service account may not {verb} {PLURAL}.{GROUP} in namespace {namespace}; "
            f"grant '{verb}' on {PLURAL} ({GROUP}) in a Role bound to it"
        )
    if status == 409 and verb == "create":
        return PlacementError(f"{what} already exists in namespace {namespace}: use another run id")
    return PlacementError(f"while trying to {verb} {what} in {namespace}: {e.message}")


def write_inputs(run_dir: Path, snapshot: ClusterSnapshot, intents_text: str) -> None:
    """The job's inputs in the run dir (created group-writable so the Spark pods can write outputs)."""
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
        run_dir.chmod(0o2775)
        (run_dir / "snapshot.json").write_text(snapshot.dumps() + "\n", encoding="utf-8")
        (run_dir / "intents.yaml").write_text(intents_text, encoding="utf-8")
    except OSError as e:
        raise PlacementError(f"cannot write the Spark job's inputs to {run_dir}: {e}") from e


def read_outputs(run_dir: Path, name: str) -> tuple[Plan, dict[str, Any]]:
    """The plan and summary the job wrote; a missing or invalid plan is a clear error."""
    plan_path = run_dir / "plan.json"
    if not plan_path.is_file():
        raise PlacementError(f"Spark application {name} completed but wrote no plan: {plan_path} not found")
    try:
        plan = Plan.loads(plan_path.read_text(encoding="utf-8"), source=str(plan_path))
    except PlacementError as e:
        raise PlacementError(f"Spark application {name} wrote an invalid plan: {e.message}") from e
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():  # the job writes it beside the plan: without it the run is broken
        raise PlacementError(
            f"Spark application {name} completed but wrote no summary: {summary_path} not found"
        )
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise PlacementError(
            f"Spark application {name} wrote an invalid summary {summary_path}: {str(e)[:200]}"
        ) from None
    if not isinstance(summary, dict) or not isinstance(summary.get("partitionsChanged"), int):
        raise PlacementError(
            f"Spark application {name} wrote an invalid summary {summary_path}: not a planning summary"
        )
    return plan, summary


def remove_inputs(run_dir: Path) -> None:
    for f in ("snapshot.json", "intents.yaml"):
        (run_dir / f).unlink(missing_ok=True)


def submit(
    kube: KubeGateway, snapshot: ClusterSnapshot, intents_text: str, settings: SparkK8sSettings, run_id: str
) -> str:
    """Write the run's inputs and create its SparkApplication; returns the application's name."""
    name = application_name(check_run_id(run_id))
    run_dir = Path(settings.exchange_dir) / run_id
    write_inputs(run_dir, snapshot, intents_text)
    try:
        kube.create_custom(GROUP, VERSION, settings.namespace, PLURAL, spark_application(run_id, settings))
    except KubeError as e:
        remove_inputs(run_dir)
        raise api_error(e, "create", settings.namespace, name) from None
    return name


def application_state(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> tuple[str, str] | None:
    """``(state, errorMessage)`` of the run's application ("" before the spark-operator saw it); None when
    it does not exist. A transient API error reads as ``("", "")``: the caller polls again."""
    name = application_name(run_id)
    try:
        app = kube.get_custom(GROUP, VERSION, settings.namespace, PLURAL, name)
    except KubeError as e:
        if e.status == 403:
            raise api_error(e, "get", settings.namespace, name) from None
        return "", ""
    if app is None:
        return None
    state = ((app.get("status") or {}).get("applicationState")) or {}
    return str(state.get("state") or ""), str(state.get("errorMessage") or "")


def outcome(state: tuple[str, str] | None, name: str) -> Literal["completed", "running"] | PlacementError:
    """What an application state means: completed, still running, or the error that ended it."""
    if state is None:
        return PlacementError(f"Spark application {name} disappeared before it completed (deleted?)")
    if state[0] == COMPLETED:
        return "completed"
    if state[0] in FAILED_STATES:
        return PlacementError(
            f"Spark application {name} failed: {state[1] or 'no error message'} (state {state[0]})"
        )
    return "running"


def collect(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> tuple[Plan, dict[str, Any]]:
    """The completed run's plan and summary; the application is deleted unless ``keep_application``."""
    name = application_name(run_id)
    plan, summary = read_outputs(Path(settings.exchange_dir) / run_id, name)
    if not settings.keep_application:
        delete_application(kube, settings, run_id)
    summary["engine"] = "spark-k8s"
    summary["sparkApplication"] = f"{settings.namespace}/{name}"
    return plan, summary


def delete_application(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> None:
    name = application_name(run_id)
    try:
        kube.delete_custom(GROUP, VERSION, settings.namespace, PLURAL, name)
    except KubeError as e:
        raise api_error(e, "delete", settings.namespace, name) from None


def run_on_kubernetes(
    kube: KubeGateway,
    snapshot: ClusterSnapshot,
    intents_text: str,
    settings: SparkK8sSettings,
    run_id: str | None = None,
) -> tuple[Plan, dict[str, Any]]:
    """Plan ``snapshot`` with the Spark job as a SparkApplication and wait for it (the CLI's way; the
    operator polls the same steps across reconciles instead: handlers/planner.py).

    Raises PlacementError when the CRD is missing, RBAC forbids it, the application fails (its state
    and errorMessage) or does not finish within ``settings.timeout_s`` (it is deleted then)."""
    run_id = check_run_id(run_id or new_run_id())
    name = submit(kube, snapshot, intents_text, settings, run_id)
    try:
        deadline = time.monotonic() + settings.timeout_s
        state: tuple[str, str] | None = ("", "")
        while True:
            state = application_state(kube, settings, run_id)
            result = outcome(state, name)
            if result == "completed":
                return collect(kube, settings, run_id)
            if isinstance(result, PlacementError):
                raise result
            if time.monotonic() >= deadline:
                delete_application(kube, settings, run_id)
                raise timed_out(name, settings, (state or ("", ""))[0])
            time.sleep(max(0.05, min(settings.poll_s, deadline - time.monotonic())))
    finally:
        if not settings.keep_inputs:
            remove_inputs(Path(settings.exchange_dir) / run_id)


def timed_out(name: str, settings: SparkK8sSettings, state: str) -> PlacementError:
    return PlacementError(
        f"Spark application {name} did not finish within {settings.timeout_s:g} s "
        f"(state: {state or 'not yet submitted'}); it was deleted"
    )


__all__ = [
    "API_VERSION",
    "SparkK8sSettings",
    "api_error",
    "application_name",
    "application_state",
    "collect",
    "delete_application",
    "new_run_id",
    "outcome",
    "read_outputs",
    "remove_inputs",
    "run_on_kubernetes",
    "spark_application",
    "submit",
    "timed_out",
    "write_inputs",
]
