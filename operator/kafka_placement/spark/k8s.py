"""The ``spark-k8s`` engine: the Spark planning job run by Kubernetes, through one of two launchers.

``Pod`` (the default): this module creates a driver pod that runs ``kafka-placement plan --engine spark``
against the API server; Spark's own Kubernetes scheduler starts the executor pods (``spark.driver_pod``).
``SparkApplication``: the Kubeflow spark-operator runs the job (``spark/job.py``) from a
``SparkApplication`` (``sparkoperator.k8s.io/v1beta2``) this module creates. Snapshot, intents and plan
are exchanged through a shared volume, the *exchange dir*: a PersistentVolumeClaim mounted at
``exchange_mount`` in the Spark driver (and, for a SparkApplication, the executors), and visible to
this process at ``exchange_dir`` (the same claim mounted in the operator pod, or any local path
holding the same files). One run uses the sub-directory ``<run_id>``::

    <exchange>/<run_id>/snapshot/       written here, read by the job (a Parquet snapshot directory:
                                        brokers.json + partitions.parquet; at a million partitions a
                                        twentieth of the JSON's bytes, written with 51 MB of memory
                                        instead of 854, read in half the time: run_exchange.py)
    <exchange>/<run_id>/intents.yaml    written here, read by the job
    <exchange>/<run_id>/plan.json       written by the job, read here
    <exchange>/<run_id>/summary.json    written by the job, read here

The steps: ``submit`` writes the inputs and creates the driver pod or the application; ``application_state``
reads the pod's phase or the application's ``.status.applicationState``, and ``outcome`` says whether it
completed, still runs or failed (a driver that exits 2 or 3 is bad input or infeasible, as the CLI's exit
codes say); ``collect`` reads the plan (and deletes the completed pod or application);
``delete_application`` ends one that timed out or plans an outdated placement.
``run_on_kubernetes`` (the CLI) loops over them until COMPLETED, a failure state or the timeout; the
operator runs one step per reconcile (reconcile/planner.py), so no reconcile waits for Spark. The
inputs are removed afterwards (unless ``keep_inputs``); the outputs stay. The driver and executors
run non-root (uid 10001, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp);
the exchange dir must be readable and
writable by that uid (the run dir is created group-writable and the pods get ``fsGroup`` 10001).
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..kube.gateway import KubeError, KubeGateway
from ..model.cluster_spec import SPARK_K8S_DEFAULTS, SparkSpec
from ..model.crd_parts import Launcher
from ..model.errors import BadInputError, InfeasibleError, PlacementError, infeasible
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from ..planning.plan_summary import PlanSummary
from . import driver_pod as pods
from .io import write_parquet

GROUP = "sparkoperator.k8s.io"
VERSION = "v1beta2"
PLURAL = "sparkapplications"
KIND = "SparkApplication"
API_VERSION = f"{GROUP}/{VERSION}"
NAME_PREFIX = "kafka-placement-"
RUN_ID_LABEL = "kafkaplacement.io/run-id"
APP_LABEL = "app.kubernetes.io/name"
RUN_UID = 10001

COMPLETED = pods.COMPLETED
FAILED_STATES = frozenset({pods.FAILED, "SUBMISSION_FAILED", "FAILING", "INVALIDATING", "UNKNOWN"})
LAUNCHERS = pods.LAUNCHERS

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
    exchange_mount: str = SPARK_K8S_DEFAULTS.exchange_mount
    service_account: str = SPARK_K8S_DEFAULTS.service_account
    driver_cores: int = 1
    driver_memory: str = SPARK_K8S_DEFAULTS.memory
    executor_instances: int = SPARK_K8S_DEFAULTS.executor_instances
    executor_cores: int = 1
    executor_memory: str = SPARK_K8S_DEFAULTS.memory
    spark_version: str = "4.0.0"
    main_file: str = "local:///opt/kafka-placement/job.py"
    image_pull_policy: str = "IfNotPresent"
    extra_arguments: tuple[str, ...] = ()  # appended to the job's arguments, e.g. ("--shards", "64")
    timeout_s: float = float(SparkSpec().timeout_seconds)  # the CRD's default (spec.planner.spark)
    poll_s: float = 5.0
    ttl: int = 3600
    keep_application: bool = False  # keep a COMPLETED application (default: delete it once read)
    keep_inputs: bool = False  # keep the snapshot and intents.yaml in the run dir
    launcher: Launcher = SPARK_K8S_DEFAULTS.launcher
    conf: tuple[tuple[str, str], ...] = ()  # more Spark settings for the Pod launcher's driver (last wins)


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
            "arguments": [*pods.job_file_args(run_dir), *settings.extra_arguments],
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


@dataclass(frozen=True)
class RunState:
    """What the run's pod or application says: its state ("" before anything ran it), the error message
    of a failed run, and the driver's exit code where Kubernetes reports it (the Pod launcher)."""

    state: str
    message: str = ""
    exit_code: int | None = None


