"""Plan quality that generalises: the planner vs the CP-SAT optimum on random small instances.

    .venv/bin/python tests/bench/run_generalise.py                      # fresh master seed, 100 per family
    .venv/bin/python tests/bench/run_generalise.py --seed 1234 -n 20 --print

A master seed (default: drawn from ``os.urandom`` at run time, printed and written with the results, so
``--seed`` reproduces a run) draws ``-n`` instances per family. Each instance draws its own shape:
40-200 partitions, 6-24 brokers, RF 2-3, 1-3 data centres of 1-3 racks, 1-3 dirs per broker, topic
counts and Zipf sizes (``tests/bench/generator.py``). Families:

- ``decommission+spread+balance``: 1-2 brokers leave, 2-level rack spread, broker balance at a
  tolerance drawn in 0.05-0.10;
- ``scale-out``: 1 to a third of the brokers are new and empty, broker balance at 0.05-0.10 (half the
  instances with 2-level rack spread too);
- ``rack-repair``: a 1- or 2-level rack spread the initial placement breaks, no balance;
- ``tight-capacity``: one broker leaves and the other dirs' usable bytes are random weights x a room
  1-5% above the smallest with which the solver finds a plan (``run_optimum.tight``);
- ``mixed``: a decommission, a dir drain, new empty brokers, 2-level spread and broker balance at
  0.05-0.10 together;
- ``disk-headroom``: one broker leaves and broker balance is asked at 0.05-0.10, every dir on a volume
  of one size, the fullest dir at 70-84% of it before the plan, so the disk headroom rule (no dir above
  ``maxDiskShare`` 0.85, planning/headroom.py) binds on the fullest dirs: the planner and the solver's
  room rows per volume (``tests/bench/optimum.py``) both keep it; sized as ``tight-capacity`` (the
  solver models dirs).
- ``uneven-disks``: one broker leaves and broker balance is asked at 0.05-0.10 on brokers whose disks
  differ in size (each broker's volumes 1, 1.5, 2 or 3 times a base size, the fullest dir at 50-80%
  before the plan): balance compares shares of each broker's capacity (planning/shares.py), in the
  planner and in the solver's balance rows alike; sized as ``tight-capacity``.
- ``dir-balance``: one broker leaves, 2-level spread, 2-3 dirs per broker and dir balance at
  0.05-0.10, with broker balance in half the instances: the solver models each dir's bytes and the dir
  goal's rows; the lower bound's dir terms are checked against the optimum (``lb / optimum``);
  sized as ``tight-capacity``.

Each instance is planned (``compute_plan``) and solved (``tests/bench/optimum.py``, one worker, started
from the plan) in one of ``--jobs`` processes (at most 2: the machine is shared). Per family: plan /
optimum (median, p99, worst), plans that miss broker balance where the solver meets it, false
"infeasible" (the planner exits 3 where the solver has a plan) and optima the solver did not prove.
Writes its section of docs/benchmarks.md; `--rows a.json,b.json` writes it from earlier runs' rows (`--json`),
one block per draw (the issue asks for two draws).
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import cluster, sized_volumes  # noqa: E402
from tests.bench.run_optimum import Instance, balance_yaml, f, run, tight, write_section  # noqa: E402

SECTION = "## Plan quality that generalises (CP-SAT optimum, random small instances)"
FAMILIES = (
    "decommission+spread+balance",
    "scale-out",
    "rack-repair",
    "tight-capacity",
    "mixed",
    "disk-headroom",
    "uneven-disks",
    "dir-balance",
)
SPREAD = "  rackAwareness: {separator: /, levels: %d}\n"


def _policy(tol: float | None, levels: int | None) -> str:
    if tol is not None:
        text = balance_yaml(round(tol, 3), rack=levels == 2)
        if levels == 1:
            text = text.replace("  balance:", SPREAD % 1 + "  balance:")
        return text
    return "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n" + SPREAD % (levels or 2)


def _decom(ids: list[int]) -> str:
    return f"kind: BrokerDecommission\nspec: {{brokers: [{', '.join(map(str, ids))}]}}\n"


def draw(master: int, family: str, index: int) -> tuple[Instance, dict[str, Any]]:
    """Instance ``index`` of ``family`` under ``master`` (the same for the same three, on any machine)."""
    rng = random.Random(f"{master}:{family}:{index}")
    seed = rng.getrandbits(31)
    small = family in (
        "tight-capacity",
        "disk-headroom",
        "uneven-disks",
        "dir-balance",
    )  # tight: the bisection solves it ~10 times; dir balance: a variable per (partition, broker, dir)
    n = rng.randint(40, 120 if small else 200)
    b = rng.randint(6, 14 if small else 24)
    rf = rng.choice((2, 3))
    dcs, racks = rng.randint(1, 3), rng.randint(1, 3)
    if family in ("decommission+spread+balance", "rack-repair", "mixed", "dir-balance"):
        dcs = max(dcs, 2)
    dirs = rng.randint(2 if family in ("mixed", "dir-balance") else 1, 3)
    topics = max(2, n // rng.randint(8, 30))
    shape = {"partitions": n, "brokers": b, "rf": rf, "dcs": dcs, "racksPerDc": racks, "dirs": dirs}
    common = {"brokers": b, "partitions": n, "topics": topics, "rf": rf, "dcs": dcs, "racks_per_dc": racks}
    tol = round(rng.uniform(0.05, 0.10), 3)
    if family == "decommission+spread+balance":
        leaving = rng.sample(range(1, b + 1), rng.randint(1, 2))
        snap = cluster(**common, dirs=dirs, seed=seed)
        text = _decom(sorted(leaving)) + "---\n" + _policy(tol, 2)
        shape.update(leaving=sorted(leaving), tolerance=tol)
        return Instance(family, seed, snap, text), shape
    if family == "scale-out":
        empty = rng.randint(1, max(1, b // 3))
        levels = rng.choice((None, 2))
        snap = cluster(**common, dirs=dirs, seed=seed, empty_brokers=empty)
        shape.update(empty=empty, tolerance=tol, levels=levels)
        return Instance(family, seed, snap, _policy(tol, levels)), shape
    if family == "rack-repair":
        levels = rng.choice((1, 2))
        snap = cluster(**common, dirs=dirs, seed=seed)
        shape.update(levels=levels)
        return Instance(family, seed, snap, _policy(None, levels)), shape
    if family == "tight-capacity":
        leaving = rng.randint(1, b)
        slack = round(rng.uniform(0.01, 0.05), 3)
        text = _decom([leaving])
        snap = tight(cluster(**common, dirs=dirs, seed=seed), leaving, slack, seed, text, 6, 1.0)
        shape.update(leaving=[leaving], slack=slack)
        return Instance(family, seed, snap, text, dirs=True), shape
    if family == "disk-headroom":
        leaving = rng.randint(1, b)
        fullest = round(rng.uniform(0.70, 0.84), 3)
        text = _decom([leaving]) + "---\n" + _policy(tol, None)
        snap, _ = sized_volumes(cluster(**common, dirs=dirs, seed=seed), fullest)
        shape.update(leaving=[leaving], fullest=fullest, tolerance=tol)
        return Instance(family, seed, snap, text, dirs=True), shape
    if family == "uneven-disks":
        leaving = rng.randint(1, b)
        fullest = round(rng.uniform(0.50, 0.80), 3)
        scale = {x: rng.choice((1.0, 1.5, 2.0, 3.0)) for x in range(1, b + 1)}
        text = _decom([leaving]) + "---\n" + _policy(tol, None)
        snap, _ = sized_volumes(cluster(**common, dirs=dirs, seed=seed), fullest, scale=scale)
        shape.update(
            leaving=[leaving], fullest=fullest, tolerance=tol, scale=[scale[x] for x in sorted(scale)]
        )
        return Instance(family, seed, snap, text, dirs=True), shape
    if family == "dir-balance":  # a decommission, the spread, dir balance with broker balance or without
        leaving = rng.randint(1, b)
        brokers = rng.choice((True, False))
        text = (
            _decom([leaving])
            + "---\nkind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
            + SPREAD % 2
            + f"  balance: {{brokers: {str(brokers).lower()}, logDirs: true, tolerance: {tol}}}\n"
        )
        snap = cluster(**common, dirs=dirs, seed=seed)
        shape.update(leaving=[leaving], tolerance=tol, brokerBalance=brokers)
        return Instance(family, seed, snap, text, dirs=True), shape
    if family == "mixed":
        empty = rng.randint(1, max(1, b // 4))
        leaving = rng.randint(1, b - empty)
        drained = rng.choice([x for x in range(1, b - empty + 1) if x != leaving])
        snap = cluster(**common, dirs=dirs, seed=seed, empty_brokers=empty)
        text = (
            _decom([leaving])
            + "---\n"
            + f"kind: LogDirCordon\nspec: {{broker: {drained}, logDirs: [/data/d0], drain: true}}\n---\n"
            + _policy(tol, 2)
        )
        shape.update(leaving=[leaving], drained=drained, empty=empty, tolerance=tol)
        return Instance(family, seed, snap, text), shape
    raise ValueError(family)


def one(job: tuple[int, str, int, float]) -> dict[str, Any]:
    master, family, index, time_limit = job
    try:
        inst, shape = draw(master, family, index)
        row = run(inst, time_limit)
    except Exception as e:  # a generator corner: reported in the table, never hidden
        return {"scenario": family, "index": index, "error": repr(e)}
    row.update(index=index, shape=shape)
    plan, opt = row.get("plan"), row.get("optimum")
    if plan is not None and opt is not None:
        row["ratio"] = plan / opt if opt else (1.0 if plan == 0 else float("inf"))
    return row


def _q(vals: list[float], q: float) -> float | None:
    if not vals:
        return None
    vals = sorted(vals)
    return vals[min(len(vals) - 1, max(0, round(q * (len(vals) - 1))))]


def unreachable(r: dict[str, Any]) -> bool:
    """The solver proved the requested broker balance out of reach: its optimum is then the one
    without balance, which a plan that still evens brokers out as far as it can is not measured by."""
    return r.get("solverBalance") is False


def tables(rows: list[dict[str, Any]], families: list[str]) -> list[str]:
    lines = [
        "| family | instances | plan / optimum median | p99 | worst | balance missed (solver met it) "
        "| false infeasible (exit 3, solver has a plan) | solver: unproven / no plan | balance out of "
        "reach (solver proof): instances, plan / optimum without balance worst | lower bound / proven "
        "optimum: worst (above 1: a bound that is wrong) | errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fam in [*families, "all"]:
        rs = [r for r in rows if fam in ("all", r["scenario"])]
        ok = [r for r in rs if "error" not in r]
        ratios = [r["ratio"] for r in ok if r.get("ratio") is not None and not unreachable(r)]
        out = [r.get("ratio") for r in ok if unreachable(r) and r.get("ratio") is not None]
        missed = sum(1 for r in ok if r.get("planBalance") is False and r.get("solverBalance") is True)
        false3 = sum(1 for r in ok if r.get("plan") is None and r.get("optimum") is not None)
        unproven = sum(1 for r in ok if r.get("status") == "feasible")
        none = sum(1 for r in ok if r.get("optimum") is None)
        bounds = [
            r["lbOverOpt"] for r in ok if r.get("status") == "optimal" and r.get("lbOverOpt") is not None
        ]
        lines.append(
            f"| {fam} | {len(rs)} | {f(_q(ratios, 0.5))} | {f(_q(ratios, 0.99))} | "
            f"{f(max(ratios, default=None))} | {missed} | {false3} | {unproven} / {none} | "
            f"{sum(map(unreachable, ok))}, {f(max(out, default=None))} | {f(max(bounds, default=None))} | "
            f"{len(rs) - len(ok)} |"
        )
    return lines


def worst_rows(rows: list[dict[str, Any]], k: int) -> list[str]:
    bad = sorted(
        (r for r in rows if "error" not in r and not unreachable(r)),
        key=lambda r: (
            -(r.get("planBalance") is False and r.get("solverBalance") is True),
            -(r.get("plan") is None and r.get("optimum") is not None),
            -(r.get("ratio") or 0),
        ),
    )[:k]
    lines = [
        "| family | index | shape | plan / optimum | solver | plan broker max/mean | balance plan / solver |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in bad:
        shape = ", ".join(f"{a}={v}" for a, v in r["shape"].items() if v is not None)
        lines.append(
            f"| {r['scenario']} | {r['index']} | {shape} | "
            f"{f(r.get('ratio')) if r.get('plan') is not None else r.get('planError')} | {r['status']} | "
            f"{f(r.get('planBrokerMaxMean'), '.3f')} | "
            f"{f(r.get('planBalance'))} / {f(r.get('solverBalance'))} |"
        )
    return lines


def solve_all(
    jobs: list[tuple[int, str, int, float]], json_path: str, procs: int, master: int
) -> tuple[list[dict[str, Any]], datetime.datetime, float]:
    """Plan and solve every job in ``procs`` processes (rows also written to ``json_path`` as they
    come, with a first line naming the master seed); the rows, the start and the load then."""
    started = datetime.datetime.now(datetime.UTC)
    load = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    out = open(json_path, "w") if json_path else None  # noqa: SIM115  (written as rows come)
    if out is not None:
        out.write(json.dumps({"master": master, "started": started.isoformat(), "load": load}) + "\n")
    with multiprocessing.Pool(procs, maxtasksperchild=20) as pool:
        for row in pool.imap_unordered(one, jobs):
            rows.append(row)
            if out is not None:
                out.write(json.dumps(row) + "\n")
                out.flush()
            flag = ""
            if row.get("planBalance") is False and row.get("solverBalance") is True:
                flag = " BALANCE MISS"
            if row.get("plan") is None and row.get("optimum") is not None:
                flag += " FALSE INFEASIBLE"
            if row.get("status") == "optimal" and (row.get("lbOverOpt") or 0) > 1 + 1e-9:
                flag += " BOUND ABOVE OPTIMUM"
            print(
                f"{len(rows):4} {row['scenario']:28} #{row['index']:<3} ratio {f(row.get('ratio'))} "
                f"{row.get('status', row.get('error'))}{flag} "
                f"({row.get('planSeconds', 0):.1f} s / {row.get('solverSeconds', 0):.1f} s)",
                flush=True,
            )
    if out is not None:
        out.close()
    return rows, started, load


def block(
    rows: list[dict[str, Any]],
    families: list[str],
    master: int,
    started: datetime.datetime,
    load: float,
    jobs: int,
    time_limit: float,
) -> list[str]:
    """One draw's paragraph, distribution table and worst instances."""
    rows = sorted(
        (r for r in rows if r["scenario"] in families),
        key=lambda r: (families.index(r["scenario"]), r["index"]),
    )
    n = max(sum(1 for r in rows if r["scenario"] == fam) for fam in families)
    command = f"python tests/bench/run_generalise.py --seed {master} -n {n} --time-limit {time_limit}"
    if tuple(families) != FAMILIES:  # a run of some families only: the command names them
        command += f" --families {','.join(families)}"
    return [
        f"Produced by `{command}` on {started.strftime('%Y-%m-%d %H:%M UTC')} (master seed {master} drawn "
        f"at run time; the command reproduces the run), {os.cpu_count()} cores shared with other work "
        f"(load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} when this was written), "
        f"{len(rows)} instances, {jobs} solver process(es) of one worker each, {time_limit:g} deterministic "
        "seconds per solve.",
        "",
        *tables(rows, families),
        "",
        "Worst instances where the solver met the rules and any balance asked (balance misses and false",
        "infeasible first, then by plan / optimum):",
        "",
        *worst_rows(rows, 8),
    ]


