"""The operator's metrics helpers (reconcile/metrics.py) on a real execution record: one plan's progress
series per cluster, the phase gauge, and under-replicated partitions split by whether the execution moves
them."""

from __future__ import annotations

import math
from pathlib import Path

from prometheus_client import REGISTRY

from kafka_placement.execution.progress import compute_progress
from kafka_placement.execution.record import Execution, Original
from kafka_placement.execution.record_doc import Limits, Phase, Submission
from kafka_placement.execution.store import FileStore
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import PartitionState
from kafka_placement.reconcile import metrics

PLAN = Plan.of(
    [PartitionTarget("t", 0, (1, 2), ("any", "any")), PartitionTarget("t", 1, (2, 3), ("any", "any"))]
)
LIMITS = Limits(max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=None)


def _record(tmp_path: Path, name: str) -> Execution:
    ex = Execution.create(FileStore(tmp_path / f"{name}.json"), PLAN, limits=LIMITS, cluster_id="c1")
    ex.set_baseline([Original((1, 3), ("/d0", "/d0"), 100), Original((1, 3), ("/d0", "/d0"), 50)], {})
    return ex


def _value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_a_new_plan_replaces_the_clusters_progress_series(tmp_path: Path) -> None:
    first, second = _record(tmp_path, "a"), _record(tmp_path, "b")
    metrics.observe_progress("m1", "plan-a", 1000, compute_progress(first))
    assert _value("kafka_placement_plan_bytes", cluster="m1", plan="plan-a") == 100 + 50  # one copy each
    assert _value("kafka_placement_plan_partitions", cluster="m1", plan="plan-a") == 2
    assert _value("kafka_placement_throttle_bytes_per_second", cluster="m1", plan="plan-a") == 1000
    eta = _value("kafka_placement_eta_seconds", cluster="m1", plan="plan-a")
    assert eta is not None and math.isnan(eta)  # no rate observed yet
    metrics.observe_progress("m1", "plan-b", None, compute_progress(second))
    assert _value("kafka_placement_plan_bytes", cluster="m1", plan="plan-a") is None
    assert _value("kafka_placement_bytes_remaining", cluster="m1", plan="plan-a") is None
    assert _value("kafka_placement_throttle_bytes_per_second", cluster="m1", plan="plan-b") == 0
    assert _value("kafka_placement_bytes_moved", cluster="m1", plan="plan-b") == 0


def test_the_phase_gauge_is_one_for_the_records_phase_only(tmp_path: Path) -> None:
    metrics.observe_execution("m2", None)
    assert _value("kafka_placement_execution_phase", cluster="m2", phase="Pending") is None
    metrics.observe_execution("m2", _record(tmp_path, "p"))
    assert _value("kafka_placement_execution_phase", cluster="m2", phase="Pending") == 1
    assert (
        sum(_value("kafka_placement_execution_phase", cluster="m2", phase=p.value) or 0 for p in Phase) == 1
    )


def test_under_replicated_partitions_the_execution_moves_are_ours(tmp_path: Path) -> None:
    ex = _record(tmp_path, "u")
    ex.submit(0, Submission.CONFIRMED, now=1.0)  # t-0 in flight: its new replica is behind on purpose
    parts = [
        PartitionState("t", 0, (1, 2), ("/d0", "/d0"), leader=1, isr=(1,)),
        PartitionState("t", 1, (2, 3), ("/d0", "/d0"), leader=2, isr=(2,)),
        PartitionState("u", 0, (1, 2), ("/d0", "/d0"), leader=1, isr=(1, 2)),
    ]
    metrics.observe_under_replicated("m3", parts, ex)
    assert _value("kafka_placement_under_replicated_partitions", cluster="m3") == 2
    assert _value("kafka_placement_under_replicated_partitions_not_ours", cluster="m3") == 1
    metrics.observe_under_replicated("m3", parts, None)  # no execution: none is ours
    assert _value("kafka_placement_under_replicated_partitions_not_ours", cluster="m3") == 2


def test_a_deleted_clusters_series_are_removed_and_only_its_own(tmp_path: Path) -> None:
    """Two clusters named alike in two namespaces are two series; deleting one removes all of its series
    (progress, phase, counters, gauges) and none of the other's."""
    a, b = metrics.cluster_label("team-a", "prod"), metrics.cluster_label("team-b", "prod")
    assert a != b
    for label in (a, b):
        record = _record(tmp_path, label.replace("/", "-"))
        metrics.observe_progress(label, "plan-x", 1000, compute_progress(record))
        metrics.observe_execution(label, record)
        metrics.RECONCILES.labels(cluster=label, kind="full").inc()
        metrics.RECONCILE_ERRORS.labels(cluster=label).inc()
        metrics.DEAD_BROKERS.labels(cluster=label).set(1)
        metrics.LANE_PLANS.labels(cluster=label).inc()
        metrics.observe_under_replicated(label, [], record)

    metrics.forget_cluster(a, "uid-a")
    assert metrics.forgotten(a, "uid-a") and not metrics.forgotten(a, "uid-new")

    def series(label: str) -> list[str]:
        return sorted(
            s.name
            for family in REGISTRY.collect()
            for s in family.samples
            if s.labels.get("cluster") == label
        )

    assert series(a) == []
    kept = series(b)
    for name in (
        "kafka_placement_plan_bytes",
        "kafka_placement_execution_phase",
        "kafka_placement_reconciles_total",
        "kafka_placement_reconcile_errors_total",
        "kafka_placement_dead_brokers",
        "kafka_placement_new_partition_plans_total",
        "kafka_placement_under_replicated_partitions",
    ):
        assert name in kept, (name, kept)
    metrics.forget_cluster(b, "uid-b")
    assert series(b) == []


