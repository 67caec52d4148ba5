"""Balance for no bytes (goals/dir_free.py, broker_balance._return_held): which holder of a repaired
partition leaves, and which broker a copy the plan makes anyway lands on, chosen where they even out a
broker's dirs or shed its excess.

Issue 56: on 1,000 brokers the bytes above the lower bound were the dir goal's local copies on brokers
the earlier goals left with one dir above its threshold (docs/benchmarks.md). The same plan with the three
steps switched off is the reference: with them the plan copies fewer bytes, breaks no rule, meets every
balance the reference meets, and each step changed something.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kafka_placement.model.intents import Intents
from kafka_placement.planning.goals import broker_balance, dir_free
from kafka_placement.planning.optimizer import compute_plan

STEPS = (
    (dir_free, "redirect_arrivals"),
    (dir_free, "return_departed"),
    (broker_balance, "_return_held"),
)


def plan(brokers: int, partitions: int, twice: bool = False) -> dict[str, Any]:
    from tests.bench.generator import scenario

    snap, text = scenario("all", brokers=brokers, partitions=partitions, topics=max(20, partitions // 500))
    result = compute_plan(snap, Intents.loads(text))
    if twice:
        assert compute_plan(snap, Intents.loads(text)).plan.plan_id == result.plan.plan_id  # deterministic
    return result.summary.to_json()


def test_the_free_steps_copy_fewer_bytes_and_keep_every_rule_and_balance(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as off:
        for module, name in STEPS:
            off.setattr(module, name, lambda *args: 0)
        before = plan(400, 8000)
    calls: dict[str, list[int]] = {name: [] for _, name in STEPS}
    for module, name in STEPS:
        monkeypatch.setattr(module, name, _recorded(getattr(module, name), calls[name]))
    after = plan(400, 8000, twice=True)

    assert before["hardViolationsAfter"] == after["hardViolationsAfter"] == 0
    met_before = {g["goal"] for g in before["goals"] if g["met"]}
    assert met_before <= {g["goal"] for g in after["goals"] if g["met"]}
    assert {"BrokerBalance", "DirBalance"} <= met_before
    assert after["bytesToMove"] < before["bytesToMove"]
    assert after["lowerBoundBytes"] == before["lowerBoundBytes"]
    # 93.60 GB, 1.027x the bound, without them; 92.73 GB, 1.0174x, with them (2026-12-06)
    assert after["bytesOverLowerBound"] < 1.02 < 1.025 < before["bytesOverLowerBound"]
    for name, counts in calls.items():  # each step moved replicas (it returns how many)
        assert sum(counts) > 0, name


def _recorded(fn: Callable[..., Any], into: list[int]) -> Callable[..., Any]:
    def wrapper(*args: Any) -> Any:
        out = fn(*args)
        into.append(out)
        return out

    return wrapper
