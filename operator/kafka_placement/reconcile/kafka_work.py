"""Kafka's own time per partition move, measured on the cluster's executions: ``status.kafkaWork`` of the
KafkaCluster, written when an execution of many moves whose pace that work set completes, and given to
the copy model for the estimates of later plans (execution/copy_model.py ``kafka_time_per_move``). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..execution import copy_model
from ..model.cluster_status import KafkaWorkStatus
from ..model.intent_status import LastExecution, PlanStatus
from ..model.spec_fields import to_json


def measured(ended: LastExecution | None, plan: PlanStatus | None) -> dict[str, Any] | None:
    """``status.kafkaWork`` of a Completed execution (``ended``, of the plan ``plan`` as approved, with its
    estimate); None where it measures nothing (``copy_model.kafka_time_per_move``), or where its estimate
    is one of a release that did not count Kafka's work."""
    if ended is None or ended.phase != "Completed" or plan is None or plan.estimate is None:
        return None
    est, moves = plan.estimate, plan.moves
    if (
        ended.estimated_seconds is None
        or ended.actual_seconds is None
        or est.microseconds_per_move is None
        or est.bound_seconds is None
        or moves is None
    ):
        return None
    used = est.microseconds_per_move / 1e6
    found = copy_model.kafka_time_per_move(
        ended.estimated_seconds, ended.actual_seconds, moves, used, est.bound_seconds
    )
    if found is None:
        return None
    work = KafkaWorkStatus(
        microseconds_per_move=round(found * 1e6),
        moves=moves,
        plan_id=ended.plan_id,
        measured_at=ended.finished_at,
    )
    return to_json(work)


def per_move(status: Mapping[str, Any] | None) -> float | None:
    """The seconds per move the cluster's ``status.kafkaWork`` measured (None: none yet)."""
    work = KafkaWorkStatus.of(status)
    return None if work is None or work.microseconds_per_move is None else work.microseconds_per_move / 1e6
