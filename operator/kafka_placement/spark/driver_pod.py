"""The spark-k8s engine's ``Pod`` launcher: Spark's own Kubernetes scheduler, no spark-operator needed.

The operator creates one *driver pod* running the project's image with ``kafka-placement plan --engine
spark --spark-master k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)`` in Spark's
client mode: the driver's JVM asks the API server for ``executorInstances`` executor pods (same image,
entry ``kafka-placement executor``, see ``spark.executor_entry``), which connect back to the driver by
its pod IP (``spark.driver.host``; no cluster DNS is needed) and run the shards. The executors are
owned by the driver pod (``spark.kubernetes.driver.pod.name``), so deleting the driver (timeout,
replan, cancel) removes them too. Snapshot, intents, plan and summary travel through the exchange
volume as for the SparkApplication launcher (``spark.k8s``); the executors' pod template is written
there too (``executor-pod.yaml``: the Restricted pod security settings, a writable /tmp), and removed
with the inputs.

``pod_state`` reads the driver's phase: ``COMPLETED`` when it succeeded; ``FAILED`` with the driver's
own one-line error (the last lines of its log are its termination message) and the exit code that
says whether the input was bad (2), infeasible (3) or something else failed (1); ``FAILED`` at once
for a container that can never start (an invalid image name, a missing Secret, ``Never`` pull policy
without the image); else the phase and what it waits for, shown in status while the run lasts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from ..model.jsonio import clip

if TYPE_CHECKING:
    from .k8s import SparkK8sSettings

LAUNCHERS = ("Pod", "SparkApplication")  # the spark-k8s engine's ways to run the job (spark.k8s)
RUN_UID = 10001
ROLE_LABEL = "kafkaplacement.io/role"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXECUTOR_TEMPLATE = "executor-pod.yaml"
SNAPSHOT = "snapshot"  # the run's snapshot in the exchange dir: a Parquet snapshot directory
DRIVER_PORT, BLOCK_MANAGER_PORT = 7078, 7079
COMPLETED, FAILED = "COMPLETED", "FAILED"
# waiting reasons that no retry cures: the run fails at once instead of at its timeout
FATAL_WAITING = frozenset(
    {"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"}
)
_MEMORY = re.compile(r"^([0-9]+)([kKmMgGtT]?)$")
_UNITS_MIB = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
MIN_PLANNER_MIB = 1024  # the driver pod's memory beyond the JVM heap: the planner's Python


def memory_mib(spark_memory: str) -> int:
    """Spark's memory syntax (``512m``, ``2g``; a bare number is bytes) in MiB, at least 1."""
    m = _MEMORY.match(spark_memory.strip())
    if not m:
        raise ValueError(f"'{spark_memory}' is not a Spark memory size (e.g. 512m, 2g)")
    return max(1, int(int(m.group(1)) * _UNITS_MIB[m.group(2).lower()]))


def driver_pod_memory_mib(driver_memory: str) -> int:
    """The driver pod's memory: the JVM heap plus as much again (at least 1 GiB) for the planner's Python,
    which holds the snapshot and merges and balances the plan."""
    heap = memory_mib(driver_memory)
    return heap + max(MIN_PLANNER_MIB, heap)


def _container_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_UID,
        "runAsGroup": RUN_UID,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_UID,
        "runAsGroup": RUN_UID,
        "fsGroup": RUN_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def job_file_args(run_dir: str) -> list[str]:
    """The planning job's input and output files in the run's exchange directory (as the pods see it)."""
    return [
        "--snapshot",
        f"{run_dir}/{SNAPSHOT}",
        "--intents",
        f"{run_dir}/intents.yaml",
        "-o",
        f"{run_dir}/plan.json",
        "--summary",
        f"{run_dir}/summary.json",
    ]


def executor_template(labels: dict[str, str]) -> str:
    """The executors' pod template (Spark merges its own settings into it)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": dict(labels)},
        "spec": {
            "securityContext": _pod_security(),
            "containers": [
                {
                    "name": "executor",
                    "securityContext": _container_security(),
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }
    return yaml.safe_dump(pod, sort_keys=True)


def spark_conf(run_id: str, name: str, settings: SparkK8sSettings) -> list[tuple[str, str]]:
    """The driver's Spark settings (``$(VAR)`` are expanded by the kubelet from the pod's env), then the
    user's (``settings.conf``, which win). The driver pod's own CPU request and memory follow
    ``spark.kubernetes.driver.request.cores`` and ``spark.driver.memory`` as Spark's would."""
    run_dir = f"{settings.exchange_mount.rstrip('/')}/{run_id}"
    return [
        ("spark.kubernetes.namespace", settings.namespace),
        ("spark.kubernetes.container.image", settings.image),
        ("spark.kubernetes.container.image.pullPolicy", settings.image_pull_policy),
        ("spark.kubernetes.driver.pod.name", "$(KP_POD_NAME)"),
        ("spark.kubernetes.executor.podNamePrefix", name),
        ("spark.kubernetes.executor.podTemplateFile", f"{run_dir}/{EXECUTOR_TEMPLATE}"),
        ("spark.kubernetes.executor.podTemplateContainerName", "executor"),
        ("spark.kubernetes.authenticate.caCertFile", f"{SERVICE_ACCOUNT_DIR}/ca.crt"),
        ("spark.kubernetes.authenticate.oauthTokenFile", f"{SERVICE_ACCOUNT_DIR}/token"),
        ("spark.driver.host", "$(KP_POD_IP)"),
        ("spark.driver.bindAddress", "$(KP_POD_IP)"),
        ("spark.driver.port", str(DRIVER_PORT)),
        ("spark.blockManager.port", str(BLOCK_MANAGER_PORT)),
        ("spark.driver.memory", settings.driver_memory),
        ("spark.executor.instances", str(settings.executor_instances)),
        ("spark.executor.cores", str(settings.executor_cores)),
        ("spark.executor.memory", settings.executor_memory),
        *settings.conf,
    ]


