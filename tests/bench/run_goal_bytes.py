"""Which goal spends the bytes over the lower bound (issue 56 item 1): per-goal attribution of a plan.

    .venv/bin/python tests/bench/run_goal_bytes.py [--sizes 100000:1000,300000:300] [--scenario all]
        [--shards 0|N]

Per size (partitions:brokers, the scenario of tests/bench/generator.py as tests/bench/run_scale.py makes
it: topics = max(20, partitions / 500)), the goals run one after another on one ``PlanningContext`` (the
local engine's ``optimize``), or with ``--shards N`` the in-process sharded pipeline (planning/sharding.py:
the hard goal in N shards, merged, then the balance goals); after each goal the working assignment is
diffed against the snapshot and measured (``plan_quality.movement``): the network and local (intra-broker)
bytes the plan copies so far, so each goal's row is what it added. Then the lower bound's terms
(``plan_quality``'s ``LowerBound``) and bytes moved / lower bound of the final plan, as the summary
reports them. Prints only (JSON lines); at 1M partitions it takes ~3 minutes and ~3 GB.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "operator"))

from tests.bench.generator import scenario  # noqa: E402

from kafka_placement.model.intents import Intents  # noqa: E402
from kafka_placement.model.snapshot import ClusterSnapshot  # noqa: E402
from kafka_placement.planning import plan_quality, sharding  # noqa: E402
from kafka_placement.planning.context import PlanningContext  # noqa: E402
from kafka_placement.planning.goals import ReplicaPlacementGoal, balance_goals, default_goals  # noqa: E402
from kafka_placement.planning.optimizer import diff  # noqa: E402
from kafka_placement.planning.state import ClusterLoads  # noqa: E402


def step(snapshot: ClusterSnapshot, ctx: PlanningContext, name: str, seconds: float) -> dict[str, Any]:
    """What the plan copies once goal ``name`` has run (cumulative)."""
    moved = plan_quality.movement(snapshot, diff(snapshot, ctx))
    return {
        "goal": name,
        "s": round(seconds, 1),
        "networkBytes": moved["networkBytes"],
        "intraBrokerBytes": moved["intraBrokerBytes"],
        "replicaMoves": moved["replicaMoves"],
    }


def attribute(snapshot: ClusterSnapshot, intents: Intents, shards: int) -> dict[str, Any]:
    """The per-goal rows, the lower bound's terms and the final ratio."""
    ctx = PlanningContext.of(snapshot, intents)
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    if shards:
        results = sharding.plan_shards(ctx, shards)
        sharding.raise_if_infeasible(err for _, _, err in results)
        change = ClusterLoads.none()
        for _, part, _ in results:
            change.add(part)
        placements = [((t, n), reps, dirs) for rows_, _, _ in results for t, n, reps, dirs in rows_]
        ctx.assignment.set_placements(placements, change)
        ctx.done.append(ReplicaPlacementGoal())  # (the selection is exact: ``merge_and_balance``)
        rows.append(step(snapshot, ctx, f"ReplicaPlacement ({shards} shards, merged)", 0.0))
        goals = balance_goals()
    else:
        goals = default_goals()
    for goal in goals:
        t = time.perf_counter()
        goal.optimize(ctx)
        ctx.done.append(goal)
        rows.append(step(snapshot, ctx, goal.name, time.perf_counter() - t))
    plan = diff(snapshot, ctx)
    seconds = time.perf_counter() - start
    scope = plan_quality.Scope.of(snapshot, intents)
    metrics = plan_quality.tally(snapshot, plan, scope).evaluation(scope, plan.plan_id)
    bound = metrics.lower_bound
    added: list[dict[str, Any]] = []
    net0, intra0 = 0, 0
    for r in rows:
        added.append(
            {**r, "addedNetwork": r["networkBytes"] - net0, "addedIntra": r["intraBrokerBytes"] - intra0}
        )
        net0, intra0 = r["networkBytes"], r["intraBrokerBytes"]
    return {
        "seconds": round(seconds, 1),
        "goals": [r for r in added if r["addedNetwork"] or r["addedIntra"]],
        "lowerBound": bound.to_json() if bound is not None else None,
        "bytesToMove": metrics.bytes_to_move,
        "bytesOverLowerBound": metrics.bytes_over_lower_bound,
        "brokerBytesMaxMean": metrics.balance_after.broker_bytes_max_mean,
        "dirBytesMaxMeanWorstBroker": metrics.balance_after.dir_bytes_max_mean_worst_broker,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000:1000,300000:300", help="partitions:brokers,...")
    ap.add_argument("--scenario", default="all", help="a scenario of tests/bench/generator.py")
    ap.add_argument("--shards", type=int, default=0, help="0: the local engine; N: sharded in process")
    args = ap.parse_args()
    for spec in args.sizes.split(","):
        n, brokers = (int(x) for x in spec.split(":"))
        snapshot, text = scenario(args.scenario, brokers=brokers, partitions=n, topics=max(20, n // 500))
        found = attribute(snapshot, Intents.loads(text).enforced_only(), args.shards)
        print(json.dumps({"partitions": n, "brokers": brokers, "shards": args.shards, **found}), flush=True)


if __name__ == "__main__":
    main()
