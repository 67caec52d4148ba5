"""What one reconcile of a KafkaCluster should do: a pure function of the resources, the record and Kafka.

``decide(view)`` takes what the shell (reconcile/reconciler.py) has read so far — the cluster's intent
resources, the execution record's state, and the Kafka-side facts gathered in this reconcile (the plan,
the partitions a plan would leave below min ISR, whether a tick ran) — and returns a ``Decision``: the
intent statuses to write, the Events to post, the KafkaCluster status when it is decided here, and the
actions the shell must perform next. When an action yields a new fact (``Plan`` -> ``view.planned``,
``CheckMinIsr`` -> ``view.below_min_isr``, ``Tick`` -> ``view.ticked`` and the record after it), the
shell calls ``decide`` again with the fact added; a decision without actions ends the reconcile.

The declared cordons (LogDirCordons, and the brokers BrokerDecommissions retire) are synced once in every
reconcile that reads Kafka, with or without an execution in flight (``SyncCordons``, then
``view.cordons_synced``): the live intents' cordons are set, and those of the resources being deleted
(``view.leaving``) removed unless a live intent still declares them; their delete handlers wait for
that. The gates, in order (docs/architecture.md, "Reconcile"): Kafka not answering at all holds the intents
``Pending`` (an invalid spec fails alone; an Executing, AwaitingApproval, Paused, Completed, Cancelled or
Failed one keeps its phase: phases.py), any other failure reaching Kafka or reading the record fails
every intent not Completed; invalid specs fail alone; an execution in flight is driven (a
deleted participant requests a cancel, ``spec.paused`` holds it, a more urgent intent or a heal being
retired (``view.retiring``) supersedes it by a re-plan keeping its moves in flight, otherwise one tick,
then its progress, and a Warning IntentEvent when it re-applied owned configs changed by another party); with
none, every valid
intent is planned together: a running planner job keeps them Planning, a planning error fails them,
Advise-mode policies only report, an empty plan converges, an unapproved Manual plan awaits approval,
``spec.paused`` holds it, a plan leaving partitions below ``min.insync.replicas`` fails, else the
execution starts.

No I/O, no clocks, no Kubernetes or Kafka clients: everything here is unit-tested from plain values
(tests/unit/reconcile/test_decide.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..execution.record_doc import Phase, Rule
from ..model.errors import BadInputError
from ..model.intent_status import IntentStatus, LastExecution, PlanStatus, ProgressStatus
from ..model.intents import (
    BrokerDecommission,
    Intent,
    LogDirCordon,
    OperatorFields,
    PlacementPolicy,
    parse_resource,
)
from ..model.plan import Plan
from ..model.self_healing import SelfHealingSpec, format_time, parse_time
from ..model.spec_fields import to_json
from ..model.units import binary_bytes, count
from ..model.windows import ExecutionSpec, Gate, Window, gate
from ..planning import waiting
from . import status as st
from .decision import (
    CLUSTER_UNREACHABLE,
    Action,
    Body,
    CheckIntents,
    CheckMinIsr,
    Decision,
    Failure,
    Note,
    PlanIntents,
    Planned,
    RecordView,
    RequestCancel,
    StartExecution,
    StatusPatch,
    SyncCordons,
    Tick,
    View,
    cluster_conditions,
    connected_cluster,
    moved,
)
from .healing import CREATED_BY, SELF_HEALING
from .phases import IntentEvent

UNREACHABLE_GRACE_S = 300.0  # a cluster that answered before is Reconciling this long, then Stalled
EXECUTOR_EVENTS = {  # the executor's phase as an event of its intents (others: ExecutionProgress)
    Phase.COMPLETED: IntentEvent.EXECUTION_COMPLETED,
    Phase.CANCELLED: IntentEvent.EXECUTION_CANCELLED,
    Phase.FAILED: IntentEvent.EXECUTION_FAILED,
    Phase.PAUSED: IntentEvent.EXECUTION_PAUSED,
}


# ---- the decision --------------------------------------------------------------------------------------


def decide(view: View) -> Decision:
    """The next step of one reconcile (see the module docstring)."""
    if view.failure is not None:
        return _failed(view.resources, view.failure, view.cluster_conditions, view.now)
    valid, statuses = parse(view.resources)
    record = view.record
    if record is not None and (record.active or view.ticked):  # a tick may have just ended it
        step = _drive(valid, record, view)
    else:
        step = _plan(valid, record, view)
    return replace(
        step, statuses=statuses + step.statuses, cluster=connected_cluster(view.cluster_conditions)
    )


def parse(resources: Sequence[Body]) -> tuple[list[tuple[Body, Intent]], tuple[StatusPatch, ...]]:
    """The valid resources with their intents, and a Failed status for each invalid one (the kind's
    fields or the operator's: ``_gate``)."""
    valid: list[tuple[Body, Intent]] = []
    failed: tuple[StatusPatch, ...] = ()
    for b in resources:
        try:
            intent = parse_resource(b)
            OperatorFields.of(b)
            valid.append((b, intent))
        except BadInputError as e:
            failed += _each([b], IntentEvent.INVALID_SPEC, e.message)
    return valid, tuple(failed)


def _failed(
    resources: Sequence[Body], f: Failure, current: Sequence[Mapping[str, Any]] | None, now: float | None
) -> Decision:
    if f.reason == CLUSTER_UNREACHABLE:  # transient: the intents wait (phases.py keeps the work going on)
        valid, statuses = parse(resources)  # a spec's validity needs no Kafka
        statuses += _all(valid, IntentEvent.CLUSTER_UNREACHABLE, f"{f.message} (waiting for Kafka to answer)")
    else:  # the user must act: a Completed one stays so
        statuses = _each(resources, IntentEvent.CLUSTER_FAILURE, f.message, f.reason)
    since = _restarting(current, now) if f.reason == CLUSTER_UNREACHABLE else None
    waiting = ""
    if since is not None:
        waiting = (
            f"{f.message}; it answered until {format_time(since)}: a cluster restarting looks like this "
            f"(Stalled if no broker answers for {UNREACHABLE_GRACE_S / 60:.0f} minutes)"
        )
    cluster = {
        "phase": f.cluster_phase,
        "conditions": cluster_conditions(
            current,
            {
                st.READY: (f.connected, f.reason, f.message),
                st.DEGRADED: (True, f.reason, f.message),
                st.RECONCILING: (since is not None, f.reason, waiting),
                st.STALLED: (since is None, f.reason, "" if since is not None else f.message),
            },
        ),
    }
    return Decision(statuses=statuses, cluster=cluster)


def _restarting(current: Sequence[Mapping[str, Any]] | None, now: float | None) -> float | None:
    """When a KafkaCluster no broker answers stopped answering, while that may be a restart of the whole
    cluster (None otherwise): it was ``Ready`` until this reconcile, or has been unreachable since it last
    was for less than ``UNREACHABLE_GRACE_S`` (``Reconciling``, not ``Stalled``: GitOps tools show it in
    progress, not failed, during a restart). A cluster never reached (a wrong address) is Stalled at once."""
    if now is None:
        return None
    by_type = {c.get("type"): c for c in current or () if isinstance(c, Mapping)}
    ready, busy = by_type.get(st.READY) or {}, by_type.get(st.RECONCILING) or {}
    if ready.get("status") == "True":
        return now
    if ready.get("reason") != CLUSTER_UNREACHABLE or busy.get("status") != "True":
        return None  # never reached, another failure, or already Stalled
    try:
        since = parse_time(str(ready.get("lastTransitionTime")), "lastTransitionTime")
    except BadInputError:
        return None
    return since if now - since < UNREACHABLE_GRACE_S else None


def _gate(b: Body) -> OperatorFields:
    """A valid resource's approval, approvedPlan and paused (``parse`` checked them)."""
    return OperatorFields.of(b)


def _sync(valid: Sequence[tuple[Body, Intent]], view: View) -> tuple[SyncCordons, ...]:
    """Sync every valid intent's declared cordons, once per reconcile (a decommission or cordon created
    while another execution runs is cordoned at once, not when that execution ends), and release those
    of the resources being deleted."""
    return () if view.cordons_synced else (cordon_sync([i for _, i in valid], view.leaving),)


def cordon_sync(live: Sequence[Intent], leaving: Sequence[Body]) -> SyncCordons:
    """Keep the cordons the ``live`` intents declare; release those the ``leaving`` resources declared (an
    invalid one declares nothing, and goes all the same)."""
    released, _ = parse(leaving)
    return SyncCordons(
        tuple(live), tuple(i for _, i in released), tuple(b["metadata"]["uid"] for b in leaving)
    )


def _disk_notes(record: RecordView, members: Sequence[Body]) -> tuple[Note, ...]:
    """``DiskHeld`` when the disk watch starts holding the moves into a dir (Warning, naming the dirs and
    their moves), ``DiskReleased`` when a dir is back under the limit and its moves go on."""
    started = [d for d in record.held if d not in record.held_before]
    ended = [d for d in record.held_before if d not in record.held]
    notes: list[Note] = []
    if started:
        notes += [Note(b, "Warning", "DiskHeld", record.held_what) for b in members]
    if ended:
        msg = (
            f"{', '.join(ended[:10])}: back under the disk headroom limit, the moves into it go on "
            "(throttle restored)"
        )
        notes += [Note(b, "Normal", "DiskReleased", msg) for b in members]
    return tuple(notes)


def _drive(valid: list[tuple[Body, Intent]], record: RecordView, view: View) -> Decision:
    ticked, sync = view.ticked, _sync(valid, view)
    members = [b for b, _ in valid if b["metadata"]["uid"] in record.participants]
    cancel = len(members) < len(record.participants) and not record.cancel_requested
    if not cancel and not record.cancel_requested and any(_gate(b).paused for b in members):
        if sync:  # the statuses come with the next decision: each is written once per reconcile
            return Decision(actions=sync)
        msg = "spec.paused is true; no new moves are submitted"
        return Decision(statuses=_each(members, IntentEvent.PAUSED_BY_SPEC, msg, plan=record.plan_status))
    urgent = _urgent(valid, record, view.retiring, view.now)
    dropped = [b for b in members if b["metadata"]["uid"] in view.retiring]
    waiting: tuple[StatusPatch, ...] = ()
    if (urgent or dropped) and not cancel and not record.cancel_requested and record.phase in SUPERSEDABLE:
        step = _supersede(valid, urgent, record, view, dropped)
        if isinstance(step, Decision):
            return step
        waiting = step
    if not ticked:
        return Decision(actions=(*sync, RequestCancel(), Tick()) if cancel else (*sync, Tick()))
    events: tuple[Note, ...] = ()
    if record.reapplied > record.reapplied_before:
        msg = (
            "re-applied configs this execution owns, changed by another party "
            f"({record.reapplied} times so far): " + "; ".join(record.reapplied_what)
        )
        events = tuple(Note(b, "Warning", "OwnedConfigChanged", msg) for b in members)
    events += _disk_notes(record, members)
    event = EXECUTOR_EVENTS.get(record.phase, IntentEvent.EXECUTION_PROGRESS)
    reason = str(record.phase) if event == IntentEvent.EXECUTION_PROGRESS else None  # else the table's word
    message = record.last_error or f"executor phase {record.phase}"
    if event == IntentEvent.EXECUTION_PROGRESS and view.window is not None and not view.window.open:
        event, reason, message = IntentEvent.WAITING_FOR_WINDOW, None, view.window.says()
    waits: tuple[StatusPatch, ...] = ()
    if event == IntentEvent.EXECUTION_COMPLETED:  # done; the intents' rules are checked on a fresh read
        if view.unmet is None:
            return Decision(actions=(CheckIntents(tuple(members)),))
        if not view.unmet:  # what waits (no plan could act on it) keeps its intents Pending, saying why
            done = f"plan {record.plan_id} executed: everything that can be moved was"
            waits = _waiting(
                [(b, i) for b, i in valid if b in members],
                record.plan_status,
                done,
                record.progress,
                record.last_execution,
            )
            members = [b for b in members if all(w.body is not b for w in waits)]
        if view.unmet:
            # planned again by the next reconcile (a broker's metadata lagging right after the moves
            # must not make it plan done moves again): until then they are still executing
            event, reason = IntentEvent.RULES_UNMET, None
            message = (
                f"plan {record.plan_id} executed, but {len(view.unmet)} partitions still break the "
                f"intents' rules ({', '.join(view.unmet[:5])}): planning the rest"
            )
        else:
            message = f"plan {record.plan_id} executed; a fresh read shows every intent's rules hold"
    statuses = _each(
        members,
        event,
        message,
        reason,
        plan=record.plan_status,
        progress=record.progress,
        last_execution=record.last_execution,
    )
    return Decision(statuses=waiting + waits + statuses, events=events)


def _waiting(
    valid: Sequence[tuple[Body, Intent]],
    plan_status: PlanStatus | None,
    done: str,
    progress: ProgressStatus | None = None,
    last_execution: LastExecution | None = None,
) -> tuple[StatusPatch, ...]:
    """``Pending`` for each BrokerDecommission some of whose partitions wait (the plan's ``waiting``,
    planning/waiting.py: no in-sync replica left, or too few brokers to hold them): the plan moved the
    rest; it is planned again as the cluster changes (a leader elected, a broker back or added)."""
    waits = to_json(plan_status.waiting) if plan_status is not None and plan_status.waiting else {}
    if not waits:
        return ()
    out: list[StatusPatch] = []
    for b, intent in valid:
        if not isinstance(intent, BrokerDecommission):
            continue
        why = waiting.text(waits, intent.brokers)
        if not why:
            continue
        reason = next(
            r for r in waiting.REASONS if set((waits.get(r) or {}).get("brokers", ())) & set(intent.brokers)
        )
        out += _each(
            [b],
            IntentEvent.PARTITIONS_WAIT,
            f"{done}; {why}",
            reason,
            plan=plan_status,
            progress=progress,
            last_execution=last_execution,
        )
    return tuple(out)


SUPERSEDABLE = frozenset({Phase.THROTTLING, Phase.MOVING, Phase.PAUSED})


def window_bound(
    execution: ExecutionSpec | None, healing: object, participants: Sequence[Body]
) -> tuple[Window, ...] | None:
    """The maintenance windows the execution of ``participants`` waits for (model/windows.py): None without
    windows, or when one of them sets ``spec.ignoreWindows``, or is a heal while
    ``selfHealing.ignoreWindows`` is true (``healing``: the KafkaCluster's parsed ``spec.selfHealing``; a
    heal of a cluster whose self-healing is not declared, or invalid, keeps the default, true)."""
    windows = execution.windows if execution is not None else None
    if not windows:
        return None
    heals_ignore = healing.ignore_windows if isinstance(healing, SelfHealingSpec) else True
    for b in participants:
        try:
            if OperatorFields.of(b).ignore_windows:
                return None
        except BadInputError:
            continue
        labels = (b.get("metadata") or {}).get("labels") or {}
        if heals_ignore and labels.get(CREATED_BY) == SELF_HEALING:
            return None
    return windows


def window_gate(
    execution: ExecutionSpec | None,
    healing: object,
    participants: Sequence[Body],
    now: float,
) -> Gate:
    """Whether the execution of ``participants`` may submit new moves at ``now``: always when it waits
    for no window (``window_bound``), else only inside one; closed, with the cap of the moves in flight
    (``outsideWindowBytesPerSecond``)."""
    windows = window_bound(execution, healing, participants)
    if windows is None:
        return Gate(True)
    closed = gate(windows, now)
    cap = execution.outside_window_bytes_per_second if execution is not None else None
    return closed if closed.open else replace(closed, cap=cap)


def urgency(body: Body, intent: Intent) -> tuple[int, int]:
    """How urgent an intent is: heals (created by self-healing) first, then a higher ``priority``."""
    priority = intent.priority if isinstance(intent, BrokerDecommission) else 0
    return (1 if _by_self_healing(body) else 0, priority)


def _urgent(
    valid: Sequence[tuple[Body, Intent]],
    record: RecordView,
    retiring: frozenset[str] = frozenset(),
    now: float | None = None,
) -> list[tuple[Body, Intent]]:
    """The valid intents outside the running execution that supersede it: more urgent than all of its
    own, or heals as urgent as its most urgent (a second broker failure is healed together with the first,
    a dead broker's heal supersedes the heal of one of its dirs); not a heal being retired (it is on its
    way out), nor one whose last attempt to supersede failed less than its backoff ago (``retry_of``)."""
    inside = [urgency(b, i) for b, i in valid if b["metadata"]["uid"] in record.participants]
    bar = max(inside, default=(0, 0))
    outside = record.participants | retiring
    out = []
    for b, i in valid:
        u = urgency(b, i)
        if b["metadata"]["uid"] in outside or not (u > bar or (u == bar and u[0] == 1)):
            continue
        if now is not None and retry_at(b) > now:
            continue
        out.append((b, i))
    return out


RETRY_FIRST_S, RETRY_MAX_S = 60, 3600  # the backoff of an intent that failed to supersede: doubled per try


def retry_at(body: Body) -> float:
    """When an intent that failed to supersede the execution in flight may try again (``status.retry``;
    0: now)."""
    retry = IntentStatus.of(body).retry
    after = retry.after if retry is not None else None
    try:
        return parse_time(after, "status.retry.after") if after else 0.0
    except BadInputError:
        return 0.0  # unreadable: tried now, and written afresh


def retry_of(body: Body, now: float) -> dict[str, Any]:
    """``status.retry`` after one more failed attempt: the attempts so far and when the next may be
    (``RETRY_FIRST_S`` doubled per attempt, at most ``RETRY_MAX_S``)."""
    old = IntentStatus.of(body).retry
    attempts = old.attempts + 1 if old is not None and old.attempts else 1
    wait = min(RETRY_FIRST_S * 2 ** min(attempts - 1, 16), RETRY_MAX_S)
    return {"attempts": attempts, "after": format_time(now + wait)}


def _backing_off(patches: tuple[StatusPatch, ...], now: float | None) -> tuple[StatusPatch, ...]:
    """The statuses of intents a supersede leaves outside the execution, failed or waiting, with their
    ``status.retry``: the next reconciles do not plan them again before it (a heal that cannot be planned
    would otherwise re-plan the cluster on every tick)."""
    if now is None:
        return patches
    return tuple(
        replace(p, retry=retry_of(p.body, now)) if p.phase in (st.FAILED, st.PENDING, st.CANCELLED) else p
        for p in patches
    )


def _supersede(
    valid: list[tuple[Body, Intent]],
    urgent: list[tuple[Body, Intent]],
    record: RecordView,
    view: View,
    dropped: Sequence[Body] = (),
) -> Decision | tuple[StatusPatch, ...]:
    """An intent more urgent than the running execution's arrived, or heals of it are retired
    (``dropped``: their broker is back for good): plan every valid intent again but the dropped ones,
    keeping the moves in flight (never reverted, never sent twice), and replace the running plan's moves
    not yet submitted by the new plan, once it is approved like any plan (a plan that is only the moves in
    flight needs no approval). With nothing in flight and nothing left to do, the running execution stops
    (a cancel that has nothing to revert). Statuses only: nothing to replace now (the running execution is
    driven as usual meanwhile; these statuses say why the urgent intents wait)."""
    valid = [(b, i) for b, i in valid if b["metadata"]["uid"] not in view.retiring]
    why = [f"{b['kind']}/{b['metadata']['name']}" for b, _ in urgent]
    why += [f"retiring {b['kind']}/{b['metadata']['name']} (its broker is back)" for b in dropped]
    names = ", ".join(why)
    planned = view.planned
    if planned is None:
        msg = f"planning with every intent to supersede the running plan {record.plan_id} (more urgent)"
        pending = _each([b for b, _ in urgent], IntentEvent.SUPERSEDING, msg)
        plan_them = PlanIntents(tuple(b for b, _ in valid), keeping_in_flight=True, dropping=bool(dropped))
        return Decision(statuses=pending, actions=(plan_them,))
    gone = _backing_off(_rejected(valid, planned), view.now)  # each fails alone; the rest without them
    if gone:
        valid = [(b, i) for b, i in valid if b["metadata"]["uid"] not in planned.rejected]
        urgent = [(b, i) for b, i in urgent if b["metadata"]["uid"] not in planned.rejected]
        if not urgent and not dropped:
            return gone  # nothing urgent is left to supersede with: the running plan goes on
    step = _supersede_with(valid, urgent, record, view, dropped, planned, names)
    if isinstance(step, Decision):
        return replace(step, statuses=gone + step.statuses)
    return gone + _backing_off(step, view.now)


def _supersede_with(
    valid: list[tuple[Body, Intent]],
    urgent: list[tuple[Body, Intent]],
    record: RecordView,
    view: View,
    dropped: Sequence[Body],
    planned: Planned,
    names: str,
) -> Decision | tuple[StatusPatch, ...]:
    """``_supersede`` once the new plan (or why there is none) is known."""
    if planned.running is not None:
        return _all(urgent, IntentEvent.PLAN_RUNNING, planned.running)
    if planned.waiting is not None:
        return _all(urgent, IntentEvent.BROKERS_UNREACHABLE, planned.waiting)
    if planned.plan is None:
        reason = planned.error_reason or "PlanningFailed"
        return _all(urgent, IntentEvent.PLANNING_FAILED, planned.error or "planning failed", reason)
    if planned.plan.empty and dropped:  # nothing in flight, nothing left to do: nothing to revert either
        told = (
            f"plan {record.plan_id} stops for {names}: no move of it is in flight and the other intents "
            "need none, so nothing is reverted"
        )
        notes = tuple(Note(b, "Normal", "Superseded", told) for b in dropped)
        return Decision(events=notes, actions=(RequestCancel(), Tick()))
    if planned.plan.empty:  # the moves in flight already do what they ask: the running plan goes on
        msg = (
            f"the moves in flight of plan {record.plan_id} already do what it asks: it is planned again "
            "once that execution ends"
        )
        return _all(urgent, IntentEvent.COVERED_BY_RUNNING_PLAN, msg)
    plan = planned.plan
    plan_status = st.plan_status(planned.summary, plan.plan_id)
    enforced = [(b, i) for b, i in valid if not (isinstance(i, PlacementPolicy) and not i.enforced)]
    unapproved = [] if planned.kept_only else [b for b, _ in enforced if _gate(b).unapproved(plan.plan_id)]
    if unapproved:
        msg = (
            f"plan {plan.plan_id} ({plan_status.moves} partitions) would supersede the running plan "
            f"{record.plan_id} for {names}; it awaits approval: set spec.approvedPlan: {plan.plan_id} on "
            + ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in unapproved)
        )
        return _all(urgent, IntentEvent.AWAITING_APPROVAL, msg, plan=plan_status)
    if any(_gate(b).paused for b, _ in enforced):
        msg = f"spec.paused is true: plan {plan.plan_id} does not supersede the running plan"
        return _all(urgent, IntentEvent.PAUSED_BY_SPEC, msg, plan=plan_status)
    if view.below_min_isr is None:
        return Decision(actions=(CheckMinIsr(plan),))
    if view.below_min_isr:
        msg = f"plan {plan.plan_id} would leave partitions below min.insync.replicas: " + ", ".join(
            view.below_min_isr[:10]
        )
        return _all(urgent, IntentEvent.BELOW_MIN_ISR, msg)
    msg = f"executing plan {plan.plan_id}, which supersedes plan {record.plan_id} (for {names})"
    told = (
        f"plan {record.plan_id} superseded by plan {plan.plan_id} for {names}: its moves in flight go on "
        "in the new plan, its moves not yet submitted are replaced by it"
    )
    start = replace(
        _start(enforced, plan, plan_status, replaces_record=True),
        then=_all(enforced, IntentEvent.EXECUTION_STARTED, msg, plan=plan_status),
        supersedes=record.plan_id,
        events=tuple(
            Note(b, "Normal", "Superseded", told)
            for b in [*(b for b, _ in valid), *dropped]
            if b["metadata"]["uid"] in record.participants
        ),
    )
    return Decision(actions=(start,))


