"""Every gate of one reconcile (reconcile/decide.py), from plain values: no Kafka, no Kubernetes.

The rig tests (tests/e2e/test_operator*.py) show the same gates end to end; these pin each decision,
its statuses, Events and actions, one case at a time.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kafka_placement.execution.record_doc import Phase
from kafka_placement.model.intent_status import (
    LastExecution,
    PlanEstimate,
    PlanStatus,
    ProgressStatus,
    WaitingStatus,
)
from kafka_placement.model.intents import BrokerDecommission, LogDirCordon
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.spec_fields import parse_object, to_json
from kafka_placement.planning.plan_summary import StatusSummary
from kafka_placement.planning.summary_parts import Advisories
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.decide import UNREACHABLE_GRACE_S, decide
from kafka_placement.reconcile.decision import (
    CheckIntents,
    CheckMinIsr,
    Decision,
    Failure,
    PlanIntents,
    Planned,
    RecordView,
    RequestCancel,
    StartExecution,
    SyncCordons,
    Tick,
    View,
)

PLAN = Plan.of(
    [PartitionTarget("t", 0, (1, 2), ("any", "any")), PartitionTarget("t", 1, (2, 1), ("any", "any"))]
)
EMPTY = Plan.of([])
SUMMARY = StatusSummary(partitions_changed=2, bytes_to_move=2048, replica_moves=2)


def body(
    kind: str, name: str, spec: dict[str, Any], phase: str | None = None, **status: Any
) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "generation": 1},
        "spec": {"clusterRef": {"name": "c"}, **spec},
        "status": {"phase": phase, **status} if phase else {},
    }


def retire(name: str = "retire-3", phase: str | None = None, **spec: Any) -> dict[str, Any]:
    return body("BrokerDecommission", name, {"brokers": [3], **spec}, phase)


def cordon(name: str = "c1") -> dict[str, Any]:
    return body("LogDirCordon", name, {"broker": 1, "logDirs": ["/d1"]})


def advise(name: str = "spread") -> dict[str, Any]:
    return body("PlacementPolicy", name, {"mode": "Advise", "replicationFactor": 2})


def executing(*uids: str, **kw: Any) -> RecordView:
    return RecordView(phase=Phase.MOVING, plan_id=PLAN.plan_id, participants=frozenset(uids), **kw)


def phases(d: Decision) -> dict[str, tuple[str, str]]:
    return {p.body["metadata"]["name"]: (p.phase, p.reason) for p in d.statuses}


# ---- failure -------------------------------------------------------------------------------------------


def test_failure_fails_every_intent_not_completed_and_sets_the_cluster_phase() -> None:
    done = retire("done", phase=st.COMPLETED)
    d = decide(
        View(
            [retire(), done],
            failure=Failure("KafkaNotAuthorized", "denied: ALTER on CLUSTER", True, "NotAuthorized"),
        )
    )
    assert phases(d) == {"retire-3": (st.FAILED, "KafkaNotAuthorized")}
    assert d.statuses[0].message == "denied: ALTER on CLUSTER"
    assert d.done and d.cluster is not None and d.cluster["phase"] == "NotAuthorized"
    ready = {c["type"]: c for c in d.cluster["conditions"]}
    assert ready["Ready"]["status"] == "True" and ready["Degraded"]["status"] == "True"
    unreachable = decide(View([retire()], failure=Failure("ClusterUnreachable", "timed out", False)))
    assert unreachable.cluster is not None and unreachable.cluster["phase"] == "Unreachable"
    assert {c["type"]: c["status"] for c in unreachable.cluster["conditions"]}["Ready"] == "False"


def test_an_unsupported_cluster_fails_its_intents_with_the_version_and_the_api_missing() -> None:
    msg = "the Kafka cluster at h:9092 is not supported: it runs Kafka 2.3, which lacks AlterPartition..."
    d = decide(View([retire()], failure=Failure("KafkaUnsupported", msg, True, st.UNSUPPORTED)))
    assert phases(d) == {"retire-3": (st.FAILED, "KafkaUnsupported")}
    assert d.statuses[0].message == msg
    assert not d.actions  # nothing planned, ticked or executed
    assert d.cluster is not None and d.cluster["phase"] == "Unsupported"
    conditions = {c["type"]: c for c in d.cluster["conditions"]}
    stalled = conditions["Stalled"]
    assert (stalled["status"], stalled["reason"], stalled["message"]) == ("True", "KafkaUnsupported", msg)
    assert conditions["Ready"]["status"] == "True"  # Kafka answered, as for NotAuthorized


def test_the_clusters_conditions_move_their_transition_time_only_when_they_flip() -> None:
    """A reconcile that finds the cluster as the last one did writes the same conditions (before, every
    reconcile stamped them anew: a status write per cluster per reconcile, and a misleading time)."""
    old = "2020-01-01T00:00:00Z"
    unreachable = [
        {"type": t, "status": v, "reason": "ClusterUnreachable", "message": "a", "lastTransitionTime": old}
        for t, v in (("Ready", "False"), ("Degraded", "True"), ("Reconciling", "False"), ("Stalled", "True"))
    ]
    again = decide(
        View([retire()], failure=Failure("ClusterUnreachable", "b", False), cluster_conditions=unreachable)
    )
    assert again.cluster is not None
    assert [c["lastTransitionTime"] for c in again.cluster["conditions"]] == [old] * 4
    assert [c["message"] for c in again.cluster["conditions"]] == ["b", "b", "", "b"]  # the latest reason
    back = decide(View([], cluster_conditions=unreachable)).cluster
    assert back is not None and back["phase"] == "Connected"
    flipped = {c["type"] for c in back["conditions"] if c["lastTransitionTime"] != old}
    assert flipped == {"Ready", "Degraded", "Stalled"}  # Reconciling stayed False
    steady = decide(View([], cluster_conditions=back["conditions"])).cluster
    assert steady is not None and steady["conditions"] == back["conditions"]


def test_a_cluster_that_answered_before_is_reconciling_for_five_minutes_then_stalled() -> None:
    """No broker answers a cluster that was Connected (a restart of the whole cluster looks so): kstatus and
    Argo CD show it in progress (Reconciling, not Stalled) for UNREACHABLE_GRACE_S from its last answer,
    then failed; a cluster never reached (a wrong address) is Stalled at once."""
    t0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    connected = decide(View([], now=t0)).cluster
    assert connected is not None
    down = Failure("ClusterUnreachable", "cannot reach Kafka at k:9092: timed out", False)

    def kstatus(conditions: list[dict[str, Any]]) -> tuple[str, str]:
        by = {c["type"]: c["status"] for c in conditions}
        return by["Reconciling"], by["Stalled"]

    ready_at = "2027-01-15T07:59:00Z"  # the Ready condition's transition: when it last turned True
    was_ready = [dict(c, lastTransitionTime=ready_at) for c in connected["conditions"]]
    first = decide(View([retire()], failure=down, cluster_conditions=was_ready, now=t0)).cluster
    assert first is not None and first["phase"] == "Unreachable"
    assert kstatus(first["conditions"]) == ("True", "False")
    busy = {c["type"]: c for c in first["conditions"]}["Reconciling"]
    assert "a cluster restarting looks like this" in busy["message"] and "5 minutes" in busy["message"]
    # the Ready condition flipped to False now: its transition time is when the cluster stopped answering
    since = [dict(c, lastTransitionTime="2027-01-15T08:00:00Z") for c in first["conditions"]]
    later = decide(View([retire()], failure=down, cluster_conditions=since, now=t0 + UNREACHABLE_GRACE_S - 1))
    assert later.cluster is not None and kstatus(later.cluster["conditions"]) == ("True", "False")
    gone = decide(View([retire()], failure=down, cluster_conditions=since, now=t0 + UNREACHABLE_GRACE_S + 1))
    assert gone.cluster is not None and kstatus(gone.cluster["conditions"]) == ("False", "True")
    stays = decide(
        View([retire()], failure=down, cluster_conditions=gone.cluster["conditions"], now=t0 + 900)
    )
    assert stays.cluster is not None and kstatus(stays.cluster["conditions"]) == ("False", "True")
    never = decide(View([retire()], failure=down, now=t0)).cluster  # no condition yet: never reached
    assert never is not None and kstatus(never["conditions"]) == ("False", "True")
    refused = Failure("KafkaNotAuthorized", "denied", True, "NotAuthorized")  # the user must act: at once
    denied = decide(View([retire()], failure=refused, cluster_conditions=was_ready, now=t0)).cluster
    assert denied is not None and kstatus(denied["conditions"]) == ("False", "True")


# ---- Kafka not answering at all (ClusterUnreachable): transient, the intents wait ---------------------

UNREACHABLE = Failure("ClusterUnreachable", "cannot reach Kafka at k:9092: timed out", False)


def conditions_of(p: Any) -> dict[str, tuple[str, str]]:
    """The conditions (status, reason) the reconciler writes for a status patch."""
    status = st.intent_status(p.body, p.phase, p.reason, p.message)
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_an_unreachable_cluster_holds_new_pending_and_planning_intents_pending_not_failed() -> None:
    """A whole-cluster restart is not a failure: the intents wait Pending, reason ClusterUnreachable, with
    the failure's message; kstatus reads them InProgress (Reconciling True, Stalled False)."""
    waiting = retire("waiting", phase=st.PENDING)
    planning = retire("planning", phase=st.PLANNING)
    d = decide(View([retire("new"), waiting, planning, cordon()], failure=UNREACHABLE))
    assert set(phases(d)) == {"new", "waiting", "planning", "c1"}
    assert set(phases(d).values()) == {(st.PENDING, "ClusterUnreachable")}
    assert all(p.message.startswith("cannot reach Kafka at k:9092: timed out") for p in d.statuses)
    assert d.done and d.cluster is not None and d.cluster["phase"] == "Unreachable"
    shown = conditions_of(d.statuses[0])
    assert shown[st.RECONCILING] == ("True", "ClusterUnreachable") and shown[st.STALLED][0] == "False"
    assert shown[st.READY] == ("False", "ClusterUnreachable") and shown[st.BLOCKED][0] == "False"
    assert shown[st.DEGRADED][0] == "False"


