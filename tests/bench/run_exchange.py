"""The spark-k8s engine's snapshot on its way to the driver pod: what the operator (or the CLI) writes to the
exchange volume and what the driver's `kafka-placement plan` (or a SparkApplication's job) reads back.

    .venv/bin/python tests/bench/run_exchange.py [--sizes 1000000:1000] [--code OLD_CHECKOUT,...]
        [--runs 3] [-o docs/benchmarks.md | --print]

Each size is tests/bench/generator.py's scenario ``all`` (RF 3). For each run, and in it each checkout of
``--code`` in turn (default: this one; an older commit's worktree for a paired run in one sequence), two
fresh processes with that checkout's code: the writer reads the snapshot, then times ``spark.k8s
.write_inputs`` into a new run dir (the volume's bytes counted after); the reader times
``cli._io.read_snapshot_arg`` on the path that checkout's ``driver_pod.job_file_args`` gives the job, and
checks it read the very snapshot (its JSON text's hash). The writer reports what the write added to its
resident set at the write's peak (the kernel's high-water mark reset just before it, through
/proc/self/clear_refs); the reader its peak resident set (``ru_maxrss``): what the driver's Python holds
once it has the snapshot. Results replace this script's section
of docs/benchmarks.md, with the command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402
from tests.bench.run_exec_scale import command_line, publish  # noqa: E402
from tests.bench.run_scale import planner_name  # noqa: E402

from kafka_placement.spark.io import write_parquet  # noqa: E402

SECTION = "## The spark-k8s exchange: the snapshot the driver pod reads"

# a child script's measure of one step's own memory: the kernel's high-water mark of its resident set reset
# just before the step (/proc/self/clear_refs), and what it grew by at its peak, in MB (no braces: it goes
# into format templates as it is)
STEP_PEAK = r"""
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key + ":"))  # kB
def step_start():
    open("/proc/self/clear_refs", "w").write("5")
    return status("VmRSS")
def step_peak_mb(before):
    return (status("VmHWM") - before) / 1024
"""

# run in a fresh process with one checkout's code first on sys.path: argv = role, snapshot (Parquet), run dir
CHILD = r"""
import hashlib, json, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
role, source, run_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
from kafka_placement.cli._io import read_snapshot_arg
from kafka_placement.spark import driver_pod
{step}
out = {{}}
if role == "write":
    from kafka_placement.spark.k8s import write_inputs
    snap = read_snapshot_arg(str(source))
    before = step_start()
    start = time.perf_counter()
    write_inputs(run_dir, snap, "kind: X\n", {{}})
    out["seconds"] = time.perf_counter() - start
    out["writeMb"] = step_peak_mb(before)
    out["bytes"] = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
else:
    path = driver_pod.job_file_args(str(run_dir))[1]
    start = time.perf_counter()
    snap = read_snapshot_arg(path)
    out["seconds"] = time.perf_counter() - start
    out["read"] = Path(path).name
out["hash"] = hashlib.sha256(snap.dumps().encode()).hexdigest()[:12]
out["peakMb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_child(script: str, args: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    """``script`` in a fresh process of this Python with ``args``: the JSON object its last line prints; a
    failure ends the benchmark with ``what`` and the end of its error output."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode:
        raise SystemExit(f"{what}: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def child(code: Path, role: str, source: Path, run_dir: Path) -> dict[str, Any]:
    """One role (``write`` or ``read``) in a fresh process with checkout ``code``'s package."""
    script = CHILD.format(root=str(code / "operator"), step=STEP_PEAK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return run_child(script, [role, str(source), str(run_dir)], env, f"{code} {role}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000:1000", help="partitions:brokers,...")
    ap.add_argument("--code", default=str(ROOT), help="checkouts, comma-separated")
    ap.add_argument("--runs", type=int, default=3, help="runs per checkout, in turn")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--print", action="store_true", help="print the section only")
    args = ap.parse_args()
    codes = [Path(c).resolve() for c in args.code.split(",")]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            n, brokers = (int(x) for x in spec.split(":"))
            snap, _ = scenario("all", brokers=brokers, partitions=n, topics=max(20, n // 500))
            source = Path(tmp) / f"snap-{n}"
            write_parquet(snap, source)
            del snap
            seen: dict[Path, list[tuple[dict[str, object], dict[str, object]]]] = {c: [] for c in codes}
            for run in range(args.runs):
                for i, code in enumerate(codes):
                    run_dir = Path(tmp) / f"run-{n}-{run}-{i}"
                    wrote = child(code, "write", source, run_dir)
                    read = child(code, "read", source, run_dir)
                    assert read["hash"] == wrote["hash"], f"{code}: the job read another snapshot"
                    print(code, wrote, read, flush=True)
                    seen[code].append((wrote, read))
                    for p in sorted(run_dir.rglob("*"), reverse=True):
                        p.rmdir() if p.is_dir() else p.unlink()
                    run_dir.rmdir()
            for code, got in seen.items():

                def median(role: int, key: str, got: list[tuple[dict[str, object], ...]] = got) -> float:
                    return statistics.median(float(str(g[role][key])) for g in got)

                rows.append(
                    f"| {n} | {brokers} | {planner_name(str(code))} | {got[0][1]['read']} | "
                    f"{float(str(got[0][0]['bytes'])) / 2**20:.0f} | {median(0, 'seconds'):.2f} | "
                    f"{median(0, 'writeMb'):.0f} | {median(1, 'seconds'):.2f} | {median(1, 'peakMb'):.0f} |"
                )
    text = "\n".join(
        [
            SECTION,
            "",
            f"Produced by `{command_line('run_exchange.py')}`"
            + f" on {when}, {os.cpu_count()} cores, {args.runs} runs per checkout in turn (medians). "
            "Scenario `all`, RF 3. Write: `spark.k8s.write_inputs` into a new run dir (what the operator and "
            "`plan --engine spark-k8s` do before the driver pod starts), the bytes it put on the volume, "
            "what the write added to the writer's resident set at its peak (the high-water mark reset just "
            "before it). Read: `read_snapshot_arg` of the path the driver's arguments name (what the driver "
            "pod's `kafka-placement plan` and a SparkApplication's job read first), checked to be the very "
            "snapshot, and that process's peak resident set.",
            "",
            "| partitions | brokers | planner | the job reads | MiB on the volume | write s "
            "| write's peak MB | read s | reader peak MB |",
            "|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    publish(text, args.output, SECTION, args.print)


if __name__ == "__main__":
    main()