def _start(
    valid: Sequence[tuple[Body, Intent]], plan: Plan, plan_status: PlanStatus, *, replaces_record: bool
) -> StartExecution:
    """The execution of ``plan`` with these intents as its participants."""
    return StartExecution(
        plan=plan,
        plan_status=plan_status,
        participants=tuple(b["metadata"]["uid"] for b, _ in valid),
        rules=execution_rules([i for _, i in valid]),
        intents=tuple(i for _, i in valid),
        replaces_record=replaces_record,
    )


def execution_rules(intents: Sequence[Intent]) -> tuple[Rule, ...]:
    """Per-decommission priority and throttle for the executor (moves off those brokers)."""
    return tuple(
        Rule(
            name=f"BrokerDecommission/{i.name}"[:300],
            brokers=list(i.brokers),
            priority=i.priority,
            throttle=i.throttle_bytes_per_sec,
        )
        for i in intents
        if isinstance(i, BrokerDecommission) and (i.priority or i.throttle_bytes_per_sec)
    )


def _each(
    bodies: Sequence[Body], event: IntentEvent, message: str, reason: str | None = None, **kw: Any
) -> tuple[StatusPatch, ...]:
    """The status ``event`` gives each of ``bodies`` (``moved``: none for those it leaves as they are)."""
    return tuple(p for b in bodies if (p := moved(b, event, message, reason, **kw)) is not None)


