"""Planner vs the exact optimum (CP-SAT, tests/bench/optimum.py) on small instances, several seeds.

    .venv/bin/python tests/bench/run_optimum.py                    # writes its section of docs/benchmarks.md
    .venv/bin/python tests/bench/run_optimum.py --seeds 1 --print  # prints only

Per scenario and seed: the planner's bytes to move / the solver's optimum (same rules, same balance
definition), the summary's lower bound / the optimum, whether the planner refused (exit 3) where the
solver found a plan, and whether broker balance is met by each. Instances: 150-600 partitions on
12-30 brokers, RF 3, Zipf sizes (tests/bench/generator.py). Intents ask for broker and leader balance
only (dir balance moves no network bytes and the solver does not model it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import cluster  # noqa: E402
from tests.bench.optimum import solve  # noqa: E402

from kafka_placement.model.errors import InfeasibleError  # noqa: E402
from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402
from kafka_placement.planning.optimizer import compute_plan  # noqa: E402

SECTION = "## Plan vs the exact optimum (CP-SAT, small instances)"
SIZES = {1: (150, 12), 2: (300, 18), 3: (600, 30), 4: (200, 15), 5: (400, 24)}  # seed -> size


def balance_yaml(tol: float, rack: bool = False) -> str:
    lines = ["kind: PlacementPolicy", "spec:", "  topics: {include: ['*']}"]
    if rack:
        lines.append("  rackAwareness: {separator: /, levels: 2}")
    lines.append(f"  balance: {{brokers: true, leaders: true, tolerance: {tol}}}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Instance:
    scenario: str
    seed: int
    snapshot: ClusterSnapshot
    intents: str
    dirs: bool = False  # tight capacity: the solver models dirs


def with_room(snap: ClusterSnapshot, leaving: int, room: float, weights: list[float]) -> ClusterSnapshot:
    """The snapshot with usable bytes ``room`` x weight on each dir of the brokers other than ``leaving``."""
    doc = snap.to_json()
    dirs = [d for b in doc["brokers"] if b["id"] != leaving for d in b["logDirs"]]
    for d, w in zip(dirs, weights, strict=True):
        d["totalBytes"] = 1 << 50
        d["usableBytes"] = int(room * w)
    return ClusterSnapshot.from_json(doc)


_MINIMUM: dict[tuple[int, int], float] = {}


def tight(
    snap: ClusterSnapshot,
    leaving: int,
    slack: float,
    seed: int,
    intents: str,
    steps: int = 8,
    step_limit: float = 3.0,
) -> ClusterSnapshot:
    """Decommission ``leaving`` where the other dirs' usable bytes are random weights (0.5-1.5) x a room
    that is (1 + slack) x the smallest room with which the solver still finds a plan (bisection,
    ``steps`` steps; a step the solver cannot decide in ``step_limit`` deterministic seconds counts as
    infeasible, which can only raise the minimum)."""
    rng = random.Random(seed)
    n_dirs = sum(len(b.log_dirs) for b in snap.brokers if b.id != leaving)
    weights = [rng.uniform(0.5, 1.5) for _ in range(n_dirs)]
    if (seed, leaving) not in _MINIMUM:
        need = sum(p.size_bytes for p in snap.partitions if leaving in p.replicas)
        lo, hi = need / sum(weights), 2 * need / sum(weights)
        parsed = Intents.loads(intents)
        room = with_room
        while solve(room(snap, leaving, hi, weights), parsed, dirs=True, time_limit=step_limit).bytes is None:
            lo, hi = hi, hi * 2
        for _ in range(steps):
            mid = (lo + hi) / 2
            found = solve(room(snap, leaving, mid, weights), parsed, dirs=True, time_limit=step_limit)
            lo, hi = (lo, mid) if found.bytes is not None else (mid, hi)
        _MINIMUM[(seed, leaving)] = hi
    return with_room(snap, leaving, _MINIMUM[(seed, leaving)] * (1 + slack), weights)


def instances(seeds: list[int]) -> list[Instance]:
    out: list[Instance] = []
    for seed in seeds:
        n, b = SIZES.get(seed, (150 + 50 * seed, 12 + seed))
        topics = max(5, n // 30)
        base = cluster(brokers=b, partitions=n, topics=topics, seed=seed)
        decom = f"kind: BrokerDecommission\nspec: {{brokers: [{b}]}}\n"
        out.append(Instance("decommission", seed, base, decom))
        out.append(Instance("decommission + balance", seed, base, decom + "---\n" + balance_yaml(0.05)))
        grown = cluster(brokers=b, partitions=n, topics=topics, seed=seed, empty_brokers=max(1, b // 4))
        out.append(Instance("scale-out 0.05", seed, grown, balance_yaml(0.05)))
        out.append(Instance("scale-out 0.10", seed, grown, balance_yaml(0.10)))
        racks = cluster(brokers=b, partitions=n, topics=topics, seed=seed, dcs=2, racks_per_dc=3)
        rack_rule = "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        rack_rule += "  rackAwareness: {separator: /, levels: 2}\n"
        out.append(Instance("rack repair", seed, racks, rack_rule))
        mixed = cluster(
            brokers=b, partitions=n, topics=topics, seed=seed, dcs=2, racks_per_dc=3, empty_brokers=b // 6
        )
        all_text = (
            "kind: BrokerDecommission\nspec: {brokers: [1]}\n---\n"
            "kind: LogDirCordon\nspec: {broker: 2, logDirs: [/data/d0], drain: true}\n---\n"
            + balance_yaml(0.05, rack=True)
        )
        out.append(Instance("all at once", seed, mixed, all_text))
        small = cluster(brokers=12, partitions=150, topics=5, seed=seed)
        text = decom.replace(f"[{b}]", "[12]")
        for slack in (0.01, 0.03, 0.05):
            out.append(
                Instance(f"capacity +{slack:.0%}", seed, tight(small, 12, slack, seed, text), text, True)
            )
    return out


def run(inst: Instance, time_limit: float) -> dict[str, Any]:
    intents = Intents.loads(inst.intents)
    row: dict[str, Any] = {
        "scenario": inst.scenario,
        "seed": inst.seed,
        "partitions": len(inst.snapshot.partitions),
        "brokers": len(inst.snapshot.brokers),
    }
    t = time.perf_counter()
    try:
        result = compute_plan(inst.snapshot, intents)
    except InfeasibleError as e:
        row.update(plan=None, planError=f"exit 3: {e.rule}", planSeconds=time.perf_counter() - t)
        result = None
    else:
        s = result.summary.to_json()
        balance_goal = next((g for g in s["goals"] if g["goal"] == "BrokerBalance"), None)
        row.update(
            plan=s["bytesToMove"],
            lb=s["lowerBoundBytes"],
            planBalance=None if balance_goal is None else balance_goal["met"],
            planBrokerMaxMean=s["balanceAfter"]["brokerBytesMaxMean"],
            hard=s["hardViolationsAfter"],
            planSeconds=time.perf_counter() - t,
        )
    opt = solve(
        inst.snapshot,
        intents,
        hint=result.plan if result is not None else None,
        dirs=inst.dirs,
        time_limit=time_limit,
    )
    row.update(
        status=opt.status,
        optimum=opt.bytes,
        bound=opt.bound,
        solverBalance=opt.balance_reachable,
        solverSeconds=opt.seconds,
    )
    if row.get("plan") is not None and opt.bytes:
        row["planOverOpt"] = row["plan"] / opt.bytes
        row["lbOverOpt"] = row["lb"] / opt.bytes
    elif row.get("plan") == 0 and opt.bytes == 0:
        row["planOverOpt"] = row["lbOverOpt"] = 1.0
    return row


def f(v: object, spec: str = ".4f") -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return format(v, spec) if isinstance(v, float) else str(v)


def tables(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "Per scenario (all seeds): plan / optimum and lower bound / optimum (min - max), instances where",
        "the planner refused (exit 3) although the solver found a plan, and where the solver met broker",
        "balance but the plan did not.",
        "",
        "| scenario | instances | plan / optimum max | plan / optimum mean | LB / optimum min - max "
        "| false exit 3 | balance missed (solver met it) | balance unreachable (solver) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["scenario"] for r in rows):
        rs = [r for r in rows if r["scenario"] == name]
        po = [r["planOverOpt"] for r in rs if r.get("planOverOpt") is not None]
        lo = [r["lbOverOpt"] for r in rs if r.get("lbOverOpt") is not None]
        false3 = sum(1 for r in rs if r.get("plan") is None and r["optimum"] is not None)
        missed = sum(1 for r in rs if r.get("planBalance") is False and r["solverBalance"] is True)
        unreach = sum(1 for r in rs if r["solverBalance"] is False)
        lines.append(
            f"| {name} | {len(rs)} | {f(max(po, default=None))} | {f(sum(po) / len(po) if po else None)} | "
            f"{f(min(lo, default=None))} - {f(max(lo, default=None))} | {false3} | {missed} | {unreach} |"
        )
    lines += [
        "",
        "| scenario | seed | partitions | brokers | plan GB | optimum GB | solver | plan / optimum "
        "| LB / optimum | plan broker max/mean | balance plan / solver | plan s | solver s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        plan = f(r["plan"] / 1e9, ".3f") if r.get("plan") is not None else r.get("planError", "-")
        opt = f(r["optimum"] / 1e9, ".3f") if r["optimum"] is not None else "-"
        lines.append(
            f"| {r['scenario']} | {r['seed']} | {r['partitions']} | {r['brokers']} | {plan} | {opt} | "
            f"{r['status']} | {f(r.get('planOverOpt'))} | {f(r.get('lbOverOpt'))} | "
            f"{f(r.get('planBrokerMaxMean'), '.3f')} | {f(r.get('planBalance'))} / {f(r['solverBalance'])} | "
            f"{r['planSeconds']:.2f} | {r['solverSeconds']:.1f} |"
        )
    return lines


def merge(rows: list[dict[str, Any]], before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of this checkout with ``before`` (another checkout's rows, same instances) beside them; the
    optimum is the best solution either solver run found, its bound the higher proven bound."""
    old = {(r["scenario"], r["seed"]): r for r in before}
    out = []
    for r in rows:
        b = old.get((r["scenario"], r["seed"]))
        if b is None:
            continue
        found = [x for x in (r["optimum"], b["optimum"]) if x is not None]
        bounds = [x for x in (r["bound"], b["bound"]) if x is not None]
        opt, bound = (min(found) if found else None), (max(bounds) if bounds else None)
        m = dict(r, optimum=opt, bound=bound, before=b)
        m["status"] = "optimal" if opt is not None and bound is not None and bound >= opt else r["status"]
        for side, src in (("", r), ("before", b)):
            plan = src.get("plan")
            m[f"{side}PlanOverOpt"] = plan / opt if plan is not None and opt else None
            m[f"{side}PlanOverBound"] = plan / bound if plan is not None and bound else None
            m[f"{side}LbOverOpt"] = src.get("lb") / opt if src.get("lb") is not None and opt else None
        out.append(m)
    return out