@pytest.mark.parametrize(
    "phase", [st.EXECUTING, st.AWAITING_APPROVAL, st.PAUSED, st.COMPLETED, st.CANCELLED, st.FAILED]
)
def test_an_unreachable_cluster_leaves_work_going_on_or_settled_as_it_is(phase: str) -> None:
    """Executing: Kafka keeps copying the moves in flight while the operator cannot see them (nothing is
    ticked, the record is not touched); AwaitingApproval, Paused: the user's turn; Completed, Cancelled,
    Failed (a failure that needs the user): settled until a read of Kafka says otherwise. No status is
    written (a kept phase gets none, as for every keep); the KafkaCluster says the cluster is unreachable."""
    d = decide(View([retire(phase=phase)], record=executing("uid-retire-3"), failure=UNREACHABLE))
    assert d.statuses == () and d.actions == () and d.events == ()
    assert d.cluster is not None and d.cluster["phase"] == "Unreachable"
    conditions = {c["type"]: (c["status"], c["reason"]) for c in d.cluster["conditions"]}
    assert conditions[st.READY] == ("False", "ClusterUnreachable")


def test_an_unreachable_cluster_still_fails_an_invalid_spec_alone() -> None:
    """A spec's validity needs no Kafka: an invalid one fails as it would with Kafka answering."""
    d = decide(View([retire("bad", brokers="three"), retire()], failure=UNREACHABLE))
    assert phases(d) == {"bad": (st.FAILED, "InvalidSpec"), "retire-3": (st.PENDING, "ClusterUnreachable")}


