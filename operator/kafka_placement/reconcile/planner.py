"""How the operator plans one KafkaCluster: the engine its spec asks for, and spark-k8s settings.

``spec.planner.engine`` (else the Helm default, env ``KAFKA_PLACEMENT_PLANNER_ENGINE``) picks the engine.
``local``, ``spark`` and ``auto`` plan in the operator process, on its planner pool (reconcile/plan_runs.py:
its own thread, one plan at a time, never on kopf's handler threads): a reconcile waits a few seconds
for the plan, so a small one is made within it; a longer one keeps the intents Planning (the message says
what plans since when) and a later reconcile takes its plan or its error. The run is keyed by
planning/plan_keeping.py's ``inputs_key`` (intents, ``spec.planner``, brokers, dirs, placement), so a
plan is taken only for the inputs it was made from, and only while the measured rates have not drifted
beyond plan_keeping's bound since. ``spark-k8s`` runs the planning job on
Kubernetes (``spark.k8s``): a driver pod whose Spark starts executor pods (launcher ``Pod``, the
default) or a SparkApplication of the Kubeflow spark-operator (launcher ``SparkApplication``).
Launcher, image, service account, namespace, executors, memory and timeout come from
``spec.planner.spark``, falling back to the Helm values the Deployment passes as
``KAFKA_PLACEMENT_SPARK_*``. Snapshot and plan travel through the Deployment's exchange volume: the
PersistentVolumeClaim ``KAFKA_PLACEMENT_SPARK_EXCHANGE_CLAIM``, mounted at
``KAFKA_PLACEMENT_SPARK_EXCHANGE_DIR`` in the operator pod and at the same path in the Spark pods
(``KAFKA_PLACEMENT_SPARK_EXCHANGE_LOCAL_DIR`` overrides where this process finds it, for an operator
that runs outside a pod). Missing settings are bad input naming what to set.

No reconcile waits for Spark: a reconcile creates the driver pod or SparkApplication (its run id, the
placement it plans and when, in the ``SparkRun`` record: ConfigMap ``kafka-placement-<cluster>-planning``),
the following ones read its state (the intents stay Planning, the message says what the run is doing)
until it completed, failed (a driver's bad-input or infeasible exit is reported as such) or ran out of
``timeoutSeconds``. A Spark job is not launched on every
reconcile: its result (plan, or the error that stopped it) is reused while the intents and the
placement (brokers, dirs, each partition's replicas and dirs) are unchanged and the measured rates have
not drifted beyond planning/plan_keeping.py's bound, for at most ``spec.planner.spark.replanSeconds``;
so a converged cluster is verified by one job after each change, and a failed job is not relaunched in a
loop. A run planning an older placement is deleted when the placement changes; a superseded run's pod or
application and its exchange sub-directory are removed (a failed driver pod stays for ``kubectl logs``
until then). The record survives a restart or a new
leader, which picks the run up.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..execution.store import Store
from ..kube.gateway import KubeGateway
from ..model.capacity import CapacitySpec
from ..model.cluster_spec import ClusterSpec, PlannerSpec, SparkSpec
from ..model.crd_parts import LAUNCHERS
from ..model.effort import DEFAULT_EFFORT, Effort
from ..model.errors import BadInputError, PlacementError
from ..model.intents import Intents, validate_against
from ..model.snapshot import ClusterSnapshot
from ..planning.plan_keeping import (
    DEFAULT_TOLERANCE,
    TrafficLoads,
    drifted,
    inputs_key,
    loads_of,
    tolerance_of,
)
from ..spark import k8s
from ..spark.engines import EngineSettings, plan_with
from ..spark.k8s import SparkK8sSettings
from ..spark.memory import limit_of
from . import metrics
from .decision import Planned
from .plan_runs import Finished, Pending, PlanRuns

ENV = "KAFKA_PLACEMENT_"


def engine_of(planner: PlannerSpec | None, env: Mapping[str, str] = os.environ) -> str:
    """``spec.planner.engine`` (the CRD's default when ``planner`` is there); without ``spec.planner``
    the Helm default, else the local engine (``EngineSettings``' default)."""
    if planner is not None:
        return planner.engine
    return env.get(ENV + "PLANNER_ENGINE", EngineSettings().engine)


def spark_k8s_settings(
    spark: SparkSpec,
    namespace: str,
    reactive_cordon: bool,
    env: Mapping[str, str] = os.environ,
    effort: Effort = DEFAULT_EFFORT,
) -> SparkK8sSettings:
    """The spark-k8s settings for a KafkaCluster (``spec.planner.spark``, then the Helm values, then
    ``SparkK8sSettings``' defaults; ``spec.planner.effort`` passed to the job)."""
    image = spark.image or env.get(ENV + "SPARK_IMAGE")
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
    given: dict[str, Any] = {}  # what the spec or the Helm values set; the rest: SparkK8sSettings' defaults
    launcher = spark.launcher or env.get(ENV + "SPARK_LAUNCHER")
    if launcher:
        if launcher not in LAUNCHERS:  # the Helm value (the spec's is checked by the model)
            raise BadInputError(
                f"unknown Spark launcher '{launcher[:40]}': expected one of {', '.join(LAUNCHERS)}",
                "spec.planner.spark.launcher",
            )
        given["launcher"] = launcher
    memory = spark.memory or env.get(ENV + "SPARK_MEMORY")
    if memory:
        given["driver_memory"] = given["executor_memory"] = str(memory)
    account = spark.service_account or env.get(ENV + "SPARK_SERVICE_ACCOUNT")
    if account:
        given["service_account"] = str(account)
    instances = spark.executor_instances or env.get(ENV + "SPARK_EXECUTOR_INSTANCES")
    if instances:
        given["executor_instances"] = int(instances)
    poll = env.get(ENV + "SPARK_POLL_SECONDS")
    if poll:
        given["poll_s"] = float(poll)
    return SparkK8sSettings(
        conf=_spark_conf(spark.spark_conf or (), env),
        namespace=str(spark.namespace or env.get(ENV + "SPARK_NAMESPACE") or namespace),
        image=str(image),
        exchange_claim=claim,
        exchange_mount=mount,
        exchange_dir=Path(env.get(ENV + "SPARK_EXCHANGE_LOCAL_DIR") or mount),
        timeout_s=float(spark.timeout_seconds),
        extra_arguments=(
            *(("--reactive-cordon",) if reactive_cordon else ()),
            *(("--effort", effort) if effort != DEFAULT_EFFORT else ()),
        ),
        **given,
    )


def _spark_conf(spec_conf: Sequence[tuple[str, str]], env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The Helm values' ``planner.spark.conf`` (env ``KAFKA_PLACEMENT_SPARK_CONF``, a JSON object), then
    ``spec.planner.spark.sparkConf`` over it."""
    conf: dict[str, str] = {}
    raw = env.get(ENV + "SPARK_CONF") or "{}"
    try:
        helm = json.loads(raw)
    except json.JSONDecodeError:
        helm = None
    if not isinstance(helm, dict):
        raise BadInputError(
            f"{ENV}SPARK_CONF is not a JSON object of Spark settings: {raw[:100]}", "planner.spark.conf"
        )
    for source in (list(helm.items()), spec_conf):
        for key, value in source:
            if not isinstance(value, str | int | float | bool) or not str(key).startswith("spark."):
                raise BadInputError(
                    f"'{str(key)[:100]}' is not a Spark setting with a scalar value (spark.KEY: VALUE)",
                    "spec.planner.spark.sparkConf",
                )
            conf[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return tuple(conf.items())


# gate execution, do not change the plan
APPROVAL_FIELDS = ("approval", "approvedPlan", "paused", "ignoreWindows")


def intents_yaml(documents: Sequence[Mapping[str, Any]], capacity: CapacitySpec | None = None) -> str:
    """The intent resources as the job's intents file (a multi-document YAML stream of kind/spec), and
    the cluster's capacities (a ``capacity`` document) when it declares them."""
    docs: list[dict[str, Any]] = [
        {
            "kind": d["kind"],
            "metadata": {"name": d["metadata"]["name"]},
            "spec": {k: v for k, v in d["spec"].items() if k not in APPROVAL_FIELDS},
        }
        for d in documents
    ]
    if capacity is not None:
        docs.append({"capacity": capacity.to_json()})
    return yaml.safe_dump_all(docs, sort_keys=True)


def placement_key(snapshot: ClusterSnapshot, intents_text: str, settings: SparkK8sSettings) -> str:
    """What a plan depends on, apart from sizes and rates: intents, engine settings, brokers, dirs and
    placement (rates: ``SparkRun.rates``)."""
    return inputs_key(snapshot, intents_text, repr(settings))


class SparkRun(BaseModel):
    """The cluster's spark-k8s planning run, persisted in ConfigMap ``kafka-placement-<cluster>-planning``
    (typed, versioned; a compare-and-swap store like the execution record, so two leaders cannot both
    submit). Times are wall-clock seconds: they are compared across processes and restarts."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    run_id: str = Field(max_length=40)
    key: str = Field(max_length=64)  # placement_key of what it plans
    submitted_at: float
    state: Literal["Submitted", "Completed", "Failed"] = "Submitted"
    finished_at: float | None = None
    error: str | None = Field(None, max_length=2000)
    reason: str | None = Field(None, max_length=40)  # the error's condition reason (Failed, Infeasible, ...)
    # per broker the loads of the snapshot it planned (plan_keeping.TrafficLoads.to_json; absent in a record
    # of an older release): its result is not reused once the rates drifted beyond plan_keeping's bound
    rates: dict[str, list[float]] | None = None

    @staticmethod
    def load(store: Store) -> SparkRun | None:
        data = store.load()
        if data is None:
            return None
        try:
            return SparkRun.model_validate_json(data)
        except ValidationError as e:
            raise BadInputError(f"not a planning run record: {str(e)[:300]}", store.where) from None

    def save(self, store: Store) -> None:
        store.save(self.model_dump_json().encode())


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """What one reconcile plans from, parsed once and handed down (the kept plan's key, the planner, the
    plan review): the intent documents' parsed ``intents`` with the KafkaCluster's ``spec.capacity``
    (the network capacity goal's limits), and ``text``, the spark-k8s job's intents file
    (``intents_yaml``: approval fields left out, so approving changes neither the key nor the job)."""

    intents: Intents
    text: str

    @staticmethod
    def of(
        documents: Sequence[Mapping[str, Any]], reactive_cordon: bool, capacity: CapacitySpec | None = None
    ) -> PlanInputs:
        """Parse ``documents``; BadInputError names the resource and field an invalid one breaks."""
        intents = Intents.from_documents(list(documents)).with_reactive_cordon(reactive_cordon)
        text = intents_yaml(documents, capacity)
        return PlanInputs(intents.with_capacity(capacity), text)

    def alone_invalid(
        self, documents: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot, reactive_cordon: bool
    ) -> dict[int, str]:
        """``alone_invalid`` of ``documents`` (these inputs' own), read only when the intents together
        do not hold against the snapshot: the common case parses each document once."""
        try:
            validate_against(self.intents, snapshot)
        except BadInputError:
            return alone_invalid(documents, snapshot, reactive_cordon)
        return {}


def alone_invalid(
    documents: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot, reactive_cordon: bool
) -> dict[int, str]:
    """The documents (by index) that are invalid on their own against ``snapshot``: a broker or a dir the
    cluster does not have (a LogDirCordon of a dir whose broker died since: it has no dirs now). Each
    fails alone, with its message; the others are planned without it (never every intent of the
    cluster for one that names what is gone). What only a pair breaks (overlapping policies) is left
    to the planner, which names both."""
    out: dict[int, str] = {}
    for i, doc in enumerate(documents):
        try:
            validate_against(
                Intents.from_documents([dict(doc)]).with_reactive_cordon(reactive_cordon), snapshot
            )
        except BadInputError as e:
            out[i] = e.message
    return out


def plan_cluster(
    kube: KubeGateway,
    runs: Store,
    namespace: str,
    spec: ClusterSpec,
    snapshot: ClusterSnapshot,
    inputs: PlanInputs,
    reactive_cordon: bool,
    now: Callable[[], float] = time.time,
    *,
    plans: PlanRuns[Made] | None = None,
    cluster: str = "",
    key: str | None = None,
) -> Planned:
    """Plan the parsed ``inputs`` of cluster ``cluster`` in ``namespace`` with the engine its ``spec`` names.

    ``local``, ``spark`` and ``auto`` plan in this process on the planner pool ``plans`` (reconcile/
    plan_runs.py; None: a pool of its own that waits for the plan), off the caller's thread: the call waits a
    few seconds for the plan, else returns ``Planned(running=...)`` saying what plans since when, and a later
    call with the same inputs returns the plan (or its error). ``key``: ``inputs_key`` of the snapshot and
    intents with ``repr(spec.planner)``, when the caller has it. ``spark-k8s`` takes one step per call,
    never waiting: submit a run when none plans this placement, else read its application's state; a
    completed run's plan (or a failed run's error) is reused while the placement and intents are
    unchanged, for at most ``replanSeconds``. The run is kept in ``runs`` (see ``SparkRun``)."""
    engine = engine_of(spec.planner)
    try:
        if engine != "spark-k8s":
            key = key or inputs_key(snapshot, inputs.text, repr(spec.planner))
            pool = plans if plans is not None else PlanRuns[Made](wait_s=math.inf)
            key = f"{key}:{int(reactive_cordon)}"  # (the cordons' enforcement changes the intents)
            return _in_process(pool, (namespace, cluster), key, spec, snapshot, inputs)
        started = time.monotonic()
        try:
            settings = spark_k8s_settings(spec.spark, namespace, reactive_cordon, effort=spec.effort)
            replan = float(spec.spark.replan_seconds)
            tolerance = tolerance_of(inputs.intents)
            return _spark_k8s_step(kube, runs, snapshot, inputs.text, settings, replan, now(), tolerance)
        finally:
            metrics.PLANNING_SECONDS.observe(time.monotonic() - started)
    except PlacementError as e:
        return _failed(e)


def _failed(e: PlacementError) -> Planned:
    """A planning error as the intents' status shows it: InfeasibleError's reason (``DiskHeadroom`` when no
    plan keeps every dir within its headroom, ``InsufficientMemory``), ``InvalidInput`` for bad input, else
    the error's own reason."""
    if isinstance(e, BadInputError):
        return Planned(error_reason="InvalidInput", error=e.message)
    return Planned(error_reason=e.reason, error=e.message)


@dataclass(frozen=True, slots=True)
class Made:
    """An in-process run's result: the plan or its error, and the brokers' traffic loads of the snapshot it
    planned (None: it had no rates), against which a result taken later is checked for drift."""

    planned: Planned
    loads: TrafficLoads | None


def _rated(snapshot: ClusterSnapshot) -> bool:
    return any(p.bytes_in_per_sec is not None for p in snapshot.partitions)


def _in_process(
    plans: PlanRuns[Made],
    where: tuple[str, str],
    key: str,
    spec: ClusterSpec,
    snapshot: ClusterSnapshot,
    inputs: PlanInputs,
) -> Planned:
    """One step of the cluster's in-process plan on the pool: the plan (or its error) when its run is done,
    else what runs since when. A result of an earlier reconcile's snapshot is used only while the measured
    rates have not drifted beyond plan_keeping's bound since (sizes do not count, as for a kept plan)."""
    engine = engine_of(spec.planner)
    intents = inputs.intents.with_effort(spec.effort)
    settings = EngineSettings(engine=engine, memory=limit_of(None))  # the pod's, or --max-memory

    def work() -> Made:  # on the pool's thread: reads only its arguments, writes nothing
        loads = loads_of(snapshot) if _rated(snapshot) else None
        try:
            result = plan_with(snapshot, intents, settings)
        except PlacementError as e:
            return Made(_failed(e), loads)
        return Made(Planned(plan=result.plan, summary=result.summary, tally=result.tally), loads)

    got = plans.step(where, key, work)
    if isinstance(got, Finished) and got.earlier and not _usable(got.value, snapshot, inputs.intents):
        plans.drop(where, key)
        got = plans.step(where, key, work)
    if isinstance(got, Pending):
        return Planned(running=_pending_message(got, engine))
    if got.value is None:  # the run raised what no planner error is: logged by the pool with its traceback
        why = f"the {engine} planner failed unexpectedly: {got.error} (the operator's log has its traceback)"
        return Planned(error_reason="PlanningFailed", error=why)
    return got.value.planned


def _usable(made: Made | None, snapshot: ClusterSnapshot, intents: Intents) -> bool:
    """Whether a result planned from an earlier snapshot of the same placement still holds for ``snapshot``:
    rates that drifted beyond plan_keeping's bound, or appeared since, plan again."""
    if made is None:
        return True
    if made.loads is None:
        return not _rated(snapshot)
    return drifted(made.loads, loads_of(snapshot), tolerance_of(intents), ("in", "out")) is None


def _pending_message(pending: Pending, engine: str) -> str:
    """What the intents' status says while the plan runs (no running clock: an unchanged message writes no
    status and posts no Event)."""
    since = _utc(pending.since)
    if pending.state == "queued":
        return (
            f"queued for the operator's planner since {since}: it plans one cluster at a time "
            "(memory) and another cluster's plan is running"
        )
    if pending.state == "stale":
        return (
            f"waiting since {since} for this cluster's plan of earlier inputs (started "
            f"{_utc(pending.stale_since or pending.since)}) to end: the placement or the intents changed "
            "while it ran, a running plan cannot be stopped, its result is dropped and the current inputs "
            "are planned next"
        )
    return f"planning with the {engine} engine in the operator since {since}"


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _spark_k8s_step(
    kube: KubeGateway,
    runs: Store,
    snapshot: ClusterSnapshot,
    text: str,
    settings: SparkK8sSettings,
    replan: float,
    now: float,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Planned:
    key = placement_key(snapshot, text, settings)
    run = SparkRun.load(runs)
    loads = loads_of(snapshot)
    if run is not None and run.key == key:
        if (
            run.state != "Submitted"
            and now - (run.finished_at or 0.0) < replan
            and not _drifted(run, loads, tolerance)
        ):
            if run.state == "Failed":
                return Planned(error_reason=run.reason or "Failed", error=run.error)
            try:
                what = k8s.describe(settings, run.run_id)
                plan, summary = k8s.read_outputs(settings.exchange_dir / run.run_id, what)
                return Planned(plan=plan, summary=k8s.with_run(summary, settings, run.run_id))
            except PlacementError:
                pass  # the exchange dir was cleaned: plan again
        elif run.state == "Submitted":
            return _poll(kube, runs, run, settings, now)
    if run is not None:  # superseded: stop it if it still runs (a failed driver pod was kept for its log)
        if run.state != "Completed":
            k8s.delete_application(kube, settings, run.run_id)
        k8s.remove_run(settings.exchange_dir / run.run_id)
    fresh = SparkRun(run_id=k8s.new_run_id(), key=key, submitted_at=now, rates=loads.to_json())
    fresh.save(runs)  # first: of two writers only one gets here (compare-and-swap), so one submission
    try:
        k8s.submit(kube, snapshot, text, settings, fresh.run_id)
    except PlacementError as e:
        _finish(runs, fresh, now, e)
        raise
    return Planned(running=f"{k8s.describe(settings, fresh.run_id)} submitted; planning")


def _drifted(run: SparkRun, now: TrafficLoads, tolerance: float) -> bool:
    """Whether the rates drifted beyond plan_keeping's bound since the run's snapshot (sizes do not
    count here: ``replanSeconds`` bounds them)."""
    if run.rates is None:
        return False
    try:
        planned = TrafficLoads.from_json(run.rates)
    except (ValueError, IndexError, TypeError):
        return True
    return drifted(planned, now, tolerance, ("in", "out")) is not None


def _poll(kube: KubeGateway, runs: Store, run: SparkRun, settings: SparkK8sSettings, now: float) -> Planned:
    what = k8s.describe(settings, run.run_id)
    state = k8s.application_state(kube, settings, run.run_id)
    result = k8s.outcome(state, what)
    if result == "completed":
        try:
            plan, summary = k8s.collect(kube, settings, run.run_id)
        except PlacementError as e:
            _finish(runs, run, now, e, settings)
            raise
        _finish(runs, run, now, None, settings)
        return Planned(plan=plan, summary=summary)
    if isinstance(result, PlacementError):
        _finish(runs, run, now, result, settings)
        raise result
    if now - run.submitted_at >= settings.timeout_s:
        k8s.delete_application(kube, settings, run.run_id)
        error = k8s.timed_out(what, settings, state.state if state else "")
        _finish(runs, run, now, error, settings)
        raise error
    shown = (state.state if state else "") or (
        "created, not yet scheduled"
        if settings.launcher == "Pod"
        else "submitted, not yet started by the spark-operator"
    )
    since = datetime.fromtimestamp(run.submitted_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # no running clock in the message: an unchanged message writes no status and posts no Event
    return Planned(running=f"{what}: {shown} (submitted {since})")


def _finish(
    runs: Store,
    run: SparkRun,
    now: float,
    error: PlacementError | None,
    settings: SparkK8sSettings | None = None,
) -> None:
    """Record the run's end (its inputs go, its outputs stay for reuse)."""
    if settings is not None and not settings.keep_inputs:
        k8s.remove_inputs(settings.exchange_dir / run.run_id)
    run.state, run.finished_at = ("Failed" if error else "Completed"), now
    run.error = error.message[:2000] if error else None
    run.reason = error.reason if error else None
    run.save(runs)