def describe(settings: SparkK8sSettings, run_id: str) -> str:
    """The run as messages name it: ``Spark driver pod NS/NAME`` or ``Spark application NS/NAME``."""
    kind = "driver pod" if settings.launcher == "Pod" else "application"
    return f"Spark {kind} {settings.namespace}/{application_name(run_id)}"


def api_error(e: KubeError, verb: str, settings: SparkK8sSettings, name: str = "") -> PlacementError:
    """A clear PlacementError for a Kubernetes API failure of ``verb`` on the run's pod or application."""
    status, namespace = e.status, settings.namespace
    pod = settings.launcher == "Pod"
    kind, resource = ("driver pod", "pods") if pod else ("SparkApplication", f"{PLURAL}.{GROUP}")
    what = f"{kind} {name}" if name else resource
    if status == 404 and verb == "create":
        if pod:
            return PlacementError(f"cannot create the Spark driver pod: namespace {namespace} not found")
        return PlacementError(
            f"the SparkApplication CRD ({API_VERSION}) is not installed: install the Kubeflow "
            "spark-operator, or use the Pod launcher (spec.planner.spark.launcher: Pod) or --engine spark"
        )
    if status == 404:
        return PlacementError(f"{what} in namespace {namespace} not found (deleted while planning?)")
    if status == 403:
        return PlacementError(
            f"forbidden: this service account may not {verb} {resource} in namespace {namespace}; "
            f"grant '{verb}' on {resource} in a Role bound to it"
        )
    if status == 409 and verb == "create":
        return PlacementError(f"{what} already exists in namespace {namespace}: use another run id")
    if status == 422 and verb == "create":
        return PlacementError(f"the {what} was refused by the API server: {e.message}")
    return PlacementError(f"while trying to {verb} {what} in {namespace}: {e.message}")


def write_inputs(run_dir: Path, snapshot: ClusterSnapshot, intents_text: str, extra: dict[str, str]) -> None:
    """The job's inputs (and ``extra`` files) in the run dir, created group-writable so the Spark pods
    can write their outputs; a write that fails (a full volume) takes the run dir away again."""
    try:
        run_dir.mkdir(parents=True, exist_ok=False)
    except OSError as e:
        raise _unwritable(run_dir, e) from e
    try:
        run_dir.chmod(0o2775)
        write_parquet(snapshot, run_dir / pods.SNAPSHOT)
        (run_dir / "intents.yaml").write_text(intents_text, encoding="utf-8")
        for name, text in extra.items():
            (run_dir / name).write_text(text, encoding="utf-8")
    except OSError as e:
        remove_run(run_dir)
        raise _unwritable(run_dir, e) from e


def _unwritable(run_dir: Path, e: OSError) -> PlacementError:
    return PlacementError(f"cannot write the Spark job's inputs to {run_dir}: {e}")


