"""Failure spread benchmark: each scenario planned without and with ``balance.failureSpread``.

    .venv/bin/python tests/bench/run_spread.py [--sizes 30000:60,100000:100] [--scenarios all,...]
        [-o docs/benchmarks.md]

For each size (partitions:brokers, RF 3, as tests/bench/run_bench.py and run_scale.py generate them)
and scenario of tests/bench/generator.py, the same snapshot is planned in-process twice: with the
scenario's intents, then with ``failureSpread: true`` added to its PlacementPolicy's balance (a policy
over every topic asking only that when the scenario has none). Each row: the summary's failure spread
(min / mean distinct followers per leading broker, and the brokers below the target the rules allow),
bytes moved / lower bound, and the wall time of ``compute_plan`` (plan + summary), with the goal's own
seconds. Results replace this script's section of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import SCENARIOS, scenario  # noqa: E402

from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.planning.goals import FailureSpreadGoal  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402

HEADING = "## Failure spread as a soft goal"
SPREAD_ONLY = "kind: PlacementPolicy\nmetadata: {name: spread}\nspec:\n  topics: {include: ['*']}\n"


def with_spread(text: str) -> str:
    """The scenario's intents with ``failureSpread: true`` in its policy's balance."""
    if "balance: {" in text:
        return text.replace("balance: {", "balance: {failureSpread: true, ")
    if "kind: PlacementPolicy" in text:  # (the policy is the scenario's last document)
        return text.rstrip("\n") + "\n  balance: {failureSpread: true}\n"
    return text.rstrip("\n") + "\n---\n" + SPREAD_ONLY + "  balance: {failureSpread: true}\n"


_goal_seconds = [0.0]
_optimize = FailureSpreadGoal.optimize


def _timed(self: FailureSpreadGoal, ctx: Any) -> None:
    t = time.process_time()
    _optimize(self, ctx)
    _goal_seconds[0] += time.process_time() - t


FailureSpreadGoal.optimize = _timed  # type: ignore[method-assign]


def run(snap: Any, text: str) -> dict[str, Any]:
    _goal_seconds[0] = 0.0
    t, cpu = time.perf_counter(), time.process_time()
    s = compute_plan(snap, Intents.loads(text)).summary.to_json()
    spent, cpu = time.perf_counter() - t, time.process_time() - cpu
    spread = s["failureSpread"]
    return {
        "min": spread["min"],
        "mean": spread["mean"],
        "target": spread.get("target", {}).get("mean"),
        "below": spread.get("brokersBelowTarget"),
        "ratio": s["bytesOverLowerBound"],
        "gb": s["bytesToMove"] / 1e9,
        "hard": s["hardViolationsAfter"],
        "seconds": spent,
        "cpu": cpu,
        "goal": _goal_seconds[0],
    }


def row(size: str, name: str, goal: str, r: dict[str, Any], base: float) -> str:
    target = "-" if r["target"] is None else f"{r['target']:.2f}"
    below = "-" if r["below"] is None else str(r["below"])
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
    return (
        f"| {size} | {name} | {goal} | {r['min']} / {r['mean']:.2f} | {target} | {below} | {r['gb']:.1f} | "
        f"{ratio} | {r['hard']} | {r['seconds']:.2f} | {r['cpu']:.2f} | {r['goal']:.2f} | "
        f"{100 * r['goal'] / base:.1f}% | {r['cpu'] / base:.2f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="30000:60,100000:100", help="partitions:brokers,...")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    command = "python tests/bench/run_spread.py " + " ".join(sys.argv[1:])
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    lines = [
        HEADING,
        "",
        f"Produced by `{command.strip()}` on {when}, {os.cpu_count()} cores (load average {load:.1f} at the "
        "start; the machine is shared). Each scenario of `tests/bench/generator.py` (RF 3, 3 DCs x 2 racks, "
        "2 dirs per broker; 30k partitions with 150 topics as `run_bench.py`, others with one topic per "
        "500 partitions as `run_scale.py`) planned in-process without and with `failureSpread: true` in "
        "its policy's balance (a policy over every topic asking only that where the scenario has none). "
        "Spread = distinct followers of the partitions each broker leads, min / mean over leading "
        "brokers; target = the mean of what the rules allow each broker (`planning/spread.py`); below = "
        "brokers short of their target; wall s and CPU s = `compute_plan` (plan + summary) in wall-clock "
        "and process CPU seconds; goal s = the goal's own CPU seconds; goal share = goal s / the same "
        "scenario's CPU s without the goal (what the goal adds: the rest of the plan is the same code); "
        "x = CPU s / CPU s without the goal, one run each (on a loaded shared machine a run's CPU time "
        "varies by more than the goal costs: read x with the goal share).",
        "",
        "| size | scenario | failureSpread | spread min / mean | target | below | GB moved | moved / LB "
        "| hard after | wall s | CPU s | goal s | goal share | x |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    warm, text = scenario("all", brokers=12, partitions=2000, topics=20)
    run(warm, with_spread(text))  # (imports and first-call costs, counted in no row)
    for spec in args.sizes.split(","):
        n, brokers = (int(x) for x in spec.split(":"))
        topics = 150 if n == 30000 else max(20, n // 500)
        size = f"{n // 1000}k x {brokers}"
        for name in args.scenarios.split(","):
            snap, text = scenario(name, brokers=brokers, partitions=n, topics=topics)
            off = run(snap, text)
            on = run(snap, with_spread(text))
            for goal, r in (("off", off), ("on", on)):
                lines.append(row(size, name, goal, r, off["cpu"]))
                print(lines[-1], flush=True)
    lines += ["", f"Load average at the end: {os.getloadavg()[0]:.1f}.", ""]
    write_section(Path(args.output), lines)
    print(f"wrote {args.output}")


def write_section(path: Path, lines: list[str], heading: str = HEADING) -> None:
    """Replace the section ``heading`` of the file (or add it as the first section after the index of
    current results; a file that does not exist yet is made of the section alone)."""
    HEADING = heading
    text = path.read_text() if path.exists() else ""
    block = "\n".join(lines) + "\n"
    if HEADING in text:
        start = text.index(HEADING)
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + block + (text[end + 1 :] if end >= 0 else "")
    else:
        at = text.find("\n## ", text.find("## Current results") + 1)
        text = text[: at + 1] + block + "\n" + text[at + 1 :] if at >= 0 else text + "\n" + block
    path.write_text(text)


if __name__ == "__main__":
    main()
