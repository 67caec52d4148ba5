"""Memory refusal: what `kafka-placement plan` (local engine) really takes against what spark/memory.py
estimates before reading (from the JSON file's size) and before planning (from the replicas), so that the
refusal's constants stay above what planning takes.

    .venv/bin/python tests/bench/run_memory.py [--sizes 50000:50,100000:100] [-o docs/benchmarks.md]

Each size: the generator's scenario ``all`` (RF 3) written as a JSON snapshot, planned by the CLI in a
fresh process whose peak memory is the larger of the kernel's maximum resident set (``ru_maxrss`` of the
waited child) and the peak of its process tree's proportional set size sampled meanwhile (the local
engine's copies beside the plan, spark/beside.py, included: they run from 50,000 partitions on 2 CPUs); the
files are generated in a process of their own, so that no child starts as a fork of a large parent. The
estimates must be at least the measured peak (ratio >= 1); the section is appended to the output with the
command.
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))


from tests.bench.run_scale import tree_rss_kb  # noqa: E402

from kafka_placement.spark import beside, memory  # noqa: E402

CLI = Path(sys.executable).parent / "kafka-placement"


def peak_of(cmd: list[str]) -> tuple[int, int]:
    """(exit code, peak bytes) of ``cmd`` run alone in a fresh process: its maximum resident set, or its
    process tree's proportional set size sampled every 0.2 s if larger (a forked copy's own pages)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    tree = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        tree = max(tree, tree_rss_kb(proc.pid) * 1024)
        time.sleep(0.2)
    proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped here: Popen must not wait again)
    return proc.returncode, max(usage.ru_maxrss * 1024, tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50000:50,100000:100,300000:300", help="partitions:brokers,...")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.sizes.split(","):
            partitions, brokers = (int(x) for x in item.split(":"))
            snap_file, intents_file = Path(tmp) / "s.json", Path(tmp) / "i.yaml"
            made = subprocess.run(
                [sys.executable, "-c", GENERATE, *map(str, (partitions, brokers, snap_file, intents_file))],
                capture_output=True, text=True, check=True, cwd=ROOT,
            )  # fmt: skip
            replicas = int(made.stdout)
            size = snap_file.stat().st_size
            cmd = [str(CLI), "plan", "--snapshot", str(snap_file), "--intents", str(intents_file)]
            code, peak = peak_of([*cmd, "-o", str(Path(tmp) / "p.json"), "--max-memory", "100Gi"])
            assert code == 0, f"plan exited {code}"
            read_need = memory.JSON_PEAK_BASE + memory.JSON_PEAK_PER_BYTE * size
            # the plan check adds to what the process holds once the snapshot is read (measured here as
            # the peak of a read alone, an upper bound of the resident memory after it)
            code, after_read = peak_of([sys.executable, "-c", READ_ONLY, str(snap_file)])
            assert code == 0
            # (and the copy's, where it runs: spark/beside.py forks only when that fits under the limit)
            copy = beside.wanted(partitions, replicas, None)
            per_replica = memory.PLAN_BYTES_PER_REPLICA + (beside.CHILD_BYTES_PER_REPLICA if copy else 0)
            plan_need = after_read + per_replica * replicas
            rows.append((partitions, brokers, size, replicas, peak, read_need, plan_need))
            said = f"read estimate {int(read_need) >> 20} MiB, plan estimate {int(plan_need) >> 20} MiB"
            print(f"{partitions}: file {size >> 20} MiB, peak {peak >> 20} MiB, {said}", file=sys.stderr)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "",
        "## Memory refusal: estimates against the measured peak",
        "",
        f"`python tests/bench/run_memory.py --sizes {args.sizes}` ({when}, {os.cpu_count()} cores). Scenario "
        "`all`, RF 3, a JSON snapshot planned by `kafka-placement plan` (local engine, default effort) in a "
        "fresh process; peak = the larger of the kernel's maximum resident set of that process and its "
        "process tree's peak proportional set size (from "
        f"{beside.MIN_PARTITIONS} partitions the copies beside the plan included: the one tallying the "
        "snapshot, then the one shifting the plan's entries). Read estimate = what "
        "`spark/memory.py` refuses against before the file is read "
        f"({memory.JSON_PEAK_PER_BYTE} x the file + {memory.JSON_PEAK_BASE >> 20} MiB); plan estimate = what "
        f"it refuses against before planning (the memory held once the snapshot is read, measured as the "
        f"peak of a read alone, + {memory.PLAN_BYTES_PER_REPLICA} bytes per replica, + "
        f"{beside.CHILD_BYTES_PER_REPLICA} for the copy where it runs). Both must stay above the peak "
        "(ratio >= 1): a refusal then comes before the kernel's out-of-memory kill would. Where the copy "
        "runs the read estimate may be below the peak: it bounds the plan without the copy; under a limit "
        "the copy runs only when the plan estimate with it fits.",
        "",
        "| partitions | brokers | JSON MiB | replicas | peak MiB | read estimate MiB (ratio) "
        "| plan estimate MiB (ratio) |",
        "|---|---|---|---|---|---|---|",
    ]
    for partitions, brokers, size, replicas, peak, read_need, plan_need in rows:
        lines.append(
            f"| {partitions} | {brokers} | {size / 2**20:.0f} | {replicas} | {peak / 2**20:.0f} | "
            f"{read_need / 2**20:.0f} ({read_need / peak:.2f}) | "
            f"{plan_need / 2**20:.0f} ({plan_need / peak:.2f}) |"
        )
    with open(args.output, "a") as out:
        out.write("\n".join(lines) + "\n")
    worst = min(min(r[5], r[6]) / r[4] for r in rows)
    print(f"lowest estimate / peak: {worst:.2f}", file=sys.stderr)


GENERATE = (
    "import sys; sys.path[:0] = ['.', 'operator']; from pathlib import Path; "
    "from tests.bench.generator import scenario; n, b = int(sys.argv[1]), int(sys.argv[2]); "
    "snap, intents = scenario('all', brokers=b, partitions=n, topics=n // 500); "
    "Path(sys.argv[3]).write_text(snap.dumps()); Path(sys.argv[4]).write_text(intents); "
    "print(sum(len(p.replicas) for p in snap.partitions))"
)
READ_ONLY = (
    "import sys; sys.path.insert(0, 'operator'); from kafka_placement.cli._io import read_snapshot_arg; "
    "read_snapshot_arg(sys.argv[1])"
)

if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