def compare_tables(rows: list[dict[str, Any]]) -> list[str]:
    """Before/after per scenario (max over seeds) and per instance."""
    lines = [
        "Per scenario, worst instance (max over seeds; LB / optimum: min - max). `plan / bound` divides",
        "by the solver's proven lower end, so it can only overstate the gap where the optimum is not",
        "proven.",
        "",
        "| scenario | instances | plan / optimum before | after | plan / bound after | LB / optimum before "
        "| after | exit 3 where the solver has a plan: before / after | balance missed (solver met it): "
        "before / after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def worst(rs: list[dict[str, Any]], k: str) -> str:
        vals = [r[k] for r in rs if r.get(k) is not None]
        return f(max(vals)) if vals else "-"

    def span(rs: list[dict[str, Any]], k: str) -> str:
        vals = [r[k] for r in rs if r.get(k) is not None]
        return f"{f(min(vals))} - {f(max(vals))}" if vals else "-"

    for name in dict.fromkeys(r["scenario"] for r in rows):
        rs = [r for r in rows if r["scenario"] == name]
        ex3 = [sum(1 for r in rs if s(r).get("plan") is None and r["optimum"] is not None) for s in _SIDES]
        miss = [
            sum(1 for r in rs if s(r).get("planBalance") is False and r["solverBalance"] is True)
            for s in _SIDES
        ]
        lines.append(
            f"| {name} | {len(rs)} | {worst(rs, 'beforePlanOverOpt')} | {worst(rs, 'PlanOverOpt')} | "
            f"{worst(rs, 'PlanOverBound')} | {span(rs, 'beforeLbOverOpt')} | {span(rs, 'LbOverOpt')} | "
            f"{ex3[0]} / {ex3[1]} | {miss[0]} / {miss[1]} |"
        )
    lines += [
        "",
        "| scenario | seed | partitions | brokers | optimum GB | solver | plan / optimum before | after "
        "| LB / optimum before | after | plan broker max/mean before | after |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["before"]
        opt = f(r["optimum"] / 1e9, ".3f") if r["optimum"] is not None else "-"
        pb = f(r.get("beforePlanOverOpt")) if b.get("plan") is not None else "exit 3"
        pa = f(r.get("PlanOverOpt")) if r.get("plan") is not None else "exit 3"
        lines.append(
            f"| {r['scenario']} | {r['seed']} | {r['partitions']} | {r['brokers']} | {opt} | {r['status']} | "
            f"{pb} | {pa} | {f(r.get('beforeLbOverOpt'))} | {f(r.get('LbOverOpt'))} | "
            f"{f(b.get('planBrokerMaxMean'), '.3f')} | {f(r.get('planBrokerMaxMean'), '.3f')} |"
        )
    return lines


_SIDES = (lambda r: r["before"], lambda r: r)


def _level(line: str) -> int:
    """A Markdown heading's level (``## x``: 2), 0 for any other line."""
    hashes = len(line) - len(line.lstrip("#"))
    return hashes if hashes and line[hashes : hashes + 1] == " " else 0


def write_section(path: Path, section: list[str]) -> None:
    """Replace the section of ``path`` titled ``section[0]`` (a heading: ``## ...``, or ``### ...`` for a
    subsection, which ends at the next heading of its level or above), or append it; every other one kept."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    lines = text.rstrip("\n").split("\n")
    level = _level(section[0])
    if section[0] in lines:
        start = lines.index(section[0])
        end = next((i for i in range(start + 1, len(lines)) if 0 < _level(lines[i]) <= level), len(lines))
        lines[start:end] = [*section, ""] if end < len(lines) else section
    else:
        lines += ["", *section]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="1,2,3", help="seeds (each its own size: 150x12, 300x18, 600x30)")
    ap.add_argument("--scenarios", default="", help="comma-separated scenario names (default: all)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="solver seconds per instance")
    ap.add_argument("--print", action="store_true", help="print only, do not write docs/benchmarks.md")
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--json", default="", help="also write the rows to this JSON file")
    ap.add_argument("--before", default="", help="rows (--json) of another checkout: before/after tables")
    ap.add_argument("--rows", default="", help="rows (--json) of this checkout: tables only, no solving")
    args = ap.parse_args()
    wanted = {s.strip() for s in args.scenarios.split(",") if s.strip()}
    rows = json.loads(Path(args.rows).read_text()) if args.rows else []
    for inst in [] if args.rows else instances([int(s) for s in args.seeds.split(",")]):
        if wanted and inst.scenario not in wanted:
            continue
        row = run(inst, args.time_limit)
        rows.append(row)
        print(
            f"{row['scenario']:24} seed {row['seed']} plan/opt {f(row.get('planOverOpt'))} "
            f"LB/opt {f(row.get('lbOverOpt'))} {row['status']} {row.get('planError', '')} "
            f"balance {f(row.get('planBalance'))}/{f(row['solverBalance'])} "
            f"({row['planSeconds']:.1f} s / {row['solverSeconds']:.1f} s)",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    command = "python tests/bench/run_optimum.py " + " ".join(sys.argv[1:])
    section = [
        SECTION,
        "",
        f"Produced by `{command.strip()}` on "
        f"{datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')}, {os.cpu_count()} cores "
        "(the solver on one worker). The optimum is OR-Tools CP-SAT minimising bytes to move under the",
        "planner's own hard rules and broker-balance definition (`tests/bench/optimum.py`), started from",
        "the planner's plan; `optimal` = proven. Capacity instances: a broker of 12 leaves; the other",
        "dirs' usable bytes are random weights (0.5-1.5) x a room 1-5% above the smallest room with which",
        "the solver finds a plan (bisection).",
        "",
        *(
            compare_tables(merge(rows, json.loads(Path(args.before).read_text())))
            if args.before
            else tables(rows)
        ),
    ]
    print("\n".join(section))
    if not args.print:
        write_section(Path(args.output), section)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
