"""The plan executor: stateless ticks over a durable execution record (docs/architecture.md).

``tick(gateway, ex, limits)`` reads what it needs from Kafka (the partitions in flight and the next ones
in line, execution/view.py), decides from the record, acts, and saves; ``run`` loops ticks until the phase
is terminal. Every Kafka action is recorded as an intent (``ex.save``) before it is made and confirmed
after, so a crash in between is reconciled against ListPartitionReassignments and the current replicas on
restart instead of resubmitting. A save that loses a race to another writer raises ``RecordConflict``
before anything is sent. Phases change only through ``record.next_phase``.

Concurrency: moves in flight per broker and per cluster (counts), and bytes in flight per broker, inbound
and outbound (``Limits.bytes_per_broker``: the throttle, or an assumed rate when unthrottled, times a
target batch duration), so thousands of small partitions move together and large ones a few at a time;
a broker with nothing in flight always takes one move, however large. Partitions go in execution order
(the under-replicated ones a move repairs first, fewest in-sync replicas first; then higher priority, then
moves off nearly full dirs, then smallest first). A dead broker's replicas are lost: a move off it copies
from the live leader, and the dead broker is neither throttled nor waited for.

Rates (``Limits.hold_rate``): each moving tick measures what each broker really copies, from the same read,
and sets Kafka's rates above the throttle by the shortfall (execution/rate_watch.py), so the achieved rate
is the throttle; off, Kafka's rate is the throttle (and brokers achieve less).

Disks: each moving tick looks at the dirs its moves write to, from the DescribeLogDirs it read
(execution/disk.py, execution/disk_watch.py): no new move into a dir above the record's ``maxDiskShare``,
and the moves into a dir about to pass its hard stop held (their throttle lowered), never reverted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from ..kafka.gateway import KafkaGateway, KafkaOperationError, KafkaUnavailableError
from ..kafka.throttles import Move, ThrottleError, apply_throttles
from ..model.errors import BadInputError
from ..model.plan import ANY_DIR, Plan
from ..model.throttle_state import ThrottleState
from . import lookahead, promotion
from .adapting import adapt, first_rates
from .adaptive import Ceilings
from .disk import TRICKLE, watch_disks
from .lookahead import work_topics
from .progress import Progress, compute_progress, in_flight_bytes
from .rate import factors, hold_rates
from .record import MAX_SAMPLES, Execution, Original
from .record_doc import (
    ASSUMED_UNTHROTTLED_RATE,
    TERMINAL,
    TRANSITIONS,
    Event,
    Limits,
    Phase,
    PState,
    Submission,
    next_phase,
)
from .safety import check_plan_min_isr, defend, repairs, unsafe
from .throttling import clear_owned
from .view import TickView, at_target, read_view
from .window_cap import cap_in_flight, capped

__all__ = [
    "ASSUMED_UNTHROTTLED_RATE",
    "TRANSITIONS",
    "Limits",
    "live_progress",
    "mismatches",
    "next_phase",
    "progress",
    "run",
    "sweep",
    "tick",
    "work_topics",
]

log = logging.getLogger(__name__)

DIVERGED_TICKS = 3  # a move seen neither running nor at target this many ticks in a row...
DIVERGED_S = 30.0  # ...and for this long is taken as cancelled or changed outside (not a metadata lag)
TICK_RETRY_S = 300.0  # run(wait=True): how long ticks may keep failing on Kafka errors before giving up
CONFIRM_READS = 4  # reads of a plan partition seen off target at completion before it is reopened...
CONFIRM_WAIT_S = 1.0  # ...this far apart (a broker's metadata lagging the controller's is not a change)


# ---- validation and completion (the only full reads) ---------------------------------------------


def _all_keys(ex: Execution) -> list[tuple[str, int]]:
    return [t.key for t in ex.plan.targets]


def _validate(ex: Execution, gateway: KafkaGateway, scoped: bool = False) -> None:
    """Every partition, broker and dir of the plan exists (a full snapshot, once; ``scoped``: of the plan's
    partitions alone); the baseline is stored; partitions already at target are done."""
    snap = gateway.snapshot(only=_all_keys(ex)) if scoped else gateway.snapshot()
    _bind_cluster(ex, snap.cluster_id)
    plan = ex.plan.plan
    plan.check_against(snap, "plan", live_only=True)
    min_isr = check_plan_min_isr(ex, gateway)
    baseline = []
    for i, t in enumerate(plan.partitions):
        p = snap.partition(t.topic, t.partition)
        assert p is not None  # checked above
        in_sync = len(set(p.isr) & set(p.replicas))
        a = ex.doc.adopted.get(i)  # a move in flight taken over from a superseded plan: as that one found it
        replicas, dirs = (tuple(a.replicas), tuple(a.log_dirs)) if a is not None else (p.replicas, p.log_dirs)
        # what each new replica copies (progress and ETA): local bytes only for a tiered topic
        baseline.append(Original(replicas, dirs, p.copy_bytes, in_sync, min_isr.get(t.topic, 0)))
    usage = {
        (b.id, d.path): 1.0 - d.usable_bytes / d.total_bytes
        for b in snap.brokers
        for d in b.log_dirs
        if d.total_bytes > 0
    }
    ex.set_baseline(baseline, usage)
    view = read_view(gateway, _all_keys(ex))
    for i, t in enumerate(ex.plan.targets):
        if at_target(view, t):
            ex.finish(i)


def _bind_cluster(ex: Execution, cluster_id: str | None) -> None:
    if cluster_id is None:
        return
    if ex.doc.cluster_id is None:
        ex.doc.cluster_id = cluster_id
    elif ex.doc.cluster_id != cluster_id:
        raise BadInputError(
            f"the execution record belongs to cluster {ex.doc.cluster_id}, but the cluster reached is "
            f"{cluster_id}: refusing to act on another cluster (use the state of this cluster)",
            ex.store.where,
        )


def _confirm_complete(ex: Execution, gateway: KafkaGateway) -> bool:
    """Check every plan partition against the live cluster; partitions not at target go back to
    pending (changed outside since they were done). True when all are at target."""
    targets = ex.plan.targets
    view = read_view(gateway, _all_keys(ex))
    _bind_cluster(ex, view.cluster_id)
    reopened = [i for i, t in enumerate(targets) if not at_target(view, t)]
    for _ in range(CONFIRM_READS - 1):
        if not reopened:
            break
        # brokers apply metadata after the controller, some later than others: what one still shows as
        # the old placement another may show done; only what stays off target is reopened
        time.sleep(CONFIRM_WAIT_S)
        again = read_view(gateway, [targets[i].key for i in reopened])
        reopened = [i for i in reopened if not at_target(again, targets[i])]
    for i in reopened:
        ex.reopen(i)
    if reopened:
        names = ", ".join(ex.plan.targets[i].name for i in reopened[:10])
        ex.error(
            f"{len(reopened)} partition(s) left their target since they were moved ({names}): moving again"
        )
    return not reopened


# ---- a moving tick ---------------------------------------------------------------------------------


def _reconcile(ex: Execution, view: TickView) -> bool:
    """Intents not confirmed (a crash between recording and acting): adopt them if Kafka has them."""
    changed = False
    for i, sub in list(ex.doc.in_flight.items()):
        if sub.state != Submission.INTENT:
            continue
        t = ex.plan.targets[i]
        moving = view.in_flight.get(t.key)
        p = view.partitions.get(t.key)
        # Kafka runs this move if its reassignment's target is ours (a superseded plan's stranded move to
        # the same partition has another target: that one is not ours)
        if (moving is not None and set(moving.replicas) - set(moving.removing) == set(t.replicas)) or (
            p is not None and p.replicas == t.replicas
        ):
            sub.state = Submission.CONFIRMED
        else:
            ex.forget(i)  # never reached Kafka: selected again
        changed = True
    return changed


def _diverged(ex: Execution, view: TickView) -> list[str]:
    """Our confirmed moves that Kafka no longer runs but that did not reach their target."""
    out = []
    for i in ex.active():
        t = ex.plan.targets[i]
        p = view.partitions.get(t.key)
        if (
            ex.doc.in_flight[i].state == Submission.CONFIRMED
            and t.key not in view.in_flight
            and not ex.plan.dir_only(i)
            and (p is None or p.replicas != t.replicas)
        ):
            out.append(f"{t.name} (replicas {list(p.replicas) if p else None}, target {list(t.replicas)})")
    return out


def _unhealthy(ex: Execution, view: TickView, candidates: list[int]) -> list[str]:
    """Why moving must pause: brokers of our moves that are not live or do not answer the operator (their
    throttles could not be set), partitions (of the topics read) under-replicated for reasons other than
    our moves, targets below min ISR (execution/safety.py)."""
    brokers = {b for i in (*ex.active(), *candidates) for b in ex.plan.targets[i].replicas}
    return (
        [f"broker {b} is not live" for b in sorted(brokers - view.live)]
        + [f"broker {b} does not answer the operator" for b in sorted(brokers & view.silent)]
        + unsafe(ex, view, candidates)
    )


def _dir_moves(
    ex: Execution, view: TickView, gateway: KafkaGateway, full: Iterable[tuple[int, str]] = ()
) -> None:
    """Named target dirs of our active partitions whose replica exists elsewhere: AlterReplicaLogDirs
    (not into a dir in ``full``, above the disk headroom: started when it is back under it); copies done
    that Kafka has not swapped in for long are reported (execution/promotion.py)."""
    stalled = promotion.unpromoted(
        (ex.plan.targets[i] for i in ex.active()), view, ex.doc.caught_up, time.time()
    )
    if stalled:
        ex.error(promotion.describe(stalled))
        log.warning("execution %s: %s", ex.doc.execution_id, promotion.describe(stalled))
    moves: dict[tuple[str, int, int], str] = {}
    skip = set(full)
    for i in ex.active():
        t = ex.plan.targets[i]
        for b, d in zip(t.replicas, t.log_dirs, strict=True):
            r = view.replica(t.topic, t.partition, b)
            if (b, d) in skip:
                continue
            if d != ANY_DIR and r.current is not None and r.current != d and r.future != d:
                moves[(t.topic, t.partition, b)] = d
    if not moves:
        return
    ex.doc.counters.dir_submissions += len(moves)
    ex.save()
    errors = gateway.alter_replica_log_dirs(moves)
    failed = [f"{t}-{p} on broker {b}: {e}" for (t, p, b), e in errors.items() if not e.replica_not_available]
    if failed:
        ex.error("moving replicas between dirs failed (retried next tick): " + "; ".join(failed[:5]))


def _select(ex: Execution, view: TickView, limits: Limits, candidates: list[int]) -> list[int]:
    """The next batch from ``candidates`` (execution order) within the count and byte limits."""
    plan = ex.plan
    count: dict[int, int] = {}
    inbound: dict[int, int] = {}
    outbound: dict[int, int] = {}

    def senders(i: int) -> tuple[int, ...]:
        p = view.partitions.get(plan.targets[i].key)
        leader = p.leader if p is not None and p.leader is not None else plan.original(i).replicas[0]
        return (leader,) if plan.adding[i] else ()  # followers copy from the leader

    def charge(i: int) -> None:
        size = plan.baseline_size(i)
        for b in plan.involved(i):
            count[b] = count.get(b, 0) + 1
        for b in plan.adding[i] + plan.dir_moving[i]:
            inbound[b] = inbound.get(b, 0) + size
        for b in senders(i):
            outbound[b] = outbound.get(b, 0) + size * len(plan.adding[i])

    for i in ex.active():
        charge(i)
    room = limits.max_moves - len(ex.doc.in_flight)
    cap = limits.bytes_per_broker
    batch: list[int] = []
    for i in _by_health(ex, view, candidates):
        if room <= 0:
            break
        t = plan.targets[i]
        p = view.partitions.get(t.key)
        if p is None or t.key in view.in_flight:
            continue  # someone else's move (or a stranded one being reverted): wait for it
        if p.under_replicated and not repairs(t, p):
            continue  # never move an under-replicated partition, unless the move repairs it
        if any(count.get(b, 0) >= limits.max_moves_per_broker for b in plan.involved(i)):
            continue
        size = plan.baseline_size(i)
        if any(inbound.get(b, 0) and inbound[b] + size > cap for b in plan.adding[i] + plan.dir_moving[i]):
            continue
        out = size * len(plan.adding[i])
        if any(outbound.get(b, 0) and outbound[b] + out > cap for b in senders(i)):
            continue
        charge(i)
        batch.append(i)
        room -= 1
    return batch


def _by_health(ex: Execution, view: TickView, candidates: list[int]) -> list[int]:
    """``candidates`` with those now under-replicated first, the fewest in-sync replicas (against min ISR)
    first (a stable sort: the execution order otherwise; a broker that died since validation)."""
    plan = ex.plan

    def urgency(i: int) -> tuple[int, int]:
        t = plan.targets[i]
        p = view.partitions.get(t.key)
        if p is None:
            return (2, 0)
        in_sync = len(set(p.isr) & set(p.replicas))
        return Original(p.replicas, p.log_dirs, 0, in_sync, view.min_isr.get(t.topic, 0)).urgency

    return sorted(candidates, key=urgency)


def _moves(ex: Execution, indices: list[int], limits: Limits, live: frozenset[int]) -> list[Move]:
    """The moves to throttle; a broker that is not live copies nothing and cannot be configured (the
    lost replicas of a dead broker), so it is left out of their current replicas."""
    plan = ex.plan
    return [
        Move(
            plan.targets[i].topic,
            plan.targets[i].partition,
            tuple(b for b in plan.original(i).replicas if b in live),
            plan.targets[i].replicas,
            plan.rate[i] or limits.throttle,
        )
        for i in indices
    ]


def _throttle(
    ex: Execution,
    gateway: KafkaGateway,
    view: TickView,
    batch: list[int],
    limits: Limits,
    ceilings: Ceilings | None = None,
) -> None:
    """Throttle ``batch`` (and re-assert the rates of moves in flight on the same brokers); what will be
    set is saved in the record before Kafka is touched. Brokers that are not live, or did not answer this
    tick, are left out (their rate is set with the next batch that involves them once they answer)."""
    plan = ex.plan
    rated = [m for m in _moves(ex, ex.active() + batch, limits, view.live) if m.rate is not None]
    if not batch or not rated:
        return
    dir_brokers = {b for i in batch if plan.rate[i] or limits.throttle for b in plan.dir_moving[i]}

    def write_ahead(planned: ThrottleState) -> None:
        ex.doc.throttles = planned
        ex.save()

    dir_rate = min((m.rate for m in rated if m.rate is not None), default=None)
    held = {(r.broker, r.config): str(TRICKLE) for r in ex.doc.disk.rates}  # a held rate stays held
    try:
        ex.doc.throttles = apply_throttles(
            gateway,
            rated,
            limits.throttle,
            dir_rate=dir_rate,
            dir_move_brokers=sorted(dir_brokers),
            state=ex.doc.throttles,
            before_alter=write_ahead,
            claim=ex.doc.claim_owner,
            override=held,
            factors=factors(ex),
            brokers=view.answering,
            ceilings=first_rates(ex, ceilings, rated, limits.throttle, view.answering),
        )
    except ThrottleError as e:
        ex.doc.throttles = e.state
        raise


def _submit(ex: Execution, gateway: KafkaGateway, view: TickView, batch: list[int]) -> None:
    """Two-phase: record the intents, pre-assign named dirs of new replicas, submit, record the outcome."""
    plan = ex.plan
    now = time.time()
    targets: dict[tuple[str, int], list[int]] = {}
    new_dirs: dict[tuple[str, int, int], str] = {}
    for i in batch:
        t = plan.targets[i]
        if plan.dir_only(i):
            ex.submit(i, Submission.CONFIRMED, now)
            continue
        ex.submit(i, Submission.INTENT, now)
        ex.count_submission(i)
        targets[t.key] = list(t.replicas)
        for b, d in zip(t.replicas, t.log_dirs, strict=True):
            if d != ANY_DIR and b in plan.adding[i]:
                new_dirs[(t.topic, t.partition, b)] = d
    ex.save()
    if new_dirs:  # the broker creates the new replica in that dir (KIP-113), instead of moving it later
        ex.doc.counters.dir_submissions += len(new_dirs)
        gateway.alter_replica_log_dirs(new_dirs)
    errors = gateway.alter_reassignments(targets)  # one attempt: a lost answer leaves the intents
    failed: list[str] = []
    unknown: list[str] = []
    later: list[str] = []
    for key in targets:
        i = plan.index[key]
        err = errors.get(key)
        if err is None:
            ex.doc.in_flight[i].state = Submission.CONFIRMED
        elif err.outcome_unknown:
            # Kafka may have started it: the intent stays, and the next tick adopts it if Kafka shows it
            # (never sent twice), else sends it again as a first submission
            unknown.append(f"{key[0]}-{key[1]}: {err}")
        else:
            ex.forget(i, refused=True)
            why = f"{key[0]}-{key[1]}: {err}"
            if err.code == "INVALID_REPLICATION_ASSIGNMENT" and (
                cordoned := view.wholly_cordoned(targets[key])
            ):
                named = ", ".join(map(str, cordoned))
                why += f" (broker(s) {named} have every log dir cordoned: Kafka 4.4+ refuses it)"
            (later if err.retriable else failed).append(why)
    if unknown or later:
        ex.error(
            "; ".join(
                f"{what} {len(items)} move(s) ({', '.join(items[:5])})"
                for what, items in (("Kafka's answer unknown for", unknown), ("Kafka refused for now", later))
                if items
            )
            + ": checked and retried next tick"
        )
    if failed:
        ex.error("Kafka refused moves: " + "; ".join(failed[:10]))
        ex.move(Event.ERROR)
    ex.save()


def _finish(ex: Execution, gateway: KafkaGateway) -> None:
    clear_owned(ex, gateway)
    described = gateway.describe_partitions({t.topic for t in ex.plan.targets})
    elect = [
        t.key
        for t in ex.plan.targets
        if (p := described.get(t.key)) is not None and p.leader != t.replicas[0]
    ]
    if elect:
        errors = gateway.elect_preferred_leaders(elect)
        if errors:
            ex.error(
                "preferred-leader election failed for "
                + ", ".join(f"{t}-{p}: {e}" for (t, p), e in list(errors.items())[:10])
            )
    ex.move(Event.FINISHED)
    ex.save()


def _cancel(ex: Execution, gateway: KafkaGateway, view: TickView) -> None:
    """KIP-455 revert of our in-flight moves, then the original replica order, then throttles off."""
    plan = ex.plan
    ours = ex.active()
    running = [i for i in ours if plan.targets[i].key in view.in_flight]
    if running:
        ex.doc.counters.cancels += len(running)
        ex.save()
        errors = gateway.alter_reassignments({plan.targets[i].key: None for i in running})
        bad = {k: e for k, e in errors.items() if e.code != "NO_REASSIGNMENT_IN_PROGRESS"}
        if bad:
            ex.error(
                "cancel refused for " + ", ".join(f"{t}-{p}: {e}" for (t, p), e in list(bad.items())[:10])
            )
        ex.save()
        return
    reorder: dict[tuple[str, int], list[int]] = {}
    settling = False
    undo_dirs: dict[tuple[str, int, int], str] = {}
    for i in ours:
        t, original = plan.targets[i], plan.original(i)
        p = view.partitions.get(t.key)
        if p is None:
            ex.finish(i, PState.CANCELLED)
            continue
        if at_target(view, t):
            ex.finish(i)  # it finished before the cancel reached it
            continue
        if set(p.replicas) == set(t.replicas) != set(original.replicas):
            ex.finish(i, PState.CANCELLED)  # the move completed before the cancel: kept
            continue
        if set(p.replicas) != set(original.replicas):
            settling = True  # metadata still shows the reverted move's replicas: look again next tick
            continue
        if p.replicas != original.replicas:
            reorder[t.key] = list(original.replicas)
        for b, d in zip(original.replicas, original.log_dirs, strict=True):
            r = view.replica(t.topic, t.partition, b)
            if r.future is not None and r.current is not None and d == r.current:
                undo_dirs[(t.topic, t.partition, b)] = r.current  # drops the future replica
        ex.finish(i, PState.CANCELLED)
    if settling:
        ex.save()
        return
    if reorder:
        ex.doc.counters.reorders += len(reorder)
        ex.save()
        errors = gateway.alter_reassignments(reorder)
        # Kafka 4.4 refuses a reassignment naming a broker whose every dir is cordoned (a decommission's
        # broker), a mere reorder too: those partitions keep their replicas, in Kafka's order
        kept = {
            k: cordoned
            for k, e in errors.items()
            if e.code == "INVALID_REPLICATION_ASSIGNMENT" and (cordoned := view.wholly_cordoned(reorder[k]))
        }
        errors = {k: e for k, e in errors.items() if k not in kept}
        if kept:
            ex.doc.counters.orders_kept += len(kept)
            brokers = sorted({b for bs in kept.values() for b in bs})
            ex.error(
                f"replica order not restored for {len(kept)} partition(s) ("
                + ", ".join(f"{t}-{p}" for t, p in list(kept)[:10])
                + f"): Kafka refuses a reassignment naming broker(s) {', '.join(map(str, brokers))}, whose "
                "every log dir is cordoned (Kafka 4.4+); their replicas are the ones they had before"
            )
        if errors:
            ex.error(
                "restoring the replica order failed for "
                + ", ".join(f"{t}-{p}: {e}" for (t, p), e in list(errors.items())[:10])
            )
            for key in errors:
                ex.submit(plan.index[key], Submission.CONFIRMED, time.time())  # retried next tick
            ex.save()
            return
    if undo_dirs:
        gateway.alter_replica_log_dirs(undo_dirs)
    clear_owned(ex, gateway)
    ex.move(Event.REVERTED)
    ex.save()


# ---- tick / run ------------------------------------------------------------------------------------


def sweep(gateway: KafkaGateway, ex: Execution) -> None:
    """A terminal execution still holding throttles (a crash after the last move): clear them."""
    if ex.phase in TERMINAL and not ex.doc.throttles.empty:
        clear_owned(ex, gateway)


# the phases in which a closed window (or the safety gate: Paused) keeps the execution from running
MAY_WAIT = frozenset({Phase.PENDING, Phase.VALIDATING, Phase.THROTTLING, Phase.MOVING, Phase.PAUSED})


def kept_waiting(phase: Phase, window_open: bool, in_flight: bool) -> bool:
    """Whether an execution in ``phase`` after a tick waits, idle: every window closed or paused by the
    safety gate, and no move of it in flight (moves in flight finishing after the window closed, at
    ``outsideWindowBytesPerSecond`` or their own rate, are running time). Finishing and cancelling go
    on whatever the windows."""
    return phase in MAY_WAIT and (not window_open or phase == Phase.PAUSED) and not in_flight


def tick(
    gateway: KafkaGateway,
    ex: Execution,
    limits: Limits,
    *,
    scoped: bool = False,
    window_open: bool = True,
    ceilings: Ceilings | None = None,
) -> bool:
    """One observe-decide-act step. Kafka being unreachable raises; so does a save that lost a race
    (``RecordConflict``), before acting. Returns True when another tick at once would submit moves this one
    could not: it reads its candidates before it sees which moves have finished, so a tick that finds a
    whole wave done has read ahead only for the room it had (execution/lookahead.py); the caller then
    ticks again at once (``run``; the operator's pass checks the new topics' ACLs first), instead of
    leaving the room idle for a poll. ``scoped``:
    validation reads only the plan's partitions (the new-partition lane's small plans), not the cluster.
    ``window_open`` False (outside the cluster's maintenance windows, model/windows.py): no new move is
    submitted; the moves in flight go on and are followed to their end. ``ceilings``: the adaptive
    throttle's inputs (execution/adaptive.py; None: the static throttle alone). The time a closed window
    or the safety gate keeps it from running is counted in the record (``Execution.account``)."""
    ex.doc.counters.ticks += 1
    if ex.phase in TERMINAL:
        sweep(gateway, ex)
        return False
    started = time.time()
    if ex.phase == Phase.PENDING:
        ex.move(Event.START if not ex.doc.cancel_requested else Event.CANCEL)
        ex.save()
    if ex.phase == Phase.VALIDATING:
        try:
            _validate(ex, gateway, scoped)
        except BadInputError as e:
            ex.error(e.message)
            ex.move(Event.INVALID)
            ex.save()
            raise
        ex.move(Event.ALL_DONE if ex.all_done else Event.VALID)
        ex.save()
    scan = lookahead.ahead(ex, limits)
    candidates = lookahead.candidates(ex, scan)
    keys = [ex.plan.targets[i].key for i in (*ex.active(), *candidates)]
    adding = {b for i in (*ex.active(), *candidates) for b in ex.plan.adding[i]}
    view = read_view(gateway, keys, adding, min_isr=True)
    _bind_cluster(ex, view.cluster_id)
    if _reconcile(ex, view):
        ex.save()
    if ex.doc.cancel_requested and ex.phase not in (Phase.CANCELLING, Phase.FINISHING):
        ex.move(Event.CANCEL)  # in Finishing every move is done already: finishing is quicker
        ex.save()
    if ex.phase == Phase.THROTTLING:
        _throttle(ex, gateway, view, _select(ex, view, limits, candidates), limits, ceilings)
        ex.move(Event.THROTTLED)
        ex.save()
    if ex.phase in (Phase.MOVING, Phase.PAUSED):
        _moving(ex, gateway, view, limits, candidates, window_open, ceilings)
    if ex.phase == Phase.FINISHING:
        _finish(ex, gateway)
    elif ex.phase == Phase.CANCELLING:
        _cancel(ex, gateway, view)
    _sample(ex, view)
    # the time it could not run (a window closed, paused) is not its running time (status.lastExecution)
    ex.account(started, time.time(), waiting=kept_waiting(ex.phase, window_open, bool(ex.doc.in_flight)))
    ex.save()
    return lookahead.refill_due(ex, limits, scan, len(candidates), window_open)


def _moving(
    ex: Execution,
    gateway: KafkaGateway,
    view: TickView,
    limits: Limits,
    candidates: list[int],
    window_open: bool,
    ceilings: Ceilings | None = None,
) -> None:
    for i in ex.active():
        if at_target(view, ex.plan.targets[i]):
            ex.finish(i)
    diverged = _diverged(ex, view)
    counters = ex.doc.counters
    counters.diverged_ticks = counters.diverged_ticks + 1 if diverged else 0
    now = time.time()
    counters.diverged_since = (counters.diverged_since or now) if diverged else None
    # a broker's metadata can lag the controller by seconds under load: only a lasting divergence counts
    if counters.diverged_ticks >= DIVERGED_TICKS and now - (counters.diverged_since or now) >= DIVERGED_S:
        ex.error(
            "reassignment of " + ", ".join(diverged[:10]) + " was cancelled or changed outside this execution"
        )
        ex.move(Event.ERROR)
        return
    if ex.all_done and _confirm_complete(ex, gateway):
        if ex.phase == Phase.PAUSED:
            ex.move(Event.HEALTHY)
        ex.move(Event.ALL_DONE)
        return
    _revert_stranded(ex, gateway, view)
    hold = defend(ex, gateway, limits, view.answering)
    bad = _unhealthy(ex, view, candidates)
    if bad or hold:
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        ex.error(hold or f"paused: {shown}")
        if ex.phase == Phase.MOVING:
            ex.move(Event.UNHEALTHY)
    elif ex.phase == Phase.PAUSED:
        ex.error(None)
        ex.move(Event.HEALTHY)
    watch = watch_disks(ex, gateway, view, candidates)
    _dir_moves(ex, view, gateway, watch.above)
    cap = None if window_open else limits.outside_window  # outside the windows: the moves in flight capped
    in_flight = _moves(ex, ex.active(), limits, view.live)
    rate = limits.throttle if cap is None else min(limits.throttle or cap, cap)
    adapt(ex, gateway, capped(in_flight, cap), rate, ceilings, view.answering)
    if limits.hold_rate:
        hold_rates(ex, gateway, view, capped(in_flight, cap), rate)
    cap_in_flight(ex, gateway, view, in_flight, limits, cap)
    if ex.phase != Phase.MOVING or not window_open:
        return
    batch = _select(ex, view, limits, [i for i in candidates if i not in watch.deferred])
    if batch:
        _throttle(ex, gateway, view, batch, limits, ceilings)
        _submit(ex, gateway, view, batch)


def _revert_stranded(ex: Execution, gateway: KafkaGateway, view: TickView) -> None:
    """The reassignments a superseded plan left moving toward a broker that died (``retarget``, not yet
    ours): reverted (KIP-455 cancel: Kafka drops the replicas they were adding, the data stays where it
    was), after which the partition is a pending move of this plan like any other. A reassignment
    submitted over a running one is not enough: Kafka keeps waiting for the dead broker it was adding."""
    keys = [
        ex.plan.targets[i].key
        for i in ex.doc.retarget
        if ex.state(i) == PState.PENDING and ex.plan.targets[i].key in view.in_flight
    ]
    if not keys:
        return
    ex.doc.counters.reverted_stranded += len(keys)
    ex.save()
    errors = gateway.alter_reassignments(dict.fromkeys(keys))
    bad = {k: e for k, e in errors.items() if e.code != "NO_REASSIGNMENT_IN_PROGRESS"}
    if bad:
        ex.error(
            "reverting stranded moves refused for "
            + ", ".join(f"{t}-{p}: {e}" for (t, p), e in list(bad.items())[:10])
        )


def _sample(ex: Execution, view: TickView) -> None:
    """Bytes copied per in-flight partition (never less than seen before: a broker that is down or slow
    to answer does not make progress go backwards), a rate sample, and the progress summary."""
    if ex.plan.baseline is None:
        return
    seen = ex.doc.copied
    ex.doc.copied = {i: max(c, seen.get(i, 0)) for i, c in in_flight_bytes(ex, view).items()}
    p = compute_progress(ex)
    ex.doc.samples.append((time.time(), float(p.bytes_moved)))
    del ex.doc.samples[:-MAX_SAMPLES]
    ex.doc.progress = p.to_json()


def progress(ex: Execution) -> Progress:
    """The record's progress as of its last tick."""
    return compute_progress(ex)


def live_progress(gateway: KafkaGateway, ex: Execution) -> Progress:
    """Progress with the bytes copied of in-flight partitions read now (the record is not saved)."""
    if ex.plan.baseline is None or not ex.doc.in_flight:
        return compute_progress(ex)
    active = ex.active()
    view = read_view(
        gateway, [ex.plan.targets[i].key for i in active], {b for i in active for b in ex.plan.adding[i]}
    )
    seen = ex.doc.copied
    ex.doc.copied = {i: max(c, seen.get(i, 0)) for i, c in in_flight_bytes(ex, view).items()}
    return compute_progress(ex)


def run(
    gateway: KafkaGateway,
    ex: Execution,
    limits: Limits,
    *,
    wait: bool,
    poll_s: float = 2.0,
    cancel_requested: Callable[[], bool] = lambda: False,
    on_tick: Callable[[Execution], None] = lambda ex: None,
    retry_s: float = TICK_RETRY_S,
) -> Execution:
    """Tick until the phase is terminal (``wait``) or once; ``cancel_requested`` polls for a cancel.

    With ``wait``, a tick that fails on a Kafka error (a broker down or restarting, the cluster briefly
    unreachable) is recorded in ``lastError`` and retried on the next poll, as the operator's next
    reconcile would: ticks are stateless and intents are reconciled; the gateway's clients are reopened.
    Failures for longer than ``retry_s`` in a row raise the last one."""
    sweep(gateway, ex)
    failing_since: float | None = None
    refill = False
    while True:
        if not ex.doc.cancel_requested and ex.phase not in TERMINAL and cancel_requested():
            ex.doc.cancel_requested = True
            ex.save()
        try:
            if refill:
                ex.doc.counters.refills += 1  # saved by the tick
            refill = tick(gateway, ex, limits) and not refill  # tick again at once, once in a row
            failing_since = None
        except (KafkaOperationError, KafkaUnavailableError) as e:
            now = time.monotonic()
            failing_since = now if failing_since is None else failing_since
            refill = False
            if not wait or now - failing_since > retry_s:
                raise
            log.warning("tick failed, retrying in %.1fs: %s", poll_s, e.message)
            ex.error(f"tick failed, retrying: {e.message}")
            ex.save()
            gateway.close()  # the next tick reconnects with fresh metadata (a restarted broker)
        on_tick(ex)
        if not wait or ex.phase in TERMINAL:
            return ex
        if not refill:
            time.sleep(poll_s)


def mismatches(gateway: KafkaGateway, plan: Plan, ex: Execution | None = None) -> list[str]:
    """Why the cluster does not match ``plan`` (empty = it does): replicas, order, dirs, moves still in
    flight, throttles still recorded as ours."""
    view = read_view(gateway, [t.key for t in plan.partitions])
    out: list[str] = []
    for t in plan.partitions:
        p = view.partitions.get(t.key)
        if p is None:
            out.append(f"{t.name}: does not exist")
            continue
        if t.key in view.in_flight:
            out.append(f"{t.name}: still reassigning")
        if p.replicas != t.replicas:
            out.append(f"{t.name}: replicas {list(p.replicas)}, plan {list(t.replicas)}")
        for b, d in zip(t.replicas, t.log_dirs, strict=True):
            current, future = view.replica_dirs(t.topic, t.partition, b)
            if d != ANY_DIR and (current != d or future is not None):
                out.append(f"{t.name}: replica on broker {b} in {current}, plan {d}")
    if ex is not None and not ex.doc.throttles.empty:
        out.append(f"throttles set by execution {ex.doc.plan_id} are still in place")
    return out