def test_the_dirs_moves_write_into_have_a_usage_series_until_no_move_writes_there(tmp_path: Path) -> None:
    from kafka_placement.execution.record_doc import DirSeen, HeldDir

    ex = _record(tmp_path, "disk")
    ex.doc.limits = Limits(
        max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=None, max_disk_share=0.8
    )
    ex.doc.phase = Phase.MOVING
    ex.doc.disk.seen = [
        DirSeen(broker=2, path="/d1", used=93, total=100),
        DirSeen(broker=3, path="/d0", used=10, total=100),
    ]
    ex.doc.disk.held = [
        HeldDir(broker=2, path="/d1", share=0.93, since=1.0, moves=2, partitions=["t-0", "t-1"])
    ]
    metrics.observe_dirs("m9", ex)
    assert _value("kafka_placement_dir_usage_ratio", cluster="m9", broker="2", dir="/d1") == 0.93
    assert _value("kafka_placement_dir_usage_ratio", cluster="m9", broker="3", dir="/d0") == 0.1
    assert _value("kafka_placement_dir_held_moves", cluster="m9", broker="2", dir="/d1") == 2
    assert _value("kafka_placement_dir_held_moves", cluster="m9", broker="3", dir="/d0") == 0
    assert _value("kafka_placement_dir_usage_limit_ratio", cluster="m9") == 0.8
    ex.doc.disk.seen, ex.doc.disk.held = [DirSeen(broker=3, path="/d0", used=20, total=100)], []
    metrics.observe_dirs("m9", ex)
    assert _value("kafka_placement_dir_usage_ratio", cluster="m9", broker="2", dir="/d1") is None
    assert _value("kafka_placement_dir_usage_ratio", cluster="m9", broker="3", dir="/d0") == 0.2
    ex.doc.phase = Phase.COMPLETED
    metrics.observe_dirs("m9", ex)
    assert _value("kafka_placement_dir_usage_ratio", cluster="m9", broker="3", dir="/d0") is None


def test_each_throttled_broker_has_a_rate_series_until_the_execution_ends(tmp_path: Path) -> None:
    from kafka_placement.kafka.throttles import DIR_RATE, FOLLOWER_RATE, LEADER_RATE
    from kafka_placement.model.throttle_state import BrokerThrottle, ThrottleState

    ex = _record(tmp_path, "rates")
    ex.doc.phase = Phase.MOVING
    ex.doc.throttles = ThrottleState(
        brokers=(
            BrokerThrottle(broker=1, config=LEADER_RATE, previous=None, value="300000"),
            BrokerThrottle(broker=1, config=FOLLOWER_RATE, previous=None, value="180000"),
            BrokerThrottle(broker=2, config=FOLLOWER_RATE, previous=None, value="300000"),
            BrokerThrottle(broker=2, config=DIR_RATE, previous=None, value="5"),  # not a replication side
            BrokerThrottle(broker=3, config=LEADER_RATE, previous="7", value=None),  # an older record
        )
    )
    metrics.observe_throttles("m9", ex)
    rate = "kafka_placement_broker_throttle_bytes_per_second"
    assert _value(rate, cluster="m9", broker="1", side="leader") == 300000
    assert _value(rate, cluster="m9", broker="1", side="follower") == 180000
    assert _value(rate, cluster="m9", broker="2", side="follower") == 300000
    assert _value(rate, cluster="m9", broker="2", side="leader") is None
    assert _value(rate, cluster="m9", broker="3", side="leader") is None
    ex.doc.throttles = ThrottleState(brokers=ex.doc.throttles.brokers[2:3])  # broker 1's cleared
    metrics.observe_throttles("m9", ex)
    assert _value(rate, cluster="m9", broker="1", side="follower") is None
    assert _value(rate, cluster="m9", broker="2", side="follower") == 300000
    ex.doc.phase = Phase.COMPLETED
    metrics.observe_throttles("m9", ex)
    assert _value(rate, cluster="m9", broker="2", side="follower") is None


def test_the_self_healing_gauge_is_one_for_the_conditions_reason_only() -> None:
    """What the alert rules on DataLost, NoInSyncReplica and CorrelatedFailure read (the chart)."""
    metrics.observe_self_healing("m9", None)  # not declared: no series
    assert _value("kafka_placement_self_healing", cluster="m9", reason="NoFailure") is None
    metrics.observe_self_healing("m9", (False, "NoInSyncReplica", "t-0 ..."))
    shown = {
        r: _value("kafka_placement_self_healing", cluster="m9", reason=r)
        for r in metrics.SELF_HEALING_REASONS
    }
    assert shown["NoInSyncReplica"] == 1 and sum(v or 0 for v in shown.values()) == 1
    metrics.observe_self_healing("m9", (True, "Healing", ""))
    assert _value("kafka_placement_self_healing", cluster="m9", reason="NoInSyncReplica") == 0
    assert _value("kafka_placement_self_healing", cluster="m9", reason="Healing") == 1
