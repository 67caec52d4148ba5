"""The plan review at a million partitions: does the ConfigMap the operator writes before approval
(reconcile/plan_review.py) stay under Kubernetes' 1 MiB per object however large the plan, and how long
does ``build_report`` take to make it?

    .venv/bin/python tests/bench/run_review_size.py [--partitions 1000000] [--brokers 1000]
        [-o docs/benchmarks.md]

A scale-out snapshot of tests/bench/generator.py (RF 3, a quarter of the brokers new and empty) and a plan
that moves one replica of every third partition onto a new broker (a synthetic plan: the review's size
depends on how many partitions, brokers, topics and batches it shows, not on how well they were chosen;
planning 1M partitions is run_scale.py's job). The report is built as the operator builds it
(``build_report`` with the default executor limits, Python's cyclic garbage collector paused as
``reconcile/cluster_pass.py`` pauses it) and its ConfigMap data is measured.

``build_report`` is timed twice: **with the planner's tally**, what the operator pays (it passes
``PlanResult.tally``; the synthetic plan has no planner, so its tally is made here beforehand the way
the planner makes it, ``plan_quality.tally`` under the enforced intents, outside the timing), and
**without a tally** (``kafka-placement report``, or a plan the planner did not tally: the report counts
every partition itself); each also with the collector on, as the report was timed before it was paused.
Each run gets a fresh copy of the plan, so the plan's id (memoised) is computed in every one. Results
replace this script's section of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402
from tests.bench.run_spread import write_section  # noqa: E402

from kafka_placement.execution.copy_model import estimate_json, estimate_plan  # noqa: E402
from kafka_placement.execution.executor import Limits  # noqa: E402
from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan  # noqa: E402
from kafka_placement.planning import plan_quality  # noqa: E402
from kafka_placement.planning.report import Report, build_report  # noqa: E402
from kafka_placement.reconcile import plan_review  # noqa: E402
from kafka_placement.spark.collector import collector_paused  # noqa: E402

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
    intents = Intents.loads(text)
    made = time.perf_counter()
    scope = plan_quality.Scope.of(snap, intents.enforced_only())
    with collector_paused():  # (the planner's tally is made with the collector paused: spark.collector)
        tally = plan_quality.tally(snap, plan, scope)
    tallied = time.perf_counter()
    per_broker = Limits().max_moves_per_broker

    def timed(with_tally: bool, paused: bool) -> tuple[Report, float]:
        fresh = Plan(plan.partitions)  # (its id not memoised yet)
        gc.collect()
        started = time.perf_counter()
        with collector_paused() if paused else contextlib.nullcontext():
            found = build_report(snap, fresh, intents, per_broker, tally if with_tally else None)
        return found, time.perf_counter() - started

    runs = {(t, paused): timed(t, paused) for t in (True, False) for paused in (True, False)}
    report = runs[(True, True)][0]
    assert all(found == report for found, _ in runs.values())  # (the same report every way)
    fresh = Plan(plan.partitions)
    started_id = time.perf_counter()
    assert fresh.plan_id == report.plan_id
    plan_id_s = time.perf_counter() - started_id
    gc.collect()
    started_estimate = time.perf_counter()
    with collector_paused():  # as the operator makes it, beside the report (reconcile/cluster_pass.py)
        estimate = estimate_plan(snap, plan, Limits(throttle=50_000_000), 5.0)
    estimate_s = time.perf_counter() - started_estimate
    data, binary = plan_review.review_data(report, Limits(), None, estimate_json(estimate, None))
    size = sum(len(k) + len(v.encode()) for k, v in {**data, **binary}.items())
    html = len(data.get("report.html", "").encode())
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    seconds = {k: f"{s:.2f}" for k, (_, s) in runs.items()}
    lines = [
        HEADING,
        "",
        f"Produced by `{command.strip()}` on {when}, {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f}; the machine is shared). What the operator writes to ConfigMap "
        "`kafka-placement-<cluster>-plan` before approval, for a synthetic plan (one replica of every third "
        "partition onto a new broker) on a scale-out snapshot.",
        "",
        "| partitions | brokers | plan entries | ConfigMap data bytes | of which report.html "
        "| gzipped page | brokers listed | largest moves listed | batches (entries) |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {len(snap.partitions)} | {len(snap.brokers)} | {len(plan.partitions)} | {size} | {html} | "
        f"{'yes' if binary else 'no'} | {report.brokers_count.shown} of {report.brokers_count.total} | "
        f"{report.moves_count.shown} of {report.moves_count.total} | {len(report.batch_bytes)} "
        f"({len(data['batches.json'])} bytes) |",
        "",
        f"The limit: {plan_review.MAX_DATA_BYTES} bytes of text (Kubernetes refuses an object over 1 MiB).",
        "",
        "`build_report`, wall-clock seconds, one run each (the same report every way). **With the "
        "planner's tally** is what the operator pays: it passes the planner's `PlanResult.tally` (this "
        "plan has no planner: its tally was made beforehand as the planner makes it, "
        f"`plan_quality.tally`, in {tallied - made:.1f} s, not counted; each run computes the plan's id "
        f"afresh, {plan_id_s:.2f} s of it, which the operator's plan has from the planner). "
        "**Without a tally** the report "
        "counts every partition itself (`kafka-placement report`, or a plan the planner did not tally). "
        "The operator and `kafka-placement report` build it with the cyclic garbage collector paused "
        "(`spark.collector`, as the planner); the collector on is how it was timed before.",
        "",
        "| build_report | collector paused (as the operator) | collector on |",
        "|---|---|---|",
        f"| with the planner's tally | {seconds[(True, True)]} | {seconds[(True, False)]} |",
        f"| without a tally | {seconds[(False, True)]} | {seconds[(False, False)]} |",
        "",
        f"The execution's estimate (`execution/copy_model.py`, `estimate.json`: {len(plan.partitions)} "
        f"moves, {'replayed' if estimate.exact else 'the bound: too many moves to replay'}) took "
        f"{estimate_s:.2f} s, the collector paused.",
        "",
        f"Generating the snapshot and plan took {made - started:.1f} s.",
        "",
    ]
    print("\n".join(lines))
    write_section(Path(args.output), lines, HEADING)


if __name__ == "__main__":
    main()
