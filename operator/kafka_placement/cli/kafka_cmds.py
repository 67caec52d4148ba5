"""CLI commands that talk to Kafka: ``snapshot``, ``execute``, ``status``, ``cancel``, ``verify`` (their flags
are in ``kafka_args``, which imports this module only when one of them runs).

Every command connects the same way: ``--bootstrap-server H:P[,H:P]`` plus an optional Kafka-style
``--command-config`` properties file (TLS/SASL), turned into one ``ConnectionSettings`` by
``_connection(args)`` and used through ``KafkaGateway`` only. An unreachable cluster is exit 1 with a
one-line message; a bad connection setting is exit 2 (both via ``PlacementError`` in the dispatcher).
Every local path is checked before anything is contacted: the plan, the ``-o`` target, the connection
settings and their PEM files, and the execution state (``_check_state``), so bad input is exit 2 even when
the cluster is unreachable.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..execution import executor
from ..execution.disk import describe_held
from ..execution.progress import Progress
from ..execution.record import Execution
from ..execution.record_doc import TERMINAL, Event, Owner, Phase
from ..execution.store import FileStore
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import KafkaGateway, KafkaUnavailableError
from ..model.errors import BadInputError, PlacementError
from ..model.snapshot import ClusterSnapshot
from ..planning import traffic_rates
from ._io import check_outputs, read_plan, snapshot_output, write_snapshot
from .kafka_args import CANCEL_WAIT_S, STATE_DIR_ENV


def _connection(args: argparse.Namespace) -> ConnectionSettings:
    """Validated connection settings from ``--bootstrap-server`` / ``--command-config``."""
    return ConnectionSettings.from_command_config(args.command_config, args.bootstrap_server)


def _gateway(args: argparse.Namespace) -> KafkaGateway:
    return KafkaGateway(_connection(args))


def cmd_snapshot(args: argparse.Namespace) -> int:
    check_outputs(snapshot_output("-o", args.output))  # a bad -o fails before connecting
    window, looks = args.traffic_window, args.traffic_looks
    if window is not None:
        if not (math.isfinite(window) and window > 0):
            raise BadInputError(f"must be a positive number of seconds, got {window:g}", "--traffic-window")
        if not 2 <= looks <= MAX_LOOKS:
            raise BadInputError(f"must be 2 to {MAX_LOOKS}, got {looks}", "--traffic-looks")
        if window / (looks - 1) < traffic_rates.MIN_INTERVAL_S:
            raise BadInputError(
                f"{looks} looks over {window:g} s are closer than {traffic_rates.MIN_INTERVAL_S:g} s apart: "
                "give a longer window or fewer looks",
                "--traffic-window",
            )
    with _gateway(args) as gateway:
        snapshot = gateway.snapshot() if window is None else _sampled(gateway, window, looks)
    write_snapshot("-o", args.output, snapshot)
    dirs = sum(len(b.log_dirs) for b in snapshot.brokers)
    if args.output not in (None, "-"):
        sampled = sum(1 for p in snapshot.partitions if p.bytes_in_per_sec is not None)
        print(
            f"snapshot of {gateway.servers}: {len(snapshot.brokers)} brokers, {dirs} log dirs, "
            f"{len(snapshot.partitions)} partitions"
            + ("" if window is None else f" ({sampled} with traffic over {window:g} s)")
            + f" -> {args.output}",
            file=sys.stderr,
        )
    return 0


MAX_LOOKS = 1000


def _sampled(gateway: KafkaGateway, window: float, looks: int) -> ClusterSnapshot:
    """``looks`` looks spaced evenly over ``window`` seconds, folded (planning/traffic_rates.py), and the last
    look's snapshot with each partition's estimates."""
    state = traffic_rates.TrafficState()
    start = time.monotonic()
    for i in range(looks):
        time.sleep(max(0.0, start + i * window / (looks - 1) - time.monotonic()))
        snapshot, look = gateway.traffic_look()
        state = traffic_rates.fold(state, look, window)
    return traffic_rates.with_traffic(snapshot, traffic_rates.estimates(state, window))


# ---- execute / status / cancel / verify ------------------------------------------------------------


def state_dir() -> Path:
    """Where execution records live by default: $KAFKA_PLACEMENT_STATE_DIR, else the XDG state dir."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kafka-placement"