def _all(
    valid: Sequence[tuple[Body, Intent]],
    event: IntentEvent,
    message: str,
    reason: str | None = None,
    **kw: Any,
) -> tuple[StatusPatch, ...]:
    return _each([b for b, _ in valid], event, message, reason, **kw)


def _rejected(valid: Sequence[tuple[Body, Intent]], planned: Planned) -> tuple[StatusPatch, ...]:
    """``Failed`` for each intent invalid on its own against the cluster (``Planned.rejected``); a heal of a
    log dir whose broker died since and has a heal of its own is ``Cancelled``, superseded by it (that heal
    moves every replica off the broker, those of the dir included)."""
    tail = "; the cluster's other intents are planned without it"
    heals = {
        broker: b
        for b, i in valid
        if isinstance(i, BrokerDecommission) and _by_self_healing(b)
        for broker in i.brokers
    }
    out: list[StatusPatch] = []
    for b, i in valid:
        why = planned.rejected.get(b["metadata"]["uid"])
        if why is None:
            continue
        by = heals.get(i.broker) if isinstance(i, LogDirCordon) and _by_self_healing(b) else None
        if by is None or not isinstance(i, LogDirCordon):
            out += _each([b], IntentEvent.REJECTED, why + tail)
            continue
        msg = (
            f"superseded by {by['kind']}/{by['metadata']['name']}, the heal of broker {i.broker}, which "
            f"moves every replica off it ({why})"
        )
        out += _each([b], IntentEvent.SUPERSEDED, msg)
    return tuple(out)


