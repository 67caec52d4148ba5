"""CLI commands of the pure planner: ``plan``, ``evaluate``, ``report``, ``place`` (docs/architecture.md,
"The CLI").

Each command checks its outputs can be written before it reads or computes anything, and writes them
all through ``_io.write_outputs`` (all or none). Integer flags are range-checked while parsing.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..execution import copy_model
from ..execution.copy_model import estimate_json
from ..execution.record_doc import Limits
from ..model.capacity import DEFAULT_MAX_DISK_SHARE, MAX_DISK_SHARE, MIN_DISK_SHARE
from ..model.cluster_spec import SPARK_K8S_DEFAULTS, SparkSpec
from ..model.crd_parts import LAUNCHERS, SPARK_MEMORY_PATTERN
from ..model.effort import DEFAULT_EFFORT, EFFORTS
from ..model.effort import DESCRIPTION as EFFORT_DESCRIPTION
from ..model.errors import BadInputError
from ..model.intents import MAX_REPLICATION_FACTOR, Intents
from ..model.jsonio import INT32_MAX, clip
from ..model.snapshot import ClusterSnapshot
from ..planning.optimizer import PlanResult
from ..planning.placement import MAX_NEW_PARTITIONS, place
from ..planning.plan_quality import evaluate
from ..planning.report import build_report
from ..planning.report_html import render
from ..planning.summary_parts import DiskHeadroom
from ..spark.collector import collector_paused
from ..spark.engines import ENGINES, EngineSettings, plan_with, start_session
from ..spark.failures import validate_master
from ..spark.memory import check_read, limit_of
from ._args import EXECUTE_POLL_S, int_in, key_value, number_in
from ._io import (
    Output,
    check_outputs,
    existing_dir,
    json_output,
    plan_output,
    read_plan,
    read_snapshot_arg,
    read_text,
    write_json,
    write_outputs,
)

MAX_SHARDS = 100_000
SPARK_MEMORY = re.compile(SPARK_MEMORY_PATTERN)


def load_intents(path: str) -> Intents:
    return Intents.loads(read_text(path, "intents"), source=path)


def cmd_plan(args: argparse.Namespace) -> int:
    with_summary = args.summary is not None  # --summary "" is an error, not "no summary"
    check_outputs(
        [("-o", args.output), ("--summary", args.summary)] if with_summary else [("-o", args.output)]
    )
    if args.engine in ("spark", "auto"):
        validate_master(args.spark_master)
    settings = EngineSettings(
        engine=args.engine,
        master=args.spark_master,
        shards=args.shards,
        conf=tuple(args.spark_conf),
        executor_wait_s=float(args.spark_executor_wait),
    )
    memory = limit_of(args.max_memory)
    settings = replace(settings, memory=memory)
    if args.engine == "local" and args.snapshot != "-" and Path(args.snapshot).is_file():
        check_read(Path(args.snapshot).stat().st_size, memory, args.snapshot)  # before it is read (auto: may
        # choose Spark, whose executors hold the plan; it is checked once read, should it plan here)
    spark = start_session(settings) if args.engine == "spark" else None  # starts while the files are read
    snapshot = read_snapshot_arg(args.snapshot)
    if snapshot.unreachable:  # alive brokers whose dirs were not read: a plan would not know their replicas
        raise BadInputError(
            f"broker(s) {', '.join(map(str, snapshot.unreachable))} are alive but did not answer when the "
            "snapshot was taken (unreachableBrokers): their log dirs are unknown; take the snapshot again "
            "when they answer",
            args.snapshot,
        )
    intents = load_intents(args.intents).with_reactive_cordon(args.reactive_cordon)
    if args.max_disk_share is not None:
        intents = intents.with_max_disk_share(args.max_disk_share)
    intents = intents.with_effort(args.effort)
    if args.engine == "spark-k8s":
        result = _plan_on_kubernetes(args, snapshot)
    else:
        session = spark.result() if spark is not None else None
        result = plan_with(
            snapshot, intents, settings, session, max_moves_per_broker=args.max_moves_per_broker
        )
    outputs = [plan_output("-o", args.output, result.plan)]
    if with_summary:
        outputs.append(json_output("--summary", args.summary, result.summary.to_json()))
    write_outputs(outputs)
    s = result.summary
    print(
        f"plan {result.plan.plan_id}: {s.partitions_changed} partitions, "
        f"{s.replica_moves} replica moves, "
        f"{s.intra_broker_moves} dir moves, {s.bytes_to_move} bytes (lower bound {s.lower_bound_bytes}), "
        f"{s.batches.count} batches, hard violations after: {s.hard_violations_after} "
        f"(engine {s.engine})",
        file=sys.stderr,
    )
    print(headroom_line(s.disk_headroom), file=sys.stderr)
    return 0


def headroom_line(disk: DiskHeadroom | None) -> str:
    """The summary's disk headroom in one line: the limit, the fullest dir after the plan, and the dirs
    without a limit (their volume size unknown)."""
    if disk is None:
        return "disk headroom: not reported"
    share, top, unknown = disk.max_disk_share, disk.fullest, len(disk.unknown_size)
    head = f"disk headroom: no log dir above {100 * share:.1f}% of its volume"
    if top is not None:
        at = 100 * top.share_after
        head += f"; fullest after the plan: broker {top.broker} {top.path} at {at:.1f}%"
    if unknown:
        head += f"; {unknown} dir(s) of unknown volume size have no limit"
    return head


def _plan_on_kubernetes(args: argparse.Namespace, snapshot: ClusterSnapshot) -> PlanResult:
    """``--engine spark-k8s``: the Spark job on Kubernetes (a driver pod, or a SparkApplication)."""
    from pathlib import Path

    from ..kube.gateway import KubeGateway
    from ..spark.k8s import SparkK8sSettings, run_on_kubernetes

    missing = [
        f"--{n}"
        for n in ("spark-image", "exchange-claim", "exchange-dir")
        if not getattr(args, n.replace("-", "_"))
    ]
    if missing:
        raise BadInputError(f"--engine spark-k8s needs {', '.join(missing)}", "plan")
    existing_dir("--exchange-dir", args.exchange_dir)  # the shared volume, checked before Kubernetes
    if not SPARK_MEMORY.fullmatch(args.spark_memory):
        raise BadInputError(
            f"'{clip(args.spark_memory, 40)}' is not a Spark memory size (e.g. 512m, 2g)", "--spark-memory"
        )
    settings = SparkK8sSettings(
        namespace=args.spark_namespace,
        image=args.spark_image,
        exchange_claim=args.exchange_claim,
        exchange_dir=Path(args.exchange_dir),
        exchange_mount=args.exchange_mount,
        launcher=args.spark_launcher,
        executor_instances=args.spark_executors,
        driver_memory=args.spark_memory,
        executor_memory=args.spark_memory,
        timeout_s=float(args.spark_timeout),
        service_account=args.spark_service_account,
        extra_arguments=(
            *(("--reactive-cordon",) if args.reactive_cordon else ()),
            *(("--max-disk-share", repr(args.max_disk_share)) if args.max_disk_share is not None else ()),
            "--effort",
            args.effort,
        ),
        conf=tuple(args.spark_conf),
    )
    kube = KubeGateway.from_config(args.kubeconfig)
    plan, summary = run_on_kubernetes(kube, snapshot, read_text(args.intents, "intents"), settings)
    return PlanResult(plan, summary)


def cmd_evaluate(args: argparse.Namespace) -> int:
    check_outputs([("-o", args.output)])
    snapshot = read_snapshot_arg(args.snapshot)
    plan = read_plan(args.plan)
    intents = load_intents(args.intents) if args.intents else None
    write_json(args.output, evaluate(snapshot, plan, intents).to_json())
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    check_outputs([("-o", args.output)])
    snapshot = read_snapshot_arg(args.snapshot)
    plan = read_plan(args.plan)
    intents = load_intents(args.intents) if args.intents else None
    with collector_paused():  # (as the planner: spark.collector)
        report = build_report(snapshot, plan, intents, args.max_moves_per_broker)
    # how long `execute` would take with these flags, as the operator's review says (execution/copy_model.py)
    limits = Limits(
        throttle=args.throttle,
        hold_rate=args.hold_achieved_rate,
        max_moves_per_broker=args.execute_max_moves_per_broker,
        max_moves=args.execute_max_moves,
        max_bytes_per_broker=args.execute_max_bytes_per_broker,
    )
    est = copy_model.estimate_plan(snapshot, plan, limits, EXECUTE_POLL_S)
    write_outputs([Output("-o", args.output, text=render(report, estimate_json(est, None)))])
    return 0


def cmd_place(args: argparse.Namespace) -> int:
    check_outputs([("-o", args.output)])
    snapshot = read_snapshot_arg(args.snapshot)
    intents = load_intents(args.intents) if args.intents else Intents()
    plan = place(
        snapshot, intents, args.topic, args.partitions, args.replication_factor, args.start_partition
    )
    write_json(args.output, plan.to_json())
    return 0


def register(sub: Any) -> None:
    """Add this group's sub-commands to the top-level parser's subparsers."""
    engine, spark = EngineSettings(), SPARK_K8S_DEFAULTS  # the defaults the flags show
    p = sub.add_parser("plan", help="compute the moves that reach the declared placement")
    p.add_argument(
        "--snapshot", required=True, help="cluster snapshot JSON (from `snapshot`) or a Parquet snapshot dir"
    )
    p.add_argument("--intents", required=True, help="YAML stream of {kind, spec} documents")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default=engine.engine,
        help=f"local: in-process; spark: PySpark (default master {engine.master}); auto: spark for large "
        "snapshots (default %(default)s)",
    )
    p.add_argument("--spark-master", default=engine.master, help="Spark master for --engine spark")
    p.add_argument(
        "--spark-conf",
        type=key_value,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for --engine spark, or for the driver of --engine spark-k8s with the Pod "
        "launcher (repeatable), e.g. spark.executor.memory=4g",
    )
    p.add_argument(
        "--spark-executor-wait",
        type=int_in(1, 86_400),
        default=int(engine.executor_wait_s),
        metavar="SECONDS",
        help="on a Spark cluster, give up when no executor is registered for this long (default %(default)s)",
    )
    p.add_argument(
        "--shards",
        type=int_in(0, MAX_SHARDS),
        default=engine.shards,
        help="Spark shards (default 0: 1 for up to 1000 partitions to repair, else 4 per core)",
    )
    k = p.add_argument_group("--engine spark-k8s (the Spark job as pods on Kubernetes)")
    k.add_argument(
        "--spark-launcher",
        choices=LAUNCHERS,
        default=spark.launcher,
        help="Pod: a driver pod, Spark starts executor pods; SparkApplication: the Kubeflow "
        "spark-operator runs the job (default %(default)s)",
    )
    k.add_argument(
        "--spark-executors",
        type=int_in(1, 1000),
        default=spark.executor_instances,
        help="executor pods (launcher Pod; default %(default)s)",
    )
    k.add_argument(
        "--spark-memory",
        default=spark.memory,
        help="memory of the driver and each executor (default %(default)s)",
    )
    k.add_argument(
        "--spark-timeout",
        type=int_in(1, 86_400),
        default=SparkSpec().timeout_seconds,
        metavar="SECONDS",
        help="delete the run and fail after this long (default %(default)s)",
    )
    k.add_argument("--spark-service-account", default=spark.service_account, help="the driver's")
    k.add_argument("--kubeconfig", help="default: $KUBECONFIG or ~/.kube/config")
    k.add_argument("--spark-namespace", default="default")
    k.add_argument("--spark-image", help="image with kafka-placement and its Spark job")
    k.add_argument("--exchange-claim", help="PVC mounted by the Spark pods, shared with this process")
    k.add_argument("--exchange-dir", help="where that volume is mounted here")
    k.add_argument(
        "--exchange-mount", default=spark.exchange_mount, help="where it is mounted in the Spark pods"
    )
    p.add_argument(
        "-o",
        "--output",
        default="-",
        help="plan JSON (Kafka's reassignment format); - = stdout; a name ending in .parquet writes Parquet",
    )
    p.add_argument("--summary", help="write the plan's metrics, lower bound and batches here")
    p.add_argument(
        "--max-moves-per-broker",
        type=int_in(1, INT32_MAX),
        default=5,
        help="per-broker limit of each batch (at least 1)",
    )
    p.add_argument(
        "--reactive-cordon",
        action="store_true",
        help="Kafka < 4.3 cannot cordon dirs: also move empty replicas that appeared on cordoned dirs",
    )
    p.add_argument(
        "--max-disk-share",
        type=number_in(MIN_DISK_SHARE, MAX_DISK_SHARE),
        metavar="SHARE",
        help=(
            f"no log dir is planned above this share of its volume ({MIN_DISK_SHARE:g}-{MAX_DISK_SHARE:g}; "
            f"default: the intents' capacity.maxDiskShare, else {DEFAULT_MAX_DISK_SHARE:g}); a plan that "
            "cannot keep every dir under it is refused (exit 3)"
        ),
    )
    p.add_argument(
        "--effort",
        choices=EFFORTS,
        default=DEFAULT_EFFORT,
        help=f"{EFFORT_DESCRIPTION} Default: %(default)s.",
    )
    p.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="the most memory the local engine may take (e.g. 3Gi, 2500Mi; default: the container's "
        "memory limit, else none): a snapshot whose plan would need more is refused before it is read "
        "or planned (exit 3), never killed for lack of memory mid-plan",
    )
    p.set_defaults(func=cmd_plan)

    e = sub.add_parser("evaluate", help="quality metrics of a plan against a snapshot, as JSON")
    e.add_argument("--snapshot", required=True)
    e.add_argument("--plan", required=True)
    e.add_argument("--intents", help="also measure lower bound and violations against these intents")
    e.add_argument("-o", "--output", default="-")
    e.set_defaults(func=cmd_evaluate)

    r = sub.add_parser("report", help="one self-contained HTML page of a plan: charts and tables")
    r.add_argument("--snapshot", required=True)
    r.add_argument("--plan", required=True)
    r.add_argument("--intents", help="also show the lower bound, balance threshold and violations")
    r.add_argument(
        "--max-moves-per-broker",
        type=int_in(1, INT32_MAX),
        default=5,
        help="per-broker limit of each batch, as given to `plan` (default %(default)s)",
    )
    r.add_argument(
        "--throttle",
        type=int_in(1, 2**63 - 1),
        metavar="BYTES/s",
        help="the throttle `execute` would be given: the page's estimated duration uses it (default: "
        "none, an assumed rate)",
    )
    r.add_argument(
        "--hold-achieved-rate",
        action="store_true",
        help="as `execute --hold-achieved-rate`: brokers achieve the throttle (else the estimate counts "
        "what they achieve below it)",
    )
    in_flight = Limits()
    r.add_argument(
        "--execute-max-moves-per-broker",
        type=int_in(1, 100_000),
        default=in_flight.max_moves_per_broker,
        metavar="N",
        help="as `execute --max-moves-per-broker`: moves in flight per broker, for the estimate (default "
        "%(default)s)",
    )
    r.add_argument(
        "--execute-max-moves",
        type=int_in(1, 1_000_000),
        default=in_flight.max_moves,
        metavar="N",
        help="as `execute --max-moves`: moves in flight in the cluster, for the estimate "
        "(default %(default)s)",
    )
    r.add_argument(
        "--execute-max-bytes-per-broker",
        type=int_in(1, 2**63 - 1),
        metavar="BYTES",
        help="as `execute --max-bytes-per-broker`: bytes in flight per broker, for the estimate (default: "
        "execute's)",
    )
    r.add_argument("-o", "--output", required=True, help="the HTML file; - = stdout")
    r.set_defaults(func=cmd_report)

    n = sub.add_parser("place", help="assign new partitions honouring cordons, decommissions and policies")
    n.add_argument("--snapshot", required=True)
    n.add_argument("--intents", help="intents YAML (optional)")
    n.add_argument("--topic", required=True)
    n.add_argument(
        "--partitions",
        type=int_in(1, MAX_NEW_PARTITIONS),
        required=True,
        help=f"how many new partitions (1 to {MAX_NEW_PARTITIONS})",
    )
    n.add_argument(
        "--replication-factor",
        type=int_in(1, MAX_REPLICATION_FACTOR),
        help="default: the topic's policy's RF",
    )
    n.add_argument(
        "--start-partition",
        type=int_in(0, INT32_MAX),
        default=0,
        help="number of the first new partition",
    )
    n.add_argument("-o", "--output", default="-")
    n.set_defaults(func=cmd_place)
