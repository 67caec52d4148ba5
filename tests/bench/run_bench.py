"""Planner benchmark: this planner vs Kafka's own ``--generate`` vs a naive greedy, in one run.

    .venv/bin/python tests/bench/run_bench.py                 # default sizes, writes docs/benchmarks.md
    .venv/bin/python tests/bench/run_bench.py --quick         # small sizes, prints only

For each scenario of tests/bench/generator.py the three planners get the same snapshot; every plan is
measured by the same code (kafka_placement.planning.plan_quality) against the scenario's intents: bytes
moved and their ratio to the lower bound, balance after, multi-level rack violations and hard-rule
violations after. Then the planner's own time is measured from 10k to 300k partitions. Timings are
wall-clock on a shared 2-core machine: compare ratios within one run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.baselines import naive_greedy_plan  # noqa: E402
from tests.bench.generator import SCENARIOS, scenario  # noqa: E402
from tests.bench.kafka_generate import kafka_generate_plan  # noqa: E402

from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.plan import Plan  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan, optimize  # noqa: E402
from kafka_placement.planning.plan_quality import evaluate  # noqa: E402
from kafka_placement.planning.state import Eligibility  # noqa: E402

GB = 1e9


def measure(name: str, snap: ClusterSnapshot, intents: Intents, plan: Plan, seconds: float) -> dict[str, Any]:
    m = evaluate(snap, plan, intents).to_json()
    after = m["balanceAfter"]
    return {
        "planner": name,
        "partitions": m["partitionsChanged"],
        "replicaMoves": m["replicaMoves"],
        "gbMoved": m["bytesToMove"] / GB,
        "ratio": (m["bytesToMove"] / m["lowerBoundBytes"]) if m["lowerBoundBytes"] else None,
        "broker": after["brokerBytesMaxMean"],
        "dir": after["dirBytesMaxMeanWorstBroker"],
        "leaders": after["leadersMaxMean"],
        "rack": m["violationsAfter"]["rackSpread"],
        "hard": m["hardViolationsAfter"],
        "seconds": seconds,
        "lowerBoundGb": m["lowerBoundBytes"] / GB,
    }


def run_scenario(name: str, brokers: int, partitions: int, topics: int) -> list[dict[str, Any]]:
    snap, text = scenario(name, brokers=brokers, partitions=partitions, topics=topics)
    intents = Intents.loads(text)
    elig = Eligibility.of(snap, intents)
    rows = []
    t = time.perf_counter()
    ours = compute_plan(snap, intents).plan
    rows.append(measure("kafka-placement", snap, intents, ours, time.perf_counter() - t))
    keep = [b for b in snap.broker_ids if b not in elig.decommissioned]
    t = time.perf_counter()
    kafka = kafka_generate_plan(snap, keep)
    rows.append(measure("kafka --generate", snap, intents, kafka, time.perf_counter() - t))
    balance = any(p.balance.brokers for p in intents.policies)
    t = time.perf_counter()
    greedy = naive_greedy_plan(snap, set(elig.decommissioned), set(elig.drained), balance)
    rows.append(measure("naive greedy", snap, intents, greedy, time.perf_counter() - t))
    return rows


def fmt(v: object, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec) if spec else str(v)


def scenario_table(name: str, rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"### {name} (lower bound {rows[0]['lowerBoundGb']:.1f} GB)",
        "",
        "| planner | partitions changed | replica moves | GB moved | moved / lower bound | broker max/mean "
        "| dir max/mean (worst broker) | leaders max/mean | rack violations after | hard violations after "
        "| plan time s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['planner']} | {r['partitions']} | {r['replicaMoves']} | {r['gbMoved']:.1f} | "
            f"{fmt(r['ratio'], '.3f')} | {fmt(r['broker'], '.3f')} | {fmt(r['dir'], '.3f')} | "
            f"{fmt(r['leaders'], '.3f')} | {r['rack']} | {r['hard']} | {r['seconds']:.2f} |"
        )
    return [*lines, ""]


def scaling(sizes: list[int], brokers: int) -> list[str]:
    lines = [
        f"### Planning time vs size ({brokers} brokers, RF 3, 3 DCs x 2 racks, 2 dirs; in-process, "
        "local engine)",
        "",
        "| scenario | partitions | replicas | optimize s | plan + summary s | partitions changed |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("scale-out", "all"):
        for n in sizes:
            snap, text = scenario(name, brokers=brokers, partitions=n, topics=max(20, n // 500))
            intents = Intents.loads(text)
            t = time.perf_counter()
            plan = optimize(snap, intents)
            t_opt = time.perf_counter() - t
            t = time.perf_counter()
            compute_plan(snap, intents)
            t_all = time.perf_counter() - t
            lines.append(f"| {name} | {n} | {3 * n} | {t_opt:.1f} | {t_all:.1f} | {len(plan.partitions)} |")
            print(lines[-1], flush=True)
    return [*lines, ""]


END = "<!-- end of run_bench.py's part: the sections below come from the other benchmarks -->"


def write_own_part(path: Path, lines: list[str]) -> None:
    """Replace this benchmark's part of ``path`` (its start up to END), keeping every other section."""
    rest = ""
    if path.exists():
        text = path.read_text()
        rest = text.split(END, 1)[1] if END in text else ""
        if END not in text and text.strip():
            raise SystemExit(f"{path} has no '{END}' line: not overwriting the other benchmarks' sections")
    path.write_text("\n".join([*lines, "", END]) + rest)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=60)
    ap.add_argument("--partitions", type=int, default=30000)
    ap.add_argument("--topics", type=int, default=150)
    ap.add_argument("--scaling", default="10000,100000,300000", help="partition counts for the timing table")
    ap.add_argument("--quick", action="store_true", help="small sizes, print only")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    if args.quick:
        args.brokers, args.partitions, args.topics, args.scaling = 12, 2000, 20, "2000,10000"
    command = "python tests/bench/run_bench.py " + " ".join(sys.argv[1:])
    out = [
        "# Benchmarks",
        "",
        f"Produced by `{command.strip()}` (wrapper: `make bench`) on "
        f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}. All numbers below come from this one run.",
        "",
        "Scenarios come from `tests/bench/generator.py`: hierarchical racks `/dcN/rM` (3 DCs x 2 racks",
        "per DC), 2 JBOD dirs per broker, topic sizes Zipf-distributed (a few huge topics, many small",
        "ones), partitions of a topic within 0.5x-1.5x of each other, a Kafka-like initial placement.",
        "The three planners get the same snapshot; one metrics module measures every plan against the",
        "scenario's intents. `kafka --generate` is Kafka 4.3.1's own placement code",
        "(`StripedReplicaPlacer`, as `kafka-reassign-partitions.sh --generate` runs it, seeded) given the",
        "brokers that remain; it re-places every partition from scratch and cannot move replicas between",
        "dirs. The naive greedy moves each replica that must move to the least-loaded broker, then moves",
        "largest replicas from the most to the least loaded broker. The lower bound is defined in",
        "`operator/kafka_placement/planning/plan_quality.py`.",
        "",
        f"## Plan quality ({args.brokers} brokers, {args.partitions} partitions, RF 3)",
        "",
    ]
    for name in SCENARIOS:
        rows = run_scenario(name, args.brokers, args.partitions, args.topics)
        table = scenario_table(name, rows)
        print("\n".join(table), flush=True)
        out += table
    out += ["## Speed", ""]
    out += scaling([int(x) for x in args.scaling.split(",")], 100)
    if not args.quick:
        write_own_part(Path(args.output), out)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
