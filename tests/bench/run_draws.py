"""Planning time and bytes on random small clusters whose volumes bind: the draws of the headroom test's
generator (tests/unit/planning/test_headroom.py ``sized_draw``: 8 brokers, 120 partitions, 6 topics, a
volume of 0.9-1.6x the most any dir holds over a disk share of 0.6, 0.85 or 0.95), one scenario of
tests/bench/generator.py (``scale-out`` by default: broker, dir and leader balance with new empty brokers,
where the exact program with dir balance runs; planning/exact.py). Issue 56 item 5: small plans in <= 2 s.

    .venv/bin/python tests/bench/run_draws.py --seed 20261207 -n 60 --json new.json [--code CHECKOUT]
    .venv/bin/python tests/bench/run_draws.py --compare old.json new.json

Each draw is planned by ``compute_plan`` (Balanced effort) in this one process after a warm-up plan,
timed alone (wall). ``--code CHECKOUT`` plans with another checkout's planner (an older commit's, for a
paired run in one sequence). Prints one line per draw and a summary; ``--compare`` prints the pair's
table (markdown): wall time (sum, draws over 2 s, slowest), bytes moved (sum of both, draws cheaper and
dearer) and the worst plan over the lower bound. Prints only: its rows go into docs/benchmarks.md with
the command.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.checkout import plan_with_code  # noqa: E402

plan_with_code(sys.argv)  # (before the planner is imported)

from tests.unit.planning.test_headroom import sized_draw  # noqa: E402

from kafka_placement.model.errors import InfeasibleError  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402


def draws(seed: int, n: int) -> list[tuple[int, float, float]]:
    """(generator seed, volume factor, disk share) of each draw, the same for the same ``seed``."""
    rng = random.Random(seed)
    return [(rng.randint(1, 10_000), rng.uniform(0.9, 1.6), rng.choice((0.6, 0.85, 0.95))) for _ in range(n)]


def plan_one(scenario: str, seed: int, factor: float, share: float) -> dict[str, Any]:
    snap, intents = sized_draw(scenario, seed, factor, share)
    start = time.perf_counter()
    try:
        s = compute_plan(snap, intents).summary.to_json()
    except InfeasibleError:
        return {"seconds": time.perf_counter() - start, "bytes": None, "overBound": None}
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "bytes": s["bytesToMove"], "overBound": s["bytesOverLowerBound"]}


def compare(old_file: str, new_file: str) -> str:
    """The pair's table: each side's figures on the draws both planned."""
    old = {r["index"]: r for r in map(json.loads, Path(old_file).read_text().splitlines())}
    new = {r["index"]: r for r in map(json.loads, Path(new_file).read_text().splitlines())}
    keys = sorted(old.keys() & new.keys())
    both = [k for k in keys if old[k]["bytes"] is not None and new[k]["bytes"] is not None]
    lines = [
        "| side | draws | wall s (sum) | over 2 s | slowest s | bytes (sum, GB) | cheaper / dearer"
        " | worst / lower bound | refused |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, side, other in (("old", old, new), ("new", new, old)):
        worst = max((side[k]["overBound"] for k in both), default=None)
        lines.append(
            f"| {name} | {len(keys)} | {sum(side[k]['seconds'] for k in keys):.1f}"
            f" | {sum(side[k]['seconds'] > 2 for k in keys)} | {max(side[k]['seconds'] for k in keys):.2f}"
            f" | {sum(side[k]['bytes'] for k in both) / 1e9:.1f}"
            f" | {sum(side[k]['bytes'] < other[k]['bytes'] for k in both)}"
            f" / {sum(side[k]['bytes'] > other[k]['bytes'] for k in both)}"
            f" | {worst} | {sum(side[k]['bytes'] is None for k in keys)} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20261207, help="the draws' master seed")
    ap.add_argument("-n", type=int, default=60, help="draws")
    ap.add_argument("--scenario", default="scale-out", help="a scenario of tests/bench/generator.py")
    ap.add_argument("--json", default="", help="write the rows to this file (one JSON object per line)")
    ap.add_argument("--code", help="a checkout whose planner plans (default this one)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="print the table of two --json files")
    args = ap.parse_args()
    if args.compare:
        print(compare(*args.compare))
        return 0
    plan_one(args.scenario, 1, 1.2, 0.85)  # warm-up: imports, SciPy's first call
    rows = []
    for index, (seed, factor, share) in enumerate(draws(args.seed, args.n)):
        row = {"index": index, "seed": seed, "factor": factor, "share": share}
        row |= plan_one(args.scenario, seed, factor, share)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
