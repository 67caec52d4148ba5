"""Kafka's own time per move measured on the cluster's executions (reconcile/kafka_work.py,
execution/copy_model.py ``kafka_time_per_move``): from a Completed execution of many moves whose pace that
work set, the figure with which its estimate would have read the time it ran; nothing from small or
byte-bound executions; read back from the KafkaCluster's status for the next estimate."""

from __future__ import annotations

import pytest

from kafka_placement.execution import copy_model
from kafka_placement.model.cluster_status import ClusterStatus, KafkaWorkStatus
from kafka_placement.model.intent_status import LastExecution, PlanEstimate, PlanStatus
from kafka_placement.reconcile import kafka_work


def ended(estimated: int, actual: int, phase: str = "Completed") -> LastExecution:
    return LastExecution(
        plan_id="p1",
        phase=phase,
        started_at="2026-12-07T21:00:00Z",
        finished_at="2026-12-07T21:01:20Z",
        estimated_seconds=estimated,
        actual_seconds=actual,
        waited_seconds=0,
        error_ratio=f"{actual / estimated:.2f}",
    )


def planned(moves: int, bound: int = 0, per_move_us: int | None = 8000) -> PlanStatus:
    estimate = PlanEstimate(seconds=51, bound_seconds=bound, microseconds_per_move=per_move_us)
    return PlanStatus(id="p1", moves=moves, estimate=estimate)


def test_an_execution_of_many_small_moves_measures_kafkas_time_per_move() -> None:
    # the rig's 6,000 moves (docs/benchmarks.md, "Many small moves"): estimated 51 s at 8 ms, ran 80 s
    found = kafka_work.measured(ended(51, 80), planned(6000))
    assert found == {
        "microsecondsPerMove": 12833,  # 8 ms + 29 s over 6,000 moves
        "moves": 6000,
        "planId": "p1",
        "measuredAt": "2026-12-07T21:01:20Z",
    }
    status = {"phase": "Connected", "kafkaWork": found}
    ClusterStatus.parse(status, "status")  # (the CRD's schema: tests/unit/model/test_crds.py)
    assert kafka_work.per_move(status) == pytest.approx(0.012833)
    faster = kafka_work.measured(ended(19, 11), planned(2000))  # 2,000 moves: ran faster than estimated
    assert faster is not None and faster["microsecondsPerMove"] == 4000


def test_nothing_is_measured_where_kafkas_work_did_not_set_the_pace() -> None:
    assert kafka_work.measured(ended(51, 80), planned(150)) is None  # too few moves to tell
    assert kafka_work.measured(ended(51, 80), planned(6000, bound=60)) is None  # the bytes' bound: 60 s
    assert kafka_work.measured(ended(51, 80, "Cancelled"), planned(6000)) is None
    assert kafka_work.measured(ended(51, 80), planned(6000, per_move_us=None)) is None  # an older estimate
    assert kafka_work.measured(None, planned(6000)) is None


def test_a_measure_is_clamped_and_a_status_without_one_gives_the_assumed_figure() -> None:
    low, high = copy_model.PER_MOVE_RANGE
    assert copy_model.kafka_time_per_move(500, 10, 1000, 0.008, 0) == low  # (a wild error, a floor)
    assert copy_model.kafka_time_per_move(10, 5000, 1000, 0.008, 0) == high
    assert kafka_work.per_move({}) is None and kafka_work.per_move(None) is None
    assert kafka_work.per_move({"kafkaWork": {"microsecondsPerMove": "fast"}}) is None  # unreadable: none
    assert KafkaWorkStatus.of({"kafkaWork": {"microsecondsPerMove": 0}}) is None
