"""What `kafka-placement snapshot -o FILE` and `plan -o FILE` cost to write a large snapshot and plan: seconds
and the memory the write adds at its peak, for each way the CLI can write them.

    .venv/bin/python tests/bench/run_snapshot_write.py [--sizes 1000000:1000] [--runs 3]
        [-o docs/benchmarks.md | --print]

Each size is tests/bench/generator.py's scenario ``all`` (RF 3). Each way runs in a fresh process that first
reads the snapshot (a Parquet copy), then resets the kernel's high-water mark of its resident set
(/proc/self/clear_refs) and writes through the CLI's writers (``cli._io``): ``whole`` is the JSON text made at
once and written (``write_outputs`` of an output holding ``snapshot.dumps()``, the CLI's way until
2026-12-07), ``pieces`` the JSON written piece by piece (``write_snapshot`` to a ``.json`` name), ``parquet``
a Parquet snapshot directory (``write_snapshot`` to a ``.parquet`` name). The plan is a synthetic one of the
snapshot (every third partition's replicas rotated: a third of the partitions, as the planner's plans at a
million partitions change), made before the mark is reset: ``plan-whole`` its text made at once
(``Plan.dumps``, the CLI's way until 2026-12-07), ``plan-pieces`` written piece by piece (``plan_output``).
The files are checked: each pair of JSON files equal, the Parquet directory read back as the same snapshot.
Medians of ``--runs`` rounds, the ways in turn. Results replace this script's section of
docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402
from tests.bench.run_exchange import STEP_PEAK, run_child  # noqa: E402
from tests.bench.run_exec_scale import command_line, publish  # noqa: E402
from tests.bench.run_scale import planner_name  # noqa: E402

from kafka_placement.cli._io import read_snapshot_arg  # noqa: E402
from kafka_placement.spark.io import write_parquet  # noqa: E402

SECTION = "## Writing a large snapshot or plan: `kafka-placement snapshot -o FILE`, `plan -o FILE`"
WAYS = {
    "whole": "x.json",
    "pieces": "x.json",
    "parquet": "x.parquet",
    "plan-whole": "p.json",
    "plan-pieces": "p.json",
}
PAIRS = (("whole", "pieces", "x.json"), ("plan-whole", "plan-pieces", "p.json"))
CHILD = (
    STEP_PEAK
    + r"""
import json, sys, time
from kafka_placement.cli._io import Output, plan_output, read_snapshot_arg, write_outputs, write_snapshot
from kafka_placement.model.plan import PartitionTarget, Plan
way, source, out = sys.argv[1], sys.argv[2], sys.argv[3]
snap = read_snapshot_arg(source)
plan = None
if way.startswith("plan"):
    plan = Plan.of([
        PartitionTarget(p.topic, p.partition, (*p.replicas[1:], *p.replicas[:1]), ("any",) * len(p.replicas))
        for p in snap.partitions[::3]
    ])
before, start = step_start(), time.perf_counter()
if way == "whole":
    write_outputs([Output("-o", out, text=snap.dumps() + "\n")])
elif way == "plan-whole":
    write_outputs([Output("-o", out, text=plan.dumps() + "\n")])
elif way == "plan-pieces":
    write_outputs([plan_output("-o", out, plan)])
else:
    write_snapshot("-o", out, snap)
print(json.dumps({"seconds": time.perf_counter() - start, "peakMb": step_peak_mb(before)}))
"""
)


def one(way: str, source: Path, out: Path) -> dict[str, float]:
    """One way of writing, in a fresh process with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    return run_child(CHILD, [way, str(source), str(out)], env, way)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000:1000", help="partitions:brokers,...")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--print", action="store_true", help="print the section only")
    args = ap.parse_args()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            n, brokers = (int(x) for x in spec.split(":"))
            snap, _ = scenario("all", brokers=brokers, partitions=n, topics=max(20, n // 500))
            source = Path(tmp) / f"snap-{n}"
            write_parquet(snap, source)
            seen: dict[str, list[dict[str, float]]] = {w: [] for w in WAYS}
            for run in range(args.runs):
                for way, name in WAYS.items():
                    out = Path(tmp) / f"{way}-{run}-{name}"
                    seen[way].append(one(way, source, out))
                    print(way, seen[way][-1], flush=True)
                for a, b, name in PAIRS:
                    one_way, other = (Path(tmp) / f"{w}-{run}-{name}" for w in (a, b))
                    assert one_way.read_bytes() == other.read_bytes(), f"the JSON files of {a}, {b} differ"
                assert read_snapshot_arg(str(Path(tmp) / f"parquet-{run}-x.parquet")) == snap
                for p in Path(tmp).glob(f"*-{run}-[xp].*"):
                    if p.is_dir():
                        for f in p.iterdir():
                            f.unlink()
                        p.rmdir()
                    else:
                        p.unlink()
            for way, got in seen.items():
                secs = statistics.median(g["seconds"] for g in got)
                peak = statistics.median(g["peakMb"] for g in got)
                rows.append(f"| {n} | {way} | {secs:.2f} | {peak:.0f} |")
            del snap
    text = "\n".join(
        [
            SECTION,
            "",
            f"Produced by `{command_line('run_snapshot_write.py')}`"
            + f" on {when}, {os.cpu_count()} cores, {args.runs} runs, planner {planner_name(str(ROOT))}. "
            "Scenario `all`, RF 3. Each way in a fresh process that read the snapshot first; seconds of the "
            "write and what it added to the process's resident set at its peak (medians). `whole`: the JSON "
            "text made at once (the CLI's writer before 2026-12-07); `pieces`: the JSON written piece by "
            "piece (the same bytes, checked); `parquet`: a Parquet snapshot directory (read back as the "
            "same snapshot); `plan-whole` and `plan-pieces`: a plan of a third of the partitions (each one's "
            "replicas rotated), its text made at once (`plan -o FILE` before 2026-12-07) and written piece "
            "by piece (the same bytes, checked).",
            "",
            "| partitions | way | write s | write's peak MB |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )
    publish(text, args.output, SECTION, args.print)


if __name__ == "__main__":
    main()
