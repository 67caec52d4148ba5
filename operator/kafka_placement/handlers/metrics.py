"""Prometheus metrics of the operator (served by ``kafka-placement operator --metrics-port``)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram

MOVES_IN_FLIGHT = Gauge("kafka_placement_moves_in_flight", "Partition moves submitted and not done", ["plan"])
BYTES_REMAINING = Gauge(
    "kafka_placement_bytes_remaining", "Bytes the running plan still has to copy", ["plan"]
)
THROTTLE_RATE = Gauge(
    "kafka_placement_throttle_bytes_per_second", "Replication throttle set by the executor", ["plan"]
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
OFFLINE_LOG_DIRS = Gauge(
    "kafka_placement_offline_log_dirs",
    "Log dirs of live brokers that Kafka reports offline (failed disks; status.offlineLogDirs)",
    ["cluster"],
)
UNDER_REPLICATED = Gauge(
    "kafka_placement_under_replicated_partitions",
    "Partitions with a replica out of sync, as of the cluster's last full read (every resync period and "
    "every planning)",
    ["cluster"],
)

LANE_PLANS = Counter(
    "kafka_placement_new_partition_plans_total",
    "Executions the new-partition lane started (new partitions that broke a rule, placed per the intents)",
    ["cluster"],
)


def observe_progress(plan: str, throttle: int | None, in_flight: int, bytes_remaining: int) -> None:
    MOVES_IN_FLIGHT.labels(plan=plan).set(float(in_flight))
    BYTES_REMAINING.labels(plan=plan).set(float(bytes_remaining))
    THROTTLE_RATE.labels(plan=plan).set(float(throttle or 0))


LEADER = Gauge("kafka_placement_leader", "1 while this process holds the leader Lease and may write, else 0")
FENCED_WRITES = Counter(
    "kafka_placement_fenced_writes_total",
    "Writes (record saves, Kafka changes, statuses) refused because this process was not the leader",
)


def watch_leadership(is_leader: Callable[[], bool]) -> None:
    """The leader gauge is computed at scrape time, from the same clock the fence uses."""
    LEADER.set_function(lambda: 1.0 if is_leader() else 0.0)
