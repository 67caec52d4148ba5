"""Prometheus metrics of the operator (served by ``kafka-placement operator --metrics-port``).

A KafkaCluster's series carry ``cluster="<namespace>/<name>"`` (``cluster_label``): two clusters of the
same name in two namespaces are two series. A deleted cluster's series go with it (``forget_cluster``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable

from prometheus_client import Counter, Gauge, Histogram

from ..execution.progress import Progress
from ..execution.record import Execution
from ..execution.record_doc import TERMINAL, Phase
from ..kafka.throttles import FOLLOWER_RATE, LEADER_RATE
from ..model.snapshot import PartitionState

_PLAN = ["cluster", "plan"]
MOVES_IN_FLIGHT = Gauge("kafka_placement_moves_in_flight", "Partition moves submitted and not done", _PLAN)
BYTES_REMAINING = Gauge("kafka_placement_bytes_remaining", "Bytes the running plan still has to copy", _PLAN)
BYTES_MOVED = Gauge("kafka_placement_bytes_moved", "Bytes the running plan has copied so far", _PLAN)
BYTES_TOTAL = Gauge("kafka_placement_plan_bytes", "Bytes the running plan copies in all", _PLAN)
PARTITIONS_DONE = Gauge("kafka_placement_partitions_done", "Partitions of the running plan moved", _PLAN)
PARTITIONS_TOTAL = Gauge("kafka_placement_plan_partitions", "Partitions the running plan moves", _PLAN)
ETA_SECONDS = Gauge(
    "kafka_placement_eta_seconds",
    "Seconds the running plan still needs at the rate observed so far (NaN until a rate is known)",
    _PLAN,
)
ETA_ERROR = Gauge(
    "kafka_placement_eta_error_ratio",
    "The cluster's last completed execution: the seconds it ran (the time it waited for a maintenance "
    "window or was paused left out) over its estimated seconds (the plan's status.plan.estimate before "
    "approval; 1: exact, above 1: it took longer); no series before one",
    ["cluster"],
)
THROTTLE_RATE = Gauge(
    "kafka_placement_throttle_bytes_per_second", "Replication throttle set by the executor", _PLAN
)
_PROGRESS = (MOVES_IN_FLIGHT, BYTES_REMAINING, BYTES_MOVED, BYTES_TOTAL, PARTITIONS_DONE, PARTITIONS_TOTAL)
EXECUTION_PHASE = Gauge(
    "kafka_placement_execution_phase",
    "1 for the phase of the cluster's current (or last) execution, 0 for the other phases; no series "
    "before the cluster's first execution",
    ["cluster", "phase"],
)
PLANNING_SECONDS = Histogram("kafka_placement_planning_seconds", "Time to compute a plan")
OWNED_CONFIG_REAPPLIED = Counter(
    "kafka_placement_owned_config_reapplied_total",
    "Re-applications of throttles or cordons the executor owns, after another party changed them",
)
RECONCILES = Counter(
    "kafka_placement_reconciles_total",
    "Reconciliations of a KafkaCluster by kind: full (Kafka read and planned), execution (one tick), quiet "
    "(idle and unchanged: Kafka not read until the resync period ends)",
    ["cluster", "kind"],
)
RECONCILE_ERRORS = Counter("kafka_placement_reconcile_errors_total", "Failed reconciliations", ["cluster"])
HEALS = Counter(
    "kafka_placement_heals_total",
    "Heals created by self-healing, by kind: BrokerDecommission (a dead broker), LogDirCordon (an "
    "offline dir)",
    ["kind"],
)
HEALS_RETIRED = Counter(
    "kafka_placement_heals_retired_total",
    "Heals retired by self-healing (deleted once their broker was back for settleSeconds: "
    "brokerFailure.onReturn Retire), by kind",
    ["kind"],
)
HEAL_SECONDS = Histogram(
    "kafka_placement_heal_duration_seconds",
    "Time from a failure first seen to its heal Completed (the delay afterSeconds included), by kind",
    ["kind"],
    buckets=(60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, float("inf")),
)
DEAD_BROKERS = Gauge(
    "kafka_placement_dead_brokers",
    "Brokers the cluster names (replicas, registration) that are not alive, as the KafkaCluster's status "
    "tracks them (status.deadBrokers)",
    ["cluster"],
)
UNREACHABLE_BROKERS = Gauge(
    "kafka_placement_unreachable_brokers",
    "Brokers alive in the cluster that do not answer the operator (status.unreachableBrokers): not dead, "
    "never healed; no plan is made while there is one",
    ["cluster"],
)
OFFLINE_LOG_DIRS = Gauge(
    "kafka_placement_offline_log_dirs",
    "Log dirs of live brokers that Kafka reports offline (failed disks; status.offlineLogDirs)",
    ["cluster"],
)
SELF_HEALING = Gauge(
    "kafka_placement_self_healing",
    "1 for the reason of the KafkaCluster's SelfHealing condition (NoFailure, FailureSeen, Healing, "
    "CorrelatedFailure, DataLost, NoInSyncReplica, InvalidSpec), 0 for the others; absent while "
    "spec.selfHealing is not declared",
    ["cluster", "reason"],
)
SELF_HEALING_REASONS = (
    "NoFailure",
    "FailureSeen",
    "Healing",
    "CorrelatedFailure",
    "DataLost",
    "NoInSyncReplica",
    "InvalidSpec",
)
UNDER_REPLICATED = Gauge(
    "kafka_placement_under_replicated_partitions",
    "Partitions with a replica out of sync, as of the cluster's last full read (every resync period and "
    "every planning)",
    ["cluster"],
)
UNDER_REPLICATED_NOT_OURS = Gauge(
    "kafka_placement_under_replicated_partitions_not_ours",
    "Under-replicated partitions (as of the cluster's last full read) that the cluster's execution is not "
    "moving: a replica behind for another reason (a slow or dead broker, another tool's reassignment)",
    ["cluster"],
)

DIR_USAGE = Gauge(
    "kafka_placement_dir_usage_ratio",
    "Share of its volume used, per log dir a move in flight writes into (the executor's disk watch, as of "
    "its last tick): no new move into a dir above kafka_placement_dir_usage_limit_ratio, the moves into "
    "one about to pass the hard stop are held",
    ["cluster", "broker", "dir"],
)
DIR_USAGE_LIMIT = Gauge(
    "kafka_placement_dir_usage_limit_ratio",
    "The disk headroom the running execution holds to (KafkaCluster spec.capacity.maxDiskShare)",
    ["cluster"],
)
DIR_HELD = Gauge(
    "kafka_placement_dir_held_moves",
    "Moves in flight held (throttled down) because the dir they write into is about to fill, per dir",
    ["cluster", "broker", "dir"],
)

BROKER_THROTTLE = Gauge(
    "kafka_placement_broker_throttle_bytes_per_second",
    "The replication throttle the running execution has set on a broker (side: leader or follower), as of "
    "its last tick; with the adaptive throttle it follows the client traffic",
    ["cluster", "broker", "side"],
)

RATE_SIDES = {LEADER_RATE: "leader", FOLLOWER_RATE: "follower"}

_lock = threading.Lock()
_plans: dict[str, str] = {}  # cluster -> the plan its progress series are labelled with
_dirs: dict[str, set[tuple[str, str]]] = {}  # cluster -> the (broker, dir) series it has
_rates: dict[str, set[tuple[str, str]]] = {}  # cluster -> the (broker, side) throttle series it has

LANE_PLANS = Counter(
    "kafka_placement_new_partition_plans_total",
    "Executions the new-partition lane started (new partitions that broke a rule, placed per the intents)",
    ["cluster"],
)


def cluster_label(namespace: str, name: str) -> str:
    """The ``cluster`` label of a KafkaCluster's series."""
    return f"{namespace}/{name}"