def _by_self_healing(body: Body) -> bool:
    return ((body.get("metadata") or {}).get("labels") or {}).get(CREATED_BY) == SELF_HEALING


def _plan(valid: list[tuple[Body, Intent]], last: RecordView | None, view: View) -> Decision:
    planned = view.planned
    if planned is not None and planned.rejected:
        gone = _rejected(valid, planned)
        rest = [(b, i) for b, i in valid if b["metadata"]["uid"] not in planned.rejected]
        step = _plan(rest, last, replace(view, planned=replace(planned, rejected={})))
        return replace(step, statuses=gone + step.statuses)
    if planned is None:
        sync = _sync(valid, view)
        if not valid:  # nothing to plan: the cordons once, then done
            return Decision(actions=sync)
        msg = "planning with all active intents of the cluster"
        pending = _all(valid, IntentEvent.PLANNING, msg)  # only those Pending (or new) say so
        return Decision(statuses=pending, actions=(*sync, PlanIntents(tuple(b for b, _ in valid))))
    if planned.running is not None:
        return Decision(statuses=_all(valid, IntentEvent.PLAN_RUNNING, planned.running))
    if planned.waiting is not None:  # a Completed intent stays so (nothing it did is undone meanwhile)
        return Decision(statuses=_all(valid, IntentEvent.BROKERS_UNREACHABLE, planned.waiting))
    if planned.plan is None:
        reason = planned.error_reason or "PlanningFailed"
        return Decision(
            statuses=_all(valid, IntentEvent.PLANNING_FAILED, planned.error or "planning failed", reason)
        )
    plan, summary = planned.plan, planned.summary
    plan_status = st.plan_status(summary, plan.plan_id)
    # Advise-mode policies only report: they take no part in the plan, its approval or its execution.
    advisors = [(b, i) for b, i in valid if isinstance(i, PlacementPolicy) and not i.enforced]
    advice = _all(
        advisors, IntentEvent.ADVISED, st.advice_message(summary), plan=st.advice_plan_status(summary)
    )
    enforced = [(b, i) for b, i in valid if all(b is not a for a, _ in advisors)]
    gate = _gates(enforced, plan, plan_status, last, view.below_min_isr)
    return replace(gate, statuses=advice + gate.statuses)


