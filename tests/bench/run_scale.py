"""Engine scale benchmark: local vs Spark planning time and peak memory, 100k to 1M partitions.

    .venv/bin/python tests/bench/run_scale.py [--sizes 100000:100,1000000:1000] [--engines local,spark]
        [--scenario all|decommission|...] [--code CHECKOUT]

An engine is ``local``, ``spark`` (master ``local[*]``), ``spark@MASTER`` (e.g. ``spark@local[1]``) or
``spark@rig`` (the rig's standalone cluster from ``.rig/rig.json``, its workers' Python as executors).
An engine ending in ``/cpus=N`` plans on the machine's first N CPUs only (the planning process, its JVM
and Spark's Python workers: ``spark@local[1]/cpus=1`` is Spark on one core with nothing beside it).

Each (engine, size) runs in a fresh process: it generates the scenario (default "all": decommission,
dir drain, 2-level rack spread, broker/dir/leader balance; "decommission": one broker leaves, the
common case where few partitions break a rule) with SIZE partitions x RF 3 on BROKERS brokers, writes
it to a Parquet snapshot, then times `plan` (load + plan + summary) in a child process whose whole
process tree (Python, a forked copy, Spark's JVM) is sampled for its peak proportional set size.
``--code`` plans with another checkout's planner (an older commit's, for a paired run in one sequence).
Results are appended to docs/benchmarks.md with the command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

# the Spark engine's report seconds that follow one another (its "context" overlaps the shards)
SERIAL_PHASES = (
    "session",
    "analysis",
    "shards",
    "waitForContext",
    "mergeAndBalance",
    "summary",
    "reconcileAll",
)

CHILD = """
import json, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {root!r} + "/operator")
from pathlib import Path
from kafka_placement.model.intents import Intents
from kafka_placement.spark.engines import EngineSettings, plan_with, start_session
from kafka_placement.cli._io import read_snapshot_arg  # as `kafka-placement plan` reads it
settings = EngineSettings({engine!r}, master={master!r}, driver_memory={driver_memory!r})
t0 = time.perf_counter()
spark = start_session(settings) if settings.engine == "spark" else None  # as the CLI: beside the read
snap = read_snapshot_arg({snap!r})
intents = Intents.loads(Path({intents!r}).read_text())
t1 = time.perf_counter()
session = spark.result() if spark is not None else None
waited = time.perf_counter() - t1
result = plan_with(snap, intents, settings, session)
t2 = time.perf_counter()
s = result.summary.to_json()
if s.get("sharding"):
    s["sharding"]["seconds"]["session"] = round(waited, 1)  # what the plan waited for Spark to start
print(json.dumps({{"load": t1 - t0, "plan": t2 - t1, "partitionsChanged": s["partitionsChanged"],
                  "hard": s["hardViolationsAfter"], "ratio": s["bytesOverLowerBound"],
                  "engine": s["engine"], "sharding": s.get("sharding")}}))
