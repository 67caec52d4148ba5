"""The plan executor: stateless ticks over a durable execution record (DESIGN.md section 5).

``tick(gateway, record, limits, save)`` reads Kafka (placement, in-flight reassignments, log dirs),
decides from the record alone, acts, and returns the updated record; ``run`` loops ticks until the
phase is terminal. Every Kafka action is recorded as an intent (``save``) before it is made and as
confirmed after, so a crash in between is reconciled against ListPartitionReassignments and the current
replicas on restart instead of resubmitting. Phases change only through ``state.next_phase``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..kafka.gateway import (
    KafkaGateway,
    KafkaOperationError,
    KafkaUnavailableError,
)
from ..kafka.throttles import Move, ThrottleError, ThrottleState, apply_throttles, clear_throttles
from ..model.errors import BadInputError
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from . import state as st
from .progress import Progress, compute_progress, in_flight_bytes
from .state import TRANSITIONS as TRANSITIONS  # the state machine, re-exported
from .state import next_phase as next_phase
from .view import Record, View, at_target, involved_brokers, read_view

log = logging.getLogger(__name__)

Save = Callable[[Record], None]
MAX_SAMPLES = 30
DIVERGED_TICKS = 3
TICK_RETRY_S = 300.0  # run(wait=True): how long ticks may keep failing on Kafka errors before giving up


@dataclass(frozen=True, slots=True)
class Limits:
    """Concurrency and throttle settings of an execution."""

    max_moves_per_broker: int = 5  # as the planner's batches (and Cruise Control's default)
    max_moves: int = 10
    throttle: int | None = None  # bytes/s for inter-broker and log-dir moves; None = unthrottled


def _move(record: Record, event: str) -> None:
    record["phase"] = next_phase(record["phase"], event)


def _active(record: Record) -> list[str]:
    done = set(record["done"])
    return [k for k, s in record["submitted"].items() if k not in done and s["state"] != "cancelled"]


# ---- phases -----------------------------------------------------------------------------------------


def _validate(record: Record, view: View) -> None:
    """Every partition, broker and dir of the plan exists; partitions already at target are done."""
    snap = view.snapshot
    plan = st.record_plan(record)
    plan.check_against(snap, "plan", live_only=True)
    for t in plan.partitions:
        p = snap.partition(t.topic, t.partition)
        assert p is not None  # checked above
        key = st.tp_key(*t.key)
        record["original"].setdefault(
            key, {"replicas": list(p.replicas), "logDirs": list(p.log_dirs), "sizeBytes": p.size_bytes}
        )
        if at_target(view, t) and key not in record["done"]:
            record["done"].append(key)


def _reconcile(record: Record, view: View, save: Save) -> None:
    """Intents not confirmed (a crash between recording and acting): adopt them if Kafka has them."""
    plan = st.record_plan(record).by_key()
    changed = False
    for key, sub in list(record["submitted"].items()):
        if sub["state"] != "intent":
            continue
        t = plan[st.parse_tp(key)]
        moving = view.in_flight.get(t.key)
        p = view.snapshot.partition(t.topic, t.partition)
        if (moving is not None and set(t.replicas) <= set(moving.replicas)) or (
            p is not None and p.replicas == t.replicas
        ):
            sub["state"] = "confirmed"
        else:
            del record["submitted"][key]  # never reached Kafka: select it again (the counter shows it)
        changed = True
    if changed:
        save(record)


def _mark_done(record: Record, view: View) -> None:
    for t in st.record_plan(record).partitions:
        key = st.tp_key(*t.key)
        if key not in record["done"] and at_target(view, t):
            record["done"].append(key)


def _diverged(record: Record, view: View) -> list[str]:
    """Our confirmed moves that Kafka no longer runs but that did not reach their target."""
    plan = st.record_plan(record).by_key()
    out = []
    for key in _active(record):
        sub = record["submitted"][key]
        t = plan[st.parse_tp(key)]
        p = view.snapshot.partition(t.topic, t.partition)
        running = t.key in view.in_flight
        if (
            sub["state"] == "confirmed"
            and not running
            and not sub.get("dirOnly")
            and (p is None or p.replicas != t.replicas)
        ):
            out.append(key)
    return out


def _unhealthy(record: Record, view: View) -> list[str]:
    ours = {st.parse_tp(k) for k in _active(record)}
    return [p.name for p in view.snapshot if p.under_replicated and p.key not in ours]


def _dir_moves(record: Record, view: View, gateway: KafkaGateway, save: Save) -> None:
    """Named target dirs of our active partitions: AlterReplicaLogDirs where a replica sits elsewhere."""
    plan = st.record_plan(record).by_key()
    moves: dict[tuple[str, int, int], str] = {}
    for key in _active(record):
        t = plan[st.parse_tp(key)]
        original = set(record["original"][key]["replicas"])
        for b, d in zip(t.replicas, t.log_dirs, strict=True):
            if d == ANY_DIR or (b not in original and t.key in view.in_flight):
                continue  # a new replica moves once the replica set is final
            current, future = view.replica_dirs(t.topic, t.partition, b)
            if current is None or current == d or future == d:
                continue
            moves[(t.topic, t.partition, b)] = d
    if not moves:
        return
    for (topic, partition, b), d in moves.items():
        rk = st.replica_key(topic, partition, b)
        record["dirMoves"][rk] = {"path": d, "submittedAt": time.time()}
        st.bump(record, "dirSubmissions", rk)
    save(record)
    errors = gateway.alter_replica_log_dirs(moves)
    for (topic, partition, b), err in errors.items():
        if not err.replica_not_available:  # not there yet: retried next tick
            record["lastError"] = f"moving {topic}-{partition} on broker {b} to its dir failed: {err}"
    save(record)


def _select(record: Record, view: View, limits: Limits) -> list[PartitionTarget]:
    """The next batch: pending partitions, smallest first, within the per-broker and cluster limits."""
    plan = st.record_plan(record)
    plan_by_key = plan.by_key()
    active = _active(record)
    load: dict[int, int] = {}
    for key in active:
        for b in involved_brokers(record, plan_by_key[st.parse_tp(key)]):
            load[b] = load.get(b, 0) + 1
    room = limits.max_moves - len(active)
    done, submitted = set(record["done"]), set(record["submitted"])
    pending = [t for t in plan.partitions if st.tp_key(*t.key) not in done | submitted]
    pending.sort(key=lambda t: (record["original"][st.tp_key(*t.key)]["sizeBytes"], t.key))
    batch: list[PartitionTarget] = []
    for t in pending:
        if room <= 0:
            break
        p = view.snapshot.partition(t.topic, t.partition)
        if p is None or p.under_replicated or t.key in view.in_flight:
            continue  # never move an under-replicated partition; someone else's move: wait for it
        brokers = involved_brokers(record, t)
        if any(load.get(b, 0) >= limits.max_moves_per_broker for b in brokers):
            continue
        for b in brokers:
            load[b] = load.get(b, 0) + 1
        batch.append(t)
        room -= 1
    return batch


def _throttle(
    record: Record, gateway: KafkaGateway, batch: list[PartitionTarget], rate: int | None, save: Save
) -> None:
    """Throttle ``batch`` at ``rate``; what will be set is saved in the record before Kafka is touched."""
    if rate is None or not batch:
        return
    moves, dir_brokers = [], set()
    for t in batch:
        original = record["original"][st.tp_key(*t.key)]
        moves.append(Move(t.topic, t.partition, tuple(original["replicas"]), t.replicas))
        if set(original["replicas"]) == set(t.replicas):
            dir_brokers |= involved_brokers(record, t)
    current = ThrottleState.from_json(record["throttles"])

    def write_ahead(planned: ThrottleState) -> None:
        record["throttles"] = planned.to_json()
        save(record)

    try:
        new = apply_throttles(
            gateway,
            moves,
            rate,
            dir_rate=rate,
            dir_move_brokers=sorted(dir_brokers),
            state=current,
            before_alter=write_ahead,
        )
    except ThrottleError as e:
        record["throttles"] = e.state.to_json()
        raise
    record["throttles"] = new.to_json()


def _submit(record: Record, gateway: KafkaGateway, batch: list[PartitionTarget], save: Save) -> None:
    """Two-phase: record the intents, submit, record the outcome."""
    now = time.time()
    targets: dict[tuple[str, int], list[int]] = {}
    for t in batch:
        key = st.tp_key(*t.key)
        dir_only = tuple(record["original"][key]["replicas"]) == t.replicas
        record["submitted"][key] = {
            "replicas": list(t.replicas),
            "submittedAt": now,
            "state": "confirmed" if dir_only else "intent",
            "dirOnly": dir_only,
        }
        if not dir_only:
            targets[t.key] = list(t.replicas)
            st.bump(record, "submissions", key)
    save(record)
    errors = gateway.alter_reassignments(targets)
    failed = []
    for tp in targets:
        key = st.tp_key(*tp)
        err = errors.get(tp)
        if err is None:
            record["submitted"][key]["state"] = "confirmed"
        else:
            del record["submitted"][key]
            if not err.retriable:
                failed.append(f"{key}: {err}")
            else:
                record["lastError"] = f"Kafka refused {key} for now: {err}"
    if failed:
        record["lastError"] = "Kafka refused moves: " + "; ".join(failed)
        _move(record, st.ERROR)
    save(record)


def _clear_throttles(record: Record, gateway: KafkaGateway, save: Save) -> None:
    state = ThrottleState.from_json(record["throttles"])
    if not state.empty:
        clear_throttles(gateway, state)
        record["throttles"] = ThrottleState().to_json()
        save(record)


def _finish(record: Record, gateway: KafkaGateway, view: View, save: Save) -> None:
    _clear_throttles(record, gateway, save)
    plan = st.record_plan(record)
    elect = []
    for t in plan.partitions:
        p = view.snapshot.partition(t.topic, t.partition)
        if p is not None and p.leader != t.replicas[0]:
            elect.append(t.key)
    if elect:
        errors = gateway.elect_preferred_leaders(elect)
        if errors:
            record["lastError"] = "preferred-leader election failed for " + ", ".join(
                f"{t}-{p}: {e}" for (t, p), e in errors.items()
            )
    _move(record, st.FINISHED)
    save(record)


def _cancel(record: Record, gateway: KafkaGateway, view: View, save: Save) -> None:
    """KIP-455 revert of our in-flight moves, then the original replica order, then throttles off."""
    plan = st.record_plan(record).by_key()
    ours = [k for k in record["submitted"] if k not in record["done"]]
    running = [k for k in ours if st.parse_tp(k) in view.in_flight]
    if running:
        for k in running:
            st.bump(record, "cancels", k)
        save(record)
        errors = gateway.alter_reassignments({st.parse_tp(k): None for k in running})
        bad = {k: e for k, e in errors.items() if e.code != "NO_REASSIGNMENT_IN_PROGRESS"}
        if bad:
            record["lastError"] = "cancel refused for " + ", ".join(
                f"{t}-{p}: {e}" for (t, p), e in bad.items()
            )
        save(record)
        return
    reorder: dict[tuple[str, int], list[int]] = {}
    settling: list[str] = []
    undo_dirs: dict[tuple[str, int, int], str] = {}
    for k in ours:
        tp = st.parse_tp(k)
        original = record["original"][k]
        p = view.snapshot.partition(*tp)
        if p is None:
            continue
        if at_target(view, plan[tp]):
            record["done"].append(k)  # it finished before the cancel reached it
            continue
        if set(p.replicas) == set(plan[tp].replicas) != set(original["replicas"]):
            record["submitted"][k]["state"] = "cancelled"  # the move completed before the cancel: kept
            continue
        if set(p.replicas) != set(original["replicas"]):
            settling.append(k)  # metadata still shows the reverted move's replicas: look again next tick
            continue
        if list(p.replicas) != original["replicas"]:
            reorder[tp] = list(original["replicas"])
        for b, d in zip(original["replicas"], original["logDirs"], strict=True):
            current, future = view.replica_dirs(tp[0], tp[1], b)
            if future is not None and current is not None and d == current:
                undo_dirs[(tp[0], tp[1], b)] = current  # drops the future replica
        record["submitted"][k]["state"] = "cancelled"
    if settling:
        save(record)
        return
    if reorder:
        for tp in reorder:
            st.bump(record, "reorders", st.tp_key(*tp))
        save(record)
        errors = gateway.alter_reassignments(reorder)
        if errors:
            record["lastError"] = "restoring the replica order failed for " + ", ".join(
                f"{t}-{p}: {e}" for (t, p), e in errors.items()
            )
            for tp in errors:
                record["submitted"][st.tp_key(*tp)]["state"] = "confirmed"  # retry next tick
            save(record)
            return
    if undo_dirs:
        gateway.alter_replica_log_dirs(undo_dirs)
    _clear_throttles(record, gateway, save)
    _move(record, st.REVERTED)
    save(record)


# ---- tick / run ------------------------------------------------------------------------------------


def sweep(gateway: KafkaGateway, record: Record, save: Save) -> None:
    """A terminal execution still holding throttles (a crash after the last move): clear them."""
    if record["phase"] in st.TERMINAL and not ThrottleState.from_json(record["throttles"]).empty:
        _clear_throttles(record, gateway, save)


def tick(gateway: KafkaGateway, record: Record, limits: Limits, save: Save = lambda r: None) -> Record:
    """One observe-decide-act step; returns the (mutated) record. Kafka being unreachable raises."""
    record["counters"]["ticks"] = record["counters"].get("ticks", 0) + 1
    phase = record["phase"]
    if phase in st.TERMINAL:
        sweep(gateway, record, save)
        return record
    view = read_view(gateway)
    if phase == st.PENDING:
        _move(record, st.START if not record["cancelRequested"] else st.CANCEL)
        save(record)
    _reconcile(record, view, save)
    if record["cancelRequested"] and record["phase"] not in (st.CANCELLING, st.FINISHING):
        _move(record, st.CANCEL)  # in Finishing every move is done already: finishing is quicker
        save(record)
    for _ in range(5):  # phases that need no waiting run in the same tick, on the same view
        phase = record["phase"]
        _step(record, gateway, view, limits, save)
        if record["phase"] == phase or record["phase"] not in _CHAINED:
            break
    _sample(record, view)
    save(record)
    return record


_CHAINED = frozenset({st.VALIDATING, st.THROTTLING, st.MOVING, st.FINISHING, st.CANCELLING})


def _step(record: Record, gateway: KafkaGateway, view: View, limits: Limits, save: Save) -> None:
    phase = record["phase"]
    if phase == st.VALIDATING:
        try:
            _validate(record, view)
        except BadInputError as e:
            record["lastError"] = e.message
            _move(record, st.INVALID)
            save(record)
            raise
        plan = st.record_plan(record)
        _move(record, st.ALL_DONE if len(record["done"]) == len(plan.partitions) else st.VALID)
        save(record)
    elif phase == st.THROTTLING:
        _throttle(record, gateway, _select(record, view, limits), limits.throttle, save)
        _move(record, st.THROTTLED)
        save(record)
    elif phase in (st.MOVING, st.PAUSED):
        _moving(record, gateway, view, limits, save)
    elif phase == st.FINISHING:
        _finish(record, gateway, view, save)
    elif phase == st.CANCELLING:
        _cancel(record, gateway, view, save)


def _moving(record: Record, gateway: KafkaGateway, view: View, limits: Limits, save: Save) -> None:
    _mark_done(record, view)
    diverged = _diverged(record, view)
    streak = record["counters"]["divergedTicks"] = (
        record["counters"].get("divergedTicks", 0) + 1 if diverged else 0
    )
    if streak >= DIVERGED_TICKS:  # seen on consecutive ticks: not a metadata propagation lag
        record["lastError"] = (
            "reassignment of " + ", ".join(diverged) + " was cancelled or changed outside this execution"
        )
        _move(record, st.ERROR)
        return
    if len(record["done"]) == len(st.record_plan(record).partitions):
        if record["phase"] == st.PAUSED:
            _move(record, st.HEALTHY)
        _move(record, st.ALL_DONE)
        return
    bad = _unhealthy(record, view)
    if bad:
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        record["lastError"] = f"paused: under-replicated partitions not moved by us: {shown}"
        if record["phase"] == st.MOVING:
            _move(record, st.UNHEALTHY)
    elif record["phase"] == st.PAUSED:
        record["lastError"] = None
        _move(record, st.HEALTHY)
    _dir_moves(record, view, gateway, save)
    if record["phase"] != st.MOVING:
        return
    batch = _select(record, view, limits)
    if batch:
        _throttle(record, gateway, batch, limits.throttle, save)
        save(record)
        _submit(record, gateway, batch, save)
        if record["phase"] == st.MOVING and any(
            record["submitted"][st.tp_key(*t.key)].get("dirOnly") for t in batch
        ):
            _dir_moves(record, view, gateway, save)


def _copied(record: Record, view: View) -> dict[str, int]:
    """Bytes copied so far per in-flight partition, never less than seen before: a broker that is down
    or slow to answer DescribeLogDirs does not make progress go backwards."""
    seen = record.get("copied") or {}
    now = in_flight_bytes(record, view.snapshot, view.dirs)
    return {key: max(copied, int(seen.get(key, 0))) for key, copied in now.items()}


def _sample(record: Record, view: View) -> None:
    partial = _copied(record, view)
    record["copied"] = partial
    moved = compute_progress(record, partial).bytes_moved
    samples: list[list[float]] = record.setdefault("samples", [])
    samples.append([time.time(), moved])
    del samples[:-MAX_SAMPLES]
    record["progress"] = compute_progress(record, partial).to_json()


def progress(gateway: KafkaGateway, record: Record) -> Progress:
    return compute_progress(record, _copied(record, read_view(gateway)))


def run(
    gateway: KafkaGateway,
    record: Record,
    limits: Limits,
    *,
    wait: bool,
    poll_s: float = 2.0,
    save: Save = lambda r: None,
    cancel_requested: Callable[[], bool] = lambda: False,
    on_tick: Callable[[Record], None] = lambda r: None,
    retry_s: float = TICK_RETRY_S,
) -> Record:
    """Tick until the phase is terminal (``wait``) or once; ``cancel_requested`` polls for a cancel.

    With ``wait``, a tick that fails on a Kafka error (a broker down or restarting, the cluster briefly
    unreachable) is recorded in ``lastError`` and retried on the next poll, as the operator's next
    reconcile would: ticks are stateless and intents are reconciled; the gateway's clients are reopened.
    Failures for longer than ``retry_s`` in a row raise the last one."""
    sweep(gateway, record, save)
    failing_since: float | None = None
    while True:
        if not record["cancelRequested"] and record["phase"] not in st.TERMINAL and cancel_requested():
            record["cancelRequested"] = True
            save(record)
        try:
            tick(gateway, record, limits, save)
            failing_since = None
        except (KafkaOperationError, KafkaUnavailableError) as e:
            now = time.monotonic()
            failing_since = now if failing_since is None else failing_since
            if not wait or now - failing_since > retry_s:
                raise
            log.warning("tick failed, retrying in %.1fs: %s", poll_s, e.message)
            record["lastError"] = f"tick failed, retrying: {e.message}"
            save(record)
            gateway.close()  # the next tick reconnects with fresh metadata (a restarted broker)
        on_tick(record)
        if not wait or record["phase"] in st.TERMINAL:
            return record
        time.sleep(poll_s)


def mismatches(gateway: KafkaGateway, plan: Plan, record: Record | None = None) -> list[str]:
    """Why the cluster does not match ``plan`` (empty = it does): replicas, order, dirs, moves still in
    flight, throttles still recorded as ours."""
    view = read_view(gateway)
    out: list[str] = []
    for t in plan.partitions:
        p = view.snapshot.partition(t.topic, t.partition)
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
    if record is not None and not ThrottleState.from_json(record["throttles"]).empty:
        out.append(f"throttles set by execution {record['planId']} are still in place")
    return out
