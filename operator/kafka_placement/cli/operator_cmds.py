"""``kafka-placement operator``: run the kopf operator (handlers in ``kafka_placement.handlers``).

Runs standalone (no kopf peering objects needed; run one replica). Watches the given namespaces or the
whole cluster, serves Prometheus metrics, and reconciles each KafkaCluster every ``--interval`` seconds.
Kubernetes credentials: in-cluster service account, else ``KUBECONFIG``/~/.kube/config.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import Any

from ..model.errors import BadInputError


def cmd_operator(args: argparse.Namespace) -> int:
    if not args.namespace and not args.all_namespaces:
        raise BadInputError("give --namespace NS (repeatable) or --all-namespaces", "operator")
    if args.namespace and args.all_namespaces:
        raise BadInputError("--namespace and --all-namespaces exclude each other", "operator")
    os.environ["KP_RECONCILE_INTERVAL"] = str(args.interval)
    import kopf
    from prometheus_client import start_http_server

    from ..handlers import register  # registers every handler with kopf

    del register
    kopf.configure(verbose=args.verbose)
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python logs every connection at INFO
    if args.metrics_port:
        start_http_server(args.metrics_port, addr=args.metrics_address)
    kopf.run(
        standalone=True,
        clusterwide=bool(args.all_namespaces),
        namespaces=args.namespace or (),
        liveness_endpoint=args.liveness or None,
    )
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("operator", help="run the Kubernetes operator (kopf)")
    p.add_argument("--namespace", action="append", default=[], help="namespace to watch (repeatable)")
    p.add_argument("--all-namespaces", action="store_true", help="watch every namespace")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between reconciliations of a cluster")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=int(os.environ.get("KAFKA_PLACEMENT_METRICS_PORT", "9090")),
        help="Prometheus metrics port (0 = off)",
    )
    p.add_argument("--metrics-address", default="0.0.0.0", help="metrics bind address")
    p.add_argument("--liveness", default="", help="kopf liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    p.add_argument("--verbose", action="store_true", help="log every handler step")
    p.set_defaults(func=cmd_operator)