@pytest.mark.parametrize(
    ("reason", "connected", "cluster_phase"),
    [
        ("KafkaNotAuthorized", True, st.NOT_AUTHORIZED),
        ("KafkaUnsupported", True, st.UNSUPPORTED),
        ("InvalidConnection", False, st.UNREACHABLE),
        ("KafkaAuthenticationFailed", False, st.UNREACHABLE),
        ("CorruptExecutionRecord", True, st.UNREACHABLE),
    ],
)
def test_the_other_cluster_failures_still_fail_every_intent_not_completed_an_executing_one_included(
    reason: str, connected: bool, cluster_phase: str
) -> None:
    """Kafka refusing the operator, not supported, a bad connection or a corrupt record need the user."""
    intents = [retire("new"), retire("planning", phase=st.PLANNING), retire(phase=st.EXECUTING)]
    intents.append(retire("done", phase=st.COMPLETED))
    d = decide(
        View(
            intents, record=executing("uid-retire-3"), failure=Failure(reason, "m", connected, cluster_phase)
        )
    )
    assert phases(d) == {n: (st.FAILED, reason) for n in ("new", "planning", "retire-3")}
    shown = conditions_of(d.statuses[0])
    assert shown[st.STALLED] == ("True", reason) and shown[st.RECONCILING][0] == "False"


def test_once_kafka_answers_again_the_usual_events_take_over() -> None:
    """Level-triggered: the first reconcile that reads Kafka plans the waiting intents and ticks the
    execution in flight, as if the outage had not been."""
    down = decide(View([retire("new"), cordon()], failure=UNREACHABLE))
    waiting = [{**p.body, "status": {"phase": p.phase}} for p in down.statuses]
    assert all(b["status"]["phase"] == st.PENDING for b in waiting)
    back = decide(View(waiting, cordons_synced=True))
    assert set(phases(back).values()) == {(st.PLANNING, "Planning")}
    assert [type(a) for a in back.actions] == [PlanIntents]
    assert back.cluster is not None and back.cluster["phase"] == "Connected"
    # an execution in flight, kept Executing while Kafka was down, is ticked and shows its progress
    running = retire(phase=st.EXECUTING)
    assert decide(View([running], record=executing("uid-retire-3"), failure=UNREACHABLE)).statuses == ()
    ticked = decide(View([running], record=executing("uid-retire-3"), cordons_synced=True))
    assert [type(a) for a in ticked.actions] == [Tick]
    shown = decide(View([running], record=executing("uid-retire-3"), cordons_synced=True, ticked=True))
    assert phases(shown) == {"retire-3": (st.EXECUTING, "Moving")}


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"approval": "manual"}, "bad: spec.approval: must be one of Automatic, Manual, got 'manual'"),
        ({"paused": "yes"}, "bad: spec.paused: expected true or false"),
        ({"approvedPlan": ""}, "bad: spec.approvedPlan: must not be empty"),
    ],
)
def test_invalid_operator_fields_fail_the_intent_as_an_invalid_spec(spec: dict[str, Any], says: str) -> None:
    """approval, approvedPlan and paused are parsed as the CRD declares them (model/intent_kinds.py
    OperatorFields), next to the kind's own fields: a value the CRD refuses is an invalid spec."""
    d = decide(View([retire("bad", **spec), retire()]))
    assert phases(d) == {"bad": (st.FAILED, "InvalidSpec"), "retire-3": (st.PLANNING, "Planning")}
    assert says in d.statuses[0].message


def test_an_invalid_spec_fails_alone_and_the_others_are_planned() -> None:
    bad = retire("bad", brokers="three")
    d = decide(View([bad, retire()]))
    assert phases(d) == {"bad": (st.FAILED, "InvalidSpec"), "retire-3": (st.PLANNING, "Planning")}
    assert "bad: spec.brokers" in d.statuses[0].message
    assert [type(a) for a in d.actions] == [SyncCordons, PlanIntents]
    plan_action = d.actions[1]
    assert isinstance(plan_action, PlanIntents)
    assert [b["metadata"]["name"] for b in plan_action.resources] == ["retire-3"]


# ---- planning ------------------------------------------------------------------------------------------


def test_no_intents_only_syncs_cordons_once() -> None:
    d = decide(View([]))
    assert d.statuses == () and [type(a) for a in d.actions] == [SyncCordons]
    assert d.cluster is not None and d.cluster["phase"] == "Connected"
    # synced: the reconcile ends (before, it asked again until the shell gave up after MAX_STEPS rounds)
    assert decide(View([], cordons_synced=True)).done


def test_planning_marks_only_pending_intents_and_syncs_the_declared_cordons() -> None:
    """Every valid intent's cordons, a Completed BrokerDecommission's too: its brokers stay cordoned
    until it is deleted."""
    d = decide(View([cordon(), retire("old", phase=st.COMPLETED)]))
    assert phases(d) == {"c1": (st.PLANNING, "Planning")}
    sync = d.actions[0]
    assert isinstance(sync, SyncCordons)
    assert [type(i) for i in sync.intents] == [LogDirCordon, BrokerDecommission]
    synced = decide(View([cordon(), retire("old", phase=st.COMPLETED)], cordons_synced=True))
    assert [type(a) for a in synced.actions] == [PlanIntents]


def test_the_cordons_of_resources_being_deleted_are_released_by_the_sync_not_by_their_handlers() -> None:
    """A deleted LogDirCordon or BrokerDecommission (``leaving``) is uncordoned by the cluster's reconcile:
    the sync keeps what the live intents declare and releases what the leaving ones declared (an invalid
    one declares nothing but is let go too); its delete handler waits for that."""
    broken = body("LogDirCordon", "broken", {"broker": 1})  # no logDirs: invalid
    d = decide(View([retire()], leaving=[cordon(), broken]))
    sync = d.actions[0]
    assert isinstance(sync, SyncCordons) and [type(a) for a in d.actions] == [SyncCordons, PlanIntents]
    assert [i.name for i in sync.intents] == ["retire-3"] and [i.name for i in sync.released] == ["c1"]
    assert sync.leaving == ("uid-c1", "uid-broken")
    assert "c1" not in phases(d) and "broken" not in phases(d)  # a resource going gets no status
    # the last intent of a cluster deleted: released all the same, then done
    alone = decide(View([], leaving=[retire()]))
    (only,) = alone.actions
    assert isinstance(only, SyncCordons) and only.intents == () and only.leaving == ("uid-retire-3",)
    # with an execution in flight the sync comes first, with the cancel of the deleted participant
    running = decide(
        View([retire(phase=st.EXECUTING)], leaving=[cordon()], record=executing("uid-retire-3", "uid-c1"))
    )
    assert [type(a) for a in running.actions] == [SyncCordons, RequestCancel, Tick]
    # Kafka unreachable: nothing is released (the handlers wait, as Kafka cannot be told)
    failed = decide(View([], leaving=[cordon()], failure=Failure("ClusterUnreachable", "timed out", False)))
    assert failed.actions == ()


