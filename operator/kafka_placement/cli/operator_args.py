"""The flags of ``kafka-placement operator`` (its work is in ``operator_cmds``, imported only when it runs:
kopf, the handlers, the Kafka and Kubernetes gateways).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..reconcile import periods
from ._args import lazy


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def register(sub: Any) -> None:
    p = sub.add_parser("operator", help="run the Kubernetes operator (kopf)")
    p.add_argument("--namespace", action="append", default=[], help="namespace to watch (repeatable)")
    p.add_argument("--all-namespaces", action="store_true", help="watch every namespace")
    p.add_argument(
        "--interval",
        type=float,
        default=periods.DEFAULT_INTERVAL_S,
        help="seconds between reconciliations of a cluster",
    )
    p.add_argument(
        "--resync-seconds",
        type=float,
        default=periods.resync_s(),
        help="an idle cluster whose resources did not change is re-read from Kafka and re-planned at most "
        "this often (placement drift made by others is found within it; 0 = every reconcile)",
    )
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="the most memory a plan made in the operator's process may take (e.g. 3Gi; default: the "
        "pod's memory limit): a cluster whose plan would need more is refused before planning, its "
        "intents Failed with reason InsufficientMemory, never an out-of-memory kill",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get("KAFKA_PLACEMENT_METRICS_PORT", "9090")),
        help="port of the HTTP endpoint: Prometheus metrics, /healthz and /readyz (0 = off)",
    )
    p.add_argument("--metrics-address", default="0.0.0.0", help="bind address of the metrics/probe endpoint")
    p.add_argument("--liveness", default="", help="kopf liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    p.add_argument("--verbose", action="store_true", help="log every handler step")
    p.add_argument(
        "--shutdown-grace-seconds",
        type=float,
        default=_env_float("KAFKA_PLACEMENT_SHUTDOWN_GRACE_SECONDS", 20.0),
        help="once stopping, exit at the latest this long after (a reconcile stuck in a call to an "
        "unanswering broker does not hold the exit; 0 = wait for it): keep it under the pod's "
        "terminationGracePeriodSeconds (20)",
    )
    g = p.add_argument_group("leader election (a coordination.k8s.io/v1 Lease; only the holder drives)")
    g.add_argument(
        "--leader-election",
        action=argparse.BooleanOptionalAction,
        default=os.environ.get("KAFKA_PLACEMENT_LEADER_ELECTION", "true").lower() not in ("0", "false", "no"),
        help="compete for the Lease and drive only while holding it (default: on)",
    )
    g.add_argument(
        "--lease-name",
        default=os.environ.get("KAFKA_PLACEMENT_LEASE_NAME", "kafka-placement-operator"),
        help="name of the Lease (default kafka-placement-operator)",
    )
    g.add_argument(
        "--lease-namespace",
        default=os.environ.get("KAFKA_PLACEMENT_LEASE_NAMESPACE", ""),
        help="namespace of the Lease (default $POD_NAMESPACE, else the one --namespace, else the pod's)",
    )
    g.add_argument(
        "--identity",
        default="",
        help="holder identity (default $POD_NAME or the host name, plus a random suffix)",
    )
    for flag, env, default, text in (
        ("--lease-duration", "LEASE_DURATION", 15.0, "seconds a standby waits on an unrenewed Lease"),
        ("--renew-deadline", "RENEW_DEADLINE", 10.0, "seconds the leader acts after its last renewal began"),
        ("--renew-period", "RENEW_PERIOD", 5.0, "seconds between renewals"),
        ("--retry-period", "RETRY_PERIOD", 2.0, "seconds between attempts of a standby or a failed renewal"),
    ):
        g.add_argument(
            flag,
            type=float,
            default=_env_float(f"KAFKA_PLACEMENT_{env}", default),
            help=f"{text} ({default:g})",
        )
    p.set_defaults(func=lazy("operator_cmds", "cmd_operator"))
