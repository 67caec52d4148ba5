"""The vocabulary of ``decide`` (decide.py): what it reads — the ``View`` a reconcile has gathered so far,
the execution record's summary (``RecordView``), a plan (``Planned``), a failure reaching Kafka
(``Failure``) — and what it returns: a ``Decision`` of status patches, Events and the actions the shell
performs next (``Tick``, ``PlanIntents``, ``StartExecution``...). Plain frozen values, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..execution.record_doc import TERMINAL, Phase, Rule
from ..model.intent_status import IntentStatus, LastExecution, PlanStatus, ProgressStatus
from ..model.intents import Intent
from ..model.plan import Plan
from ..model.windows import Gate
from ..planning.plan_quality import Tally
from ..planning.plan_summary import PlanSummary, StatusSummary
from . import status as st
from .phases import IntentEvent, move

Body = Mapping[str, Any]


# ---- what decide reads ---------------------------------------------------------------------------------


# ``Failure.reason`` when no broker answered at all: transient (the intents wait, decide.py ``_failed``)
CLUSTER_UNREACHABLE = "ClusterUnreachable"


@dataclass(frozen=True)
class Failure:
    """This reconcile could not reach Kafka, was refused by it, or found a corrupt record."""

    reason: str  # InvalidConnection, KafkaNotAuthorized, KafkaUnsupported, ClusterUnreachable, ...
    message: str
    connected: bool  # whether Kafka answered (Ready condition)
    cluster_phase: str = st.UNREACHABLE


@dataclass(frozen=True)
class RecordView:
    """The execution record as decide needs it (after a tick when ``View.ticked``)."""

    phase: Phase
    plan_id: str
    participants: frozenset[str]
    cancel_requested: bool = False
    plan_status: PlanStatus | None = None
    last_error: str | None = None
    progress: ProgressStatus | None = None  # the progress status after the tick
    last_execution: LastExecution | None = None  # once it ended (TERMINAL): its estimate and its time
    reapplied: int = 0  # owned configs re-applied so far (record.defence)
    reapplied_before: int = 0  # ... before this reconcile's tick
    reapplied_what: tuple[str, ...] = ()  # what was changed (record.defence.last)
    held: tuple[str, ...] = ()  # dirs whose moves the disk watch holds (record.disk), "broker <id> <path>"
    held_before: tuple[str, ...] = ()  # ... before this reconcile's tick
    held_what: str = ""  # which dir holds which moves, one line

    @property
    def active(self) -> bool:
        return self.phase not in TERMINAL


@dataclass(frozen=True)
class Planned:
    """The outcome of planning the valid intents together (exactly one of plan / error / running)."""

    plan: Plan | None = None
    # the planner's summary, or the part of it a plan kept across a leader change carries (no plan: empty)
    summary: PlanSummary | StatusSummary = field(default_factory=StatusSummary)
    error_reason: str | None = None  # Infeasible, InvalidInput, or the error's own reason
    error: str | None = None
    running: str | None = None  # a planner job still running (spark-k8s): what it is doing
    waiting: str | None = None  # no plan made: what it waits for (a broker that does not answer us)
    # a re-plan dropping retired heals (``PlanIntents.dropping``) that is only the running execution's moves
    # in flight, nothing new: it needs no approval (those moves were approved with the running plan)
    kept_only: bool = False
    # the intents (uids) invalid on their own against the snapshot (a dir of a broker that died since):
    # each fails alone with its message, the plan is of the others (reconcile/planner.py, alone_invalid)
    rejected: Mapping[str, str] = field(default_factory=dict)
    # the planner's tally of ``plan`` (in-process engines): the plan review reuses it (not compared)
    tally: Tally | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class View:
    """What the shell has read in this reconcile."""

    resources: Sequence[Body]  # the cluster's intent resources, not being deleted
    leaving: Sequence[Body] = ()  # those being deleted whose declared cordons were not removed yet
    record: RecordView | None = None
    failure: Failure | None = None
    ticked: bool = False
    planned: Planned | None = None
    below_min_isr: Sequence[str] | None = None  # partitions the plan leaves below min ISR (None: unread)
    cordons_synced: bool = False  # SyncCordons ran in this reconcile
    unmet: Sequence[str] | None = None  # partitions breaking the executed intents' rules (None: unread)
    cluster_conditions: Sequence[Mapping[str, Any]] | None = None  # the KafkaCluster's, as read
    # uids of heals being retired (their broker is back for good: retiring.py) that the execution in flight
    # runs: it is re-planned without them (moves in flight kept, the rest of theirs dropped)
    retiring: frozenset[str] = frozenset()
    # the maintenance windows' word for the execution in flight (``window_gate``; None: not decided)
    window: Gate | None = None
    now: float | None = None  # epoch seconds (None: not known; no supersede waits for a retry time)


# ---- what decide returns -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StatusPatch:
    """An intent's status to write: made only by ``moved`` (its phase from the phase table)."""

    body: Body
    event: IntentEvent
    phase: str
    reason: str
    message: str
    plan: PlanStatus | None = None
    progress: ProgressStatus | None = None
    # ``status.retry`` of an intent that failed to supersede the execution in flight (``retry_of``); None:
    # kept while Planning, removed otherwise
    retry: Mapping[str, Any] | None = None
    last_execution: LastExecution | None = None  # an execution just ended: its estimate against its time


