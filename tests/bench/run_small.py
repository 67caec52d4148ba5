"""Planning time on small clusters, by effort: how long a reconcile that re-plans waits, and what each
effort's plan copies (issue 56 item 5: up to 1,000 partitions in <= 2 s, up to 5,000 in <= 10 s).

    .venv/bin/python tests/bench/run_small.py            # every shape, 3 seeds, writes its section
    .venv/bin/python tests/bench/run_small.py --print    # prints only
    .venv/bin/python tests/bench/run_small.py --scenario all --fullest 0.7 [--code CHECKOUT]

Shapes of tests/bench/generator.py ``cluster`` (RF 3, 2 data centres x 2 racks, 2 dirs per broker, Zipf
sizes), each planned by ``compute_plan`` (the in-process planner of the CLI and the operator) under a
PlacementPolicy of two rack levels and broker balance, the case where the exact program runs
(planning/exact.py), once per effort (model/effort.py). Per shape: the slowest and median wall time over
the seeds, and the bytes each effort moves over Exhaustive's and over the lower bound
(planning/plan_quality.py). Wall time, one process, after a warm-up plan (imports, SciPy's first call).
Writes its section of docs/benchmarks.md unless ``--print``.

``--scenario NAME --fullest F``: the shapes up to 1,000 partitions as a named scenario of the generator
(``all``: a decommission, a drain, two rack levels, broker, dir and leader balance) on volumes of known
size, the fullest dir at F of its volume (``sized_volumes``: the disk headroom limit binds, as on a
cluster whose brokers report their volumes, Kafka 3.3 and later), Balanced effort only; a refusal
(no plan keeps the headroom limit) is timed and counted. ``--code CHECKOUT`` plans with another
checkout's planner (an older commit's, for a paired run in one sequence).
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.checkout import plan_with_code  # noqa: E402

plan_with_code(sys.argv)  # (before the planner is imported)

from tests.bench.generator import cluster, scenario, sized_volumes  # noqa: E402
from tests.bench.run_exec_scale import write_section  # noqa: E402  (one writer of benchmark sections)
from tests.bench.run_scale import planner_name  # noqa: E402

from kafka_placement.model.effort import EFFORTS  # noqa: E402
from kafka_placement.model.errors import InfeasibleError  # noqa: E402
from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402

SECTION = "## Small clusters: planning time by effort"
POLICY = (
    "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
    "  rackAwareness: {separator: /, levels: 2}\n  balance: {brokers: true}\n"
)
SHAPES = ((4, 24), (4, 60), (6, 100), (8, 200), (24, 200), (12, 400), (24, 1000), (24, 5000), (48, 5000))


def shape(brokers: int, partitions: int, seeds: int) -> dict[str, Any]:
    intents = Intents.loads(POLICY)
    times: dict[str, list[float]] = {e: [] for e in EFFORTS}
    over_best: dict[str, list[float]] = {e: [] for e in EFFORTS}
    over_bound: dict[str, list[float]] = {e: [] for e in EFFORTS}
    for seed in range(1, seeds + 1):
        snap = cluster(
            brokers=brokers, partitions=partitions, topics=4, rf=3, dcs=2, racks_per_dc=2, seed=seed, dirs=2
        )
        moved: dict[str, int] = {}
        for effort in EFFORTS:
            t = time.perf_counter()
            s = compute_plan(snap, intents.with_effort(effort)).summary.to_json()
            times[effort].append(time.perf_counter() - t)
            assert s["hardViolationsAfter"] == 0, (brokers, partitions, seed, effort)
            moved[effort] = s["bytesToMove"]
            over_bound[effort].append(
                s["bytesToMove"] / s["lowerBoundBytes"] if s["lowerBoundBytes"] else 1.0
            )
        for effort in EFFORTS:
            over_best[effort].append(moved[effort] / moved["Exhaustive"] if moved["Exhaustive"] else 1.0)
    row = {
        "brokers": brokers,
        "partitions": partitions,
        "max": {e: max(v) for e, v in times.items()},
        "median": {e: statistics.median(v) for e, v in times.items()},
        "overBest": {e: max(v) for e, v in over_best.items()},
        "overBound": {e: max(v) for e, v in over_bound.items()},
    }
    print(row, flush=True)
    return row


def scenario_shape(name: str, fullest: float, brokers: int, partitions: int, seeds: int) -> dict[str, Any]:
    """One shape of ``--scenario``: the Balanced effort's wall time per seed, refusals counted."""
    times, ratios, refused = [], [], 0
    for seed in range(1, seeds + 1):
        snap, text = scenario(name, brokers=brokers, partitions=partitions, topics=6, seed=seed)
        snap, _ = sized_volumes(snap, fullest)
        t = time.perf_counter()
        try:
            s = compute_plan(snap, Intents.loads(text)).summary.to_json()
        except InfeasibleError:
            times.append(time.perf_counter() - t)
            refused += 1
            continue
        times.append(time.perf_counter() - t)
        assert s["hardViolationsAfter"] == 0, (brokers, partitions, seed)
        ratios.append(s["bytesOverLowerBound"] or 1.0)
    row = {
        "brokers": brokers,
        "partitions": partitions,
        "max": max(times),
        "median": statistics.median(times),
        "refused": refused,
        "overBound": max(ratios, default=None),
    }
    print(row, flush=True)
    return row


