"""The new-partition lane: partitions created after the cluster was last read are placed per the intents
within seconds, on an idle cluster and beside a running execution alike (docs/architecture.md, "New
partitions").

Kafka places a new topic's replicas by its own flat-rack rule, on any broker, and (before KIP-1066) on any
dir. The full re-plan would repair that only at its next resync, and never while an execution runs. So
every reconcile of a cluster with enforced intents that does not read the whole cluster looks at every
topic's partition count (one Metadata request, ``KafkaGateway.partition_counts``: no log-dir, config or
offset read) and compares it with what it knew (the last full snapshot's or look's counts, kept in memory
per cluster by ``Watch``). The partitions found new are read alone (``KafkaGateway.snapshot(only=...)``:
their topics' metadata, the brokers' dirs filtered to them), the hard rules of the intents that apply to
them are checked (``replica_placement.unmet``: spread, replication factor, decommissioned brokers,
drained and, before KIP-1066, cordoned dirs), and those that break one are planned with the hard goal
alone (``lane_plan``: no balance goal moves anything that breaks no rule). Only partitions of at most
``LANE_MAX_BYTES`` are planned here: a new partition still holds little data, so the lane runs unthrottled;
a larger one waits for the full re-plan, which moves it throttled.

The plan runs as an execution of its own: the same executor and its guarantees (two-phase submissions,
completion checked against the live cluster, crash resume, cancel), with its own record (ConfigMap
``kafka-placement-<cluster>-lane``, reconcile/record_store.py). It never touches a partition of the running
execution's plan (those are dropped from it), and the running execution never waits for it (the lane's
moves are of partitions its plan does not name). A full re-plan waits for a lane execution in flight
(seconds: its moves are small), so it never plans a partition the lane is moving. Its approval is the
intents': it starts when every participant (the enforced intents whose rules the planned partitions
touch) has ``approval: Automatic`` or ``approvedPlan`` equal to the lane plan's id, and not while one is
paused. The KafkaCluster's ``status.newPartitions`` shows the lane's last plan and where it stands, and an
Event on each participant says when a lane plan waits for approval, starts, or cannot be made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..execution.record import Execution
from ..execution.record_doc import TERMINAL, Phase
from ..model.cluster_status import NewPartitionsStatus
from ..model.crd_parts import NEW_PARTITION_PHASES
from ..model.errors import BadInputError, InfeasibleError
from ..model.intent_kinds import OperatorFields
from ..model.intents import (
    BrokerDecommission,
    Intent,
    Intents,
    LogDirCordon,
    PlacementPolicy,
    parse_resource,
)
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from ..planning.goals.replica_placement import ReplicaPlacementGoal, unmet
from ..planning.optimizer import optimize
from ..planning.state import SMALL_REPLICA_BYTES
from .phases import LaneEvent, move_lane

Key = tuple[str, int]
Body = Mapping[str, Any]
LANE_MAX_BYTES = SMALL_REPLICA_BYTES  # larger new partitions are left to the full re-plan (throttled)
SHOWN = 5  # partitions named in one message

WATCHING, AWAITING_APPROVAL, PAUSED, EXECUTING, COMPLETED, FAILED, BLOCKED = NEW_PARTITION_PHASES
WAITING = (AWAITING_APPROVAL, PAUSED, BLOCKED)  # a lane plan not started: a full re-plan takes it over


def counts_of(snapshot: ClusterSnapshot) -> dict[str, int]:
    """Each topic's partition count as a full snapshot shows it."""
    out: dict[str, int] = {}
    for p in snapshot.partitions:
        out[p.topic] = max(out.get(p.topic, 0), p.partition + 1)
    return out


def new_keys(counts: Mapping[str, int], known: Mapping[str, int]) -> list[Key]:
    """The partitions ``counts`` has beyond ``known`` (a new topic's all, a grown topic's new ones)."""
    return [(t, i) for t, n in sorted(counts.items()) for i in range(known.get(t, 0), n)]


LOOK_PACE = 10.0  # the next look no sooner than this many times the last one's duration after it