def _by_cluster() -> tuple[tuple[Gauge | Counter, tuple[str, ...]], ...]:
    """Every metric labelled by cluster, with its label names in order."""
    plan = ("cluster", "plan")
    return (
        *((g, plan) for g in (*_PROGRESS, ETA_SECONDS, THROTTLE_RATE)),
        (EXECUTION_PHASE, ("cluster", "phase")),
        (RECONCILES, ("cluster", "kind")),
        (RECONCILE_ERRORS, ("cluster",)),
        (DEAD_BROKERS, ("cluster",)),
        (ETA_ERROR, ("cluster",)),
        (SELF_HEALING, ("cluster", "reason")),
        (UNREACHABLE_BROKERS, ("cluster",)),
        (OFFLINE_LOG_DIRS, ("cluster",)),
        (UNDER_REPLICATED, ("cluster",)),
        (UNDER_REPLICATED_NOT_OURS, ("cluster",)),
        (LANE_PLANS, ("cluster",)),
        (DIR_USAGE, ("cluster", "broker", "dir")),
        (DIR_HELD, ("cluster", "broker", "dir")),
        (DIR_USAGE_LIMIT, ("cluster",)),
        (BROKER_THROTTLE, ("cluster", "broker", "side")),
    )


_forgotten: set[tuple[str, str]] = set()  # (cluster, uid) of the deleted clusters