def scenario_report(rows: list[dict[str, Any]], command: str, name: str, fullest: float, code: str) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"`{command}` ({when}, 2 cores, load average {os.getloadavg()[0]:.1f} at the end; planner: {code}). "
        f"Scenario `{name}` of tests/bench/generator.py, 6 topics, volumes of known size with the fullest "
        f"dir at {fullest:.0%} (`sized_volumes`), Balanced effort. Time: wall seconds of `compute_plan`, the "
        "slowest seed (median in brackets), a refusal (no plan keeps the disk headroom limit) included.",
        "",
        "| brokers | partitions | Balanced s | refused | moved / lower bound (worst) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        bound = "-" if r["overBound"] is None else f"{r['overBound']:.4f}"
        lines.append(
            f"| {r['brokers']} | {r['partitions']} | {r['max']:.2f} ({r['median']:.2f}) | {r['refused']} | "
            f"{bound} |"
        )
    return "\n".join(lines) + "\n"


def report(rows: list[dict[str, Any]], command: str, seeds: int) -> str:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    lines = [
        SECTION,
        "",
        f"`{command}` ({when}, 2 cores, load average {load:.1f} at the end). See the docstring of "
        f"`tests/bench/run_small.py`: {seeds} seeds per shape, RF 3, 2 data centres x 2 racks, 2 dirs per "
        "broker, a policy of two rack levels and broker balance; each seed planned once per effort. Time: "
        "wall seconds of `compute_plan`, the slowest seed (median in brackets). Bytes: the most any seed's "
        "plan moves over Exhaustive's plan, and over the lower bound.",
        "",
        "| brokers | partitions | Fast s | Balanced s | Exhaustive s | Fast / Exhaustive bytes | Balanced / "
        "Exhaustive | Balanced / lower bound |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = [f"{r['max'][e]:.2f} ({r['median'][e]:.2f})" for e in EFFORTS]
        best, bound = r["overBest"], r["overBound"]
        lines.append(
            f"| {r['brokers']} | {r['partitions']} | {t[0]} | {t[1]} | {t[2]} | {best['Fast']:.4f} | "
            f"{best['Balanced']:.4f} | {bound['Balanced']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--print", action="store_true", help="print only, do not write docs/benchmarks.md")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--scenario", help="a scenario of tests/bench/generator.py, on volumes of known size")
    ap.add_argument("--fullest", type=float, default=0.7, help="with --scenario: the fullest dir's share")
    ap.add_argument("--code", help="a checkout whose planner plans (default this one)")
    args = ap.parse_args(argv)
    compute_plan(
        cluster(brokers=4, partitions=24, topics=4, rf=3, dcs=2, racks_per_dc=2), Intents.loads(POLICY)
    )
    if args.scenario:
        name = planner_name(args.code or str(ROOT))
        rows = [scenario_shape(args.scenario, args.fullest, b, p, args.seeds) for b, p in SHAPES if p <= 1000]
        command = f"python tests/bench/run_small.py {' '.join(sys.argv[1:] if argv is None else argv)}"
        text = scenario_report(rows, command, args.scenario, args.fullest, name)
        print(text)
        if not args.print:
            with open(args.output, "a") as f:  # (a paired run appends one table per checkout)
                f.write("\n" + text)
        return 0
    rows = [shape(b, p, args.seeds) for b, p in SHAPES]
    text = report(rows, f"python tests/bench/run_small.py --seeds {args.seeds}", args.seeds)
    print(text)
    if not args.print:
        write_section(text, Path(args.output), SECTION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