def test_a_running_planner_job_keeps_every_intent_planning_with_what_it_does() -> None:
    running = Planned(running="Spark application ns/kafka-placement-x: RUNNING (12 s)")
    d = decide(View([retire(phase=st.PLANNING)], planned=running))
    assert phases(d) == {"retire-3": (st.PLANNING, "Planning")} and d.done
    assert "RUNNING (12 s)" in d.statuses[0].message


def test_a_plan_waiting_for_a_broker_that_does_not_answer_holds_the_intents_pending_and_says_why() -> None:
    """A broker alive in the cluster that the operator cannot read: no plan, nothing failed or undone."""
    why = "waiting: broker(s) 3 alive in the cluster do not answer the operator"
    done, waiting = retire("done", phase=st.COMPLETED), retire(phase=st.AWAITING_APPROVAL)
    d = decide(View([done, waiting, cordon()], planned=Planned(waiting=why)))
    assert phases(d) == {
        "retire-3": (st.PENDING, "BrokersUnreachable"),
        "c1": (st.PENDING, "BrokersUnreachable"),
    }
    assert d.done and all(p.message == why for p in d.statuses)  # the Completed intent stays so


@pytest.mark.parametrize("reason", ["Infeasible", "InvalidInput", "Failed"])
def test_a_planning_error_fails_every_intent_with_its_reason(reason: str) -> None:
    d = decide(
        View([retire(), cordon()], planned=Planned(error_reason=reason, error="broker 3 holds the only copy"))
    )
    assert set(phases(d).values()) == {(st.FAILED, reason)} and d.done
    assert all(p.message == "broker 3 holds the only copy" for p in d.statuses)


def test_advise_policies_only_report_and_take_no_part_in_the_execution() -> None:
    summary = replace(SUMMARY, advisories=Advisories(("spread",), partitions=5, bytes_to_move=10))
    d = decide(View([advise(), retire()], planned=Planned(plan=PLAN, summary=summary), below_min_isr=[]))
    assert phases(d) == {"spread": (st.COMPLETED, "Advised")}
    assert "5 partitions" in d.statuses[0].message and "nothing is moved" in d.statuses[0].message
    (start,) = d.actions
    assert isinstance(start, StartExecution) and start.participants == ("uid-retire-3",)


def test_an_empty_plan_converges() -> None:
    d = decide(View([retire()], planned=Planned(plan=EMPTY, summary=StatusSummary())))
    assert phases(d) == {"retire-3": (st.COMPLETED, "Converged")} and d.done
    assert d.statuses[0].message == "converged: the placement matches every declared intent"


def test_an_empty_plan_after_an_execution_keeps_showing_the_executed_plan() -> None:
    last = RecordView(
        phase=Phase.COMPLETED,
        plan_id="p-1",
        participants=frozenset({"uid-retire-3"}),
        plan_status=PlanStatus(id="p-1"),
    )
    progress = {"partitionsDone": 2}
    shown = body("BrokerDecommission", "retire-3", {"brokers": [3]}, st.COMPLETED, progress=progress)
    d = decide(View([shown], record=last, planned=Planned(plan=EMPTY)))
    (p,) = d.statuses
    assert (p.phase, p.reason, p.plan) == (st.COMPLETED, "Converged", PlanStatus(id="p-1"))
    assert p.progress is not None and to_json(p.progress) == progress
    assert p.message.startswith("converged: plan p-1 executed; ")


def test_drift_after_completion_plans_again_and_replaces_the_finished_record() -> None:
    last = RecordView(phase=Phase.COMPLETED, plan_id="p-1", participants=frozenset({"uid-retire-3"}))
    d = decide(
        View(
            [retire(phase=st.COMPLETED)],
            record=last,
            planned=Planned(plan=PLAN, summary=SUMMARY),
            below_min_isr=[],
        )
    )
    (start,) = d.actions
    assert isinstance(start, StartExecution) and start.replaces_record


def test_a_manual_plan_awaits_approval_of_exactly_this_plan_id() -> None:
    manual = retire(approval="Manual", approvedPlan="an-older-plan")
    d = decide(View([manual, cordon()], planned=Planned(plan=PLAN, summary=SUMMARY)))
    assert set(phases(d).values()) == {(st.AWAITING_APPROVAL, "AwaitingApproval")} and d.done
    msg = d.statuses[0].message
    assert f"set spec.approvedPlan: {PLAN.plan_id} on BrokerDecommission/retire-3" in msg
    assert "2 partitions, 2.0 KiB to copy" in msg
    approved = retire(approval="Manual", approvedPlan=PLAN.plan_id)
    d = decide(View([approved], planned=Planned(plan=PLAN, summary=SUMMARY)))
    assert [type(a) for a in d.actions] == [CheckMinIsr]


def test_spec_paused_holds_a_plan_before_anything_is_recorded() -> None:
    d = decide(View([retire(paused=True), cordon()], planned=Planned(plan=PLAN, summary=SUMMARY)))
    assert set(phases(d).values()) == {(st.PAUSED, "PausedBySpec")} and d.done


def test_min_isr_is_read_before_a_start_and_a_plan_below_it_fails_naming_partitions() -> None:
    view = View([retire()], planned=Planned(plan=PLAN, summary=SUMMARY))
    (check,) = decide(view).actions
    assert isinstance(check, CheckMinIsr) and check.plan == PLAN
    below = [f"t-{i}" for i in range(12)]
    d = decide(View([retire()], planned=Planned(plan=PLAN, summary=SUMMARY), below_min_isr=below))
    assert phases(d) == {"retire-3": (st.FAILED, "BelowMinInsyncReplicas")} and d.done
    msg = d.statuses[0].message
    assert "12 partitions" in msg and "t-9" in msg and "t-10" not in msg  # ten named, bounded