def _state_path(args: argparse.Namespace, gateway: KafkaGateway | None) -> Path:
    """``--state``, else ``<state dir>/execution-<clusterId>.json`` (one record per cluster)."""
    if args.state:
        return Path(args.state)
    if gateway is None:
        raise BadInputError("give --state FILE, or --bootstrap-server to find the cluster's default state")
    cluster_id, _ = gateway.describe_cluster()
    if not cluster_id:
        raise BadInputError("the cluster reports no cluster id: give --state FILE")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in cluster_id)[:100]
    return state_dir() / f"execution-{safe}.json"


def _check_state(args: argparse.Namespace, *, write: bool) -> None:
    """Refuse a state location the command cannot use before anything is contacted (exit 2): ``--state``
    (a directory, unreadable, or with ``write`` a directory that is missing or not writable), or, without
    it, a default state directory that ``execute`` could not create."""
    if args.state:
        FileStore(args.state).check_usable(write=write)
        return
    if not write:
        return
    default = state_dir()
    existing = default
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise BadInputError(
            f"the default state directory cannot be {'used' if existing == default else 'created'}: "
            f"{existing} is not a writable directory (set ${STATE_DIR_ENV}, or give --state FILE)",
            str(default),
        )


def _tick_printer() -> Callable[[Execution], None]:
    """Prints a line per tick, and a warning on stderr when owned configs were re-applied since."""
    seen = 0

    def show(ex: Execution) -> None:
        nonlocal seen
        p = Progress.from_json(ex.doc.progress or {})
        line = f"[{ex.phase}] plan {ex.doc.plan_id}: {p.line()}"
        if ex.doc.last_error:
            line += f"; {ex.doc.last_error[:500]}"
        if ex.doc.disk.held:
            line += f"; {describe_held(ex)[:500]}"
        print(line, flush=True)
        d = ex.doc.defence
        if d.reapplied > seen:
            print(
                "kafka-placement: warning: re-applied configs this execution owns, changed by another "
                f"party ({d.reapplied} times so far): {'; '.join(d.last)[:1000]}",
                file=sys.stderr,
                flush=True,
            )
        seen = d.reapplied

    return show


def _owner_alive(ex: Execution) -> bool:
    pid = ex.doc.owner.pid if ex.doc.owner is not None else None
    if not isinstance(pid, int) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _is_execute(pid)