@dataclass
class Watch:
    """What one cluster's lane knows between reconciles (in memory: a restarted or new leader starts with
    a full reconcile, whose snapshot seeds it).

    A look's Metadata response lists every partition with its replicas and ISR (~42 bytes each at RF 3 by
    the protocol's field sizes: ~40 MB at a million partitions), so looks are paced by their own cost: the
    next one is due ``LOOK_PACE`` times the last one's duration after it started, which keeps the looks
    to about a tenth of the time. A small cluster (a look of milliseconds) is looked at every reconcile;
    one whose look takes 2 s, every 20 s."""

    known: dict[str, int] | None = None  # partition counts at the last look
    pending: set[Key] = field(default_factory=set)  # new partitions not yet handed to a lane execution
    next_look: float = 0.0  # clock time from which the next look is due

    def due(self, now: float) -> bool:
        return now >= self.next_look

    def paced(self, started: float, ended: float) -> None:
        """A look ran from ``started`` to ``ended`` (clock seconds): when the next one is due."""
        self.next_look = started + LOOK_PACE * max(0.0, ended - started)

    def saw_snapshot(self, snapshot: ClusterSnapshot) -> None:
        """A full snapshot was read: it is the baseline, and the full re-plan covers every partition in it."""
        self.known = counts_of(snapshot)
        self.pending.clear()

    def look(self, counts: Mapping[str, int]) -> None:
        """One look at the partition counts: new partitions become pending; deleted topics are dropped."""
        if self.known is not None:
            self.pending.update(new_keys(counts, self.known))
        self.known = dict(counts)
        self.pending = {k for k in self.pending if k[1] < counts.get(k[0], 0)}


def enforced(bodies: Iterable[Body]) -> bool:
    """Whether any of the intent resources ``bodies`` is valid and enforced (not an Advise policy): only
    then has the lane rules to keep (a look costs one Metadata request per reconcile)."""
    for b in bodies:
        try:
            if is_enforced(parse_resource(b)):
                return True
        except BadInputError:
            continue
    return False


def is_enforced(intent: Intent) -> bool:
    """Not an Advise-mode policy: its rules are kept, not only reported."""
    return not isinstance(intent, PlacementPolicy) or intent.enforced


def applies(intent: Intent, topics: Iterable[str], brokers: Iterable[int], intents: Intents) -> bool:
    """Whether ``intent``'s rules touch partitions of ``topics`` placed on ``brokers`` (its participants)."""
    if isinstance(intent, PlacementPolicy):
        return any(getattr(intents.policy_for(t), "name", None) == intent.name for t in topics)
    if isinstance(intent, BrokerDecommission):
        return bool(set(intent.brokers) & set(brokers))
    if isinstance(intent, LogDirCordon):
        return intent.broker in set(brokers)
    return False  # pragma: no cover  (the three kinds above are all there are)


def lane_plan(snapshot: ClusterSnapshot, intents: Intents) -> Plan | None:
    """The hard goal alone on ``snapshot`` (the new partitions, every live broker and dir): the
    partitions that break a rule moved the least that repairs them; None when none breaks one.
    Raises ``InfeasibleError`` naming the partitions no placement can repair."""
    if not unmet(snapshot, intents):
        return None
    plan = optimize(snapshot, intents, [ReplicaPlacementGoal()])
    return None if plan.empty else plan


@dataclass(frozen=True)
class Outcome:
    """What one lane step decided: the lane's status, the Events to post (on the participants), and the
    execution to start (its plan and participants' uids) when approved."""

    status: NewPartitionsStatus | None = None
    events: tuple[tuple[Body, str, str, str], ...] = ()
    start: Plan | None = None
    participants: tuple[str, ...] = ()


def _named(keys: Sequence[str]) -> str:
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more