def forget_cluster(cluster: str, uid: str) -> None:
    """Remove every series of a deleted cluster (``uid``: the KafkaCluster object's, so that one created
    again under its name is not forgotten): a dashboard or alert must not show its last phase or gauges
    for ever (a scrape reads what the process holds)."""
    with _lock:
        _plans.pop(cluster, None)
        _dirs.pop(cluster, None)
        _rates.pop(cluster, None)
        _forgotten.add((cluster, uid))
    for metric, names in _by_cluster():
        keys = {
            tuple(s.labels[n] for n in names)
            for family in metric.collect()
            for s in family.samples
            if s.labels.get("cluster") == cluster and all(n in s.labels for n in names)
        }
        for key in keys:
            with contextlib.suppress(KeyError):  # removed meanwhile
                metric.remove(*key)


def forgotten(cluster: str, uid: str) -> bool:
    """The cluster object was deleted and its series removed (``forget_cluster``)."""
    with _lock:
        return (cluster, uid) in _forgotten


def observe_progress(cluster: str, plan: str, throttle: int | None, progress: Progress) -> None:
    """The progress of the cluster's running plan (from the record, after a tick). The series of the
    cluster's previous plan are removed: one plan's series per cluster at a time."""
    with _lock:
        old = _plans.get(cluster)
        _plans[cluster] = plan
    if old is not None and old != plan:
        for g in (*_PROGRESS, ETA_SECONDS, THROTTLE_RATE):
            with contextlib.suppress(KeyError):  # a series never set
                g.remove(cluster, old)
    values = (
        progress.partitions_in_flight,
        progress.bytes_remaining,
        progress.bytes_moved,
        progress.bytes_total,
        progress.partitions_done,
        progress.partitions_total,
    )
    for g, v in zip(_PROGRESS, values, strict=True):
        g.labels(cluster=cluster, plan=plan).set(float(v))
    eta = float("nan") if progress.eta_s is None else progress.eta_s
    ETA_SECONDS.labels(cluster=cluster, plan=plan).set(eta)
    THROTTLE_RATE.labels(cluster=cluster, plan=plan).set(float(throttle or 0))


