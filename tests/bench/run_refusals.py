"""Small clusters on volumes the disk headroom limit binds: every draw planned with and without the rack
units' room check (planning/rack_room.py) in one process, the verdicts compared and timed.

    .venv/bin/python tests/bench/run_refusals.py [--streams 7,11] [--draws 150] [--factors 0.9:1.6]
        [--scenarios decommission,drain,rack-repair,scale-out,all] [-o docs/benchmarks.md | --print]

The draws are the headroom test's (tests/unit/planning/test_headroom.py ``sized_draw``: 8 brokers, 120
partitions of tests/bench/generator.py's scenarios, volumes 0.9-1.6x the most any dir holds over a share
of 0.6, 0.85 or 0.95; ``--factors`` and ``--scenarios`` draw others), each stream a ``random.Random(stream)``
of ``--draws`` draws. Each draw is planned
twice by ``compute_plan``: with the check, and with it answering "no shortfall" (the planner before it);
CPU seconds of each. Reported: the draws where the check refused, what the planner without it answered
there (a plan there would be a false refusal: the run stops with an error), whether every other draw got
the same plan id both ways, and the slowest draws. Results replace this script's section of
docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.run_exec_scale import command_line, publish  # noqa: E402
from tests.bench.run_scale import planner_name  # noqa: E402
from tests.unit.planning.test_headroom import sized_draw  # noqa: E402

from kafka_placement.model.errors import InfeasibleError  # noqa: E402
from kafka_placement.planning import rack_room  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402

SECTION = "## Small clusters: refusals proven by the racks' room"
SCENARIOS = ("decommission", "drain", "rack-repair", "scale-out", "all")


def verdict(draw: tuple[str, int, float, float], check: bool) -> tuple[str, float, bool]:
    """The plan id (or ``refused: RULE``), CPU seconds, and whether the check found a shortfall."""
    real: Callable[..., rack_room.Shortfall | None] = rack_room.shortfall
    found: list[bool] = []

    def checked(ctx: object) -> rack_room.Shortfall | None:
        short = real(ctx) if check else None
        found.append(short is not None)
        return short

    rack_room.shortfall = checked  # type: ignore[assignment]
    try:
        snap, intents = sized_draw(*draw)
        started = time.process_time()
        try:
            answer = compute_plan(snap, intents).plan.plan_id
        except InfeasibleError as e:
            answer = f"refused: {e.rule}"
        return answer, time.process_time() - started, any(found)
    finally:
        rack_room.shortfall = real  # type: ignore[assignment]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", default="7,11", help="random streams, comma-separated")
    ap.add_argument("--draws", type=int, default=150, help="draws per stream")
    ap.add_argument("--factors", default="0.9:1.6", help="volumes: LO:HI x the most any dir holds / share")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="the generator's scenarios drawn")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--print", action="store_true", help="print the section only")
    args = ap.parse_args()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows, same, total, slow = [], 0, 0, []
    low, high = (float(f) for f in args.factors.split(":"))
    scenarios = args.scenarios.split(",")
    seconds = {True: 0.0, False: 0.0}
    verdict(("all", 1, 1.0, 0.85), check=False)  # a warm-up: imports and SciPy's first call, untimed
    for stream in (int(s) for s in args.streams.split(",")):
        rnd = random.Random(stream)
        for _ in range(args.draws):
            draw = (
                rnd.choice(scenarios),
                rnd.randint(1, 10_000),
                rnd.uniform(low, high),
                rnd.choice((0.6, 0.85, 0.95)),
            )
            new, new_s, fired = verdict(draw, check=True)
            old, old_s, _ = verdict(draw, check=False)
            seconds[True] += new_s
            seconds[False] += old_s
            total += 1
            name = f"`{draw[0]}` seed {draw[1]} (factor {draw[2]:.3f}, share {draw[3]})"
            if fired:
                if not old.startswith("refused"):
                    raise SystemExit(f"a false refusal: {name} planned {old} without the check")
                rows.append(f"| {name} | {new} in {new_s:.2f} s | {old} in {old_s:.2f} s |")
            else:
                same += new == old
            slow.append((max(new_s, old_s), name, new_s, old_s))
            print(name, new, f"{new_s:.2f}", old, f"{old_s:.2f}", "fired" if fired else "", flush=True)
    slowest = [f"| {n} | {a:.2f} | {b:.2f} |" for _, n, a, b in sorted(slow, reverse=True)[:5]]
    text = "\n".join(
        [
            SECTION,
            "",
            f"Produced by `{command_line('run_refusals.py')}`"
            + f" on {when}, {os.cpu_count()} cores, planner {planner_name(str(ROOT))}. {total} draws of the "
            f"headroom test's generator (`sized_draw`: 8 brokers, 120 partitions, volumes {low:g}-{high:g}x "
            "the most any dir holds over a share of 0.6, 0.85 or 0.95), each planned with the racks' room "
            "check (`planning/rack_room.py`) and without it, in one process, CPU seconds of `compute_plan`.",
            "",
            f"The check refused {len(rows)} draw(s), each refused without it too (a plan there would have "
            f"stopped this run); {same} of the other {total - len(rows)} got the same plan id both ways. "
            f"CPU seconds in all: {seconds[True]:.1f} with the check, {seconds[False]:.1f} without.",
            "",
            "| draw refused by the check | with it | without it |",
            "|---|---|---|",
            *rows,
            "",
            "The slowest draws, seconds:",
            "",
            "| draw | with the check | without it |",
            "|---|---|---|",
            *slowest,
            "",
        ]
    )
    publish(text, args.output, SECTION, args.print)


if __name__ == "__main__":
    main()
