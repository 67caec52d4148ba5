"""The plan review's size at a million partitions: does the ConfigMap the operator writes before approval
(reconcile/plan_review.py) stay under Kubernetes' 1 MiB per object however large the plan?

    .venv/bin/python tests/bench/run_review_size.py [--partitions 1000000] [--brokers 1000]
        [-o docs/benchmarks.md]

A scale-out snapshot of tests/bench/generator.py (RF 3, a quarter of the brokers new and empty) and a plan
that moves one replica of every third partition onto a new broker (a synthetic plan: the review's size
depends on how many partitions, brokers, topics and batches it shows, not on how well they were chosen;
planning 1M partitions is run_scale.py's job). The report is built as the operator builds it
(``build_report`` with the default executor limits) and its ConfigMap data is measured. Results replace
this script's section of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402
from tests.bench.run_spread import write_section  # noqa: E402

from kafka_placement.execution.executor import Limits  # noqa: E402
from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan  # noqa: E402
from kafka_placement.planning.report import build_report  # noqa: E402
from kafka_placement.reconcile import plan_review  # noqa: E402

HEADING = "## Plan review size"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    command = "python tests/bench/run_review_size.py " + " ".join(sys.argv[1:])
    started = time.perf_counter()
    snap, text = scenario(
        "scale-out", brokers=args.brokers, partitions=args.partitions, topics=max(20, args.partitions // 500)
    )
    empty = sorted(b.id for b in snap.brokers)[-max(1, args.brokers // 4) :]
    targets = []
    for i, p in enumerate(snap.partitions):
        if i % 3:
            continue
        new = empty[i % len(empty)]
        if new in p.replicas:
            continue
        replicas = (*p.replicas[:-1], new)
        targets.append(PartitionTarget(p.topic, p.partition, replicas, (ANY_DIR,) * len(replicas)))
    plan = Plan.of(targets)
    made = time.perf_counter()
    report = build_report(snap, plan, Intents.loads(text), Limits().max_moves_per_broker)
    built = time.perf_counter()
    data, binary = plan_review.review_data(report, Limits())
    size = sum(len(k) + len(v.encode()) for k, v in {**data, **binary}.items())
    html = len(data.get("report.html", "").encode())
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        HEADING,
        "",
        f"Produced by `{command.strip()}` on {when}, {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f}; the machine is shared). What the operator writes to ConfigMap "
        "`kafka-placement-<cluster>-plan` before approval, for a synthetic plan (one replica of every third "
        "partition onto a new broker) on a scale-out snapshot.",
        "",
        "| partitions | brokers | plan entries | ConfigMap data bytes | of which report.html "
        "| gzipped page | brokers listed | largest moves listed | batches (entries) | build_report s |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {len(snap.partitions)} | {len(snap.brokers)} | {len(plan.partitions)} | {size} | {html} | "
        f"{'yes' if binary else 'no'} | {report.brokers_count.shown} of {report.brokers_count.total} | "
        f"{report.moves_count.shown} of {report.moves_count.total} | {len(report.batch_bytes)} "
        f"({len(data['batches.json'])} bytes) | {built - made:.1f} |",
        "",
        f"The limit: {plan_review.MAX_DATA_BYTES} bytes of text (Kubernetes refuses an object over 1 MiB). "
        f"Generating the snapshot and plan took {made - started:.1f} s.",
        "",
    ]
    print("\n".join(lines))
    write_section(Path(args.output), lines, HEADING)


if __name__ == "__main__":
    main()
