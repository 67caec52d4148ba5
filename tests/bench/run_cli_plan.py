"""The command users run at scale, end to end: `kafka-placement plan --snapshot SNAP -o plan.json` on a
million partitions, wall time and peak memory of the whole process (start, imports, the snapshot's read,
the plan, its summary, the plan file written), with the files' writers timed beside it.

    .venv/bin/python tests/bench/run_cli_plan.py [--sizes 1000000:1000] [--engines local,spark@local[2]]
        [--code OLD_CHECKOUT,...] [--runs 1] [-o docs/benchmarks.md | --print]

Each size is tests/bench/generator.py's scenario ``all`` (a decommission, a draining dir cordon, 2-level
rack spread, broker/dir/leader balance; RF 3) written as a Parquet snapshot. For each checkout in
``--code`` (default: this one; an older commit's worktree for a paired run in one sequence) and each
engine, the CLI of that checkout plans it in a fresh process (``run_scale.run_sampled``'s sampling of the
process tree's proportional set size: the CLI, a forked copy, Spark's JVM and workers). Then, in this
process, the two file writers of this checkout against ``json.dumps(..., indent=1)``, whose exact text
they give (checked): ``Plan.dumps`` on the plan the first run wrote and ``ClusterSnapshot.dumps`` on the
snapshot (what ``kafka-placement snapshot`` writes), and its Parquet snapshot read row by row against
column by column (``readers``). Results replace this script's section of docs/benchmarks.md, with the
command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402
from tests.bench.run_exec_scale import command_line, publish  # noqa: E402
from tests.bench.run_scale import cpus_of, engine_setup, planner_name, run_sampled  # noqa: E402

from kafka_placement.cli._io import read_snapshot_arg  # noqa: E402
from kafka_placement.model.plan import Plan  # noqa: E402
from kafka_placement.spark.io import write_parquet  # noqa: E402

SECTION = "## The CLI's plan end to end at 1M partitions"
T = TypeVar("T")
CLI = "import sys; sys.path.insert(0, {root!r}); from kafka_placement.cli import main; sys.exit(main())"


def run_cli(code: Path, spec: str, snap: Path, intents: Path, out: Path, timeout: float) -> dict[str, object]:
    """`kafka-placement plan` of checkout ``code`` with engine ``spec`` (as run_scale's engines): wall
    seconds, the process tree's peak MB, the plan id it printed."""
    base, cpus = cpus_of(spec)
    engine, master, env = engine_setup(base)
    env["PYTHONPATH"] = os.pathsep.join([str(code / "operator"), env.get("PYTHONPATH", "")])
    argv = ["plan", "--snapshot", str(snap), "--intents", str(intents), "-o", str(out), "--engine", engine]
    if engine == "spark":
        argv += ["--spark-master", master]
    done = run_sampled(
        [sys.executable, "-c", CLI.format(root=str(code / "operator")), *argv], env, cpus, timeout
    )
    if "error" in done:
        return done
    lines = (str(done["stdout"]) + str(done["stderr"])).splitlines()
    printed = next((ln for ln in lines if ln.startswith("plan ")), "")
    return {
        "wall": done["wall"],
        "peakMb": done["peakMb"],
        "plan": printed.split(":")[0].removeprefix("plan "),
    }


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    text = fn()
    return text, time.perf_counter() - start


def writers(snap_dir: Path, plan_file: Path) -> list[str]:
    """Rows: each writer against ``json.dumps(indent=1)`` (the same text, checked)."""
    rows = []
    snap = read_snapshot_arg(str(snap_dir))
    plan = Plan.loads(plan_file.read_text())
    for what, fast, slow in (
        (
            f"plan file, {len(plan.partitions)} entries",
            plan.dumps,
            lambda: json.dumps(plan.to_json(), indent=1),
        ),
        (
            f"snapshot file, {len(snap.partitions)} partitions",
            snap.dumps,
            lambda: json.dumps(snap.to_json(), indent=1),
        ),
    ):
        new, new_s = timed(fast)
        old, old_s = timed(slow)
        assert new == old, f"{what}: the texts differ"
        rows.append(f"| {what} | {len(new) / 2**20:.0f} | {old_s:.2f} | {new_s:.2f} |")
    return rows


def readers(snap_dir: Path) -> str:
    """A row: the Parquet snapshot read row by row (each row parsed as a snapshot file's partition) and
    column by column (``spark.columnar``), the same snapshot (checked)."""
    from kafka_placement.spark import columnar, io

    taken = columnar.partitions
    columnar.partitions = lambda *_: None  # type: ignore[assignment]
    try:
        rows, rows_s = timed(lambda: io.read_snapshot(snap_dir))
    finally:
        columnar.partitions = taken  # type: ignore[assignment]
    columns, columns_s = timed(lambda: io.read_snapshot(snap_dir))
    assert columns == rows, "the reads differ"
    return f"| Parquet snapshot, {len(rows.partitions)} partitions | {rows_s:.2f} | {columns_s:.2f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000:1000", help="partitions:brokers,...")
    ap.add_argument("--engines", default="local")
    ap.add_argument("--code", default=str(ROOT), help="checkouts whose CLI plans, comma-separated")
    ap.add_argument("--runs", type=int, default=1, help="runs per checkout and engine, in turn")
    ap.add_argument("--timeout", type=float, default=1200.0)
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--print", action="store_true", help="print the section only")
    args = ap.parse_args()
    codes = [Path(c).resolve() for c in args.code.split(",")]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows, text_rows, read_rows = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            n, brokers = (int(x) for x in spec.split(":"))
            snap, intents_text = scenario("all", brokers=brokers, partitions=n, topics=max(20, n // 500))
            snap_dir, intents = Path(tmp) / f"snap-{n}", Path(tmp) / f"intents-{n}.yaml"
            write_parquet(snap, snap_dir)
            intents.write_text(intents_text)
            del snap
            first_plan: Path | None = None
            for run in range(args.runs):
                for engine in args.engines.split(","):
                    for code in codes:
                        out = Path(tmp) / f"plan-{n}-{run}-{engine.replace('/', '_')}.json"
                        r = run_cli(code, engine, snap_dir, intents, out, args.timeout)
                        name = planner_name(str(code))
                        if "error" in r:
                            row = f"| {n} | {brokers} | {engine} | {name} | failed: {r['error']} | | |"
                        else:
                            got = f"{r['wall']:.1f} | {r['peakMb']:.0f} | {r['plan']}"
                            row = f"| {n} | {brokers} | {engine} | {name} | {got} |"
                            first_plan = first_plan or out
                        print(row, flush=True)
                        rows.append(row)
            if first_plan is not None:
                text_rows += writers(snap_dir, first_plan)
            read_rows.append(readers(snap_dir))
    text = "\n".join(
        [
            SECTION,
            "",
            f"Produced by `{command_line('run_cli_plan.py')}`" + f" on {when}, "
            f"{os.cpu_count()} cores. Scenario `all`, RF 3, a Parquet snapshot; wall = the whole "
            "`kafka-placement plan` process (start, imports, the snapshot's read, the plan, its summary, the "
            "plan file written); peak = the process tree's proportional set size. The plan id is what the "
            "CLI printed (the same id: the same plan).",
            "",
            "| partitions | brokers | engine | planner | wall s | peak MB | plan |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "The files' writers of this checkout against `json.dumps(..., indent=1)` (the same text, "
            "checked), in one process, seconds:",
            "",
            "| file | MiB | json.dumps s | written entry by entry s |",
            "|---|---|---|---|",
            *text_rows,
            "",
            "The Parquet snapshot's read of this checkout (`spark.io.read_snapshot`), row by row (each row "
            "parsed as a snapshot file's partition) and column by column (`spark.columnar`: what `plan` does "
            "when every row is plainly valid), the same snapshot (checked), in one process, seconds:",
            "",
            "| snapshot | row by row s | column by column s |",
            "|---|---|---|",
            *read_rows,
            "",
        ]
    )
    publish(text, args.output, SECTION, args.print)


if __name__ == "__main__":
    main()
