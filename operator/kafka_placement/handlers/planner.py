"""How the operator plans one KafkaCluster: the engine its spec asks for, and spark-k8s settings.

``spec.planner.engine`` (else the Helm default, env ``KAFKA_PLACEMENT_PLANNER_ENGINE``) picks the engine.
``local``, ``spark`` and ``auto`` plan in the operator process. ``spark-k8s`` runs the planning job as a
SparkApplication (``spark.k8s``): image, service account, namespace, executors, memory and timeout come
from ``spec.planner.spark``, falling back to the Helm values the Deployment passes as
``KAFKA_PLACEMENT_SPARK_*``. Snapshot and plan travel through the Deployment's exchange volume: the
PersistentVolumeClaim ``KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM``, mounted at
``KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR`` in the operator pod and at the same path in the Spark pods
(``KAFKA_PLACEMENT_SPARK_EXCHANGE_LOCAL_DIR`` overrides where this process finds it, for an operator
that runs outside a pod). Missing settings are bad input naming what to set.

A Spark job is not launched on every reconcile: its result (plan, or the error that stopped it) is
reused while the intents and the placement (brokers, dirs, each partition's replicas and dirs) are
unchanged, for at most ``spec.planner.spark.replanSeconds``; so a converged cluster is verified by one
job after each change, and a failed job is not relaunched in a loop.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..model.errors import BadInputError, PlacementError
from ..model.intents import Intents
from ..model.snapshot import ClusterSnapshot
from ..planning.optimizer import PlanResult
from ..spark.engines import EngineSettings, plan_with
from ..spark.k8s import SparkK8sSettings, run_on_kubernetes

ENV = "KAFKA_PLACEMENT_"


def engine_of(spec: Mapping[str, Any], env: Mapping[str, str] = os.environ) -> str:
    planner = spec.get("planner") or {}
    return str(planner.get("engine") or env.get(ENV + "PLANNER_ENGINE", "local"))


def spark_k8s_settings(
    spec: Mapping[str, Any], namespace: str, reactive_cordon: bool, env: Mapping[str, str] = os.environ
) -> SparkK8sSettings:
    """The SparkApplication settings for a KafkaCluster (``spec.planner.spark``, then the Helm values)."""
    spark = (spec.get("planner") or {}).get("spark") or {}
    image = spark.get("image") or env.get(ENV + "SPARK_IMAGE")
    if not image:
        raise BadInputError(
            "the spark-k8s engine needs an image: set spec.planner.spark.image "
            "(or planner.spark.image in the Helm values)",
            "spec.planner.spark.image",
        )
    claim, mount = env.get(ENV + "SPARK_EXCHANGE_CLAIM"), env.get(ENV + "SPARK_EXCHANGE_DIR")
    if not claim or not mount:
        raise BadInputError(
            "the spark-k8s engine needs an exchange volume shared by the operator and the Spark pods: "
            "set planner.spark.exchange.claimName in the Helm values "
            f"(env {ENV}SPARK_EXCHANGE_CLAIM and {ENV}SPARK_EXCHANGE_DIR)",
            "spec.planner.engine",
        )
    memory = str(spark.get("memory") or env.get(ENV + "SPARK_MEMORY") or "2g")
    return SparkK8sSettings(
        namespace=str(spark.get("namespace") or env.get(ENV + "SPARK_NAMESPACE") or namespace),
        image=str(image),
        exchange_claim=claim,
        exchange_mount=mount,
        exchange_dir=Path(env.get(ENV + "SPARK_EXCHANGE_LOCAL_DIR") or mount),
        service_account=str(
            spark.get("serviceAccount") or env.get(ENV + "SPARK_SERVICE_ACCOUNT") or "kafka-placement-spark"
        ),
        executor_instances=int(
            spark.get("executorInstances") or env.get(ENV + "SPARK_EXECUTOR_INSTANCES") or 2
        ),
        driver_memory=memory,
        executor_memory=memory,
        timeout_s=float(spark.get("timeoutSeconds") or 1800),
        poll_s=float(env.get(ENV + "SPARK_POLL_SECONDS") or 5),
        extra_arguments=("--reactive-cordon",) if reactive_cordon else (),
    )


APPROVAL_FIELDS = ("approval", "approvedPlan", "paused")  # gate execution, do not change the plan


def intents_yaml(documents: Sequence[Mapping[str, Any]]) -> str:
    """The intent resources as the job's intents file (a multi-document YAML stream of kind/spec)."""
    return yaml.safe_dump_all(
        [
            {
                "kind": d["kind"],
                "metadata": {"name": d["metadata"]["name"]},
                "spec": {k: v for k, v in d["spec"].items() if k not in APPROVAL_FIELDS},
            }
            for d in documents
        ],
        sort_keys=True,
    )


def placement_key(snapshot: ClusterSnapshot, intents_text: str, settings: SparkK8sSettings) -> str:
    """What a plan depends on, apart from sizes: intents, engine settings, brokers, dirs and placement."""
    h = hashlib.sha256(intents_text.encode())
    h.update(repr(settings).encode())
    for b in snapshot.brokers:
        h.update(repr((b.id, b.rack, [(d.path, d.online, d.cordoned) for d in b.log_dirs])).encode())
    for p in snapshot.partitions:
        h.update(f"{p.topic}\0{p.partition}\0{p.replicas}\0{p.log_dirs}\n".encode())
    return h.hexdigest()


# (namespace, cluster) -> (placement key, when, the plan or the error of the last spark-k8s run)
_last: dict[tuple[str, str], tuple[str, float, PlanResult | PlacementError]] = {}


def plan_cluster(
    api_client: Any,
    cluster: Mapping[str, Any],
    snapshot: ClusterSnapshot,
    intents: Intents,
    documents: Sequence[Mapping[str, Any]],
) -> PlanResult:
    """Plan with the cluster's engine; spark-k8s blocks until its application ends (or times out)."""
    spec, meta = cluster.get("spec") or {}, cluster["metadata"]
    engine = engine_of(spec)
    if engine != "spark-k8s":
        return plan_with(snapshot, intents, EngineSettings(engine=engine))
    settings = spark_k8s_settings(spec, meta["namespace"], intents.reactive_cordon)
    text = intents_yaml(documents)
    key, where = placement_key(snapshot, text, settings), (meta["namespace"], meta["name"])
    replan = float(((spec.get("planner") or {}).get("spark") or {}).get("replanSeconds") or 600)
    last = _last.get(where)
    if last is not None and last[0] == key and time.monotonic() - last[1] < replan:
        if isinstance(last[2], PlacementError):
            raise last[2]
        return last[2]
    try:
        plan, summary = run_on_kubernetes(api_client, snapshot, text, settings)
    except PlacementError as e:
        _last[where] = (key, time.monotonic(), e)
        raise
    result = PlanResult(plan, summary)
    _last[where] = (key, time.monotonic(), result)
    return result