def test_a_safe_approved_plan_starts_with_rules_participants_and_then_executing() -> None:
    fast = retire(priority=5, throttle=1000)
    d = decide(View([fast, cordon()], planned=Planned(plan=PLAN, summary=SUMMARY), below_min_isr=[]))
    assert d.statuses == ()  # Executing is written only once the record is saved
    (start,) = d.actions
    assert isinstance(start, StartExecution)
    assert start.plan == PLAN and not start.replaces_record
    assert start.participants == ("uid-retire-3", "uid-c1")
    assert [(r.name, r.brokers, r.priority, r.throttle) for r in start.rules] == [
        ("BrokerDecommission/retire-3", [3], 5, 1000)
    ]
    assert {(p.body["metadata"]["name"], p.phase) for p in start.then} == {
        ("retire-3", st.EXECUTING),
        ("c1", st.EXECUTING),
    }
    assert start.plan_status.moves == 2


# ---- an execution in flight ----------------------------------------------------------------------------


def test_an_execution_in_flight_is_ticked_not_planned() -> None:
    d = decide(View([retire(phase=st.EXECUTING)], record=executing("uid-retire-3"), cordons_synced=True))
    assert d.statuses == () and [type(a) for a in d.actions] == [Tick]


def test_cordons_are_synced_while_an_execution_runs_including_intents_not_taking_part() -> None:
    """A BrokerDecommission or LogDirCordon created while another execution runs is cordoned in Kafka at
    once, not when that execution ends (no new replica lands on a broker being drained meanwhile)."""
    newcomer = retire("retire-2", brokers=[2])
    d = decide(View([retire(phase=st.EXECUTING), newcomer], record=executing("uid-retire-3")))
    assert d.statuses == () and [type(a) for a in d.actions] == [SyncCordons, Tick]
    sync = d.actions[0]
    assert isinstance(sync, SyncCordons)
    assert sorted(i.name for i in sync.intents) == ["retire-2", "retire-3"]
    ticked = decide(
        View([retire(phase=st.EXECUTING)], record=executing("uid-retire-3"), ticked=True, cordons_synced=True)
    )
    assert SyncCordons not in [type(a) for a in ticked.actions]  # once per reconcile


def test_a_deleted_participant_requests_a_cancel_before_the_tick() -> None:
    d = decide(View([cordon()], record=executing("uid-retire-3", "uid-c1"), cordons_synced=True))
    assert [type(a) for a in d.actions] == [RequestCancel, Tick]
    asked = decide(
        View(
            [cordon()],
            record=executing("uid-retire-3", "uid-c1", cancel_requested=True),
            cordons_synced=True,
        )
    )
    assert [type(a) for a in asked.actions] == [Tick]  # asked once
    unsynced = decide(View([cordon()], record=executing("uid-retire-3", "uid-c1")))
    assert [type(a) for a in unsynced.actions] == [SyncCordons, RequestCancel, Tick]


def test_spec_paused_holds_an_execution_unless_a_cancel_was_requested() -> None:
    paused = retire(phase=st.EXECUTING, paused=True)
    record = executing("uid-retire-3", plan_status=PlanStatus(id="p"))
    first = decide(View([paused], record=record))
    assert first.statuses == () and [type(a) for a in first.actions] == [SyncCordons]  # cordons still kept
    d = decide(View([paused], record=record, cordons_synced=True))
    assert phases(d) == {"retire-3": (st.PAUSED, "PausedBySpec")} and d.done
    assert d.statuses[0].plan == PlanStatus(id="p")
    cancelling = decide(
        View([paused], record=executing("uid-retire-3", cancel_requested=True), cordons_synced=True)
    )
    assert [type(a) for a in cancelling.actions] == [Tick]


@pytest.mark.parametrize(
    ("phase", "shown", "message"),
    [
        (Phase.MOVING, st.EXECUTING, "executor phase Moving"),
        (Phase.PAUSED, st.PAUSED, "2 partitions under-replicated"),
        (Phase.FAILED, st.FAILED, "2 partitions under-replicated"),
        (Phase.CANCELLED, st.CANCELLED, "2 partitions under-replicated"),
    ],
)
def test_after_a_tick_members_show_the_executor_phase(phase: Phase, shown: str, message: str) -> None:
    error = None if phase in (Phase.MOVING, Phase.COMPLETED) else "2 partitions under-replicated"
    record = RecordView(
        phase=phase,
        plan_id="p-9",
        participants=frozenset({"uid-retire-3"}),
        last_error=error,
        progress=ProgressStatus(partitions_done=1),
    )
    other = retire("not-a-member")
    d = decide(View([retire(phase=st.EXECUTING), other], record=record, ticked=True))
    assert set(phases(d)) == {"retire-3"} and d.done
    (p,) = d.statuses
    assert (p.phase, p.progress) == (shown, ProgressStatus(partitions_done=1)) and message in p.message


def test_a_completed_plan_completes_its_intents_only_once_a_fresh_read_shows_their_rules_hold() -> None:
    """The tick that completes the plan asks for a fresh check of the intents' own rules: Completed when
    they hold; otherwise still Executing, and the next reconcile (the record terminal) plans the rest."""
    record = RecordView(phase=Phase.COMPLETED, plan_id="p-9", participants=frozenset({"uid-retire-3"}))
    d = decide(View([retire(phase=st.EXECUTING)], record=record, ticked=True))
    (check,) = d.actions
    assert isinstance(check, CheckIntents) and not d.statuses
    assert [b["metadata"]["name"] for b in check.resources] == ["retire-3"]
    d = decide(View([retire(phase=st.EXECUTING)], record=record, ticked=True, unmet=[]))
    assert phases(d) == {"retire-3": (st.COMPLETED, "Completed")} and d.done
    assert "a fresh read shows every intent's rules hold" in d.statuses[0].message
    d = decide(View([retire(phase=st.EXECUTING)], record=record, ticked=True, unmet=["t-0", "t-3"]))
    assert phases(d) == {"retire-3": (st.EXECUTING, "Executing")} and d.done
    assert "2 partitions still break" in d.statuses[0].message and "t-0" in d.statuses[0].message
    d = decide(View([retire(phase=st.EXECUTING)], record=record))  # the next reconcile plans the rest
    assert any(isinstance(a, PlanIntents) for a in d.actions)