INTRO = (
    "Families and shapes: see the docstring of `tests/bench/run_generalise.py`. "
    "Plan / optimum is the planner's bytes to move over the best plan the solver found under the "
    "planner's own rules (`tests/bench/optimum.py`, started from the plan: never above 1); an "
    "unproven optimum can only understate the gap. Where the solver proves the requested broker "
    "balance out of reach (a rack spread forcing more bytes on a data centre's brokers than the "
    "threshold), its reference is the optimum without balance, which does not measure a plan that "
    "still evens brokers out: those instances are counted apart."
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="master seed (default: drawn at run time)")
    ap.add_argument("-n", type=int, default=100, help="instances per family")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--only", default="", help="family:index,... (re-run single instances)")
    ap.add_argument("--time-limit", type=float, default=3.0, help="solver deterministic seconds")
    ap.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    ap.add_argument("--print", action="store_true", help="print only, do not write docs/benchmarks.md")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--json", default="", help="also write the rows to this JSON file (one per line)")
    ap.add_argument(
        "--rows", default="", help="rows (--json) of earlier runs, comma-separated: tables only, one per draw"
    )
    ap.add_argument(
        "--section",
        default=SECTION,
        help="the heading of the section written (default: ours); '### ...' writes a subsection in place",
    )
    args = ap.parse_args()
    if not args.section.startswith("#"):  # (a title without its heading marks: a section of its own)
        args.section = f"## {args.section}"
    families = [x for x in args.families.split(",") if x]
    blocks: list[list[str]] = []
    if args.rows:
        for name in args.rows.split(","):
            lines = Path(name).read_text().splitlines()
            head = json.loads(lines[0])
            rows = [json.loads(x) for x in lines[1:]]
            started = datetime.datetime.fromisoformat(head["started"])
            blocks.append(
                block(rows, families, head["master"], started, head["load"], args.jobs, args.time_limit)
            )
    else:
        master = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
        print(f"master seed {master}", flush=True)
        if args.only:
            picks = [p.split(":") for p in args.only.split(",")]
            jobs = [(master, fam, int(i), args.time_limit) for fam, i in picks]
        else:
            jobs = [(master, fam, i, args.time_limit) for i in range(args.n) for fam in families]
        rows, started, load = solve_all(jobs, args.json, args.jobs, master)
        blocks.append(block(rows, families, master, started, load, args.jobs, args.time_limit))
    section = [args.section, "", INTRO, ""]
    for i, b in enumerate(blocks):
        section += ([f"### Draw {i + 1}", ""] if len(blocks) > 1 else []) + b + [""]
    section = section[:-1]
    print("\n".join(section))
    if not args.print:
        path = Path(args.output)
        text = path.read_text()
        if args.section not in text.split("\n"):  # a new section goes before the History
            path.write_text(text.replace("\n## History\n", f"\n{args.section}\n\n## History\n", 1))
        write_section(path, section)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
