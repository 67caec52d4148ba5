"""Golden scenarios (tests/testdata/golden/*): reviewed inputs and outputs of the planner.

Each scenario is replayed: the plan must equal the reviewed plan.json exactly (determinism and no
silent behaviour change) and the metrics expected.json; on top, each scenario's own quality targets
are checked directly, so a regenerated golden file cannot hide a regression.
Regenerate deliberately with ``python tests/testdata/golden/regen.py`` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import compute_plan

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"
SCENARIOS = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name != "__pycache__")  # (regen.py's)


def load(name: str) -> tuple[ClusterSnapshot, Intents, Plan, dict[str, object]]:
    d = GOLDEN / name
    return (
        ClusterSnapshot.loads((d / "snapshot.json").read_text()),
        Intents.loads((d / "intents.yaml").read_text()),
        Plan.loads((d / "plan.json").read_text()),
        json.loads((d / "expected.json").read_text()),
    )


def test_all_five_scenarios_exist() -> None:
    assert SCENARIOS == ["all", "decommission", "drain", "rack-repair", "scale-out"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_plan_and_metrics_match_the_reviewed_output(name: str) -> None:
    snap, intents, golden_plan, expected = load(name)
    result = compute_plan(snap, intents)
    assert result.plan == golden_plan, (
        f"plan of {name} changed: {result.plan.plan_id} != {golden_plan.plan_id}"
    )
    for key, value in expected.items():
        actual = (
            result.summary.to_json()["batches"]["count"]
            if key == "batchCount"
            else result.summary.to_json()[key]
        )
        assert actual == value, f"{name}: {key}"


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_quality_targets(name: str) -> None:
    snap, intents, _, _ = load(name)
    s = compute_plan(snap, intents).summary.to_json()
    assert s["hardViolationsAfter"] == 0
    assert s["violationsAfter"]["rackSpread"] == 0
    if name in ("decommission", "drain", "rack-repair"):
        assert s["bytesToMove"] == s["lowerBoundBytes"] > 0  # exactly the bytes that must move
    if name == "scale-out":
        # 1.105 on these 180 partitions (coarse: 20 replicas per broker and dir); the 1.10 target is
        # met at benchmark scale (1.001 at 2k partitions, docs/benchmarks.md)
        assert s["bytesToMove"] <= 1.15 * s["lowerBoundBytes"]
        assert s["balanceAfter"]["brokerBytesMaxMean"] <= 1.05
        assert s["balanceAfter"]["dirBytesMaxMeanWorstBroker"] <= 1.10
        assert all(g["met"] for g in s["goals"])
    if name == "all":
        assert s["violationsBefore"]["decommissioned"] > 0 and s["violationsBefore"]["rackSpread"] > 0
        # rack repair + balance on 180 partitions is coarse (about 1.03 at 2k and 1.003 at 100k partitions,
        # docs/benchmarks.md); here the bound only guards the small case against regressions
        assert s["bytesToMove"] <= 1.20 * s["lowerBoundBytes"]
