"""Spark job entry point: plan a snapshot with the Spark engine, runnable by ``spark-submit``.

    spark-submit --master local[*] operator/kafka_placement/spark/job.py \\
        --snapshot snapshot.json|snapshot-dir --intents intents.yaml -o plan.json [--summary summary.json] \\
        [--shards N] [--max-moves-per-broker N] [--reactive-cordon] [--max-disk-share SHARE] \\
        [--effort Fast|Balanced|Exhaustive]

Under ``spark-submit`` (or a SparkApplication on Kubernetes) the master comes from spark-submit; the
snapshot and plan are exchanged through files (a mounted volume on Kubernetes). Exit codes are the
CLI's: 0 ok, 2 bad input, 3 infeasible, 1 other failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    from kafka_placement.model.effort import DEFAULT_EFFORT, EFFORTS
    from kafka_placement.model.errors import PlacementError
    from kafka_placement.model.intents import Intents
    from kafka_placement.spark.engines import EngineSettings, plan_with, spark_session
    from kafka_placement.spark.io import is_parquet, read_snapshot, write_plan_parquet

    ap = argparse.ArgumentParser(prog="kafka-placement-spark-job", description=__doc__)
    ap.add_argument("--snapshot", required=True, type=Path)
    ap.add_argument("--intents", required=True, type=Path)
    ap.add_argument("-o", "--output", required=True, type=Path)
    ap.add_argument("--summary", type=Path)
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--max-moves-per-broker", type=int, default=5)
    ap.add_argument(
        "--reactive-cordon",
        action="store_true",
        help="the cluster cannot cordon dirs (Kafka < 4.3): move new empty replicas off cordoned dirs",
    )
    ap.add_argument("--max-disk-share", type=float, help="the CLI's: no dir planned above this share")
    ap.add_argument("--effort", choices=EFFORTS, default=DEFAULT_EFFORT, help="the CLI's --effort")
    args = ap.parse_args(argv)
    try:
        snapshot = read_snapshot(args.snapshot)
        if not args.intents.is_file():
            raise PlacementError(f"{args.intents}: intents file not found")
        intents = Intents.loads(args.intents.read_text(), source=str(args.intents))
        intents = intents.with_reactive_cordon(args.reactive_cordon)
        if args.max_disk_share is not None:
            intents = intents.with_max_disk_share(args.max_disk_share)
        intents = intents.with_effort(args.effort)
        settings = EngineSettings(engine="spark", shards=args.shards)
        result = plan_with(
            snapshot, intents, settings, spark_session(None), max_moves_per_broker=args.max_moves_per_broker
        )
        if is_parquet(args.output):
            write_plan_parquet(result.plan, args.output)
        else:
            with open(args.output, "w", encoding="utf-8", newline="") as f:  # (never the whole text at once)
                f.writelines(result.plan.pieces())
                f.write("\n")
        if args.summary:
            args.summary.write_text(json.dumps(result.summary.to_json(), indent=1) + "\n")
        print(f"plan {result.plan.plan_id}: {len(result.plan.partitions)} partitions -> {args.output}")
        return 0
    except PlacementError as e:
        print(f"kafka-placement spark job: error: {e.message}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
