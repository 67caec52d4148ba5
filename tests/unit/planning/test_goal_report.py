"""The summary's goals: each goal's own verdict on the plan, hard goals first."""

from __future__ import annotations

import json

from tests.unit.builders import intents
from tests.unit.planning.summary_cases import SUMMARIES

from kafka_placement.planning.goals import default_goals
from kafka_placement.planning.optimizer import goal_report
from kafka_placement.planning.plan_summary import PlanSummary


def test_the_goal_report_is_the_goals_own_verdicts() -> None:
    goals = default_goals()
    assert [g.is_hard for g in goals] == sorted((g.is_hard for g in goals), reverse=True)  # hard first
    doc = json.loads((SUMMARIES / "decommission.json").read_text())
    doc["violationsAfter"]["decommissioned"] = 2
    doc["balanceAfter"] |= {"brokerBytesMaxMean": 1.3, "leadersMaxMean": 1.0}
    doc["brokerBalanceUnreachable"] = "unit dc1 holds a third of the replicas"
    summary = PlanSummary.from_json(doc)
    text = "kind: PlacementPolicy\nspec: {balance: {brokers: true, leaders: true, tolerance: 0.1}}\n"
    assert [g.to_json() for g in goal_report(intents(text), summary)] == [
        {"goal": "ReplicaPlacement", "hard": True, "met": False, "value": 2, "target": 0},
        {"goal": "BrokerBalance", "hard": False, "met": False, "value": 1.3, "target": 1.1,
         "unreachable": "unit dc1 holds a third of the replicas"},
        {"goal": "LeaderBalance", "hard": False, "met": True, "value": 1.0, "target": 1.1},
    ]  # fmt: skip
