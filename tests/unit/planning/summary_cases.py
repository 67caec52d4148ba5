"""Small planning cases whose summaries are pinned as JSON (tests/unit/planning/summaries/*.json): the
summary's JSON contract (keys, their order, their values) as ``plan --summary`` writes it. Regenerate
deliberately with ``python -m tests.unit.planning.summary_cases`` and review the diff."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench.generator import scenario
from tests.unit.builders import intents, snapshot
from tests.unit.planning.headroom_cases import DECOMMISSION_4, GB, case
from tests.unit.planning.test_network_goals import capacity, hot_cluster
from tests.unit.planning.test_waiting import RETIRE_3, three_brokers

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_quality import evaluate
from kafka_placement.planning.plan_summary import Metrics, PlanSummary

SUMMARIES = Path(__file__).resolve().parent / "summaries"
RACKS6 = {1: "/a/1", 2: "/a/2", 3: "/b/1", 4: "/b/2", 5: "/c/1", 6: "/c/2"}


def _bench(name: str) -> PlanSummary:
    snap, text = scenario(name, brokers=6, partitions=24, topics=3, seed=7)
    return compute_plan(snap, intents(text)).summary


def _rack_policy() -> PlanSummary:
    snap, _ = scenario("rack-repair", brokers=6, partitions=24, topics=3, seed=7)
    text = (
        "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
        "  rackAwareness: {separator: /, levels: 2}\n"
        "  balance: {brokers: true, leaders: true, failureSpread: true, tolerance: 0.1}\n"
    )
    return compute_plan(snap, intents(text)).summary


def _network() -> PlanSummary:
    snap = hot_cluster(seed=3, brokers=4, parts=16)
    text = "kind: PlacementPolicy\nspec: {balance: {brokers: true, networkIn: true, networkOut: true}}\n"
    return compute_plan(snap, intents(text).with_capacity(capacity(40_000_000, 40_000_000))).summary


def _advise() -> PlanSummary:
    snap = snapshot(RACKS6, [("t", 0, [1, 2, 3], [0, 0, 0], 10), ("u", 0, [4, 6], [0, 1], 20)])
    text = (
        "kind: LogDirCordon\nspec: {broker: 6, logDirs: [/data/d1], drain: true}\n---\n"
        "kind: PlacementPolicy\nspec: {topics: {include: [t]}, rackAwareness: {levels: 2}, mode: Advise}\n"
    )
    return compute_plan(snap, intents(text)).summary


def _advice_error() -> PlanSummary:
    snap = snapshot({1: None, 2: None, 3: None}, [("t", 0, [1, 3], [0, 0], 10)])
    text = (
        "kind: BrokerDecommission\nspec: {brokers: [3]}\n---\n"
        "kind: PlacementPolicy\nspec: {replicationFactor: 3, mode: Advise}\n"
    )
    return compute_plan(snap, intents(text)).summary


def _waiting() -> PlanSummary:
    return compute_plan(three_brokers(), intents(RETIRE_3)).summary


def _unknown_volumes() -> PlanSummary:
    doc = case({"/d0": 100 * GB, "/d1": 100 * GB}, {"/d0": 4 * GB, "/d1": 2 * GB}, 3)
    for d in doc["brokers"][0]["logDirs"]:
        d["totalBytes"] = d["usableBytes"] = 0
    return compute_plan(ClusterSnapshot.from_json(doc), Intents.loads(DECOMMISSION_4)).summary


def _evaluated() -> Metrics:
    """``evaluate`` without intents: the metrics only (no bound, no violations)."""
    snap, text = scenario("decommission", brokers=4, partitions=8, topics=2, seed=3)
    return evaluate(snap, compute_plan(snap, intents(text)).plan)


CASES: dict[str, Callable[[], PlanSummary | Metrics]] = {
    "decommission": lambda: _bench("decommission"),
    "drain": lambda: _bench("drain"),
    "scale-out": lambda: _bench("scale-out"),
    "rack-policy": _rack_policy,
    "network-capacity": _network,
    "advise": _advise,
    "advice-error": _advice_error,
    "waiting": _waiting,
    "unknown-volumes": _unknown_volumes,
    "evaluated": _evaluated,
}


def text_of(summary: dict[str, Any]) -> str:
    """The fixture's text: the JSON as ``plan --summary`` writes it."""
    return json.dumps(summary, indent=1) + "\n"


if __name__ == "__main__":
    for name, build in CASES.items():
        (SUMMARIES / f"{name}.json").write_text(text_of(build().to_json()))
        print(name, file=sys.stderr)
