"""CLI commands that talk to Kafka: ``snapshot`` (here), ``execute``, ``status``, ``cancel``, ``verify``.

Every command connects the same way: ``--bootstrap-server H:P[,H:P]`` plus an optional Kafka-style
``--command-config`` properties file (TLS/SASL), turned into one ``ConnectionSettings`` by
``_connection(args)`` and used through ``KafkaGateway`` only. An unreachable cluster is exit 1 with a
one-line message; a bad connection setting is exit 2 (both via ``PlacementError`` in the dispatcher).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from ..execution import executor
from ..execution import state as st
from ..execution.state import FileStore
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import KafkaGateway, KafkaUnavailableError
from ..model.errors import BadInputError
from ._io import check_outputs, read_plan, write_json

DEFAULT_STATE = ".kafka-placement-execution.json"


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    """The connection flags shared by every command that talks to Kafka."""
    parser.add_argument(
        "--bootstrap-server",
        metavar="H:P[,H:P]",
        help="Kafka bootstrap servers (overrides bootstrap.servers of --command-config)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties: security.protocol, sasl.mechanism, sasl.jaas.config, "
        "ssl.ca.location, ssl.certificate.location, ssl.key.location (PEM), request.timeout.ms",
    )


def _connection(args: argparse.Namespace) -> ConnectionSettings:
    """Validated connection settings from ``--bootstrap-server`` / ``--command-config``."""
    return ConnectionSettings.from_command_config(args.command_config, args.bootstrap_server)


def _gateway(args: argparse.Namespace) -> KafkaGateway:
    return KafkaGateway(_connection(args))


def _snapshot(args: argparse.Namespace) -> int:
    check_outputs([("-o", args.output)])  # a bad -o fails before connecting
    with _gateway(args) as gateway:
        snapshot = gateway.snapshot()
    write_json(args.output, snapshot.to_json())
    dirs = sum(len(b.log_dirs) for b in snapshot.brokers)
    if args.output not in (None, "-"):
        print(
            f"snapshot of {gateway.servers}: {len(snapshot.brokers)} brokers, {dirs} log dirs, "
            f"{len(snapshot.partitions)} partitions -> {args.output}",
            file=sys.stderr,
        )
    return 0


# ---- execute / status / cancel / verify ------------------------------------------------------------


def _record_gateway(args: argparse.Namespace, record: dict[str, Any]) -> KafkaGateway:
    """A gateway from the flags, or from the servers recorded by ``execute``."""
    if args.bootstrap_server is None and args.command_config is None:
        if not record.get("bootstrapServers"):
            raise BadInputError("no --bootstrap-server given and none recorded in the execution state")
        return KafkaGateway(ConnectionSettings(str(record["bootstrapServers"])))
    return _gateway(args)


def _print_tick(record: dict[str, Any]) -> None:
    progress = record.get("progress") or {}
    parts, bytes_ = progress.get("partitions", {}), progress.get("bytes", {})
    eta = progress.get("etaSeconds")
    line = (
        f"[{record['phase']}] plan {record['planId']}: partitions done {parts.get('done', 0)}/"
        f"{parts.get('total', 0)}, in flight {parts.get('inFlight', 0)}, pending {parts.get('pending', 0)}; "
        f"bytes moved {bytes_.get('moved', 0)}/{bytes_.get('total', 0)}; "
        f"eta {'-' if eta is None else f'{eta:.0f}s'}"
    )
    if record.get("lastError"):
        line += f"; {record['lastError']}"
    print(line, flush=True)


def _owner_alive(record: dict[str, Any]) -> bool:
    pid = (record.get("owner") or {}).get("pid")
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _outcome(record: dict[str, Any], command: str) -> int:
    if record["phase"] == st.FAILED:
        print(
            f"kafka-placement {command}: error: {record.get('lastError') or 'execution failed'}",
            file=sys.stderr,
        )
        return 1
    return 0


def _limits(args: argparse.Namespace) -> executor.Limits:
    if args.max_moves_per_broker < 1 or args.max_moves < 1:
        raise BadInputError("--max-moves-per-broker and --max-moves must be at least 1")
    if args.throttle is not None and args.throttle < 1:
        raise BadInputError("--throttle must be a positive number of bytes/s")
    return executor.Limits(args.max_moves_per_broker, args.max_moves, args.throttle)


def _execute(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    limits = _limits(args)
    settings = _connection(args)
    store = FileStore(args.state)
    record = store.load()
    if record is not None and record["planId"] != plan.plan_id and record["phase"] not in st.TERMINAL:
        raise BadInputError(
            f"another execution (plan {record['planId']}) is in progress; cancel it or use another --state",
            args.state,
        )
    if record is not None and record["planId"] == plan.plan_id and record["phase"] != st.CANCELLED:
        if record["phase"] == st.FAILED:
            record["phase"] = st.next_phase(record["phase"], st.RETRY)
            record["lastError"] = None
        print(f"resuming execution of plan {plan.plan_id} (phase {record['phase']})", file=sys.stderr)
    else:
        if record is not None and record["phase"] in st.TERMINAL:
            with KafkaGateway(settings) as old:  # the old execution's leftovers (a crash after its end)
                executor.sweep(old, record, store.save)
        store.clear_cancel()
        record = st.new_record(plan, settings.bootstrap_servers, limits.throttle)
    record["owner"] = {"pid": os.getpid(), "startedAt": time.time()}
    record["throttleRate"] = limits.throttle
    with KafkaGateway(settings) as gateway:
        gateway.broker_ids()  # unreachable: exit 1 (one line) before anything is written
        store.save(record)
        record = executor.run(
            gateway,
            record,
            limits,
            wait=args.wait,
            poll_s=args.poll_seconds,
            save=store.save,
            cancel_requested=store.cancel_requested,
            on_tick=_print_tick,
        )
    if record["phase"] in st.TERMINAL:
        store.clear_cancel()
    return _outcome(record, "execute")


def _load_record(args: argparse.Namespace) -> tuple[FileStore, dict[str, Any]]:
    store = FileStore(args.state)
    record = store.load()
    if record is None:
        raise BadInputError("no execution state found (run `kafka-placement execute` first)", args.state)
    return store, record


def _status(args: argparse.Namespace) -> int:
    _, record = _load_record(args)
    summary: dict[str, Any] = {
        "planId": record["planId"],
        "phase": record["phase"],
        "cancelRequested": record["cancelRequested"],
        "lastError": record.get("lastError"),
        "partitions": len(record["plan"]["partitions"]),
        "done": len(record["done"]),
        "submitted": len(record["submitted"]),
        "throttlesSet": bool(record["throttles"]["brokers"] or record["throttles"]["topics"]),
        "progress": record.get("progress"),
    }
    try:
        with _record_gateway(args, record) as gateway:
            summary["liveProgress"] = executor.progress(gateway, record).to_json()
    except (KafkaUnavailableError, BadInputError) as e:
        summary["liveProgress"] = None
        summary["liveError"] = e.message
    print(json.dumps(summary, indent=1))
    return 0


def _cancel(args: argparse.Namespace) -> int:
    store, record = _load_record(args)
    if record["phase"] in st.TERMINAL:
        print(
            f"nothing to cancel: execution of plan {record['planId']} is {record['phase']}", file=sys.stderr
        )
        return 0
    store.request_cancel()
    print(f"cancel requested for the execution of plan {record['planId']}", file=sys.stderr)
    if not args.wait:
        return 0
    if _owner_alive(record):  # the running `execute` reverts; wait for it
        while True:
            time.sleep(args.poll_seconds)
            fresh = store.load()
            if fresh is None or fresh["phase"] in st.TERMINAL or not _owner_alive(fresh):
                break
        fresh = store.load()
        if fresh is not None and fresh["phase"] in st.TERMINAL:
            _print_tick(fresh)
            store.clear_cancel()
            return 0 if fresh["phase"] == st.CANCELLED else _outcome(fresh, "cancel")
        record = fresh or record
    record["cancelRequested"] = True
    record["owner"] = {"pid": os.getpid(), "startedAt": time.time()}
    with _record_gateway(args, record) as gateway:
        store.save(record)
        record = executor.run(
            gateway,
            record,
            executor.Limits(),
            wait=True,
            poll_s=args.poll_seconds,
            save=store.save,
            on_tick=_print_tick,
        )
    store.clear_cancel()
    return _outcome(record, "cancel")


def _verify(args: argparse.Namespace) -> int:
    plan = read_plan(args.plan)
    record = FileStore(args.state).load()
    if record is not None and record["planId"] != plan.plan_id:
        record = None
    with _gateway(args) as gateway:
        problems = executor.mismatches(gateway, plan, record)
    for line in problems:
        print(line)
    if problems:
        print(
            f"kafka-placement verify: {len(problems)} mismatch(es) with plan {plan.plan_id}", file=sys.stderr
        )
        return 1
    print(f"cluster matches plan {plan.plan_id} ({len(plan.partitions)} partitions)", file=sys.stderr)
    return 0


def _add_state_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state",
        default=DEFAULT_STATE,
        metavar="FILE",
        help=f"execution record file (default {DEFAULT_STATE})",
    )


def _register_execution(sub: Any) -> None:
    p = sub.add_parser(
        "execute",
        help="apply a plan to Kafka: throttled, limited, resumable reassignments and log-dir moves",
        description="Execute a plan with stateless ticks over a durable execution record (--state). "
        "A record of the same plan is resumed (in-flight moves adopted, nothing resubmitted).",
    )
    add_connection_args(p)
    p.add_argument("--plan", required=True, metavar="FILE", help="plan JSON (Kafka format) or .parquet")
    p.add_argument("--throttle", type=int, metavar="BYTES/s", help="replication and log-dir move throttle")
    p.add_argument("--max-moves-per-broker", type=int, default=5, metavar="N", help="default 5")
    p.add_argument("--max-moves", type=int, default=10, metavar="N", help="moves in flight (default 10)")
    _add_state_arg(p)
    p.add_argument("--wait", action="store_true", help="tick until the execution ends (else one tick)")
    p.add_argument("--poll-seconds", type=float, default=2.0, metavar="S", help="seconds between ticks")
    p.set_defaults(func=_execute)

    p = sub.add_parser("status", help="the execution record's summary and live progress (JSON)")
    add_connection_args(p)
    _add_state_arg(p)
    p.set_defaults(func=_status)

    p = sub.add_parser(
        "cancel",
        help="cancel an execution: in-flight moves reverted (KIP-455), throttles removed",
        description="Request a cancel; the running `execute` reverts. With --wait, wait for it (or drive "
        "the cancel here when no `execute` is running).",
    )
    add_connection_args(p)
    _add_state_arg(p)
    p.add_argument("--wait", action="store_true", help="wait until the execution is Cancelled")
    p.add_argument("--poll-seconds", type=float, default=1.0, metavar="S", help="seconds between checks")
    p.set_defaults(func=_cancel)

    p = sub.add_parser("verify", help="exit 0 if the cluster matches the plan (replicas, order, dirs)")
    add_connection_args(p)
    p.add_argument("--plan", required=True, metavar="FILE", help="plan JSON or .parquet")
    _add_state_arg(p)
    p.set_defaults(func=_verify)


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    p = sub.add_parser(
        "snapshot",
        help="read brokers, racks, log dirs and partition placement from Kafka into snapshot JSON",
        description="Write the cluster's brokers, racks, log dirs (usage, cordon, online) and every "
        "partition's replicas, log dirs, leader, ISR and size as snapshot JSON (version 1).",
    )
    add_connection_args(p)
    p.add_argument("-o", "--output", default="-", metavar="FILE", help="snapshot JSON file (- = stdout)")
    p.set_defaults(func=_snapshot)
    _register_execution(sub)
