"""The intents' status is declared once (model/intent_status.py): the CRD's status schema, the parser of a
stored status and the JSON the operator writes derive from it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kafka_placement.model.crd_schema import crd_documents
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intent_status import IntentStatus, PlanStatus, ProgressStatus
from kafka_placement.model.spec_fields import to_json
from kafka_placement.reconcile import status as st

FULL: dict[str, Any] = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "Ready",
            "status": "False",
            "reason": "NoInSyncReplica",
            "message": "waits",
            "lastTransitionTime": "2026-12-03T08:00:00Z",
        },
        {"type": "Blocked", "status": "Unknown", "reason": "Unknown", "message": ""},
    ],
    "observedGeneration": 3,
    "message": "plan p1 executed; 2 partitions wait",
    "plan": {
        "id": "p1",
        "moves": 40,
        "replicaMoves": 41,
        "bytes": 2**40,
        "lowerBoundBytes": 2**39,
        "waiting": {
            "NoInSyncReplica": {
                "partitions": 1,
                "brokers": [3],
                "first": [{"partition": "t-0", "dead": [3], "outOfSync": [1, 2]}],
            },
            "WaitingForCapacity": {
                "partitions": 1,
                "brokers": [3],
                "first": ["t-1"],
                "replicationFactor": 3,
                "brokersAvailable": 2,
                "brokersNeeded": 1,
            },
        },
        "review": {"configMap": "kp-review", "brokersChanging": "1: 2 GiB -> 1 GiB", "trafficChanging": "-"},
    },
    "progress": {
        "partitionsDone": 12,
        "partitionsTotal": 40,
        "bytesMoved": 10,
        "bytesRemaining": 20,
        "eta": "2026-12-03T09:00:00Z",
        "summary": "12/40",
        "diskHeld": "broker 1 /data/a at 93%",
    },
    "retry": {"attempts": 2, "after": "2026-12-03T08:02:00Z"},
}


def test_a_full_status_reads_and_writes_back_as_it_was() -> None:
    status = IntentStatus.parse(FULL)
    assert status.plan is not None and status.plan.waiting is not None
    assert status.plan.waiting.no_in_sync_replica is not None
    assert status.plan.waiting.no_in_sync_replica.first[0].out_of_sync == (1, 2)
    assert status.retry is not None and status.retry.attempts == 2
    ready = status.condition("Ready")
    assert ready is not None and ready.reason == "NoInSyncReplica"
    assert to_json(status) == FULL


def test_every_intent_kind_has_the_status_schema_the_model_declares() -> None:
    intents = [d for d in crd_documents() if d["spec"]["names"]["kind"] != "KafkaCluster"]
    assert len(intents) == 3
    for doc in intents:
        (version,) = doc["spec"]["versions"]
        assert version["schema"]["openAPIV3Schema"]["properties"]["status"] == IntentStatus.schema()


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (("plan", "bogus"), 1, "unknown field"),
        (("progress", "summary"), "x" * 65, "longer than 64"),
        (("phase",), "Done", "must be one of"),
        (("retry", "attempts"), 0, ">= 1"),
        (("conditions",), [{"type": "Ready"}], "status"),
    ],
)
def test_a_status_breaking_its_schema_is_refused_naming_the_field(
    path: tuple[str, ...], value: Any, says: str
) -> None:
    raw = copy.deepcopy(FULL)
    at = raw
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    with pytest.raises(BadInputError) as e:
        IntentStatus.parse(raw)
    assert says in str(e.value) and f"status.{path[0]}" in str(e.value)


def test_an_unreadable_stored_status_is_read_as_empty_saying_why() -> None:
    body = {"kind": "BrokerDecommission", "metadata": {"name": "d"}, "status": {"phase": 7}}
    status = IntentStatus.of(body)
    assert status.phase is None and status.unread is not None and "status.phase" in status.unread
    assert IntentStatus.of({"metadata": {}}) == IntentStatus()


def test_the_writer_refuses_a_part_the_schema_does_not_hold_and_an_old_records_plan_is_pruned() -> None:
    from kafka_placement.reconcile.inputs import recorded_plan

    body = {"kind": "BrokerDecommission", "metadata": {"name": "d", "generation": 1}}
    with pytest.raises(BadInputError, match="unknown field"):
        ProgressStatus.parse({"percent": 3})
    with pytest.raises(BadInputError, match=r"status\.plan\.moves"):  # a typed plan held to its bounds
        st.intent_status(body, st.EXECUTING, st.EXECUTING, "m", plan=PlanStatus(id="p", moves=-1))
    # an execution record of an earlier release keeps status.plan.batches, which the schema dropped
    old = recorded_plan({"id": "p", "moves": 3, "batches": 2})
    assert st.intent_status(body, st.EXECUTING, st.EXECUTING, "m", plan=old)["plan"] == {
        "id": "p",
        "moves": 3,
    }
    assert recorded_plan({"id": 5}) is None and recorded_plan(None) is None  # unreadable: no plan shown


def test_the_writer_removes_what_it_no_longer_says_and_keeps_the_retry_while_planning() -> None:
    body = {"kind": "BrokerDecommission", "metadata": {"name": "d", "generation": 4}, "status": FULL}
    progress = ProgressStatus.parse({"partitionsDone": 13, "partitionsTotal": 40, "summary": "13/40"})
    out = st.intent_status(body, st.EXECUTING, st.EXECUTING, "moving", progress=progress)
    assert out["progress"]["partitionsDone"] == 13 and out["progress"]["diskHeld"] is None
    assert out["retry"] is None and out["observedGeneration"] == 4
    assert (
        ProgressStatus.parse({k: v for k, v in out["progress"].items() if v is not None}).summary == "13/40"
    )
    planning = st.intent_status(body, st.PLANNING, st.PLANNING, "planning")
    assert planning["retry"] == FULL["retry"] and "progress" not in planning
    ready = next(c for c in planning["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and ready["lastTransitionTime"] == "2026-12-03T08:00:00Z"
    assert PlanStatus.parse({"id": "p"}) == PlanStatus(id="p")