def test_an_ended_execution_writes_its_estimate_against_its_time_and_keeps_it() -> None:
    """status.lastExecution: the plan's estimate before approval (the record's plan status) against the
    time the execution took; written with the Completed status, then left as it is (a merge patch)."""
    plan = PlanStatus(id="p-9", moves=2, estimate=PlanEstimate(seconds=400, throttled=True, exact=True))
    ended = st.last_execution("p-9", "Completed", plan, 1_800_000_000.0, 1_800_000_500.4)
    assert ended == LastExecution(
        plan_id="p-9",
        phase="Completed",
        started_at="2027-01-15T08:00:00Z",
        finished_at="2027-01-15T08:08:20Z",
        estimated_seconds=400,
        actual_seconds=500,
        waited_seconds=0,
        error_ratio="1.25",
    )
    unknown = st.last_execution("p-9", "Failed", PlanStatus(id="p-9"), 1.0, 2.0)  # no estimate recorded
    assert unknown.estimated_seconds is None and unknown.error_ratio is None and unknown.actual_seconds == 1
    record = RecordView(
        phase=Phase.COMPLETED, plan_id="p-9", participants=frozenset({"uid-retire-3"}), last_execution=ended
    )
    d = decide(View([retire(phase=st.EXECUTING)], record=record, ticked=True, unmet=[]))
    (p,) = d.statuses
    assert p.phase == st.COMPLETED and p.last_execution == ended
    status = st.intent_status(retire(), p.phase, p.reason, p.message, last_execution=p.last_execution)
    assert status["lastExecution"]["errorRatio"] == "1.25"
    later = st.intent_status(retire(phase=st.COMPLETED), st.PENDING, st.PENDING, "planned again")
    assert "lastExecution" not in later  # a merge patch keeps the one written
    assert not st.unchanged({k: v for k, v in status.items() if k != "lastExecution"}, status)


def test_owned_configs_changed_by_another_party_post_a_warning_on_every_member() -> None:
    record = executing(
        "uid-retire-3",
        "uid-c1",
        reapplied=3,
        reapplied_before=2,
        reapplied_what=("broker 1 leader.replication.throttled.rate removed",),
    )
    d = decide(View([retire(), cordon()], record=record, ticked=True))
    assert {(n.body["metadata"]["name"], n.type, n.reason) for n in d.events} == {
        ("retire-3", "Warning", "OwnedConfigChanged"),
        ("c1", "Warning", "OwnedConfigChanged"),
    }
    assert "3 times so far" in d.events[0].message and "throttled.rate removed" in d.events[0].message
    quiet = decide(
        View([retire()], record=executing("uid-retire-3", reapplied=3, reapplied_before=3), ticked=True)
    )
    assert quiet.events == ()


WAITING = {
    "WaitingForCapacity": {
        "partitions": 3,
        "brokers": [3],
        "first": ["t3-0", "t3-1", "t3-2"],
        "replicationFactor": 3,
        "brokersAvailable": 2,
        "brokersNeeded": 1,
    },
    "NoInSyncReplica": {
        "partitions": 1,
        "brokers": [5],
        "first": [{"partition": "x-0", "dead": [5], "outOfSync": [1]}],
    },
}


def test_an_empty_plan_with_partitions_waiting_on_a_decommissioned_broker_keeps_it_pending() -> None:
    """What waits (planning/waiting.py) is a state, not a failure: the decommission of broker 3, whose
    RF-3 partitions two live brokers cannot hold, stays Pending (reason WaitingForCapacity, how many, what
    RF, how many brokers more); an intent nothing waits on converges as usual."""
    other = body("BrokerDecommission", "retire-4", {"brokers": [4]})
    d = decide(
        View(
            [retire(), other],
            planned=Planned(
                plan=EMPTY, summary=StatusSummary(waiting=parse_object(WaitingStatus, WAITING, "waiting"))
            ),
        )
    )
    assert phases(d) == {
        "retire-3": (st.PENDING, "WaitingForCapacity"),
        "retire-4": (st.COMPLETED, "Converged"),
    }
    waits = d.statuses[0]
    assert "3 partitions of replication factor up to 3" in waits.message and "1 more needed" in waits.message
    assert waits.plan is not None and waits.plan.waiting is not None  # shown in status.plan
    assert to_json(waits.plan.waiting) == WAITING
    assert d.done


def test_a_completed_execution_leaves_the_decommission_whose_partitions_wait_pending() -> None:
    """The heal moved everything it could; the rest waits for a leader: Pending (NoInSyncReplica), naming
    the partition and its out-of-sync replica, never Completed while partitions still name the broker."""
    heal = body("BrokerDecommission", "heal-5", {"brokers": [5]}, st.EXECUTING)
    record = RecordView(
        phase=Phase.COMPLETED,
        plan_id="p-9",
        participants=frozenset({"uid-heal-5", "uid-retire-3"}),
        plan_status=PlanStatus.parse(
            {"id": "p-9", "waiting": {"NoInSyncReplica": WAITING["NoInSyncReplica"]}}
        ),
    )
    d = decide(View([heal, retire(phase=st.EXECUTING)], record=record, ticked=True, unmet=[]))
    assert phases(d) == {"heal-5": (st.PENDING, "NoInSyncReplica"), "retire-3": (st.COMPLETED, "Completed")}
    message = d.statuses[0].message
    assert message.startswith("plan p-9 executed: everything that can be moved was; ")
    assert "x-0 (out of sync: 1)" in message and "never elects an unclean one" in message