def read_outputs(run_dir: Path, what: str) -> tuple[Plan, PlanSummary]:
    """The plan and summary the job wrote; a missing or invalid plan is a clear error."""
    plan_path = run_dir / "plan.json"
    if not plan_path.is_file():
        raise PlacementError(f"{what} completed but wrote no plan: {plan_path} not found")
    try:
        plan = Plan.loads(plan_path.read_text(encoding="utf-8"), source=str(plan_path))
    except PlacementError as e:
        raise PlacementError(f"{what} wrote an invalid plan: {e.message}") from e
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():  # the job writes it beside the plan: without it the run is broken
        raise PlacementError(f"{what} completed but wrote no summary: {summary_path} not found")
    try:
        doc = json.loads(summary_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise PlacementError(f"{what} wrote an invalid summary {summary_path}: {str(e)[:200]}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("partitionsChanged"), int):
        raise PlacementError(f"{what} wrote an invalid summary {summary_path}: not a planning summary")
    try:
        return plan, PlanSummary.from_json(doc)
    except BadInputError as e:
        raise PlacementError(f"{what} wrote an invalid summary {summary_path}: {e.message}") from None


def remove_inputs(run_dir: Path) -> None:
    """The run's inputs (its outputs stay); ``snapshot.json`` is an older operator's snapshot."""
    shutil.rmtree(run_dir / pods.SNAPSHOT, ignore_errors=True)
    for f in ("snapshot.json", "intents.yaml", pods.EXECUTOR_TEMPLATE):
        (run_dir / f).unlink(missing_ok=True)


def remove_run(run_dir: Path) -> None:
    """Remove a superseded run's directory (inputs and outputs); best effort."""
    shutil.rmtree(run_dir, ignore_errors=True)


def _labels(run_id: str) -> dict[str, str]:
    return {APP_LABEL: "kafka-placement", RUN_ID_LABEL: run_id}


def submit(
    kube: KubeGateway, snapshot: ClusterSnapshot, intents_text: str, settings: SparkK8sSettings, run_id: str
) -> str:
    """Write the run's inputs and create its driver pod or SparkApplication; returns its name."""
    name = application_name(check_run_id(run_id))
    run_dir = Path(settings.exchange_dir) / run_id
    pod = settings.launcher == "Pod"
    extra = {pods.EXECUTOR_TEMPLATE: pods.executor_template(_labels(run_id))} if pod else {}
    write_inputs(run_dir, snapshot, intents_text, extra)
    try:
        if pod:
            kube.create_pod(settings.namespace, pods.driver_pod(run_id, name, _labels(run_id), settings))
        else:
            kube.create_custom(
                GROUP, VERSION, settings.namespace, PLURAL, spark_application(run_id, settings)
            )
    except KubeError as e:
        remove_inputs(run_dir)
        raise api_error(e, "create", settings, name) from None
    return name


def application_state(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> RunState | None:
    """The run's state (``RunState("")`` before anything ran it); None when its pod or application does not
    exist. A transient API error reads as ``RunState("")``: the caller polls again."""
    name = application_name(run_id)
    try:
        if settings.launcher == "Pod":
            obj = kube.read_pod(settings.namespace, name)
        else:
            obj = kube.get_custom(GROUP, VERSION, settings.namespace, PLURAL, name)
    except KubeError as e:
        if e.status == 403:
            raise api_error(e, "get", settings, name) from None
        return RunState("")
    if obj is None:
        return None
    if settings.launcher == "Pod":
        return RunState(*pods.pod_state(obj))
    state = ((obj.get("status") or {}).get("applicationState")) or {}
    return RunState(str(state.get("state") or ""), str(state.get("errorMessage") or ""))


def outcome(state: RunState | None, what: str) -> Literal["completed", "running"] | PlacementError:
    """What a run's state means: completed, still running, or the error that ended it (a driver's exit
    code 2 is bad input and 3 infeasible, with the driver's own message, as the CLI reports them)."""
    if state is None:
        return PlacementError(f"{what} disappeared before it completed (deleted?)")
    if state.state == COMPLETED:
        return "completed"
    if state.state in FAILED_STATES:
        if state.exit_code == BadInputError.exit_code:
            return BadInputError(state.message)
        if state.exit_code == InfeasibleError.exit_code:
            return infeasible(state.message)  # (DiskHeadroomError when the disk headroom refused it)
        code = f", exit code {state.exit_code}" if state.exit_code is not None else ""
        return PlacementError(
            f"{what} failed: {state.message or 'no error message'} (state {state.state}{code})"
        )
    return "running"


def collect(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> tuple[Plan, PlanSummary]:
    """The completed run's plan and summary; the pod or application is deleted unless ``keep_application``."""
    plan, summary = read_outputs(Path(settings.exchange_dir) / run_id, describe(settings, run_id))
    if not settings.keep_application:
        delete_application(kube, settings, run_id)
    return plan, with_run(summary, settings, run_id)


def with_run(summary: PlanSummary, settings: SparkK8sSettings, run_id: str) -> PlanSummary:
    """What a spark-k8s summary adds: the engine and the run's pod or application."""
    run = f"{settings.namespace}/{application_name(run_id)}"
    if settings.launcher == "Pod":
        return replace(summary, engine="spark-k8s", spark_driver_pod=run)
    return replace(summary, engine="spark-k8s", spark_application=run)


def delete_application(kube: KubeGateway, settings: SparkK8sSettings, run_id: str) -> None:
    """Delete the run's driver pod (its executors go with it) or SparkApplication; gone already is fine."""
    name = application_name(run_id)
    try:
        if settings.launcher == "Pod":
            kube.delete_pod(settings.namespace, name)
        else:
            kube.delete_custom(GROUP, VERSION, settings.namespace, PLURAL, name)
    except KubeError as e:
        raise api_error(e, "delete", settings, name) from None


def run_on_kubernetes(
    kube: KubeGateway,
    snapshot: ClusterSnapshot,
    intents_text: str,
    settings: SparkK8sSettings,
    run_id: str | None = None,
) -> tuple[Plan, PlanSummary]:
    """Plan ``snapshot`` with the Spark job on Kubernetes and wait for it (the CLI's way; the operator
    polls the same steps across reconciles instead: reconcile/planner.py).

    Raises PlacementError when the CRD is missing, RBAC forbids it, the run fails (its message; bad
    input and infeasible as such) or does not finish within ``settings.timeout_s`` (it is deleted then)."""
    run_id = check_run_id(run_id or new_run_id())
    submit(kube, snapshot, intents_text, settings, run_id)
    what = describe(settings, run_id)
    try:
        deadline = time.monotonic() + settings.timeout_s
        state: RunState | None = RunState("")
        while True:
            state = application_state(kube, settings, run_id)
            result = outcome(state, what)
            if result == "completed":
                return collect(kube, settings, run_id)
            if isinstance(result, PlacementError):
                raise result
            if time.monotonic() >= deadline:
                delete_application(kube, settings, run_id)
                raise timed_out(what, settings, state.state if state else "")
            time.sleep(max(0.05, min(settings.poll_s, deadline - time.monotonic())))
    finally:
        if not settings.keep_inputs:
            remove_inputs(Path(settings.exchange_dir) / run_id)


def timed_out(what: str, settings: SparkK8sSettings, state: str) -> PlacementError:
    return PlacementError(
        f"{what} did not finish within {settings.timeout_s:g} s "
        f"(state: {state or 'not yet submitted'}); it was deleted"
    )


__all__ = [
    "API_VERSION",
    "LAUNCHERS",
    "RunState",
    "SparkK8sSettings",
    "api_error",
    "application_name",
    "application_state",
    "collect",
    "delete_application",
    "describe",
    "new_run_id",
    "outcome",
    "read_outputs",
    "remove_inputs",
    "remove_run",
    "run_on_kubernetes",
    "spark_application",
    "submit",
    "timed_out",
    "with_run",
    "write_inputs",
]