def decide_lane(
    snapshot: ClusterSnapshot,
    valid: Sequence[tuple[Body, Intent]],
    intents: Intents,
    running: frozenset[Key],
    previous: NewPartitionsStatus | None,
) -> Outcome:
    """Plan the pending new partitions of ``snapshot`` (read alone) for the enforced ``intents`` of the
    ``valid`` resources, leaving out those of the running execution's plan (``running``) and those over
    ``LANE_MAX_BYTES``; gate the plan on its participants' approval and pause. ``previous``: the last
    ``status.newPartitions`` (an Event is posted only when the lane's state changes)."""
    small = replace(
        snapshot,
        partitions=tuple(
            p for p in snapshot.partitions if p.key not in running and p.size_bytes <= LANE_MAX_BYTES
        ),
    )
    try:
        plan = lane_plan(small, intents)
    except (InfeasibleError, BadInputError) as e:
        message = f"new partitions cannot be placed per the intents: {e.message}"
        status = _status(LaneEvent.BLOCKED, message)
        topics = sorted({p.topic for p in small.partitions})
        brokers = {b for p in small.partitions for b in p.replicas}
        on = [b for b, i in valid if applies(i, topics, brokers, intents)]
        return Outcome(status, _events(on, previous, status, "Warning", "NewPartitionsBlocked"))
    if plan is None:
        return Outcome(_status(LaneEvent.PLACED, "new partitions placed per the intents"))
    topics = sorted({t.topic for t in plan.partitions})
    origins = {p.key: p.replicas for p in small.partitions}
    brokers = {b for t in plan.partitions for b in (*origins.get(t.key, ()), *t.replicas)}
    participants = [(b, i) for b, i in valid if applies(i, topics, brokers, intents)]
    names = [t.name for t in plan.partitions]
    what = f"lane plan {plan.plan_id} for {len(names)} new partitions ({_named(names)})"
    unapproved = [b for b, _ in participants if OperatorFields.of(b).unapproved(plan.plan_id)]
    bodies = [b for b, _ in participants]
    if unapproved:
        who = ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in unapproved)
        message = f"{what} awaits approval: set spec.approvedPlan: {plan.plan_id} on {who}"
        status = _status(LaneEvent.AWAITING_APPROVAL, message, plan.plan_id, len(names))
        return Outcome(status, _events(bodies, previous, status, "Normal", "NewPartitionsAwaitApproval"))
    if any(OperatorFields.of(b).paused for b in bodies):
        message = f"{what} held: spec.paused is true on a participant"
        status = _status(LaneEvent.PAUSED_BY_SPEC, message, plan.plan_id, len(names))
        return Outcome(status, _events(bodies, previous, status, "Normal", "NewPartitionsPaused"))
    status = _status(LaneEvent.STARTED, f"executing {what}", plan.plan_id, len(names))
    return Outcome(
        status,
        _events(bodies, previous, status, "Normal", "NewPartitionsPlaced"),
        start=plan,
        participants=tuple(b["metadata"]["uid"] for b in bodies),
    )


def _events(
    on: Sequence[Body],
    previous: NewPartitionsStatus | None,
    status: NewPartitionsStatus,
    etype: str,
    reason: str,
) -> tuple[tuple[Body, str, str, str], ...]:
    same = previous is not None and (previous.phase, previous.plan_id, previous.message) == (
        status.phase,
        status.plan_id,
        status.message,
    )
    return () if same else tuple((b, etype, reason, str(status.message)) for b in on)


def _status(
    event: LaneEvent, message: str, plan_id: str | None = None, partitions: int | None = None
) -> NewPartitionsStatus:
    """``status.newPartitions``: the lane's phase after ``event`` (reconcile/phases.py), its last plan and
    why (bounded)."""
    phase = move_lane(event)
    return NewPartitionsStatus(phase=phase, plan_id=plan_id, partitions=partitions, message=message[:1000])


def left_to_replan(waiting: NewPartitionsStatus) -> NewPartitionsStatus:
    """``status.newPartitions`` once a full re-plan took over the partitions of a lane plan that waited."""
    message = f"lane plan {waiting.plan_id} superseded: the cluster's plan covers its partitions"
    return _status(LaneEvent.WAITING_FOR_FULL_PLAN, message, waiting.plan_id)


def record_status(record: Execution) -> NewPartitionsStatus:
    """``status.newPartitions`` of a lane execution as its record stands."""
    doc = record.doc
    plan = f"lane plan {doc.plan_id}"
    if record.phase not in TERMINAL:
        message = f"executing {plan}: {doc.done_count}/{doc.partitions} done"
        return _status(LaneEvent.STARTED, message, doc.plan_id, doc.partitions)
    if record.phase == Phase.COMPLETED:
        message = f"{plan} executed: new partitions placed per the intents"
        return _status(LaneEvent.COMPLETED, message, doc.plan_id, doc.partitions)
    message = f"{plan} {record.phase}: {doc.last_error or 'no error recorded'}"
    return _status(LaneEvent.FAILED, message, doc.plan_id, doc.partitions)
