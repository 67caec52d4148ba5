"""What the disk headroom rule costs: bytes moved / lower bound and planning time, rule on vs off.

    .venv/bin/python tests/bench/run_headroom.py                      # 30k and 100k, writes its section
    .venv/bin/python tests/bench/run_headroom.py --sizes 3000 --print # a quick look, prints only

Each scenario of tests/bench/generator.py (60 brokers x 2 dirs, RF 3, 3 DCs x 2 racks, Zipf sizes) is
planned twice from the same partitions by ``compute_plan``, the in-process planner the CLI and the operator
use:

- **off**: the snapshot of the generator, whose volumes have no known size (``totalBytes`` 0): no dir has
  a limit (planning/headroom.py), as before the rule;
- **on**: the same snapshot with every volume given one size (each dir of a broker 4 MiB more than the one
  before: ``generator.sized_volumes``), chosen so that the fullest dir before the plan is at ``--fullest``
  of it (default 0.80) under ``maxDiskShare`` 0.85 (the default): the dirs the plan would fill past 85%
  are what the rule must avoid;
- **on, identical disks** (``--identical``): every dir exactly one size, so a new broker's two empty dirs
  report equal total and usable bytes and are taken for one filesystem (planning/headroom.py
  ``volumes``: stricter, never less safe), which halves what a new broker may take; each scenario is
  then planned again with ``capacity.diskPerLogDir`` declared (each dir its own disk).

Per scenario and size: bytes moved over the lower bound (planning/plan_quality.py: the same bound either way),
the fullest dir after the plan under the "on" volume sizes (the off plan measured with those sizes too: how
far past the limit the plan made without the rule goes), the balance after, and the planning time. Time is
the process's CPU time of ``compute_plan``, each side planned ``--repeats`` times in ABBA order (off, on,
on, off, ...) so that a drift of the machine (another process, the heap growing) falls on both sides, and
the fastest run of each side kept; beside it the Python function calls of one plan of each side
(``cProfile``, a separate run): a count of the work done that no neighbour on the machine changes. The rule
must not cost more than 1.05x bytes or time (issue 53). Writes its section of docs/benchmarks.md unless
``--print``.

CPU time on this shared VM varies by 5-10% between runs of identical work, so ``--instructions`` measures
instead the machine instructions of one plan of each side under valgrind (``cachegrind``, no cache
simulation): a process that builds the scenario and plans both sides once (imports, lazy caches), then
plans one side once more; the plan's count is that process's count minus one that stops before the last
plan, every process with one hash seed (``PYTHONHASHSEED=0``: the same set orders, so the same work).
Deterministic, whatever else runs on the machine (``--jobs`` valgrind processes side by side);
about 30x slower than a plan. Writes its own section.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import SCENARIOS, scenario, sized_volumes  # noqa: E402
from tests.bench.run_exec_scale import write_section  # noqa: E402  (one writer of benchmark sections)

from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.plan import Plan  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402
from kafka_placement.planning import headroom  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402
from kafka_placement.planning.plan_quality import evaluate  # noqa: E402

SECTION = "## Disk headroom: what the rule costs (on vs off)"
INSTRUCTIONS = "## Disk headroom: instructions on vs off (valgrind)"
IDENTICAL = "## Disk headroom: a new broker's identical empty disks counted as one volume"
SHARE = headroom.DEFAULT_MAX_DISK_SHARE


def dir_bytes(snap: ClusterSnapshot) -> dict[tuple[int, str], int]:
    """Bytes of the replicas per dir, as placed in the snapshot."""
    held: dict[tuple[int, str], int] = {}
    for p in snap.partitions:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                held[(b, d)] = held.get((b, d), 0) + p.size_bytes
    return held


def fullest_after(snap: ClusterSnapshot, plan: Plan, sized: ClusterSnapshot) -> float:
    """The largest share of its own volume (``sized``: the on snapshot's sizes) any dir holds after
    ``plan`` (the plan's partitions at their target dirs, every other partition where the snapshot has
    it)."""
    held = dir_bytes(snap)
    for e in plan.partitions:
        p = snap.partition(e.topic, e.partition)
        assert p is not None, e.key
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                held[(b, d)] -= p.size_bytes
        for b, d in zip(e.replicas, e.log_dirs, strict=True):
            if d not in (None, "any"):  # "any": Kafka's choice, not counted (the planner names dirs)
                held[(b, d)] = held.get((b, d), 0) + p.size_bytes
    totals = {(b.id, d.path): d.total_bytes for b in sized.brokers for d in b.log_dirs}
    return max(v / totals[k] for k, v in held.items())


def calls(snap: ClusterSnapshot, intents: Intents) -> int:
    """Python function calls of one ``compute_plan`` (a deterministic count of the work it does)."""
    prof = cProfile.Profile()
    prof.runcall(compute_plan, snap, intents)
    return int(pstats.Stats(prof).total_calls)  # type: ignore[attr-defined]


def one(
    name: str,
    partitions: int,
    fullest: float,
    distinct: bool = True,
    declared: bool = False,
    repeats: int = 2,
) -> dict[str, Any]:
    snap, text = scenario(name, brokers=60, partitions=partitions, topics=max(20, partitions // 500))
    intents = Intents.loads(("capacity: {diskPerLogDir: true}\n---\n" if declared else "") + text)
    on_snap, size = sized_volumes(snap, fullest, distinct)
    label = f"{name} + diskPerLogDir" if declared else name
    row: dict[str, Any] = {"scenario": label, "partitions": partitions, "sizeGb": size / 1e9}
    snaps = {"off": snap, "on": on_snap}
    order = [("off", "on") if k % 2 == 0 else ("on", "off") for k in range(repeats)]
    times: dict[str, list[float]] = {"off": [], "on": []}
    plans: dict[str, Plan | Exception] = {}
    for side in (s for pair in order for s in pair):
        plans.pop(side, None)  # the previous plan of this side is not kept alive through this one
        gc.collect()  # each plan starts from the same heap: no collection owed by the one before
        t = time.process_time()
        try:
            plans[side] = compute_plan(snaps[side], intents).plan
        except Exception as e:  # the rule refused every plan: reported, not a crash of the benchmark
            plans[side] = e
        times[side].append(time.process_time() - t)
    for side, s in snaps.items():
        plan = plans[side]
        if isinstance(plan, Exception):
            row[side] = {"error": " ".join(str(plan).split())[:160], "seconds": min(times[side])}
            continue
        m = evaluate(
            snap, plan, intents
        ).to_json()  # the same lower bound for both sides: the snapshot without sizes
        row[side] = {
            "seconds": min(times[side]),
            "calls": calls(s, intents),
            "bytes": m["bytesToMove"],
            "ratio": m["bytesToMove"] / m["lowerBoundBytes"] if m["lowerBoundBytes"] else None,
            "broker": m["balanceAfter"]["brokerBytesMaxMean"],
            "hard": evaluate(on_snap, plan, intents).hard_violations_after,  # the headroom rule counted
            "fullest": fullest_after(snap, plan, on_snap),
        }
    print(row, flush=True)
    return row


def child(name: str, partitions: int, side: str, plans: int) -> None:
    """Under valgrind (``--instructions``): the scenario, both sides planned once, then ``side``
    ``plans`` times more."""
    snap, text = scenario(name, brokers=60, partitions=partitions, topics=max(20, partitions // 500))
    intents = Intents.loads(text)
    on_snap, _ = sized_volumes(snap, 0.8, True)
    for s in (snap, on_snap):
        compute_plan(s, intents)
    for _ in range(plans):
        gc.collect()
        compute_plan(on_snap if side == "on" else snap, intents)


def instructions(name: str, partitions: int, jobs: int) -> dict[str, Any]:
    """Machine instructions of one plan of each side (see the docstring)."""
    import concurrent.futures
    import re
    import subprocess

    def count(side: str, plans: int) -> int:
        argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        argv += [sys.executable, __file__, "--child", f"{name},{partitions},{side},{plans}"]
        env = {**os.environ, "PYTHONHASHSEED": "0"}  # the same set and dict orders in every process
        out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stderr
        found = re.search(r"I\s+refs:\s+([\d,]+)", out)
        if found is None:
            raise RuntimeError(f"no instruction count from valgrind: {out[-400:]}")
        return int(found.group(1).replace(",", ""))

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        base, off, on = pool.map(lambda a: count(*a), [("off", 0), ("off", 1), ("on", 1)])
    row = {"scenario": name, "partitions": partitions, "off": off - base, "on": on - base}
    print(row, flush=True)
    return row


def instructions_report(rows: list[dict[str, Any]], command: str) -> str:
    day = datetime.date.today().isoformat()
    lines = [
        INSTRUCTIONS,
        "",
        f"`{command}` ({day}). See the docstring of `tests/bench/run_headroom.py` (``--instructions``): "
        "the machine instructions of one plan, counted by valgrind, the rule off and on (the sides of the "
        "section above).",
        "",
        "| scenario | partitions | instructions off (G) | on (G) | on / off |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scenario']} | {r['partitions']} | {r['off'] / 1e9:.2f} | {r['on'] / 1e9:.2f} "
            f"| {r['on'] / r['off']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def f(v: object, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def report(rows: list[dict[str, Any]], command: str, fullest: float, section: str = SECTION) -> str:
    day = datetime.date.today().isoformat()
    lines = [
        section,
        "",
        f"`{command}` ({day}, {os.cpu_count()} cores). See the docstring of "
        "`tests/bench/run_headroom.py`: off = volumes of unknown size (no limit), on = every volume one "
        f"size, the fullest dir at {fullest:.0%} of it before the plan, maxDiskShare {SHARE:g}. Fullest "
        "after = the largest share any dir holds after the plan under the on sizes (for the off plan too).",
        "",
        "| scenario | partitions | moved / bound off | on | on / off | fullest after off | on "
        "| broker max/mean off | on | hard violations (on sizes) off | on | plan CPU s off | on "
        "| time on / off | calls on / off |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        off, on = r["off"], r["on"]
        if "error" in off or "error" in on:
            why = on.get("error") or off.get("error")
            lines.append(f"| {r['scenario']} | {r['partitions']} | refused: {why} |" + " |" * 12)
            continue
        lines.append(
            f"| {r['scenario']} | {r['partitions']} | {f(off['ratio'], '.3f')} | {f(on['ratio'], '.3f')} "
            f"| {on['bytes'] / off['bytes'] if off['bytes'] else 1:.3f} | {off['fullest']:.1%} "
            f"| {on['fullest']:.1%} | {f(off['broker'], '.3f')} | {f(on['broker'], '.3f')} | {off['hard']} "
            f"| {on['hard']} "
            f"| {off['seconds']:.1f} | {on['seconds']:.1f} | {on['seconds'] / off['seconds']:.2f} "
            f"| {on['calls'] / off['calls']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="30000,100000", help="partition counts (default 30000,100000)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--fullest", type=float, default=0.80, help="the fullest dir's share before (0.80)")
    ap.add_argument("--identical", action="store_true", help="every dir exactly one size (see above)")
    ap.add_argument("--repeats", type=int, default=2, help="plans per side, in ABBA order (default 2)")
    ap.add_argument("--print", action="store_true", help="print only, do not write docs/benchmarks.md")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--instructions", action="store_true", help="count instructions under valgrind instead")
    ap.add_argument("--jobs", type=int, default=2, help="valgrind processes side by side (--instructions)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        name, partitions, side, plans = args.child.split(",")
        child(name, int(partitions), side, int(plans))
        return 0
    if args.instructions:
        rows = [
            instructions(name, int(n), args.jobs)
            for n in args.sizes.split(",")
            for name in args.scenarios.split(",")
        ]
        command = (
            f"python tests/bench/run_headroom.py --instructions --sizes {args.sizes} "
            f"--scenarios {args.scenarios}"
        )
        text = instructions_report(rows, command)
        print(text)
        if not args.print:
            write_section(text, Path(args.output), INSTRUCTIONS)
        return 0
    one("decommission", 300, args.fullest)  # a warm-up: the first plan of a process pays its imports
    declared = (False, True) if args.identical else (False,)  # identical disks: without, then declared
    rows = [
        one(name, int(n), args.fullest, not args.identical, d, args.repeats)
        for n in args.sizes.split(",")
        for name in args.scenarios.split(",")
        for d in declared
    ]
    command = (
        f"python tests/bench/run_headroom.py --sizes {args.sizes} --scenarios {args.scenarios} "
        f"--fullest {args.fullest:g} --repeats {args.repeats}" + (" --identical" if args.identical else "")
    )
    section = IDENTICAL if args.identical else SECTION
    text = report(rows, command, args.fullest, section)
    print(text)
    if not args.print:
        write_section(text, Path(args.output), section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
