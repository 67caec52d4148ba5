"""What the project's image runs when Spark on Kubernetes starts it as an executor or a cluster-mode driver.

Spark's Kubernetes scheduler keeps the image's entry point (``kafka-placement``) and passes one
argument: ``executor`` for an executor pod, ``driver ...`` for the driver pod of a cluster-mode
``spark-submit`` (what the Kubeflow spark-operator runs for a SparkApplication). Everything else comes
in the pod's environment (``SPARK_DRIVER_URL``, ``SPARK_EXECUTOR_ID``, ...; the driver's Spark
settings as ``SPARK_JAVA_OPT_<n>``). ``executor_command`` and ``driver_command`` turn those into the
command to ``exec``: the executor backend of the pyspark distribution's jars on this image's Java, and
``spark-submit`` in client mode inside the driver pod, advertising the pod's IP and reaching the API
server by its Service address (neither executors nor driver need cluster DNS). A missing variable is
bad input (exit 2) naming it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..model.errors import BadInputError

EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
EXECUTOR_ENV = (  # (variable, backend option); all required but the last two
    ("SPARK_DRIVER_URL", "--driver-url"),
    ("SPARK_EXECUTOR_ID", "--executor-id"),
    ("SPARK_EXECUTOR_CORES", "--cores"),
    ("SPARK_APPLICATION_ID", "--app-id"),
    ("SPARK_EXECUTOR_POD_IP", "--hostname"),
    ("SPARK_RESOURCE_PROFILE_ID", "--resourceProfileId"),
    ("SPARK_EXECUTOR_POD_NAME", "--podName"),
)
_JAVA_OPT = re.compile(r"^SPARK_JAVA_OPT_([0-9]+)$")


def spark_home() -> Path:
    """The pyspark distribution's directory (its ``jars/`` and ``bin/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def java_binary(env: Mapping[str, str]) -> str:
    home = env.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def _need(env: Mapping[str, str], name: str, what: str) -> str:
    value = env.get(name, "")
    if not value:
        raise BadInputError(f"{name} is not set: `kafka-placement {what}` is started by Spark on Kubernetes")
    return value


def executor_command(env: Mapping[str, str], home: Path) -> list[str]:
    """The executor JVM's command line from the executor pod's environment."""
    memory = _need(env, "SPARK_EXECUTOR_MEMORY", "executor")
    numbered = [(_JAVA_OPT.match(k), v) for k, v in env.items()]
    java_opts = [v for _, v in sorted((int(m.group(1)), v) for m, v in numbered if m)]
    classpath = os.pathsep.join(p for p in (env.get("SPARK_CLASSPATH", ""), f"{home / 'jars'}/*") if p)
    args: list[str] = []
    for name, option in EXECUTOR_ENV:
        value = env.get(name, "")
        if not value and name in ("SPARK_RESOURCE_PROFILE_ID", "SPARK_EXECUTOR_POD_NAME"):
            continue
        args += [option, value or _need(env, name, "executor")]
    return [
        java_binary(env),
        f"-Xms{memory}",
        f"-Xmx{memory}",
        *java_opts,
        "-cp",
        classpath,
        EXECUTOR_BACKEND,
        *args,
    ]


def driver_command(env: Mapping[str, str], home: Path, spark_args: Sequence[str]) -> list[str]:
    """A cluster-mode driver pod's command: ``spark-submit`` in client mode on the pod's address."""
    address = _need(env, "SPARK_DRIVER_BIND_ADDRESS", "driver")
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "443")
    # the API server by the address the kubelet gave this pod, not kubernetes.default.svc (no DNS needed)
    api = f"https://{f'[{host}]' if ':' in host else host}:{port}"
    master = ["--master", f"k8s://{api}", "--conf", f"spark.kubernetes.driver.master={api}"] if host else []
    return [
        str(home / "bin" / "spark-submit"),
        "--deploy-mode",
        "client",
        *master,
        "--conf",
        f"spark.driver.bindAddress={address}",
        "--conf",
        f"spark.driver.host={address}",
        *spark_args,
    ]


__all__ = ["EXECUTOR_BACKEND", "driver_command", "executor_command", "spark_home"]
