"""The intents' and the new-partition lane's phase tables (reconcile/phases.py): every phase reachable, no
dead end, every event written by some writer, the guards, ``move`` the only way to a status, and the copy
in docs/architecture.md equal to the table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_placement.model import crd_parts
from kafka_placement.reconcile import phases
from kafka_placement.reconcile.phases import LANE, TABLE, IntentEvent, LaneEvent, move, move_lane

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "operator" / "kafka_placement"


def _next(phase: str | None) -> set[str]:
    return {m.phase for e in IntentEvent if (m := move(phase, e, "Why")) is not None}


def test_every_phase_is_reachable_from_a_new_resource_and_none_is_a_dead_end() -> None:
    seen: set[str | None] = {None}
    todo: list[str | None] = [None]
    while todo:
        for to in _next(todo.pop()):
            if to not in seen:
                seen.add(to)
                todo.append(to)
    assert seen - {None} == set(crd_parts.PHASES)
    for phase in crd_parts.PHASES:  # Completed reachable from each (a Failed intent is planned again)
        assert crd_parts.COMPLETED in _next(phase) or any(
            crd_parts.COMPLETED in _next(p) for p in _next(phase)
        ), phase


def test_the_table_leads_only_to_the_crds_phases_and_gives_every_status_a_reason() -> None:
    assert set(TABLE) == set(IntentEvent) and set(LANE) == set(LaneEvent)
    assert {r.to for r in TABLE.values()} == set(crd_parts.PHASES)
    assert set(LANE.values()) == set(crd_parts.NEW_PARTITION_PHASES)
    for event, rule in TABLE.items():
        if rule.reason is None:  # the writer gives the reason (a failure's, the executor's word)
            with pytest.raises(ValueError, match=str(event)):
                move(None, event)
        else:
            assert rule.reason.isalnum() and rule.reason[0].isupper()


def test_the_guards() -> None:
    # only a new or Pending intent says Planning while the cluster is planned
    assert move(None, IntentEvent.PLANNING) == phases.PhaseMove(crd_parts.PLANNING, "Planning")
    assert move(crd_parts.PENDING, IntentEvent.PLANNING) == phases.PhaseMove(crd_parts.PLANNING, "Planning")
    for other in set(crd_parts.PHASES) - {crd_parts.PENDING}:
        assert move(other, IntentEvent.PLANNING) is None, other
    # a Completed intent stays so while its cluster cannot be reached
    assert move(crd_parts.COMPLETED, IntentEvent.CLUSTER_FAILURE, "ClusterUnreachable") is None
    assert move(crd_parts.COMPLETED, IntentEvent.BROKERS_UNREACHABLE) is None
    # Kafka refusing the operator (a failure the user must act on) fails even an Executing intent
    assert move(crd_parts.EXECUTING, IntentEvent.CLUSTER_FAILURE, "KafkaNotAuthorized") == phases.PhaseMove(
        crd_parts.FAILED, "KafkaNotAuthorized"
    )
    # Kafka not answering at all is transient: the intents wait Pending, but work that goes on in Kafka
    # (Executing), the user's turn (AwaitingApproval, Paused) and settled phases are left as they are
    waiting = phases.PhaseMove(crd_parts.PENDING, "ClusterUnreachable")
    for phase in (None, crd_parts.PENDING, crd_parts.PLANNING):
        assert move(phase, IntentEvent.CLUSTER_UNREACHABLE) == waiting, phase
    kept = set(crd_parts.PHASES) - {crd_parts.PENDING, crd_parts.PLANNING}
    assert kept == {"AwaitingApproval", "Executing", "Completed", "Failed", "Paused", "Cancelled"}
    for phase in kept:
        assert move(phase, IntentEvent.CLUSTER_UNREACHABLE) is None, phase
    # a writer's own reason wins over the table's word
    assert move(crd_parts.EXECUTING, IntentEvent.EXECUTION_PROGRESS, "Moving") == phases.PhaseMove(
        crd_parts.EXECUTING, "Moving"
    )
    assert move_lane(LaneEvent.WAITING_FOR_FULL_PLAN) == move_lane(LaneEvent.PLACED) == "Watching"


def _source(*names: str) -> str:
    return "\n".join((PACKAGE / n).read_text() for n in names)


def test_every_event_is_written_somewhere() -> None:
    writers = _source("reconcile/decide.py", "handlers/intent_common.py")
    unused = [e.name for e in IntentEvent if not re.search(rf"\bIntentEvent\.{e.name}\b", writers)]
    assert not unused, f"events in the table that no writer uses: {unused}"
    lane = _source("reconcile/new_partitions.py")
    assert not [e.name for e in LaneEvent if not re.search(rf"\bLaneEvent\.{e.name}\b", lane)]


def test_move_is_the_only_way_to_a_status() -> None:
    """A status patch is made only by ``decision.moved`` (which asks ``move``), and ``intent_status`` is
    called only with what ``move`` returned (the reconciler's patch, the handler's move); the lane's
    status only by ``new_partitions._status`` (which asks ``move_lane``)."""
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        where = path.relative_to(PACKAGE).as_posix()
        makes = len(re.findall(r"\bStatusPatch\(", text))
        assert makes == (1 if where == "reconcile/decision.py" else 0), where
        for call in re.findall(r"\bintent_status\(\s*\w+,\s*([\w.\"]+),\s*([\w.\"]+)", text):
            assert call in {("p.phase", "p.reason"), ("to.phase", "to.reason")}, (where, call)
        lane = len(re.findall(r"NewPartitionsStatus\(\s*phase=", text))
        assert lane == (1 if where == "reconcile/new_partitions.py" else 0), where


def test_the_docs_show_the_table_as_the_code_has_it() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    start = doc.index("<!-- phases table: generated from reconcile/phases.py -->\n")
    end = doc.index("\n<!-- end of the phases table -->")
    shown = doc[start:end].split("\n", 1)[1]
    assert shown == phases.markdown(), "docs/architecture.md's phases table differs from reconcile/phases.py"


def test_the_e2e_check_reads_the_reconcilers_log_line_and_refuses_what_the_table_does_not_allow() -> None:
    from tests.e2e.transitions import outside_the_table

    def line(*parts: str) -> str:
        return "INFO " + phases.LOG_TRANSITION % ("BrokerDecommission/b", *parts) + "\n"

    fine = line("None", "Pending", "Accepted", "Accepted")
    fine += line("Pending", "Planning", "Planning", "Planning")
    fine += line("Executing", "Executing", "ExecutionProgress", "Moving")
    fine += line("Planning", "Pending", "ClusterUnreachable", "ClusterUnreachable")
    assert outside_the_table(fine) == []
    wrong = [
        line("Completed", "Planning", "Planning", "Planning"),  # only a Pending intent says Planning
        line("Completed", "Failed", "ClusterFailure", "KafkaNotAuthorized"),  # a Completed one stays so
        line("Executing", "Pending", "ClusterUnreachable", "ClusterUnreachable"),  # moves go on in Kafka
        line("Executing", "Completed", "AwaitingApproval", "AwaitingApproval"),  # the event's phase differs
        line("Executing", "Executing", "NoSuchEvent", "Moving"),
    ]
    assert len(outside_the_table(fine + "".join(wrong))) == len(wrong)
