"""The flags of the CLI commands that talk to Kafka: ``snapshot``, ``execute``, ``status``, ``cancel``,
``verify`` (their work is in ``kafka_cmds``, imported only when one of them runs).

Light on purpose: building the parser (every command, ``--help``) imports no Kafka client, executor or
pydantic model; the defaults the flags show come from the model (``LimitsSpec``, the disk headroom).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..model.capacity import DEFAULT_MAX_DISK_SHARE, MAX_DISK_SHARE, MIN_DISK_SHARE
from ..model.cluster_spec import ASSUMED_UNTHROTTLED_RATE, LimitsSpec
from ._args import EXECUTE_POLL_S, lazy, number_in


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


STATE_DIR_ENV = "KAFKA_PLACEMENT_STATE_DIR"
CANCEL_WAIT_S = 600.0  # cancel --wait: at most this long for a running `execute` to revert


def _add_state_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state",
        metavar="FILE",
        help=f"execution record file (default: execution-<clusterId>.json in ${STATE_DIR_ENV}, else "
        "$XDG_STATE_HOME/kafka-placement or ~/.local/state/kafka-placement)",
    )


def _register_execution(sub: Any) -> None:
    d = LimitsSpec()  # the executor's defaults (execution.record_doc.Limits): one source
    p = sub.add_parser(
        "execute",
        help="apply a plan to Kafka: throttled, limited, resumable reassignments and log-dir moves",
        description="Execute a plan with stateless ticks over a durable execution record (--state). "
        "A record of the same plan is resumed (in-flight moves adopted, nothing resubmitted).",
    )
    add_connection_args(p)
    p.add_argument("--plan", required=True, metavar="FILE", help="plan JSON (Kafka format) or .parquet")
    p.add_argument("--throttle", type=int, metavar="BYTES/s", help="replication and log-dir move throttle")
    p.add_argument(
        "--hold-achieved-rate",
        action="store_true",
        help="hold each broker's achieved replication rate at the throttle: measure what it copies (over "
        "20 s windows) and set Kafka's rate above the throttle by the shortfall, at most 1.5 times it "
        "(Kafka's brokers replicate below their configured rate)",
    )
    p.add_argument(
        "--max-disk-share",
        type=number_in(MIN_DISK_SHARE, MAX_DISK_SHARE),
        default=DEFAULT_MAX_DISK_SHARE,
        metavar="SHARE",
        help="the disk headroom the plan was made with: no new move into a log dir above this share of its "
        "volume, and the moves into a dir about to pass its hard stop (half the room above it, at most "
        f"0.97) are held (throttled down) until it is back under it (default {DEFAULT_MAX_DISK_SHARE:g})",
    )
    p.add_argument(
        "--max-moves-per-broker",
        type=int,
        default=d.max_moves_per_broker,
        metavar="N",
        help=f"moves in flight per broker (default {d.max_moves_per_broker})",
    )
    p.add_argument(
        "--max-moves",
        type=int,
        default=d.max_moves_in_flight,
        metavar="N",
        help=f"moves in flight in the cluster (default {d.max_moves_in_flight})",
    )
    p.add_argument(
        "--max-bytes-per-broker",
        type=int,
        metavar="BYTES",
        help=f"bytes in flight per broker, inbound and outbound (default: the throttle, or "
        f"{ASSUMED_UNTHROTTLED_RATE} B/s when unthrottled, times {d.batch_seconds} s); a broker "
        "with nothing in flight always takes one move",
    )
    p.add_argument(
        "--on-config-change",
        choices=("reapply", "pause"),
        default="reapply",
        help="throttles or cordons this execution set, changed or removed by another party while moving: "
        "re-apply them (default) or submit nothing new while the change lasts",
    )
    p.add_argument(
        "--max-reapplies",
        type=int,
        default=d.max_reapplies,
        metavar="N",
        help=f"re-apply at most N times within --reapply-window-seconds, then hold new moves until the "
        f"window has passed (default {d.max_reapplies})",
    )
    p.add_argument(
        "--reapply-window-seconds",
        type=int,
        default=d.reapply_window_seconds,
        metavar="S",
        help=f"(default {d.reapply_window_seconds})",
    )
    _add_state_arg(p)
    p.add_argument("--wait", action="store_true", help="tick until the execution ends (else one tick)")
    p.add_argument(
        "--poll-seconds", type=float, default=EXECUTE_POLL_S, metavar="S", help="seconds between ticks"
    )
    p.set_defaults(func=lazy("kafka_cmds", "cmd_execute"))

    p = sub.add_parser("status", help="the execution record's summary and live progress (JSON)")
    add_connection_args(p)
    _add_state_arg(p)
    p.set_defaults(func=lazy("kafka_cmds", "cmd_status"))

    p = sub.add_parser(
        "cancel",
        help="cancel an execution: in-flight moves reverted (KIP-455), throttles removed",
        description="Request a cancel; the running `execute` reverts. With --wait, wait for it (at most "
        f"{CANCEL_WAIT_S:.0f}s) or drive the cancel here when no `execute` is running.",
    )
    add_connection_args(p)
    _add_state_arg(p)
    p.add_argument("--wait", action="store_true", help="wait until the execution is Cancelled")
    p.add_argument("--poll-seconds", type=float, default=1.0, metavar="S", help="seconds between checks")
    p.add_argument(
        "--retry-seconds",
        type=float,
        default=60.0,
        metavar="S",
        help="how long to keep retrying an unreachable cluster while reverting (default 60)",
    )
    p.set_defaults(func=lazy("kafka_cmds", "cmd_cancel"))

    p = sub.add_parser("verify", help="exit 0 if the cluster matches the plan (replicas, order, dirs)")
    add_connection_args(p)
    p.add_argument("--plan", required=True, metavar="FILE", help="plan JSON or .parquet")
    _add_state_arg(p)
    p.set_defaults(func=lazy("kafka_cmds", "cmd_verify"))


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    p = sub.add_parser(
        "snapshot",
        help="read brokers, racks, log dirs and partition placement from Kafka into snapshot JSON",
        description="Write the cluster's brokers, racks, log dirs (usage, cordon, online) and every "
        "partition's replicas, log dirs, leader, ISR and size as snapshot JSON (version 1), or as a "
        "Parquet snapshot directory (-o NAME.parquet).",
    )
    add_connection_args(p)
    p.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="snapshot JSON file (- = stdout); a name ending in .parquet is a Parquet snapshot directory "
        "(brokers.json and partitions.parquet, for --snapshot: read in about half the time at scale)",
    )
    p.add_argument(
        "--traffic-window",
        type=float,
        metavar="SECONDS",
        help="also sample traffic over this many seconds: each partition's bytesInPerSec (log end "
        "offset advance x bytes per offset) and readFanout (consumer groups whose committed offsets "
        "advanced); partitions without a measure leave the fields out (unknown)",
    )
    p.add_argument(
        "--traffic-looks",
        type=int,
        default=2,
        metavar="N",
        help="looks at the cluster spread evenly over the window, first and last at its ends (default 2)",
    )
    p.set_defaults(func=lazy("kafka_cmds", "cmd_snapshot"))
    _register_execution(sub)
