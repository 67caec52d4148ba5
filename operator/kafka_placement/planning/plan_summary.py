"""The plan summary, typed: what ``plan --summary`` writes, the Spark job returns and the operator reads.

``Metrics`` is a plan's measure (``plan_quality.evaluate``: moves, bytes, the lower bound, balance and
hard-rule violations before and after, what waits, failure spread); ``PlanSummary`` is the planner's
summary (``optimizer.compute_plan``): the metrics, then the batches, the traffic, the disk headroom, each
goal's verdict, the advice, the engine that ran and, in the operator, where the plan's review is.
``StatusSummary`` is the part of it the intents' status reads (``reconcile/status.py``), which a kept
plan carries across a leader change (``reconcile/plan_review.py``). The parts are ``summary_parts.py``'s.

``to_json`` writes exactly the JSON the summary was before it was typed (the same keys in the same
order, tests/unit/planning/summaries/*.json pin it); ``from_json`` reads it back. Pure: no I/O; imported
on Spark workers (no pydantic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..model.errors import BadInputError
from ..model.intent_status import PlanEstimate, Review, WaitingStatus
from ..model.spec_fields import parse_object, to_json
from .summary_parts import (
    JSON,
    Advisories,
    Batches,
    DiskHeadroom,
    FollowerSpread,
    GoalEntry,
    LoadBalance,
    LowerBound,
    RuleViolations,
    TrafficSection,
)

_MOVEMENT = (
    ("partitions_changed", "partitionsChanged"),
    ("replica_moves", "replicaMoves"),
    ("intra_broker_moves", "intraBrokerMoves"),
    ("leader_changes", "leaderChanges"),
    ("network_bytes", "networkBytes"),
    ("intra_broker_bytes", "intraBrokerBytes"),
    ("bytes_to_move", "bytesToMove"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Metrics:
    """A plan's metrics on a snapshot. With intents: the lower bound (``lower_bound``, with why broker
    balance is out of reach and the ratio), hard-rule violations and what waits; without, only
    ``lower_bound_bytes``, null."""

    plan_id: str
    partitions_changed: int
    replica_moves: int
    intra_broker_moves: int
    leader_changes: int
    network_bytes: int
    intra_broker_bytes: int
    bytes_to_move: int
    lower_bound_bytes: int | None
    lower_bound: LowerBound | None = None  # None: measured without intents
    broker_balance_unreachable: str | None = None
    bytes_over_lower_bound: float | None = None
    balance_before: LoadBalance
    balance_after: LoadBalance
    violations_before: RuleViolations | None = None  # None: measured without intents
    violations_after: RuleViolations | None = None
    waiting: WaitingStatus | None = None  # partitions no plan can act on now (planning/waiting.py)
    failure_spread: FollowerSpread

    @property
    def hard_violations_after(self) -> int:
        """Hard-rule violations the plan leaves (0 without intents)."""
        return self.violations_after.total if self.violations_after is not None else 0

    def to_json(self) -> JSON:
        out: JSON = {"planId": self.plan_id}
        out.update((key, getattr(self, name)) for name, key in _MOVEMENT)
        if self.lower_bound is not None:
            out["brokerBalanceUnreachable"] = self.broker_balance_unreachable
        out["lowerBoundBytes"] = self.lower_bound_bytes
        if self.lower_bound is not None:
            out["lowerBound"] = self.lower_bound.to_json()
            out["bytesOverLowerBound"] = self.bytes_over_lower_bound
        out["balanceBefore"] = self.balance_before.to_json()
        out["balanceAfter"] = self.balance_after.to_json()
        if self.violations_before is not None and self.violations_after is not None:
            out["violationsBefore"] = self.violations_before.to_json()
            out["violationsAfter"] = self.violations_after.to_json()
            out["hardViolationsAfter"] = self.hard_violations_after
        if self.waiting is not None:
            out["waiting"] = to_json(self.waiting)
        out["failureSpread"] = self.failure_spread.to_json()
        return out

    @staticmethod
    def fields_of(d: Mapping[str, Any]) -> dict[str, Any]:
        """The metrics' fields read from a summary's JSON ``d``."""
        bound, before, after = d.get("lowerBound"), d.get("violationsBefore"), d.get("violationsAfter")
        waits = d.get("waiting")
        return {
            "plan_id": d["planId"],
            **{name: d[key] for name, key in _MOVEMENT},
            "lower_bound_bytes": d["lowerBoundBytes"],
            "lower_bound": None if bound is None else LowerBound.from_json(bound),
            "broker_balance_unreachable": d.get("brokerBalanceUnreachable"),
            "bytes_over_lower_bound": d.get("bytesOverLowerBound"),
            "balance_before": LoadBalance.from_json(d["balanceBefore"]),
            "balance_after": LoadBalance.from_json(d["balanceAfter"]),
            "violations_before": None if before is None else RuleViolations.from_json(before),
            "violations_after": None if after is None else RuleViolations.from_json(after),
            "waiting": None if waits is None else parse_object(WaitingStatus, waits, "summary.waiting"),
            "failure_spread": FollowerSpread.from_json(d["failureSpread"]),
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Metrics:
        return Metrics(**Metrics.fields_of(d))


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanSummary(Metrics):
    """The planner's summary: the plan's metrics, its batches, partitions under-replicated in it, the
    traffic (only with rates, capacities or a network goal), the disk headroom, each goal's verdict, the
    advice of Advise-mode policies, the engine that planned, and where the operator shows the plan."""

    batches: Batches
    under_replicated_in_plan: tuple[str, ...]
    traffic: TrafficSection | None = None
    disk_headroom: DiskHeadroom
    goals: tuple[GoalEntry, ...]
    advisories: Advisories | None = None
    engine: str | None = None
    # the Spark engine's report of its run (shards, partitions each rule sent, seconds per step): its own
    # record of how the run went, open-ended by design (spark/engines.py adds to it), kept as its JSON
    sharding: Mapping[str, Any] | None = None
    spark_application: str | None = None  # spark-k8s: the run's SparkApplication, namespace/name
    spark_driver_pod: str | None = None  # or its driver pod
    review: Review | None = None  # the operator's review ConfigMap of the plan (reconcile/plan_review.py)
    estimate: PlanEstimate | None = None  # the operator's copy-model estimate, made with the review

    @staticmethod
    def of(metrics: Metrics, **rest: Any) -> PlanSummary:
        """The summary of ``metrics`` with the rest of its fields (``rest``)."""
        return PlanSummary(**{f.name: getattr(metrics, f.name) for f in fields(Metrics)}, **rest)

    def to_json(self) -> JSON:
        out = Metrics.to_json(self)
        out["batches"] = self.batches.to_json()
        out["underReplicatedInPlan"] = list(self.under_replicated_in_plan)
        if self.traffic is not None:
            out["traffic"] = self.traffic.to_json()
        out["diskHeadroom"] = self.disk_headroom.to_json()
        out["goals"] = [g.to_json() for g in self.goals]
        if self.advisories is not None:
            out["advisories"] = self.advisories.to_json()
        for key, value in (
            ("engine", self.engine),
            ("sharding", None if self.sharding is None else dict(self.sharding)),
            ("sparkApplication", self.spark_application),
            ("sparkDriverPod", self.spark_driver_pod),
        ):
            if value is not None:
                out[key] = value
        if self.review is not None:
            out["review"] = to_json(self.review)
        if self.estimate is not None:
            out["estimate"] = to_json(self.estimate)
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> PlanSummary:
        """A summary read back (a file, a Spark job's output); BadInputError when ``d`` is not one."""
        try:
            traffic, adv, review = d.get("traffic"), d.get("advisories"), d.get("review")
            return PlanSummary(
                **Metrics.fields_of(d),
                batches=Batches.from_json(d["batches"]),
                under_replicated_in_plan=tuple(d["underReplicatedInPlan"]),
                traffic=None if traffic is None else TrafficSection.from_json(traffic),
                disk_headroom=DiskHeadroom.from_json(d["diskHeadroom"]),
                goals=tuple(GoalEntry.from_json(g) for g in d["goals"]),
                advisories=None if adv is None else Advisories.from_json(adv),
                engine=d.get("engine"),
                sharding=d.get("sharding"),
                spark_application=d.get("sparkApplication"),
                spark_driver_pod=d.get("sparkDriverPod"),
                review=None if review is None else parse_object(Review, review, "summary.review"),
                estimate=_estimate(d.get("estimate")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BadInputError(f"not a plan summary: {type(e).__name__} {e}"[:300], "summary") from None


_STATUS = (
    ("partitions_changed", "partitionsChanged"),
    ("replica_moves", "replicaMoves"),
    ("bytes_to_move", "bytesToMove"),
    ("lower_bound_bytes", "lowerBoundBytes"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusSummary:
    """The part of a plan's summary the intents' status reads (``status.plan`` and the advice): what a
    kept plan carries across a leader change (reconcile/plan_review.py's ``KeptPlanRecord``). Empty (all
    0) for no plan."""

    partitions_changed: int = 0
    replica_moves: int = 0
    bytes_to_move: int = 0
    lower_bound_bytes: int | None = 0
    advisories: Advisories | None = None
    waiting: WaitingStatus | None = None
    review: Review | None = None
    estimate: PlanEstimate | None = None

    @staticmethod
    def of(summary: PlanSummary | StatusSummary) -> StatusSummary:
        """The status's part of ``summary`` (without its review and estimate: the ConfigMap's own)."""
        return StatusSummary(
            **{name: getattr(summary, name) for name, _ in _STATUS},
            advisories=summary.advisories,
            waiting=summary.waiting,
        )

    def to_json(self) -> JSON:
        out: JSON = {key: getattr(self, name) for name, key in _STATUS}
        if self.advisories is not None:
            out["advisories"] = self.advisories.to_json()
        if self.waiting is not None:
            out["waiting"] = to_json(self.waiting)
        if self.review is not None:
            out["review"] = to_json(self.review)
        if self.estimate is not None:
            out["estimate"] = to_json(self.estimate)
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> StatusSummary:
        """The status's part read back (a kept plan's record); BadInputError when ``d`` is not one."""
        try:
            adv, waits, review = d.get("advisories"), d.get("waiting"), d.get("review")
            return StatusSummary(
                **{name: d[key] for name, key in _STATUS if key in d},
                advisories=None if adv is None else Advisories.from_json(adv),
                waiting=None if waits is None else parse_object(WaitingStatus, waits, "summary.waiting"),
                review=None if review is None else parse_object(Review, review, "summary.review"),
                estimate=_estimate(d.get("estimate")),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BadInputError(f"not a plan summary: {type(e).__name__} {e}"[:300], "summary") from None


def _estimate(raw: object) -> PlanEstimate | None:
    return None if raw is None else parse_object(PlanEstimate, raw, "summary.estimate")


__all__ = ["Metrics", "PlanSummary", "StatusSummary"]