def observe_dirs(cluster: str, record: Execution) -> None:
    """The usage of the dirs the execution's moves in flight write into and the moves held per dir, as
    of its last tick (record.disk); the series of dirs no longer written to are removed."""
    disk = record.doc.disk
    held = {(str(h.broker), h.path): h.moves for h in disk.held}
    now = {(str(d.broker), d.path): (d.used / d.total) for d in disk.seen}
    if record.phase in TERMINAL:
        now, held = {}, {}
    with _lock:
        old = _dirs.get(cluster, set())
        _dirs[cluster] = set(now) | set(held)
    for key in old - set(now) - set(held):
        for g in (DIR_USAGE, DIR_HELD):
            with contextlib.suppress(KeyError):  # a series never set
                g.remove(cluster, *key)
    for (broker, path), share in now.items():
        DIR_USAGE.labels(cluster=cluster, broker=broker, dir=path).set(round(share, 4))
    for broker, path in set(now) | set(held):
        DIR_HELD.labels(cluster=cluster, broker=broker, dir=path).set(float(held.get((broker, path), 0)))
    DIR_USAGE_LIMIT.labels(cluster=cluster).set(record.doc.limits.max_disk_share)


def observe_throttles(cluster: str, record: Execution) -> None:
    """Each broker's replication rates as the execution has set them (record.throttles, the brokers of the
    execution only); the series of brokers it no longer throttles, and all once it ends, are removed."""
    now: dict[tuple[str, str], int] = {}
    if record.phase not in TERMINAL:
        for t in record.doc.throttles.brokers:
            side = RATE_SIDES.get(t.config)
            if side is not None and t.value is not None and t.value.isdigit():
                now[(str(t.broker), side)] = int(t.value)
    with _lock:
        old = _rates.get(cluster, set())
        _rates[cluster] = set(now)
    for key in old - set(now):
        with contextlib.suppress(KeyError):  # a series never set
            BROKER_THROTTLE.remove(cluster, *key)
    for (broker, side), value in now.items():
        BROKER_THROTTLE.labels(cluster=cluster, broker=broker, side=side).set(float(value))


def observe_execution(cluster: str, record: Execution | None) -> None:
    """The phase of the cluster's execution record, as a reconcile loaded it (nothing before the first)."""
    if record is None:
        return
    current = record.phase
    for phase in Phase:
        EXECUTION_PHASE.labels(cluster=cluster, phase=phase.value).set(1.0 if phase == current else 0.0)


def observe_self_healing(cluster: str, condition: tuple[bool, str, str] | None) -> None:
    """The SelfHealing condition's reason as a gauge per reason (the alert rules read it): a reason not
    in ``SELF_HEALING_REASONS`` is shown as well, the others 0; nothing without the condition."""
    if condition is None:
        return
    current = condition[1]
    for reason in (*SELF_HEALING_REASONS, *(() if current in SELF_HEALING_REASONS else (current,))):
        SELF_HEALING.labels(cluster=cluster, reason=reason).set(1.0 if reason == current else 0.0)


def observe_under_replicated(
    cluster: str, partitions: Iterable[PartitionState], record: Execution | None
) -> None:
    """Under-replicated partitions of a full read, and those of them the running execution does not move
    (its partitions in flight: their new replicas catch up, out of sync on purpose)."""
    ours: set[tuple[str, int]] = set()
    if record is not None and record.phase not in TERMINAL:
        targets = record.plan.targets
        ours = {targets[i].key for i in record.doc.in_flight if 0 <= i < len(targets)}
    under = not_ours = 0
    for p in partitions:
        if p.under_replicated:
            under += 1
            not_ours += p.key not in ours
    UNDER_REPLICATED.labels(cluster=cluster).set(float(under))
    UNDER_REPLICATED_NOT_OURS.labels(cluster=cluster).set(float(not_ours))


LEADER = Gauge("kafka_placement_leader", "1 while this process holds the leader Lease and may write, else 0")
FENCED_WRITES = Counter(
    "kafka_placement_fenced_writes_total",
    "Writes (record saves, Kafka changes, statuses) refused because this process was not the leader",
)


def watch_leadership(is_leader: Callable[[], bool]) -> None:
    """The leader gauge is computed at scrape time, from the same clock the fence uses."""
    LEADER.set_function(lambda: 1.0 if is_leader() else 0.0)