def driver_pod(run_id: str, name: str, labels: dict[str, str], settings: SparkK8sSettings) -> dict[str, Any]:
    """The driver pod's manifest named ``name``: ``kafka-placement plan`` on the run's exchange files."""
    args = [
        "plan",
        *job_file_args(f"{settings.exchange_mount.rstrip('/')}/{run_id}"),
        "--engine",
        "spark",
        "--spark-master",
        "k8s://https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)",
    ]
    for key, value in spark_conf(run_id, name, settings):
        args += ["--spark-conf", f"{key}={value}"]
    args += list(settings.extra_arguments)
    conf = dict(spark_conf(run_id, name, settings))
    mib = driver_pod_memory_mib(conf["spark.driver.memory"])
    cpu = conf.get("spark.kubernetes.driver.request.cores") or str(settings.driver_cores)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": settings.namespace,
            "labels": {**labels, ROLE_LABEL: "spark-driver"},
        },
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": settings.service_account,
            "securityContext": _pod_security(),
            "containers": [
                {
                    "name": "driver",
                    "image": settings.image,
                    "imagePullPolicy": settings.image_pull_policy,
                    "args": args,
                    "env": [
                        {"name": "KP_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "KP_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    ],
                    "ports": [
                        {"name": "driver", "containerPort": DRIVER_PORT},
                        {"name": "blockmanager", "containerPort": BLOCK_MANAGER_PORT},
                    ],
                    "resources": {
                        "requests": {"cpu": cpu, "memory": f"{mib}Mi"},
                        "limits": {"memory": f"{mib}Mi"},
                    },
                    "securityContext": _container_security(),
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                    "volumeMounts": [
                        {"name": "exchange", "mountPath": settings.exchange_mount},
                        {"name": "tmp", "mountPath": "/tmp"},
                    ],
                }
            ],
            "volumes": [
                {"name": "exchange", "persistentVolumeClaim": {"claimName": settings.exchange_claim}},
                {"name": "tmp", "emptyDir": {}},
            ],
        },
    }


def driver_error(log_tail: str) -> str:
    """The driver's own error line from the tail of its log (Spark's warnings come before it)."""
    lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("kafka-placement ") and ": error: " in line:
            return line.split(": error: ", 1)[1]
    return lines[-1] if lines else ""


def pod_state(pod: dict[str, Any]) -> tuple[str, str, int | None]:
    """``(state, message, exit code)`` of a driver pod (see the module docstring)."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "")
    statuses = status.get("containerStatuses") or [{}]
    state = statuses[0].get("state") or {}
    if phase == "Succeeded":
        return COMPLETED, "", 0
    if phase == "Failed":
        terminated = state.get("terminated") or {}
        code = terminated.get("exitCode")
        why = driver_error(str(terminated.get("message") or ""))
        if not why:
            why = " ".join(
                str(x) for x in (terminated.get("reason") or status.get("reason"), status.get("message")) if x
            )
        return FAILED, clip(why or "no error message", 1500), code if isinstance(code, int) else None
    waiting = state.get("waiting") or {}
    reason = str(waiting.get("reason") or "")
    if reason in FATAL_WAITING:
        return (
            FAILED,
            clip(f"the driver container cannot start: {reason}: {waiting.get('message') or ''}", 1500),
            None,
        )
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            reason = f"{cond.get('reason') or 'Unschedulable'}: {clip(str(cond.get('message') or ''), 300)}"
    return (f"{phase or 'Pending'} ({reason})" if reason else (phase or "Pending")), "", None


__all__ = [
    "EXECUTOR_TEMPLATE",
    "LAUNCHERS",
    "driver_error",
    "driver_pod",
    "driver_pod_memory_mib",
    "executor_template",
    "job_file_args",
    "memory_mib",
    "pod_state",
    "spark_conf",
]