def _gates(
    valid: list[tuple[Body, Intent]],
    plan: Plan,
    plan_status: PlanStatus,
    last: RecordView | None,
    below_min_isr: Sequence[str] | None,
) -> Decision:
    if plan.empty:
        # the last execution's plan and progress stay shown until a new plan replaces them
        executed = last is not None and last.phase == Phase.COMPLETED
        shown = last.plan_status if executed and last is not None else plan_status
        prefix = f"plan {last.plan_id} executed; " if executed and last is not None else ""
        message = f"converged: {prefix}the placement matches every declared intent"
        waits = _waiting(
            valid, replace(shown or PlanStatus(), waiting=plan_status.waiting), "nothing else to move"
        )
        valid = [(b, i) for b, i in valid if all(w.body is not b for w in waits)]
        return Decision(
            statuses=waits
            + tuple(
                p
                for b, _ in valid
                if (
                    p := moved(
                        b,
                        IntentEvent.CONVERGED,
                        message,
                        plan=shown,
                        progress=IntentStatus.of(b).progress if executed else None,  # kept as it is
                    )
                )
                is not None
            )
        )
    unapproved = [b for b, _ in valid if _gate(b).unapproved(plan.plan_id)]
    if unapproved:
        names = ", ".join(f"{b['kind']}/{b['metadata']['name']}" for b in unapproved)
        msg = (
            f"plan {plan.plan_id} ({count(plan_status.moves or 0)} partitions, "
            f"{binary_bytes(plan_status.bytes or 0)} to copy) "
            f"awaits approval: set spec.approvedPlan: {plan.plan_id} on {names}"
        )
        review = plan_status.review
        if review is not None:  # where to read it first (reconcile/plan_review.py)
            msg += f"; review it in ConfigMap {review.config_map} (most changed: {review.brokers_changing})"
        return Decision(statuses=_all(valid, IntentEvent.AWAITING_APPROVAL, msg, plan=plan_status))
    if any(_gate(b).paused for b, _ in valid):
        return Decision(
            statuses=_all(valid, IntentEvent.PAUSED_BY_SPEC, "spec.paused is true", plan=plan_status)
        )
    if below_min_isr is None:
        return Decision(actions=(CheckMinIsr(plan),))
    if below_min_isr:  # the executor would refuse it too; say so before any record is made
        msg = (
            f"plan {plan.plan_id} would leave {len(below_min_isr)} partitions with fewer replicas than their "
            "topic's min.insync.replicas (unwritable with acks=all); nothing moves: "
            + ", ".join(below_min_isr[:10])
        )
        return Decision(statuses=_all(valid, IntentEvent.BELOW_MIN_ISR, msg, plan=plan_status))
    start = _start(valid, plan, plan_status, replaces_record=last is not None)
    msg = f"executing plan {plan.plan_id}"
    then = _all(valid, IntentEvent.EXECUTION_STARTED, msg, plan=plan_status)
    return Decision(actions=(replace(start, then=then),))


__all__ = [
    "Action",
    "CheckIntents",
    "CheckMinIsr",
    "Decision",
    "Failure",
    "Note",
    "PlanIntents",
    "Planned",
    "RecordView",
    "RequestCancel",
    "StartExecution",
    "StatusPatch",
    "SyncCordons",
    "Tick",
    "View",
    "cordon_sync",
    "decide",
    "execution_rules",
    "parse",
    "window_bound",
    "window_gate",
]
