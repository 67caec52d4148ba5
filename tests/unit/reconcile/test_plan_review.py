"""The review ConfigMap's content (reconcile/plan_review.py): the same numbers as the planner's summary, the
brokers that change most, the copy model's estimate, and a bounded size at any cluster size."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from pydantic import ValidationError
from tests.bench.generator import scenario
from tests.unit.planning.test_report import golden

from kafka_placement.execution.copy_model import estimate_json, estimate_plan
from kafka_placement.execution.executor import Limits
from kafka_placement.model.intent_status import PlanEstimate, Review
from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.spec_fields import to_json
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.planning.plan_keeping import KeptPlan, TrafficLoads, loads_of
from kafka_placement.planning.plan_summary import StatusSummary
from kafka_placement.planning.report import build_report
from kafka_placement.planning.summary_parts import Advisories
from kafka_placement.reconcile import plan_review


def test_the_review_holds_the_summary_per_broker_loads_and_an_estimate() -> None:
    snap, plan, intents = golden("all")
    report = build_report(snap, plan, intents, 3)
    limits = Limits(max_moves_per_broker=3, throttle=10_000_000)
    est = estimate_plan(snap, plan, limits, 5.0)
    data, binary = plan_review.review_data(report, limits, None, estimate_json(est, 1_800_000_000))
    assert binary == {} and data["planId"] == plan.plan_id and data["planBlob"] == f"plan-{plan.plan_id}"
    summary = json.loads(data["summary.json"])  # all of it but the batches' order of every partition
    assert (
        "order" not in summary["batches"]
        and summary["batches"]["count"] == report.summary.to_json()["batches"]["count"]
    )
    assert {k: v for k, v in summary.items() if k != "batches"} == {
        k: v for k, v in report.summary.to_json().items() if k != "batches"
    }
    brokers = json.loads(data["brokers.json"])["brokers"]
    assert {b["broker"] for b in brokers} == {b.id for b in snap.brokers}
    copied = sum(b["bytesIn"] + b["dirBytes"] for b in brokers)
    assert copied == report.summary.bytes_to_move == est.bytes > 0
    # what the busiest broker takes in or moves between its dirs bounds the estimate (what a leader sends
    # is the model's: bytesOut here is what leaves a broker's own dirs)
    busiest = max(max(b["bytesIn"], b["dirBytes"]) for b in brokers)
    doc = json.loads(data["estimate.json"])  # the copy model's (tests/unit/execution/test_copy_model.py)
    assert round(busiest / 8_200_000, 1) <= doc["boundSeconds"] <= doc["copySeconds"] < doc["seconds"]
    assert doc["bytesPerSecond"] == 8_200_000 and doc["throttled"] and doc["exact"]  # no rate hold
    assert doc["finishAt"] == "2027-01-15T08:00:00Z" and doc["moves"] == report.summary.partitions_changed
    shown = plan_review.estimate_status(data)  # status.plan.estimate
    assert shown == PlanEstimate(
        seconds=doc["seconds"],
        finish_at=doc["finishAt"],
        bytes_per_second=8_200_000,
        throttled=True,
        exact=True,
        bound_seconds=round(doc["boundSeconds"]),
        microseconds_per_move=8000,  # (assumed: copy_model.DEFAULT_SECONDS_PER_MOVE)
        per_move_measured=False,
    )
    page = data["report.html"]  # the page says it in words
    assert '<p id="estimate"><b>Estimated duration</b> ' in page and "7.8 MiB/s per broker" in page
    assert "ending about 2027-01-15T08:00:00Z if started when planned" in page
    assert plan_review.estimate_status({"estimate.json": '{"seconds": 3}'}) is None  # an earlier release's
    assert plan_review.estimate_status({}) is None
    assert json.loads(data["batches.json"])["maxMovesPerBroker"] == 3
    assert data["report.html"].startswith("<!DOCTYPE html>")
    changing = data["brokersChanging"]
    top = max(brokers, key=lambda b: (abs(b["bytes"][1] - b["bytes"][0]) + b["dirBytes"], -b["broker"]))
    assert changing.startswith(f"broker {top['broker']} "), changing
    assert 1 <= changing.count("broker ") <= plan_review.CHANGING
    # in binary units, as every text for people (model/units.py): the report and the status agree
    amounts = re.findall(r"\d+(?:\.\d)? ([kKMGTP]i?B|B)\b", changing)
    assert amounts and set(amounts) <= {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}, changing


def test_with_rates_the_review_names_the_brokers_whose_traffic_changes_most() -> None:
    from dataclasses import replace

    snap, plan, intents = golden("decommission")
    data, _ = plan_review.review_data(build_report(snap, plan, intents), Limits())
    assert data["trafficChanging"] == ""  # no rates: nothing claimed
    assert plan_review.review_status(data, "cm").traffic_changing is None
    rated = replace(snap, partitions=tuple(replace(p, bytes_in_per_sec=2e6) for p in snap.partitions))
    report = build_report(rated, plan, intents)
    data, _ = plan_review.review_data(report, Limits())
    status = to_json(plan_review.review_status(data, "cm"))
    assert status["trafficChanging"] == data["trafficChanging"] and len(status["trafficChanging"]) <= 1000
    rows = report.summary.to_json()["traffic"]["brokers"]

    def change(t: dict[str, list[float]]) -> float:
        return sum(abs(t[k][1] - t[k][0]) for k in ("networkIn", "networkOut"))

    top = max(rows, key=lambda t: (change(t), -t["id"]))
    first = status["trafficChanging"].split("; ")[0]
    assert first.startswith(f"broker {top['id']} in {top['networkIn'][0] / 1e6:.1f} MB/s -> "), first
    gone = next(t for t in rows if t["id"] in intents.decommissioned)  # all of its traffic leaves it
    assert f"broker {gone['id']} in " in status["trafficChanging"] and gone["networkIn"][1] == 0
    assert 1 <= status["trafficChanging"].count("broker ") <= plan_review.CHANGING


def test_the_review_of_a_large_cluster_stays_within_one_configmap() -> None:
    """400 brokers and 12,000 partitions: every list is capped, the ConfigMap's text stays under its
    bound (the report's caps do not grow with the cluster, so this holds at 1M partitions as well)."""
    snap, text = scenario("scale-out", brokers=400, partitions=12_000, topics=400)
    intents = Intents.loads(text)
    plan = compute_plan(snap, intents).plan
    report = build_report(snap, plan, intents)
    data, binary = plan_review.review_data(report, Limits())
    size = sum(len(k) + len(v.encode()) for k, v in {**data, **binary}.items())
    assert size <= plan_review.MAX_DATA_BYTES + 1024, size
    assert len(json.loads(data["brokers.json"])["brokers"]) <= 300
    assert len(json.loads(data["moves.json"])["largest"]) <= 50


def test_batches_stay_bounded_however_many_there_are() -> None:
    grouped = plan_review._batches(tuple(range(1, 2001)), 5)
    assert grouped["batches"] == 2000 and grouped["groupedBy"] == 4
    assert len(grouped["bytesPerBatch"]) == 500 and sum(grouped["bytesPerBatch"]) == sum(range(1, 2001))


def test_the_kept_plan_record_round_trips_and_is_left_out_when_too_large() -> None:
    snap, plan, intents = golden("all")
    loads = loads_of(snap, plan)
    summary = StatusSummary(partitions_changed=3, replica_moves=4, bytes_to_move=5, lower_bound_bytes=2)
    kept = KeptPlan(plan, replace(summary, review=Review(config_map="old")), "ab" * 32, loads, 0.1)
    text = plan_review.kept_text(kept)
    assert text is not None
    data, _ = plan_review.review_data(build_report(snap, plan, intents), Limits(), text)
    assert data[plan_review.KEPT_PLAN] == text
    record = plan_review.KeptPlanRecord.model_validate_json(text)
    back = record.kept(plan, Review(config_map="cm", brokers_changing="broker 1"))
    assert back.key == kept.key and back.tolerance == 0.1 and back.plan is plan
    assert back.keep(kept.key, loads) is None  # the loads survive the JSON within the drift bound
    # the status's part of the summary, and the review the ConfigMap shows now
    assert back.summary.to_json() == {**summary.to_json(), "review": {
        "configMap": "cm", "brokersChanging": "broker 1"}}  # fmt: skip
    with pytest.raises(ValueError, match="keeps plan"):
        record.kept(Plan(()), Review())
    advised = Plan.of([PartitionTarget("x" * 100, i, (1, 2), ("any", "any")) for i in range(4000)])
    huge = replace(summary, advisories=Advisories(("spread",), partitions=4000, plan=advised))
    assert plan_review.kept_text(KeptPlan(plan, huge, "ab" * 32, loads, 0.1)) is None
    with pytest.raises(ValidationError):
        plan_review.KeptPlanRecord.model_validate_json(text.replace('"version":1', '"version":2'))


def test_the_kept_plan_record_of_2000_brokers_at_gigabytes_per_second_is_kept() -> None:
    """The record grows with the brokers (their loads): at the scale users run it stays under the bound,
    so a large cluster's plan is kept across leaders too, and the review with it under the ConfigMap's."""
    brokers = tuple(range(1, 2001))
    side = {m: {b: 1_234_567_890.123 + b for b in brokers} for m in ("in", "out")}
    snap, plan, intents = golden("all")
    summary = StatusSummary(
        partitions_changed=10**6, replica_moves=10**6, bytes_to_move=10**15, lower_bound_bytes=1
    )
    text = plan_review.kept_text(KeptPlan(plan, summary, "ab" * 32, TrafficLoads(side, side, brokers), 0.05))
    assert text is not None and 100_000 < len(text) <= plan_review.MAX_KEPT_BYTES
    data, binary = plan_review.review_data(build_report(snap, plan, intents), Limits(), text)
    assert sum(len(k) + len(v.encode()) for k, v in {**data, **binary}.items()) <= plan_review.MAX_DATA_BYTES
