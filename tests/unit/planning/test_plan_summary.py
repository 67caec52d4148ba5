"""The typed plan summary (planning/plan_summary.py) writes exactly the JSON the summary was before it was
typed: the summaries of small varied cases (summary_cases.py) equal, as text (keys, their order, values),
the fixtures written by the untyped code, and every summary reads back to itself."""

from __future__ import annotations

import json

import pytest
from tests.unit.planning.summary_cases import CASES, SUMMARIES, text_of

from kafka_placement.planning.plan_summary import Metrics, PlanSummary, StatusSummary


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_summary_writes_the_json_of_the_untyped_summary(name: str) -> None:
    assert text_of(CASES[name]().to_json()) == (SUMMARIES / f"{name}.json").read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_summary_reads_back_to_itself(name: str) -> None:
    summary = CASES[name]()
    kind = PlanSummary if isinstance(summary, PlanSummary) else Metrics
    doc = json.loads(json.dumps(summary.to_json()))  # as a file, a ConfigMap or a Spark job holds it
    back = kind.from_json(doc)
    assert back == summary and text_of(back.to_json()) == text_of(summary.to_json())


def test_the_engine_fields_are_written_after_the_advice_and_before_the_review() -> None:
    doc = json.loads((SUMMARIES / "advise.json").read_text())
    doc |= {"engine": "spark", "sharding": {"shards": 2, "seconds": {"analysis": 1.5}}}
    doc |= {"engine": "spark-k8s", "sparkApplication": "ns/app"}  # k8s.summary_fields over the job's
    doc["review"] = {"configMap": "cm", "brokersChanging": "broker 1"}
    summary = PlanSummary.from_json(doc)
    assert summary.engine == "spark-k8s" and summary.review is not None
    assert list(summary.to_json().items()) == list(doc.items())


def test_the_status_part_is_the_status_keys_of_the_summary() -> None:
    doc = json.loads((SUMMARIES / "waiting.json").read_text())
    part = StatusSummary.of(PlanSummary.from_json(doc)).to_json()
    keys = ("partitionsChanged", "replicaMoves", "bytesToMove", "lowerBoundBytes", "advisories", "waiting")
    assert part == {k: doc[k] for k in keys if k in doc}
    assert StatusSummary.from_json(part).to_json() == part
