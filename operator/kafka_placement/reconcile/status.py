"""Status of the custom resources: phases, conditions (Ready, Progressing, Degraded, Blocked, Reconciling,
Stalled), plans.

The phases and what moves them are a table (reconcile/phases.py, ``move``); ``intent_status`` writes the
phase and reason ``move`` chose. A changed spec (new generation) starts over at Pending. Conditions follow
Kubernetes conventions: one entry per type, ``lastTransitionTime`` changes only when the status flips.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from ..kafka.types import LogDirInfo
from ..model import crd_parts
from ..model.cluster_status import check_patch
from ..model.errors import BadInputError
from ..model.intent_status import IntentStatus, LastExecution, PlanStatus, ProgressStatus, Retry
from ..model.self_healing import format_time
from ..model.snapshot import ClusterSnapshot
from ..model.spec_fields import to_json
from ..planning.plan_summary import PlanSummary, StatusSummary
from ..planning.summary_parts import Advisories
from .status_dirs import StatusBroker, StatusDir, brokers_status

# The phases and condition types are the CRDs' enums, defined once in model/crd_parts.py.
PHASES = crd_parts.PHASES
PENDING, PLANNING, AWAITING_APPROVAL, EXECUTING, COMPLETED, FAILED, PAUSED, CANCELLED = PHASES
CONDITION_TYPES = crd_parts.CONDITION_TYPES
READY, PROGRESSING, DEGRADED, BLOCKED, RECONCILING, STALLED = CONDITION_TYPES


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


CONNECTED, UNREACHABLE, NOT_AUTHORIZED = crd_parts.CONNECTED, crd_parts.UNREACHABLE, crd_parts.NOT_AUTHORIZED
UNSUPPORTED = crd_parts.UNSUPPORTED
# the KafkaCluster conditions decide merges (SelfHealing and BrokersReachable are healing.py's; every one
# the CRD knows: crd_parts.CLUSTER_CONDITION_TYPES)
DECIDED_CLUSTER_CONDITIONS = (READY, DEGRADED, RECONCILING, STALLED)
# a KafkaCluster condition only while spec.selfHealing is declared
SELF_HEALING = crd_parts.SELF_HEALING_CONDITION
# a KafkaCluster condition: whether every broker alive in the cluster answers the operator (healing.py's)
BROKERS_REACHABLE = crd_parts.BROKERS_REACHABLE_CONDITION


def reason_word(text: str, fallback: str = "Unknown") -> str:
    """A CamelCase reason as Kubernetes requires (letters and digits only)."""
    word = "".join(ch for ch in text if ch.isalnum())
    return word if word and word[0].isalpha() else fallback


def merge_conditions(
    current: Sequence[Mapping[str, Any]] | None,
    updates: Mapping[str, tuple[bool, str, str]],
    types: Sequence[str] = CONDITION_TYPES,
) -> list[dict[str, Any]]:
    """Conditions with ``updates`` ({type: (true?, reason, message)}) applied; every type present."""
    by_type = {c.get("type"): dict(c) for c in current or () if isinstance(c, Mapping)}
    out = []
    for ctype in types:
        old = by_type.get(ctype, {"type": ctype, "status": "Unknown", "reason": "Unknown", "message": ""})
        if ctype in updates:
            flag, raw_reason, message = updates[ctype]
            reason = reason_word(raw_reason, "AsExpected" if not flag else "Unknown")
            status = "True" if flag else "False"
            new: dict[str, Any] = {"type": ctype, "status": status, "reason": reason, "message": message}
            new["lastTransitionTime"] = (
                old.get("lastTransitionTime")
                if old.get("status") == status and old.get("lastTransitionTime")
                else now()
            )
            out.append(new)
        else:
            old.setdefault("lastTransitionTime", now())
            out.append(old)
    return out


def with_condition(
    conditions: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]] | None,
    ctype: str,
    update: tuple[bool, str, str] | None,
) -> list[dict[str, Any]]:
    """``conditions`` (a full list, e.g. Ready and Degraded) with the condition ``ctype`` set from
    ``update`` (its ``lastTransitionTime`` kept from ``current`` unless it flips), or left out (None)."""
    out = [dict(c) for c in conditions if c.get("type") != ctype]
    if update is not None:
        out += merge_conditions(current, {ctype: update}, (ctype,))
    return out


def kept_condition(
    conditions: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]] | None, ctype: str
) -> list[dict[str, Any]]:
    """``conditions`` with the condition ``ctype`` as ``current`` has it (when this reconcile did not
    decide it)."""
    out = [dict(c) for c in conditions if c.get("type") != ctype]
    return out + [dict(c) for c in current or () if isinstance(c, Mapping) and c.get("type") == ctype]


RECONCILING_PHASES = (PENDING, PLANNING, EXECUTING, CANCELLED)  # Cancelled: its intent is planned again


def phase_conditions(phase: str, reason: str, message: str) -> dict[str, tuple[bool, str, str]]:
    """The conditions implied by a phase (reason/message go on the one that explains it)."""
    return {
        READY: (  # a Pending intent with a reason of its own (waiting for a broker, say) says it here
            phase == COMPLETED,
            reason if phase == COMPLETED or (phase == PENDING and reason not in ("", PENDING)) else phase,
            message if phase in (COMPLETED, PENDING) else "",
        ),
        PROGRESSING: (
            phase in (PLANNING, EXECUTING),
            reason if phase in (PLANNING, EXECUTING) else phase,
            message if phase in (PLANNING, EXECUTING) else "",
        ),
        DEGRADED: (
            phase == FAILED and reason in ("InvalidSpec", "InvalidInput"),
            reason if phase == FAILED else "",
            message if phase == FAILED else "",
        ),
        BLOCKED: (
            phase in (AWAITING_APPROVAL, PAUSED)
            or (phase == FAILED and reason not in ("InvalidSpec", "InvalidInput")),
            reason if phase in (AWAITING_APPROVAL, PAUSED, FAILED) else "",
            message if phase in (AWAITING_APPROVAL, PAUSED, FAILED) else "",
        ),
        # kstatus (docs/gitops.md): InProgress while the operator works toward the spec (a Pending intent
        # waiting for a broker included), Failed when it cannot without the user; Current otherwise (done,
        # or the user's turn: AwaitingApproval and Paused are not failures)
        RECONCILING: (
            phase in RECONCILING_PHASES,
            reason if phase in RECONCILING_PHASES else phase,
            message if phase in RECONCILING_PHASES else "",
        ),
        STALLED: (phase == FAILED, reason if phase == FAILED else phase, message if phase == FAILED else ""),
    }


def intent_status(
    body: Mapping[str, Any],
    phase: str,
    reason: str,
    message: str,
    *,
    plan: PlanStatus | None = None,
    progress: ProgressStatus | None = None,
    retry: Mapping[str, Any] | None = None,
    last_execution: LastExecution | None = None,
) -> dict[str, Any]:
    """A full status for an intent resource in ``phase`` (``IntentStatus``, model/intent_status.py: each part
    parsed against its declaration, so a writer cannot write what the schema does not hold; only ``plan``,
    which a record of an earlier release may carry, has what the schema no longer holds left out), as the
    JSON of a merge patch. ``retry`` (decide's ``retry_of``) is kept while Planning when not given, and
    removed (null) in any other phase without it; a ``progress`` key the old status has and the new one
    does not is removed (null)."""
    old = IntentStatus.of(body)
    conditions = merge_conditions(
        [to_json(c) for c in old.conditions], phase_conditions(phase, reason, message)
    )
    new = IntentStatus(
        phase=phase,
        observed_generation=(body.get("metadata") or {}).get("generation"),
        conditions=IntentStatus.parse({"conditions": conditions}).conditions,
        message=message,
        plan=None if plan is None else PlanStatus.parse(to_json(plan)),  # held to its schema's bounds
        progress=None if progress is None else ProgressStatus.parse(to_json(progress)),
        retry=Retry.parse(retry) if retry is not None else (old.retry if phase == PLANNING else None),
        # kept as it is (a merge patch) until the next execution of a plan of this intent ends
        last_execution=last_execution,
    )
    status = to_json(new)
    if progress is not None and old.progress is not None:
        # a merge patch keeps what it does not name; null removes it (status.progress.diskHeld once a
        # hold ended, an ETA no longer known)
        status["progress"] = {**dict.fromkeys(to_json(old.progress)), **status["progress"]}
    if old.retry is not None and new.retry is None:
        status["retry"] = None
    return status


STATUS_PARTS = ("phase", "message", "plan", "progress", "observedGeneration", "retry", "lastExecution")


def unchanged(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``new`` (``intent_status``) says nothing ``old`` does not: no patch needed (a key ``new`` removes
    with null that ``old`` does not have is no change)."""

    def shown(status: Mapping[str, Any], key: str) -> Any:
        value = status.get(key)
        return {k: v for k, v in value.items() if v is not None} if key == "progress" and value else value

    return all(shown(old, k) == shown(new, k) for k in STATUS_PARTS)


def last_execution(
    plan_id: str,
    phase: str,
    plan: PlanStatus | None,
    started: float,
    finished: float,
    waited: float = 0.0,
) -> LastExecution:
    """``status.lastExecution`` of an execution that ended: its estimate before approval (the plan's
    ``estimate.seconds``, as the record keeps it: the copy time, no window counted) against the time it
    ran: from ``started`` to ``finished`` less the ``waited`` seconds it could not run (a window closed,
    paused: ``Execution.waited``), which are shown apart. Like is compared with like: a plan approved on
    Friday for a Saturday window is not counted a day late."""
    estimated = plan.estimate.seconds if plan is not None and plan.estimate is not None else None
    wall = max(0.0, finished - started)
    waits = min(max(waited, 0.0), wall)
    actual = round(wall - waits)
    return LastExecution(
        plan_id=plan_id,
        phase=phase,
        started_at=format_time(started),
        finished_at=format_time(finished),
        estimated_seconds=estimated,
        actual_seconds=actual,
        waited_seconds=round(waits),
        error_ratio=f"{actual / estimated:.2f}" if estimated else None,
    )


def plan_status(summary: PlanSummary | StatusSummary, plan_id: str) -> PlanStatus:
    """``status.plan``: the plan's id, partition and replica moves, bytes and their lower bound. No batch
    count: the executor does not submit fixed batches, it tops up the moves in flight as room frees
    within its limits (moves and bytes, per broker and per cluster: ``spec.limits``), so the planner's
    batches (the CLI summary's, ordered with ``--max-moves-per-broker``) would not describe it."""
    return PlanStatus(
        id=plan_id,
        moves=summary.partitions_changed,
        replica_moves=summary.replica_moves,
        bytes=summary.bytes_to_move,
        lower_bound_bytes=summary.lower_bound_bytes,
        waiting=summary.waiting,  # partitions left as they are: no plan can act on them now (bounded)
        review=summary.review,  # the reconcile's review ConfigMap (reconcile/plan_review.py)
        estimate=summary.estimate,  # the copy model's, made with the review (execution/copy_model.py)
    )


def advice_plan_status(summary: PlanSummary | StatusSummary) -> PlanStatus | None:
    """``status.plan`` of an Advise-mode policy: the moves it advises (never executed)."""
    adv = summary.advisories
    if adv is None or adv.plan is None:
        return None
    return PlanStatus(id=adv.plan.plan_id, moves=adv.partitions, bytes=adv.bytes_to_move)


def advice_message(summary: PlanSummary | StatusSummary) -> str:
    """What the cluster's Advise-mode policies would move (the planner's ``advisories``); nothing moves."""
    adv = summary.advisories or Advisories(())
    names = adv.policies
    target = "this policy" if len(names) <= 1 else f"the Advise policies {', '.join(names)}"
    tail = "(mode Advise: nothing is moved)"
    if adv.error:
        return f"advice: {target} cannot be met: {adv.error} {tail}"
    return (
        f"advice: {adv.partitions} partitions, {adv.bytes_to_move} bytes would move to meet {target} {tail}"
    )


def cluster_status(snap: ClusterSnapshot, in_flight: int) -> dict[str, Any]:
    """The KafkaCluster status from a full snapshot: every broker's summary and its dirs with the bytes of
    their replicas, bounded in bytes (reconcile/status_dirs.py: beyond the budget, the dirs to see first)."""
    used: dict[tuple[int, str], int] = {}
    for p in snap.partitions:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                used[(b, d)] = used.get((b, d), 0) + p.size_bytes
    rows = (
        StatusBroker(
            b.id,
            b.rack,
            tuple(
                StatusDir(
                    d.path, used.get((b.id, d.path), 0), d.total_bytes, d.usable_bytes, d.cordoned, d.online
                )
                for d in b.log_dirs
            ),
        )
        for b in snap.brokers
    )
    return {**brokers_status(rows), "reassignmentsInFlight": in_flight}


def light_cluster_status(
    racks: Mapping[int, str | None], dirs: Mapping[int, tuple[LogDirInfo, ...]], in_flight: int
) -> dict[str, Any]:
    """The KafkaCluster status from DescribeLogDirs without replicas (cost follows brokers x dirs): used
    bytes are the disk's (total - usable), as Kafka reports them; bounded as ``cluster_status``."""
    rows = (
        StatusBroker(
            b,
            racks.get(b),
            tuple(
                StatusDir(
                    d.path,
                    max(d.total_bytes - d.usable_bytes, 0),
                    max(d.total_bytes, 0),
                    max(d.usable_bytes, 0),
                    bool(d.cordoned),
                    d.online,
                )
                for d in dirs.get(b, ())
            ),
        )
        for b in dirs
    )
    return {**brokers_status(rows), "reassignmentsInFlight": in_flight}


def patch_problem(patch: Mapping[str, Any]) -> str | None:
    """What breaks the status schema in ``patch`` (a KafkaCluster status merge patch), checked against its
    declaration (model/cluster_status.py); None when nothing does. A writer's defect: the caller logs it
    and sends the patch anyway, for the apiserver to decide (it would refuse a bad value, or prune an
    unknown field silently)."""
    try:
        check_patch(patch)
    except BadInputError as e:
        return str(e)
    return None