def _is_execute(pid: int) -> bool:
    """The pid runs `kafka-placement execute` (not a recycled pid of something else)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the pid
    return b"execute" in cmdline


def _outcome(ex: Execution, command: str) -> int:
    if ex.phase == Phase.FAILED:
        print(f"kafka-placement {command}: error: {ex.doc.last_error or 'execution failed'}", file=sys.stderr)
        return 1
    return 0


def _limits(args: argparse.Namespace) -> executor.Limits:
    if not 1 <= args.max_moves_per_broker <= 100_000 or not 1 <= args.max_moves <= 1_000_000:
        raise BadInputError("--max-moves-per-broker must be 1..100000 and --max-moves 1..1000000")
    if args.throttle is not None and not 1 <= args.throttle <= 2**63 - 1:
        raise BadInputError("--throttle must be a positive number of bytes/s")
    if args.max_bytes_per_broker is not None and not 1 <= args.max_bytes_per_broker <= 2**63 - 1:
        raise BadInputError("--max-bytes-per-broker must be a positive number of bytes")
    if not 1 <= args.max_reapplies <= 1000 or not 1 <= args.reapply_window_seconds <= 86400:
        raise BadInputError("--max-reapplies must be 1..1000 and --reapply-window-seconds 1..86400")
    return executor.Limits(
        max_moves_per_broker=args.max_moves_per_broker,
        max_moves=args.max_moves,
        max_bytes_per_broker=args.max_bytes_per_broker,
        throttle=args.throttle,
        on_config_change="Pause" if args.on_config_change == "pause" else "Reapply",
        max_reapplies=args.max_reapplies,
        reapply_window_s=args.reapply_window_seconds,
        max_disk_share=args.max_disk_share,
        hold_rate=args.hold_achieved_rate,
    )


def _poll(args: argparse.Namespace) -> float:
    value = float(args.poll_seconds)
    if not math.isfinite(value) or not 0.05 <= value <= 3600:
        raise BadInputError("--poll-seconds must be between 0.05 and 3600")
    return value


def _load(store: FileStore) -> Execution | None:
    return Execution.load(store)


def cmd_execute(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    limits = _limits(args)
    poll = _poll(args)
    _check_state(args, write=True)
    settings = _connection(args)
    with KafkaGateway(settings) as gateway:
        cluster_id, _ = (
            gateway.describe_cluster()
        )  # unreachable: exit 1 (one line) before anything is written
        store = FileStore(_state_path(args, gateway))
        ex = _load(store)
        if ex is not None and ex.doc.cluster_id and cluster_id and ex.doc.cluster_id != cluster_id:
            raise BadInputError(
                f"the execution state belongs to cluster {ex.doc.cluster_id}, not to {cluster_id} at "
                f"{settings.bootstrap_servers}; use that cluster's state (or another --state)",
                store.where,
            )
        if ex is not None and ex.doc.plan_id != plan.plan_id and ex.phase not in TERMINAL:
            raise BadInputError(
                f"another execution (plan {ex.doc.plan_id}) is in progress; cancel it or use another --state",
                store.where,
            )
        # every ACL the execution needs, before anything is written to Kafka: a denial is exit 1 naming it
        gateway.check_authorized(
            {t.topic for t in plan.partitions},
            configs=limits.throttle is not None or ex is not None,
            when="checked before executing: nothing was submitted",
        )
        resume = ex is not None and ex.doc.plan_id == plan.plan_id and ex.phase != Phase.CANCELLED
        if ex is not None and resume and ex.phase == Phase.COMPLETED:
            problems = executor.mismatches(gateway, plan, ex)
            if problems:  # a Completed record is only believed after checking the live cluster
                print(
                    f"the record says plan {plan.plan_id} completed, but the cluster does not match it "
                    f"({len(problems)} mismatch(es), e.g. {problems[0][:200]}): executing it again",
                    file=sys.stderr,
                )
                resume = False
        if ex is not None and resume:
            if ex.phase == Phase.FAILED:
                ex.move(Event.RETRY)
                ex.error(None)
            print(f"resuming execution of plan {plan.plan_id} (phase {ex.phase})", file=sys.stderr)
        else:
            if ex is not None:
                executor.sweep(gateway, ex)  # the old execution's leftovers (a crash after its end)
            store.clear_cancel()
            ex = Execution.create(
                store,
                plan,
                limits=limits,
                bootstrap_servers=settings.bootstrap_servers,
                cluster_id=cluster_id,
            )
        ex.doc.owner = Owner(pid=os.getpid(), started_at=time.time())
        ex.doc.limits = limits
        ex.save()
        print(f"execution state: {store.where}", file=sys.stderr)
        ex = executor.run(
            gateway,
            ex,
            limits,
            wait=args.wait,
            poll_s=poll,
            cancel_requested=store.cancel_requested,
            on_tick=_tick_printer(),
        )
    if ex.phase in TERMINAL:
        store.clear_cancel()
    return _outcome(ex, "execute")


def _record_gateway(args: argparse.Namespace, ex: Execution) -> KafkaGateway:
    """A gateway from the flags, or from the servers recorded by ``execute``."""
    if args.bootstrap_server is None and args.command_config is None:
        if not ex.doc.bootstrap_servers:
            raise BadInputError("no --bootstrap-server given and none recorded in the execution state")
        return KafkaGateway(ConnectionSettings(ex.doc.bootstrap_servers))
    return _gateway(args)


def _load_record(args: argparse.Namespace) -> tuple[FileStore, Execution]:
    _check_state(args, write=False)
    gateway = _gateway(args) if not args.state and (args.bootstrap_server or args.command_config) else None
    try:
        store = FileStore(_state_path(args, gateway))
    finally:
        if gateway is not None:
            gateway.close()
    ex = _load(store)
    if ex is None:
        raise BadInputError("no execution state found (run `kafka-placement execute` first)", store.where)
    return store, ex


def cmd_status(args: argparse.Namespace) -> int:
    store, ex = _load_record(args)
    summary: dict[str, Any] = {
        "state": store.where,
        "planId": ex.doc.plan_id,
        "clusterId": ex.doc.cluster_id,
        "phase": str(ex.phase),
        "cancelRequested": ex.doc.cancel_requested,
        "lastError": ex.doc.last_error,
        "partitions": ex.doc.partitions,
        "done": ex.doc.done_count,
        "inFlight": len(ex.doc.in_flight),
        "submissions": ex.doc.counters.submissions,
        "resubmitted": ex.doc.counters.resubmitted,
        "throttlesSet": bool(ex.doc.throttles.brokers or ex.doc.throttles.topics),
        "ownedConfigsReapplied": ex.doc.defence.reapplied,
        "progress": ex.doc.progress,
    }
    try:
        with _record_gateway(args, ex) as gateway:
            if ex.phase == Phase.COMPLETED:  # believed only after checking the live cluster
                problems = executor.mismatches(gateway, ex.plan.plan, ex)
                summary["liveMismatches"] = len(problems)
                summary["liveMismatchExamples"] = [p[:200] for p in problems[:5]]
            else:
                summary["liveProgress"] = executor.live_progress(gateway, ex).to_json()
    except (KafkaUnavailableError, BadInputError) as e:
        summary["liveProgress"] = None
        summary["liveError"] = e.message[:500]
    print(json.dumps(summary, indent=1))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    poll = _poll(args)
    store, ex = _load_record(args)
    if ex.phase in TERMINAL:
        print(f"nothing to cancel: execution of plan {ex.doc.plan_id} is {ex.phase}", file=sys.stderr)
        return 0
    store.check_usable(write=True)  # the cancel marker and the reverted record are written beside it
    store.request_cancel()
    print(f"cancel requested for the execution of plan {ex.doc.plan_id}", file=sys.stderr)
    if not args.wait:
        return 0
    if _owner_alive(ex):  # the running `execute` reverts; wait for it, bounded
        deadline = time.monotonic() + CANCEL_WAIT_S
        while time.monotonic() < deadline:
            time.sleep(poll)
            fresh = _load(store)
            if fresh is None or fresh.phase in TERMINAL or not _owner_alive(fresh):
                break
        else:
            raise PlacementError(
                f"the running execute (pid {ex.doc.owner.pid if ex.doc.owner else '?'}) did not finish the "
                f"cancel within {CANCEL_WAIT_S:.0f}s; it goes on reverting (see `kafka-placement status`)"
            )
        fresh = _load(store)
        if fresh is not None and fresh.phase in TERMINAL:
            _tick_printer()(fresh)
            store.clear_cancel()
            return 0 if fresh.phase == Phase.CANCELLED else _outcome(fresh, "cancel")
        ex = fresh or ex
    ex.doc.cancel_requested = True
    ex.doc.owner = Owner(pid=os.getpid(), started_at=time.time())
    with _record_gateway(args, ex) as gateway:
        gateway.check_authorized(  # before reverting anything
            {t.topic for t in ex.plan.plan.partitions}, when="checked before cancelling: nothing was reverted"
        )
        ex.save()
        ex = executor.run(
            gateway,
            ex,
            executor.Limits(),
            wait=True,
            poll_s=poll,
            on_tick=_tick_printer(),
            retry_s=args.retry_seconds,
        )
    store.clear_cancel()
    return _outcome(ex, "cancel")


def cmd_verify(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    _check_state(args, write=False)
    with _gateway(args) as gateway:
        path = _state_path(args, gateway)
        ex = _load(FileStore(path)) if path.exists() else None
        if ex is not None and ex.doc.plan_id != plan.plan_id:
            ex = None
        problems = executor.mismatches(gateway, plan, ex)
    for line in problems:
        print(line)
    if problems:
        print(
            f"kafka-placement verify: {len(problems)} mismatch(es) with plan {plan.plan_id}", file=sys.stderr
        )
        return 1
    print(f"cluster matches plan {plan.plan_id} ({len(plan.partitions)} partitions)", file=sys.stderr)
    return 0
