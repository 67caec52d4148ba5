"""The phases of the intent resources and of the new-partition lane, as tables, and the one function that
moves each.

Every status written to an intent names an ``IntentEvent``: what the reconcile found (a plan computed, a plan
awaiting approval, the execution's progress, a cluster it cannot reach...). ``TABLE`` gives each event
the phase it leads to, its default reason word (a ``Failed`` status's reason is the failure's own), and
the phases it leaves as they are; ``move`` is the only way an intent's phase changes (decide.py for the
reconcile, handlers/intent_common.py for a new spec), and ``docs/architecture.md`` shows the table
(checked equal in tests/unit/reconcile/test_phases.py).

The phases are level-triggered: each reconcile recomputes them from the spec, the execution record and a
fresh read of Kafka, not from the phase written before. So an event comes from any phase (a Completed
decommission whose broker gets a partition back is planned again; an operator killed between starting an
execution and writing ``Executing`` finds its intents in the phase before) except where the table says
it leaves the phase as it is (``keeps``): a Completed intent stays Completed while the cluster is
unreachable (nothing it did is undone meanwhile), and only a Pending (or new) intent says ``Planning``
(the others keep what they had until the plan says otherwise). Kafka not answering at all
(``ClusterUnreachable``: a whole-cluster restart, a network cut) is transient, not a failure: the
intents wait ``Pending``, except those whose phase describes work that goes on in Kafka or a settled
state, which a fresh read must confirm or change (Executing: Kafka keeps copying the moves in flight;
AwaitingApproval, Paused: the user's turn; Completed, Cancelled; Failed: a failure that needs the user
stays shown until a read of Kafka says otherwise); a kept phase gets no new status, the KafkaCluster's
says the cluster is unreachable. The other cluster failures (refused, unsupported, a bad connection, a
corrupt record) need the user: they fail the intents. The unit tests hold the tables to what the
writers may do: every phase reachable from a new resource, every event used, each guard kept.

The new-partition lane (``status.newPartitions`` of a KafkaCluster, reconcile/new_partitions.py) has its
own, smaller table of the same shape (``LANE``, ``move_lane``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from ..model import crd_parts

PENDING, PLANNING, AWAITING_APPROVAL, EXECUTING, COMPLETED, FAILED, PAUSED, CANCELLED = crd_parts.PHASES


class IntentEvent(StrEnum):
    """What a reconcile (or the create/update handler) found about an intent."""

    ACCEPTED = "Accepted"  # a new spec (a new generation), valid
    INVALID_SPEC = "InvalidSpec"  # the spec does not parse
    CLUSTER_FAILURE = "ClusterFailure"  # Kafka refused, unsupported, a bad connection, the record corrupt
    CLUSTER_UNREACHABLE = "ClusterUnreachable"  # Kafka did not answer at all (transient: it waits)
    PLANNING = "Planning"  # a plan is being computed (in the reconcile)
    PLAN_RUNNING = "PlanRunning"  # a planner job (Spark) runs for it
    SUPERSEDING = "Superseding"  # planned again, more urgent than the execution in flight, to supersede it
    BROKERS_UNREACHABLE = "BrokersUnreachable"  # the plan waits for a live broker to answer
    PLANNING_FAILED = "PlanningFailed"  # no plan: infeasible, too large for the memory, the job failed
    REJECTED = "InvalidInput"  # invalid on its own against the cluster (an unknown broker, say)
    SUPERSEDED = "Superseded"  # a dir's heal whose broker's own heal moves everything off it
    ADVISED = "Advised"  # an Advise-mode policy: what would move, nothing moves
    CONVERGED = "Converged"  # the plan is empty: the placement holds every rule
    PARTITIONS_WAIT = "PartitionsWait"  # done but for partitions no plan can move now (waiting.py)
    COVERED_BY_RUNNING_PLAN = "CoveredByRunningPlan"  # the moves in flight already do what it asks
    AWAITING_APPROVAL = "AwaitingApproval"  # approval Manual, spec.approvedPlan is not the plan's id
    PAUSED_BY_SPEC = "PausedBySpec"  # spec.paused is true
    BELOW_MIN_ISR = "BelowMinInsyncReplicas"  # the plan would leave partitions below min.insync.replicas
    EXECUTION_STARTED = "Executing"  # the execution of its plan starts (or supersedes the one in flight)
    EXECUTION_PROGRESS = "ExecutionProgress"  # the executor's phase while in flight (its own word as reason)
    WAITING_FOR_WINDOW = "WaitingForWindow"  # in flight, outside every maintenance window
    RULES_UNMET = "RulesUnmet"  # executed, but a fresh read shows partitions still breaking its rules
    EXECUTION_COMPLETED = "ExecutionCompleted"  # executed, and a fresh read shows its rules hold
    EXECUTION_PAUSED = "ExecutionPaused"  # the executor's safety gate holds the moves
    EXECUTION_CANCELLED = "ExecutionCancelled"  # the execution was cancelled (KIP-455 revert)
    EXECUTION_FAILED = "ExecutionFailed"  # the executor failed


@dataclass(frozen=True)
class PhaseRule:
    """Where an event leads: ``to``, with ``reason`` unless the writer gives the event's own (a failure's,
    the executor's phase, a waiting partition's), and the phases it leaves as they are (``keeps``)."""

    to: str
    reason: str | None = None  # None: the writer must give one
    keeps: frozenset[str | None] = frozenset()


TABLE: Mapping[IntentEvent, PhaseRule] = {
    IntentEvent.ACCEPTED: PhaseRule(PENDING, "Accepted"),
    IntentEvent.INVALID_SPEC: PhaseRule(FAILED, "InvalidSpec"),
    IntentEvent.CLUSTER_FAILURE: PhaseRule(FAILED, keeps=frozenset({COMPLETED})),
    IntentEvent.CLUSTER_UNREACHABLE: PhaseRule(
        PENDING,
        "ClusterUnreachable",
        keeps=frozenset({AWAITING_APPROVAL, EXECUTING, COMPLETED, FAILED, PAUSED, CANCELLED}),
    ),
    IntentEvent.PLANNING: PhaseRule(
        PLANNING,
        "Planning",
        keeps=frozenset({PLANNING, AWAITING_APPROVAL, EXECUTING, COMPLETED, FAILED, PAUSED, CANCELLED}),
    ),
    IntentEvent.PLAN_RUNNING: PhaseRule(PLANNING, "Planning"),
    IntentEvent.SUPERSEDING: PhaseRule(PLANNING, "Planning"),
    IntentEvent.BROKERS_UNREACHABLE: PhaseRule(PENDING, "BrokersUnreachable", keeps=frozenset({COMPLETED})),
    IntentEvent.PLANNING_FAILED: PhaseRule(FAILED),
    IntentEvent.REJECTED: PhaseRule(FAILED, "InvalidInput"),
    IntentEvent.SUPERSEDED: PhaseRule(CANCELLED, "Superseded"),
    IntentEvent.ADVISED: PhaseRule(COMPLETED, "Advised"),
    IntentEvent.CONVERGED: PhaseRule(COMPLETED, "Converged"),
    IntentEvent.PARTITIONS_WAIT: PhaseRule(PENDING),
    IntentEvent.COVERED_BY_RUNNING_PLAN: PhaseRule(PENDING, "CoveredByRunningPlan"),
    IntentEvent.AWAITING_APPROVAL: PhaseRule(AWAITING_APPROVAL, "AwaitingApproval"),
    IntentEvent.PAUSED_BY_SPEC: PhaseRule(PAUSED, "PausedBySpec"),
    IntentEvent.BELOW_MIN_ISR: PhaseRule(FAILED, "BelowMinInsyncReplicas"),
    IntentEvent.EXECUTION_STARTED: PhaseRule(EXECUTING, "Executing"),
    IntentEvent.EXECUTION_PROGRESS: PhaseRule(EXECUTING),
    IntentEvent.WAITING_FOR_WINDOW: PhaseRule(EXECUTING, "WaitingForWindow"),
    IntentEvent.RULES_UNMET: PhaseRule(EXECUTING, "Executing"),
    IntentEvent.EXECUTION_COMPLETED: PhaseRule(COMPLETED, "Completed"),
    IntentEvent.EXECUTION_PAUSED: PhaseRule(PAUSED, "Paused"),
    IntentEvent.EXECUTION_CANCELLED: PhaseRule(CANCELLED, "Cancelled"),
    IntentEvent.EXECUTION_FAILED: PhaseRule(FAILED, "Failed"),
}


@dataclass(frozen=True)
class PhaseMove:
    """A status to write: the phase ``event`` leads to from the current one, and its reason."""

    phase: str
    reason: str


# how the reconciler logs a phase change (kind/name, from, to, event, reason); tests/e2e check each
LOG_TRANSITION = "%s: phase %s -> %s (event %s, reason %s)"


def move(current: str | None, event: IntentEvent, reason: str | None = None) -> PhaseMove | None:
    """The phase after ``event`` in phase ``current`` (None: a new resource) and the reason to write
    (``reason`` when given, else the event's own); None when the event leaves ``current`` as it is."""
    rule = TABLE[event]
    if current in rule.keeps:
        return None
    word = reason or rule.reason
    if not word:
        raise ValueError(f"event {event} needs a reason of its own")
    return PhaseMove(rule.to, word)


# ---- the new-partition lane ----------------------------------------------------------------------------

WATCHING, LANE_AWAITING, LANE_PAUSED, LANE_EXECUTING, LANE_COMPLETED, LANE_FAILED, LANE_BLOCKED = (
    crd_parts.NEW_PARTITION_PHASES
)


class LaneEvent(StrEnum):
    """What the new-partition lane's look (or its execution) found."""

    PLACED = "Placed"  # the new partitions are placed per the intents (nothing to do)
    WAITING_FOR_FULL_PLAN = "WaitingForFullPlan"  # a lane plan not started: the full re-plan takes it over
    BLOCKED = "Blocked"  # the lane cannot plan (an invalid intent, a failed read...)
    AWAITING_APPROVAL = "AwaitingApproval"  # approval Manual
    PAUSED_BY_SPEC = "PausedBySpec"  # spec.paused on an intent it serves
    STARTED = "Started"  # its execution starts, or is in flight
    COMPLETED = "Completed"  # its execution completed
    FAILED = "Failed"  # its execution failed or was cancelled


LANE: Mapping[LaneEvent, str] = {
    LaneEvent.PLACED: WATCHING,
    LaneEvent.WAITING_FOR_FULL_PLAN: WATCHING,
    LaneEvent.BLOCKED: LANE_BLOCKED,
    LaneEvent.AWAITING_APPROVAL: LANE_AWAITING,
    LaneEvent.PAUSED_BY_SPEC: LANE_PAUSED,
    LaneEvent.STARTED: LANE_EXECUTING,
    LaneEvent.COMPLETED: LANE_COMPLETED,
    LaneEvent.FAILED: LANE_FAILED,
}


def move_lane(event: LaneEvent) -> str:
    """The lane's phase after ``event`` (from any phase: the lane is level-triggered too)."""
    return LANE[event]


def markdown() -> str:
    """The intents' table as docs/architecture.md shows it."""
    rows = ["| event | phase after | reason | leaves as they are |", "|---|---|---|---|"]
    for event, rule in TABLE.items():
        kept = ", ".join(sorted(str(p) for p in rule.keeps)) or "-"
        rows.append(f"| `{event}` | {rule.to} | {rule.reason or '(its own)'} | {kept} |")
    return "\n".join(rows)
