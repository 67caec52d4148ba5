"""CLI commands of the pure planner: ``plan``, ``evaluate``, ``report``, ``place`` (docs/architecture.md,
"The CLI").

Each command checks its outputs can be written before it reads or computes anything, and writes them
all through ``_io.write_outputs`` (all or none). Their flags are in ``planning_args`` (range-checked
while parsing), which imports this module only when one of these commands runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from ..model.crd_parts import SPARK_MEMORY_PATTERN
from ..model.errors import BadInputError
from ..model.intents import Intents
from ..model.jsonio import clip
from ..model.snapshot import ClusterSnapshot
from ..planning.optimizer import PlanResult
from ..planning.placement import place
from ..planning.plan_quality import evaluate
from ..planning.summary_parts import DiskHeadroom
from ..spark.collector import collector_paused
from ..spark.engines import EngineSettings, plan_with, start_session
from ..spark.failures import validate_master
from ..spark.memory import check_read, limit_of
from ._args import EXECUTE_POLL_S
from ._io import (
    Output,
    check_outputs,
    document_output,
    existing_dir,
    json_output,
    plan_output,
    read_plan,
    read_snapshot_arg,
    read_text,
    write_json,
    write_outputs,
)

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
    # only `report` needs these (the copy model brings the execution record's pydantic models)
    from ..execution import copy_model
    from ..execution.copy_model import estimate_json
    from ..execution.record_doc import Limits
    from ..planning.report import build_report
    from ..planning.report_html import render

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
    per_move = None if args.kafka_ms_per_move is None else args.kafka_ms_per_move / 1000
    est = copy_model.estimate_plan(snapshot, plan, limits, EXECUTE_POLL_S, per_move=per_move)
    write_outputs([Output("-o", args.output, text=render(report, estimate_json(est, None)))])
    return 0


def cmd_place(args: argparse.Namespace) -> int:
    check_outputs([("-o", args.output)])
    snapshot = read_snapshot_arg(args.snapshot)
    intents = load_intents(args.intents) if args.intents else Intents()
    plan = place(
        snapshot, intents, args.topic, args.partitions, args.replication_factor, args.start_partition
    )
    write_outputs([document_output("-o", args.output, plan.pieces)])
    return 0