def test_an_intent_naming_what_the_cluster_no_longer_has_fails_alone_and_the_others_are_planned() -> None:
    """A LogDirCordon heal of a dir whose broker then died names a dir the cluster no longer has: it fails
    alone (InvalidInput, the planner's message), the other intents are planned and executed without it —
    never every intent of the cluster failed for one."""
    gone = body("LogDirCordon", "dir-heal", {"broker": 3, "logDirs": ["/d1"]})
    rejected = {"uid-dir-heal": "spec.logDirs[0]: broker 3 has no log dir /d1 (it has none)"}
    d = decide(View([retire(), gone], planned=Planned(plan=PLAN, summary=SUMMARY, rejected=rejected)))
    assert phases(d)["dir-heal"] == (st.FAILED, "InvalidInput")
    assert (
        "planned without it" in d.statuses[0].message and "broker 3 has no log dir" in d.statuses[0].message
    )
    (check,) = d.actions
    assert isinstance(check, CheckMinIsr)
    d = decide(
        View(
            [retire(), gone], planned=Planned(plan=PLAN, summary=SUMMARY, rejected=rejected), below_min_isr=[]
        )
    )
    (start,) = d.actions
    assert isinstance(start, StartExecution) and start.participants == ("uid-retire-3",)
    assert phases(d) == {"dir-heal": (st.FAILED, "InvalidInput")}


def test_a_pending_intents_own_reason_and_message_are_on_its_ready_condition() -> None:
    """``Pending`` with a reason (WaitingForCapacity, BrokersUnreachable) says it where kubectl shows it: the
    Ready condition (False) carries the reason and the message; a plain Pending keeps reason Pending."""
    status = st.intent_status(retire(), st.PENDING, "WaitingForCapacity", "1 more broker needed")
    (ready,) = [c for c in status["conditions"] if c["type"] == st.READY]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "WaitingForCapacity",
        "1 more broker needed",
    )
    plain = st.intent_status(retire(), st.PENDING, st.PENDING, "")
    (ready,) = [c for c in plain["conditions"] if c["type"] == st.READY]
    assert ready["reason"] == "Pending"


def test_a_disk_hold_starting_and_ending_posts_an_event_on_every_member() -> None:
    what = "moves held (...): broker 2 /d1 at 93.0%: 1 move(s) held (t-0)"
    held = executing("uid-retire-3", "uid-c1", held=("broker 2 /d1",), held_before=(), held_what=what)
    d = decide(View([retire(), cordon()], record=held, ticked=True))
    assert {(n.body["metadata"]["name"], n.type, n.reason) for n in d.events} == {
        ("retire-3", "Warning", "DiskHeld"),
        ("c1", "Warning", "DiskHeld"),
    }
    assert d.events[0].message == what
    still = executing("uid-retire-3", held=("broker 2 /d1",), held_before=("broker 2 /d1",))
    assert decide(View([retire()], record=still, ticked=True)).events == ()
    over = executing("uid-retire-3", held=(), held_before=("broker 2 /d1",))
    (released,) = decide(View([retire()], record=over, ticked=True)).events
    assert (released.type, released.reason) == ("Normal", "DiskReleased")
    assert released.message.startswith("broker 2 /d1: back under the disk headroom limit")


def test_a_progress_key_gone_is_removed_from_the_status_and_only_then_patched() -> None:
    """The status is merge-patched: a key the new progress lacks (diskHeld once a hold ended) is sent as
    null, which removes it; a status that only nulls keys the old one lacks needs no patch."""
    body = retire(phase=st.EXECUTING)
    held_progress = ProgressStatus.parse({"summary": "0/1", "diskHeld": "x"})
    held = st.intent_status(body, st.EXECUTING, "Moving", "m", progress=held_progress)
    body["status"] = held
    after = st.intent_status(body, st.EXECUTING, "Moving", "m", progress=ProgressStatus(summary="0/1"))
    assert after["progress"] == {"summary": "0/1", "diskHeld": None}
    assert not st.unchanged(held, after)
    body["status"] = {**after, "progress": {"summary": "0/1"}}  # what the apiserver keeps
    again = st.intent_status(body, st.EXECUTING, "Moving", "m", progress=ProgressStatus(summary="0/1"))
    assert again["progress"] == {"summary": "0/1"} and st.unchanged(body["status"], again)


NOW = 1_796_198_400.0  # 2026-12-02T08:00:00Z


def heal_of(
    kind: str, name: str, spec: dict[str, Any], phase: str | None = None, **kw: Any
) -> dict[str, Any]:
    b = body(kind, name, spec, phase, **kw)
    b["metadata"]["labels"] = {"kafkaplacement.io/created-by": "self-healing"}
    return b


def test_a_rejected_intent_fails_alone_while_an_urgent_one_supersedes_the_running_plan() -> None:
    """A running rebalance, an urgent heal of broker 3, a dir heal and a user's cordon of a dir of broker 3,
    which died (both rejected): the dir heal is Cancelled, superseded by broker 3's heal; the user's cordon
    fails alone with its message; the heal's re-plan goes on to supersede (the min ISR check next)."""
    heal = heal_of("BrokerDecommission", "heal-3", {"brokers": [3]})
    gone = heal_of("LogDirCordon", "dir-heal", {"broker": 3, "logDirs": ["/d1"]})
    mine = body("LogDirCordon", "mine", {"broker": 3, "logDirs": ["/d0"]})
    running = body("PlacementPolicy", "spread", {"replicationFactor": 2}, st.EXECUTING)
    record = executing("uid-spread")
    rejected = {
        "uid-dir-heal": "spec.logDirs[0]: broker 3 has no log dir /d1",
        "uid-mine": "spec.logDirs[0]: broker 3 has no log dir /d0",
    }
    planned = Planned(plan=PLAN, summary=SUMMARY, rejected=rejected)
    d = decide(View([running, heal, gone, mine], record=record, planned=planned, now=NOW))
    assert phases(d)["dir-heal"] == (st.CANCELLED, "Superseded")
    assert phases(d)["mine"] == (st.FAILED, "InvalidInput")
    superseded = next(p for p in d.statuses if p.body is gone)
    assert superseded.message.startswith("superseded by BrokerDecommission/heal-3, the heal of broker 3")
    assert superseded.retry == {"attempts": 1, "after": "2026-12-02T08:01:00Z"}  # not re-planned every tick
    assert [type(a).__name__ for a in d.actions] == ["CheckMinIsr"]


