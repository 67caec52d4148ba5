"""The estimate before approval against what happened, for many small moves: where Kafka's own work per
move, not the bytes, sets the pace (execution/copy_model.py, ``DEFAULT_SECONDS_PER_MOVE``).

    .venv/bin/python tests/bench/run_eta_small.py [--partitions 3000,9000] [-o docs/benchmarks.md]

Needs the main Kafka rig (`tests/rig/kafka_rig.py up --name main`; KP_RIG_DIR for another rig dir). For
each N: N partitions of three 200-byte records in topics of 2,000 (RF 2 over brokers 1-3) and a
BrokerDecommission of broker 3 planned by `kafka-placement plan` (tests/bench/run_exec_scale.py: two
thirds of them move), the copy model's estimate from the snapshot the plan was made from (the CLI's
limits and tick of 1 s, as `execute` runs it), with and without Kafka's work per move; then `kafka-placement
execute --wait`; actual = the execution record's creation to its end, as `status.lastExecution` reports
it. Each N runs twice: the second estimate uses the time per move the first execution measured
(``copy_model.kafka_time_per_move``), as the operator's estimates use the KafkaCluster's
``status.kafkaWork``. Writes its section of docs/benchmarks.md with the command; topics are deleted
afterwards.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

import run_exec_scale as scale  # noqa: E402
from run_spread import write_section  # noqa: E402

from kafka_placement.cli._args import EXECUTE_POLL_S  # noqa: E402
from kafka_placement.execution.copy_model import estimate_plan, kafka_time_per_move  # noqa: E402
from kafka_placement.execution.record_doc import Limits  # noqa: E402
from kafka_placement.model.plan import Plan  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402

HEADING = "## Many small moves: the estimate before approval vs actual"


def one(bootstrap: str, n: int, per_move: float | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        topics = scale.create_topics(bootstrap, f"bench-eta-small-{uuid.uuid4().hex[:6]}", n)
        try:
            plan_path = scale.plan_for(bootstrap, topics, work)
            snap = ClusterSnapshot.from_json(json.loads((work / f"{topics[0]}.snap.json").read_text()))
            plan = Plan.from_json(json.loads(plan_path.read_text()))
            est = estimate_plan(snap, plan, Limits(), EXECUTE_POLL_S, per_move=per_move)
            bytes_only = estimate_plan(snap, plan, Limits(), EXECUTE_POLL_S, per_move=0.0)
            wall = scale.run_ours(bootstrap, plan_path, work, [])
            record = json.loads((work / "state.json").read_text())
        finally:
            scale.delete_topics(bootstrap, topics)
    actual = float(record["finishedAt"]) - float(record["createdAt"])
    return {
        "partitions": n,
        "moves": est.moves,
        "estimate": est.seconds,
        "bytesOnly": bytes_only.seconds,
        "actual": actual,
        "wall": wall,
        "ticks": record["counters"]["ticks"],
        "msPerMove": est.seconds_per_move * 1000,
        "measured": kafka_time_per_move(
            est.seconds, actual, est.moves, est.seconds_per_move, est.bound_seconds
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", default="3000,9000")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    bootstrap = scale.rig()["kafka"]["bootstrapServers"]
    rows = []
    for n in (int(x) for x in args.partitions.split(",")):
        per_move = None
        for _ in range(2):  # the second with the time per move the first measured
            row = one(bootstrap, n, per_move)
            print(json.dumps(row), flush=True)
            rows.append(row)
            per_move = row["measured"]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        HEADING,
        "",
        f"Produced by `python tests/bench/run_eta_small.py --partitions {args.partitions}` on {when}, "
        f"{os.cpu_count()} cores (load average {os.getloadavg()[0]:.1f}), against the rig's main cluster "
        "(3 KRaft nodes, Kafka 4.4). Each row: N partitions of 600 bytes, a decommission of broker 3 (two "
        "thirds of them move), the copy model's estimate (the CLI's limits, a tick of 1 s) with Kafka's "
        "work per move (assumed, 8 ms; then, for the second run of each N, the time per move the first "
        "execution measured) and without it (the model before it counted that work), against the "
        "execution record's creation to its end.",
        "",
        "| partitions | moves | ms a move | estimate s | without Kafka's work s | actual s | CLI wall s "
        "| ticks | estimate / actual | before: / actual | measured ms a move |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['partitions']} | {r['moves']} | {r['msPerMove']:.1f} | {r['estimate']:.1f} | "
            f"{r['bytesOnly']:.1f} | "
            f"{r['actual']:.1f} | {r['wall']:.1f} | {r['ticks']} | {r['estimate'] / r['actual']:.2f} | "
            f"{r['bytesOnly'] / r['actual']:.2f} | "
            + ("-" if r["measured"] is None else f"{r['measured'] * 1000:.1f}")
            + " |"
        )
    print("\n".join(lines))
    write_section(Path(args.output), lines, HEADING)


if __name__ == "__main__":
    main()