"""


def tree_rss_kb(root_pid: int) -> int:
    """Memory of a process and all its descendants (from /proc): the sum of their proportional set sizes
    (``Pss`` of ``smaps_rollup``: a page shared by n processes counts 1/n in each, so a forked copy's
    pages still shared with its parent count once), ``VmRSS`` where that is not readable."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            rss[int(entry)] = _pss_kb(int(entry))
        except (OSError, StopIteration, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return int(next(ln for ln in f if ln.startswith("Pss:")).split()[1])
    except (OSError, StopIteration):
        with open(f"/proc/{pid}/status") as f:
            return int(next((ln for ln in f if ln.startswith("VmRSS:")), "VmRSS: 0 kB").split()[1])


def engine_setup(spec: str) -> tuple[str, str, dict[str, str]]:
    """``spec`` as (engine, Spark master, environment of the planning process)."""
    engine, _, master = spec.partition("@")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    if master == "rig":  # the rig's standalone cluster: executors on the workers' Python
        entry = json.loads((ROOT / ".rig" / "rig.json").read_text())["spark"]
        return (
            engine,
            entry["master"],
            {**env, "PYSPARK_PYTHON": entry["workerPython"], "SPARK_LOCAL_IP": "127.0.0.1"},
        )
    return engine, master or "local[*]", {**env, "PYSPARK_PYTHON": sys.executable}


def cpus_of(spec: str) -> tuple[str, set[int] | None]:
    """``spec`` without its ``/cpus=N`` suffix, and the CPUs it names (None: every CPU)."""
    base, _, cpus = spec.partition("/cpus=")
    if not cpus:
        return spec, None
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= int(cpus) <= len(allowed):
        raise SystemExit(f"{spec}: this machine has {len(allowed)} CPUs")
    return base, set(allowed[: int(cpus)])


def run_one(
    spec: str, snap: Path, intents: Path, timeout: float, root: Path = ROOT, driver_memory: str = "6g"
) -> dict[str, object]:
    base, cpus = cpus_of(spec)
    engine, master, env = engine_setup(base)
    if root != ROOT:  # (Spark's Python workers import the planner too: the same code)
        env["PYTHONPATH"] = os.pathsep.join([str(root), str(root / "operator"), env.get("PYTHONPATH", "")])
    code = CHILD.format(
        driver_memory=driver_memory,
        root=str(root),
        snap=str(snap),
        intents=str(intents),
        engine=engine,
        master=master,
    )
    done = run_sampled([sys.executable, "-c", code], env, cpus, timeout)
    if "error" in done:
        return {"engine": spec, "error": done["error"]}
    out, wall, peak = str(done["stdout"]), float(done["wall"]), float(done["peakMb"])
    result = json.loads(out.strip().splitlines()[-1])
    result.update(wall=wall, peakMb=peak)
    return result


def run_sampled(
    argv: list[str], env: dict[str, str], cpus: set[int] | None, timeout: float
) -> dict[str, object]:
    """Run ``argv`` (on ``cpus`` when given: its children inherit them), sampling its process tree's
    memory (``tree_rss_kb``) every quarter second: its output, wall seconds and peak MB, or the error
    (past ``timeout``, or a failure's last line of stderr)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_kb(proc.pid))
        if time.perf_counter() - start > timeout:
            proc.kill()
            proc.wait()
            return {"error": f"did not finish within {timeout:.0f} s (peak {peak / 1024:.0f} MB)"}
        time.sleep(0.25)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"error": err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"}
    return {"stdout": out, "stderr": err, "wall": wall, "peakMb": peak / 1024}


def planner_name(checkout: str) -> str:
    """The planner a benchmark ran, as its rows name it: the checkout's commit, and whether it had changes
    not committed."""
    head = subprocess.run(
        ["git", "-C", checkout, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(["git", "-C", checkout, "diff", "--quiet", "HEAD"], check=False).returncode
    return f"commit {head or 'unknown'}" + (" with changes not committed" if dirty else "")


def main() -> None:
    from tests.bench.generator import scenario

    from kafka_placement.spark.io import write_parquet

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000:100,300000:300,1000000:1000", help="partitions:brokers,...")
    ap.add_argument("--engines", default="local,spark")
    ap.add_argument("--scenario", default="all", help="a scenario of tests/bench/generator.py")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per (engine, size) run")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument(
        "--code",
        default=str(ROOT),
        help="a checkout whose planner plans (default this one): an older commit's, for a paired run",
    )
    ap.add_argument("--driver-memory", default="6g", help="the Spark driver's heap (spark.driver.memory)")
    args = ap.parse_args()
    code_name = planner_name(args.code)
    lines = [
        "",
        f"## Engine scale (local vs Spark), scenario `{args.scenario}`",
        "",
        f"Produced by `python tests/bench/run_scale.py {' '.join(sys.argv[1:])}".rstrip() + "` on "
        f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}, {os.cpu_count()} cores. "
        f"Scenario `{args.scenario}`, RF 3. Time = wall time of load + plan + summary in a fresh process; "
        "memory = peak of the process tree's proportional set size (Python, a forked copy, Spark's JVM; "
        f"before 2026-12-05 its resident sets summed). Planner: {code_name}. Spark's driver heap: "
        f"{args.driver_memory}. For Spark: the "
        "partitions its analysis sent to the shards, and the seconds of its phases. "
        "Seconds, in the order they happen: session (waiting for Spark to start: JVM, Python workers; it "
        "starts beside the snapshot's read, as in the CLI) / analysis / shards / "
        "waiting for the driver's context (built beside the shards) / merge and balance on the driver / "
        "summary (the tally of the plan's entries by Spark tasks, added to the analysis's tally of the "
        "snapshot: the summary's tally and the check of the plan; beside it the driver orders the plan "
        "into batches) / reconciling every partition (only "
        "after a rule found broken); then, in brackets, "
        "the seconds of the context itself. In Spark jobs = analysis + shards + summary (each includes the "
        "driver's conversion of its rows to Arrow); driver only = plan s minus session "
        "and Spark jobs (context wait, merge, balance, validation, the summary's finish).",
        "",
        "| partitions | brokers | engine | load s | plan s | wall s | peak MB | partitions changed "
        "| moved / LB | hard violations after | to shards | session / analysis / shards / wait / merge / "
        "summary / reconcile all s [context] | in Spark jobs s | driver only s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    with open(args.output, "a") as f:  # rows are appended as they come, so a long run leaves its results
        f.write("\n".join(lines) + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes.split(","):
            n, brokers = (int(x) for x in spec.split(":"))
            snap, text = scenario(args.scenario, brokers=brokers, partitions=n, topics=max(20, n // 500))
            sdir, ipath = Path(tmp) / f"snap-{n}", Path(tmp) / f"intents-{n}.yaml"
            write_parquet(snap, sdir)
            ipath.write_text(text)
            del snap
            for engine in args.engines.split(","):
                r = run_one(engine, sdir, ipath, args.timeout, Path(args.code), args.driver_memory)
                if "error" in r:
                    row = f"| {n} | {brokers} | {engine} | failed: {r['error']} |||||||||||"
                else:
                    sh = r.get("sharding") or {}
                    secs = sh.get("seconds", {})
                    phases = ""
                    if secs:
                        phases = " / ".join(str(secs.get(k, "")) for k in SERIAL_PHASES)
                        phases += f" [{secs.get('context', '')}]"
                    jobs = sum(secs.get(k, 0.0) for k in ("analysis", "shards", "summary"))
                    driver = float(str(r["plan"])) - jobs - secs.get("session", 0.0)
                    split = f"{jobs:.1f} | {driver:.1f}" if secs else " | "
                    row = (
                        f"| {n} | {brokers} | {engine} | {r['load']:.1f} | {r['plan']:.1f} | "
                        f"{r['wall']:.1f} | {r['peakMb']:.0f} | {r['partitionsChanged']} | {r['ratio']} | "
                        f"{r['hard']} | {sh.get('partitionsToRepair', '')} | {phases} | {split} |"
                    )
                print(row, flush=True)
                with open(args.output, "a") as f:
                    f.write(row + "\n")
    print(f"appended to {args.output}")


if __name__ == "__main__":
    main()