def test_a_second_broker_heal_supersedes_the_running_heal_but_an_equal_user_intent_does_not() -> None:
    """Heals are equally urgent: a broker dying while another's heal runs is healed together with it (a
    re-plan of both keeping the moves in flight). Two user intents of equal priority are not: the second
    waits for the running execution."""
    first = heal_of("BrokerDecommission", "heal-5", {"brokers": [5]}, st.EXECUTING)
    second = heal_of("BrokerDecommission", "heal-4", {"brokers": [4]})
    d = decide(View([first, second], record=executing("uid-heal-5"), now=NOW))
    (plan,) = [a for a in d.actions if isinstance(a, PlanIntents)]
    assert plan.keeping_in_flight and [b["metadata"]["name"] for b in plan.resources] == ["heal-5", "heal-4"]
    assert phases(d)["heal-4"] == (st.PLANNING, st.PLANNING)
    user = retire("retire-4")
    d = decide(View([retire(phase=st.EXECUTING), user], record=executing("uid-retire-3"), now=NOW))
    assert not any(isinstance(a, PlanIntents) for a in d.actions)


def test_a_heal_that_fails_to_supersede_backs_off_instead_of_re_planning_every_tick() -> None:
    """A heal whose supersede plan fails is Failed with ``status.retry`` (60 s, doubled per attempt, at most
    an hour); until then the execution's reconciles tick without planning it again; after it, one more
    attempt. Moves in flight that already do what a heal asks leave it Pending the same way."""
    first = heal_of("BrokerDecommission", "heal-5", {"brokers": [5]}, st.EXECUTING)
    second = heal_of("BrokerDecommission", "heal-4", {"brokers": [4]})
    record = executing("uid-heal-5")
    failed = Planned(error_reason="Infeasible", error="no broker may take the replicas of broker 4")
    d = decide(View([first, second], record=record, planned=failed, ticked=True, now=NOW))
    (patch,) = [p for p in d.statuses if p.body is second]
    assert (patch.phase, patch.reason) == (st.FAILED, "Infeasible")
    assert patch.retry == {"attempts": 1, "after": "2026-12-02T08:01:00Z"}
    second["status"] = st.intent_status(second, patch.phase, patch.reason, patch.message, retry=patch.retry)
    assert second["status"]["retry"]["attempts"] == 1
    waiting = decide(View([first, second], record=record, now=NOW + 59))
    assert not any(isinstance(a, PlanIntents) for a in waiting.actions)  # not before the retry time
    again = decide(View([first, second], record=record, now=NOW + 60))
    assert any(isinstance(a, PlanIntents) for a in again.actions)
    d = decide(View([first, second], record=record, planned=failed, ticked=True, now=NOW + 60))
    (patch,) = [p for p in d.statuses if p.body is second]
    assert patch.retry == {"attempts": 2, "after": "2026-12-02T08:03:00Z"}  # 120 s after this attempt
    second["status"]["retry"] = {"attempts": 12, "after": "2026-12-02T08:00:00Z"}
    d = decide(View([first, second], record=record, planned=failed, ticked=True, now=NOW))
    (patch,) = [p for p in d.statuses if p.body is second]
    assert patch.retry == {"attempts": 13, "after": "2026-12-02T09:00:00Z"}  # at most an hour
    covered = decide(View([first, second], record=record, planned=Planned(plan=EMPTY), ticked=True, now=NOW))
    (patch,) = [p for p in covered.statuses if p.body is second]
    assert (patch.phase, patch.reason) == (st.PENDING, "CoveredByRunningPlan") and patch.retry is not None


def test_the_retry_is_kept_while_planning_and_removed_in_any_other_phase() -> None:
    b = retire()
    b["status"] = {"phase": st.FAILED, "retry": {"attempts": 2, "after": "2026-12-02T08:03:00Z"}}
    assert st.intent_status(b, st.PLANNING, st.PLANNING, "p")["retry"] == b["status"]["retry"]
    executing_now = st.intent_status(b, st.EXECUTING, st.EXECUTING, "e")
    assert executing_now["retry"] is None and not st.unchanged(b["status"], executing_now)
    b["status"] = {"phase": st.EXECUTING}
    assert "retry" not in st.intent_status(b, st.EXECUTING, st.EXECUTING, "e")


def test_outside_the_windows_an_execution_says_it_waits_and_heals_or_opted_out_intents_do_not_wait() -> None:
    """The maintenance windows' gate (model/windows.py): a closed window keeps the execution's intents
    Executing with reason WaitingForWindow and the next opening; a heal (selfHealing.ignoreWindows, true by
    default) or an intent with spec.ignoreWindows opens it; without windows it is always open."""
    from kafka_placement.model.cluster_spec import ClusterSpec
    from kafka_placement.reconcile.decide import window_gate

    spec = ClusterSpec.parse(
        {
            "bootstrapServers": "k:9092",
            "execution": {"windows": [{"days": ["Sat"], "start": "22:00", "end": "23:00"}]},
        }
    )
    monday_noon = 1796990400.0  # 2026-12-14T12:00:00Z
    closed = window_gate(spec.execution, spec.self_healing, [retire()], monday_noon)
    assert not closed.open and closed.next_open is not None and closed.next_open > monday_noon
    heal = retire("heal-3")
    heal["metadata"]["labels"] = {"kafkaplacement.io/created-by": "self-healing"}
    assert window_gate(spec.execution, None, [retire(), heal], monday_noon).open
    waits = ClusterSpec.parse(
        {
            **{"bootstrapServers": "k:9092"},
            "execution": {"windows": [{"start": "01:00", "end": "02:00"}]},
            "selfHealing": {"ignoreWindows": False},
        }
    )
    assert not window_gate(waits.execution, waits.self_healing, [heal], monday_noon).open
    assert window_gate(spec.execution, None, [retire(ignoreWindows=True)], monday_noon).open
    assert window_gate(None, None, [retire()], monday_noon).open

    record = executing("uid-retire-3")
    d = decide(View([retire(phase=st.EXECUTING)], record=record, ticked=True, window=closed))
    assert phases(d) == {"retire-3": (st.EXECUTING, "WaitingForWindow")}
    assert "outside the maintenance windows" in d.statuses[0].message
    d = decide(
        View([retire(phase=st.EXECUTING)], record=record, ticked=True, window=window_gate(None, None, [], 0))
    )
    assert phases(d) == {"retire-3": (st.EXECUTING, "Moving")}