def moved(
    body: Body,
    event: IntentEvent,
    message: str,
    reason: str | None = None,
    *,
    plan: PlanStatus | None = None,
    progress: ProgressStatus | None = None,
    last_execution: LastExecution | None = None,
) -> StatusPatch | None:
    """The status ``event`` gives ``body`` (reconcile/phases.py, ``move`` from its current phase); None
    when the event leaves the phase as it is."""
    to = move(IntentStatus.of(body).phase, event, reason)
    if to is None:
        return None
    return StatusPatch(
        body, event, to.phase, to.reason, message, plan=plan, progress=progress, last_execution=last_execution
    )


@dataclass(frozen=True)
class Note:
    """An IntentEvent to post on ``body``."""

    body: Body
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class RequestCancel:
    """Set ``cancelRequested`` in the record (a participating resource was deleted): KIP-455 revert."""


@dataclass(frozen=True)
class Tick:
    """One executor tick (after the sweep) on the record in flight."""


@dataclass(frozen=True)
class CheckIntents:
    """Read Kafka afresh and name the partitions that still break these intents' hard rules."""

    resources: tuple[Body, ...]


@dataclass(frozen=True)
class SyncCordons:
    """Set ``cordoned.log.dirs`` (KIP-1066) for the declared LogDirCordons and for every broker a
    BrokerDecommission retires (``*``), once per reconcile, whether an execution is in flight or not; and
    remove what the ``released`` intents (of resources being deleted) declared and ``intents`` do not.
    Once done, the resources ``leaving`` (uids) have their cordons removed: their delete handlers let
    them go (handlers/intent_common.py)."""

    intents: tuple[Intent, ...]
    released: tuple[Intent, ...] = ()
    leaving: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlanIntents:
    """Plan these intent resources together with the cluster's engine; with ``keeping_in_flight`` (an
    execution is being superseded) from a snapshot in which its moves in flight are done, and keeping
    them: the plan leaves those partitions at the running move's target."""

    resources: tuple[Body, ...]
    keeping_in_flight: bool = False
    dropping: bool = False  # heals are retired out of it: the plan keeps the moves in flight even when empty


@dataclass(frozen=True)
class CheckMinIsr:
    """Read the plan topics' effective ``min.insync.replicas`` and name the partitions left below it."""

    plan: Plan


@dataclass(frozen=True)
class StartExecution:
    """Create the record for exactly this plan (the previous execution's blobs go) and start executing."""

    plan: Plan
    plan_status: PlanStatus
    participants: tuple[str, ...]
    rules: tuple[Rule, ...]
    intents: tuple[Intent, ...]  # whose declared cordons the execution keeps (ownedCordons)
    replaces_record: bool
    then: tuple[StatusPatch, ...] = ()  # written once the record is saved (Executing)
    supersedes: str | None = None  # the running execution this replaces, adopting its moves in flight
    events: tuple[Note, ...] = ()  # posted once the record is saved


Action = RequestCancel | Tick | SyncCordons | PlanIntents | CheckMinIsr | StartExecution | CheckIntents


@dataclass(frozen=True)
class Decision:
    statuses: tuple[StatusPatch, ...] = ()
    events: tuple[Note, ...] = ()
    actions: tuple[Action, ...] = ()
    cluster: Mapping[str, Any] | None = None  # phase and conditions of the KafkaCluster status

    @property
    def done(self) -> bool:
        return not self.actions


def cluster_conditions(
    current: Sequence[Mapping[str, Any]] | None, updates: Mapping[str, tuple[bool, str, str]]
) -> list[dict[str, Any]]:
    """The KafkaCluster's conditions: ``lastTransitionTime`` moves only when a condition flips."""
    return st.merge_conditions(current, updates, st.DECIDED_CLUSTER_CONDITIONS)


def connected_cluster(current: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    return {
        "phase": st.CONNECTED,
        "conditions": cluster_conditions(
            current,
            {
                st.READY: (True, st.CONNECTED, "Kafka answered"),
                st.DEGRADED: (False, st.CONNECTED, ""),
                st.RECONCILING: (False, st.CONNECTED, ""),
                st.STALLED: (False, st.CONNECTED, ""),
            },
        ),
    }
