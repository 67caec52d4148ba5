"""Pre-emption: an intent more urgent than the running execution's supersedes its plan, keeping the moves
in flight (reconcile/decide.py ``_supersede``, execution/supersede.py, ``Execution.adopt``). No rig."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from tests.unit.reconcile.test_decide import PLAN, SUMMARY, body, executing, phases, retire

from kafka_placement.execution.record import Execution, Original
from kafka_placement.execution.record_doc import Limits, PState, Submission
from kafka_placement.execution.store import FileStore
from kafka_placement.execution.supersede import as_if_done, in_flight, keeping_in_flight
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState
from kafka_placement.model.throttle_state import ThrottleState
from kafka_placement.planning.plan_summary import StatusSummary
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.decide import decide
from kafka_placement.reconcile.decision import (
    CheckMinIsr,
    PlanIntents,
    Planned,
    RequestCancel,
    StartExecution,
    Tick,
    View,
)

LIMITS = Limits(max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=None)


def heal(name: str = "heal-2", **spec: Any) -> dict[str, Any]:
    b = body("BrokerDecommission", name, {"brokers": [2], **spec})
    b["metadata"]["labels"] = {"kafkaplacement.io/created-by": "self-healing"}
    return b


def test_a_heal_supersedes_a_running_plan_once_its_new_plan_is_planned_and_checked() -> None:
    record = executing("uid-retire-3")
    resources = [retire(phase=st.EXECUTING), heal()]
    d = decide(View(resources, record=record, cordons_synced=True))
    (plan,) = d.actions
    assert isinstance(plan, PlanIntents) and plan.keeping_in_flight
    assert {b["metadata"]["name"] for b in plan.resources} == {"heal-2", "retire-3"}
    assert phases(d) == {"heal-2": (st.PLANNING, "Planning")}
    new = Plan.of([PartitionTarget("t", 0, (1, 3), ("any", "any"))])
    planned = Planned(plan=new, summary=SUMMARY)
    d = decide(View(resources, record=record, cordons_synced=True, planned=planned))
    assert [type(a) for a in d.actions] == [CheckMinIsr]
    d = decide(View(resources, record=record, cordons_synced=True, planned=planned, below_min_isr=[]))
    (start,) = d.actions
    assert isinstance(start, StartExecution)
    assert start.supersedes == PLAN.plan_id and start.replaces_record and start.plan is new
    assert set(start.participants) == {"uid-retire-3", "uid-heal-2"}
    assert {(n.body["metadata"]["name"], n.reason) for n in start.events} == {("retire-3", "Superseded")}
    assert {p.body["metadata"]["name"]: p.phase for p in start.then} == {
        "retire-3": st.EXECUTING,
        "heal-2": st.EXECUTING,
    }


def test_a_heal_waits_to_supersede_while_a_broker_does_not_answer_and_the_execution_goes_on() -> None:
    record = executing("uid-retire-3")
    resources = [retire(phase=st.EXECUTING), heal()]
    waiting = Planned(waiting="waiting: broker(s) 1 alive in the cluster do not answer the operator")
    d = decide(View(resources, record=record, cordons_synced=True, planned=waiting))
    assert [type(a) for a in d.actions] == [Tick]  # the running plan is driven meanwhile
    d = decide(View(resources, record=record, cordons_synced=True, planned=waiting, ticked=True))
    assert phases(d)["heal-2"] == (st.PENDING, "BrokersUnreachable")


def test_what_does_not_supersede() -> None:
    """Not urgent (no label, no higher priority), a Manual plan not approved, an empty plan: the running
    execution is ticked as usual, and the waiting intent says why."""
    record = executing("uid-retire-3")
    calm = retire("retire-1")
    d = decide(View([retire(phase=st.EXECUTING), calm], record=record, cordons_synced=True))
    assert [type(a) for a in d.actions] == [Tick]
    higher = retire("retire-1", priority=5)
    d = decide(View([retire(phase=st.EXECUTING), higher], record=record, cordons_synced=True))
    assert isinstance(d.actions[0], PlanIntents)
    manual = heal(approval="Manual")
    new = Plan.of([PartitionTarget("t", 0, (1, 3), ("any", "any"))])
    view = View(
        [retire(phase=st.EXECUTING), manual],
        record=record,
        cordons_synced=True,
        planned=Planned(plan=new, summary=SUMMARY),
    )
    assert [type(a) for a in decide(view).actions] == [Tick]
    d = decide(View(view.resources, record=record, cordons_synced=True, planned=view.planned, ticked=True))
    assert phases(d)["heal-2"] == (st.AWAITING_APPROVAL, "AwaitingApproval")
    assert f"spec.approvedPlan: {new.plan_id}" in next(p.message for p in d.statuses if p.body is manual)
    empty = Planned(plan=Plan.of([]), summary=StatusSummary())
    d = decide(View([retire(phase=st.EXECUTING), heal()], record=record, cordons_synced=True, planned=empty))
    assert [type(a) for a in d.actions] == [Tick]


def test_a_heal_retired_while_it_runs_is_replanned_out_keeping_its_moves_in_flight() -> None:
    """Its broker is back for good (retiring.py, ``View.retiring``): every other intent is planned again
    keeping the moves in flight, the rest of the heal's moves are dropped, nothing is reverted. A plan that
    is only those moves needs no approval (a Manual policy approved them with the running plan)."""
    record = executing("uid-heal-2", "uid-spread")
    policy = body("PlacementPolicy", "spread", {"replicationFactor": 2, "approval": "Manual"}, st.EXECUTING)
    resources = [heal(), policy]
    base = View(resources, record=record, cordons_synced=True, retiring=frozenset({"uid-heal-2"}))
    d = decide(base)
    (plan,) = d.actions
    assert isinstance(plan, PlanIntents) and plan.keeping_in_flight and plan.dropping
    assert [b["metadata"]["name"] for b in plan.resources] == ["spread"]
    flight = Plan.of([PartitionTarget("t", 0, (1, 3), ("any", "any"))])
    kept = Planned(plan=flight, summary=SUMMARY, kept_only=True)
    d = decide(replace(base, planned=kept))
    assert [type(a) for a in d.actions] == [CheckMinIsr]
    d = decide(replace(base, planned=kept, below_min_isr=[]))
    (start,) = d.actions
    assert isinstance(start, StartExecution) and start.supersedes == PLAN.plan_id and start.plan is flight
    assert start.participants == ("uid-spread",)  # the heal takes no part: it can be deleted
    assert {(n.body["metadata"]["name"], n.reason) for n in start.events} == {
        ("heal-2", "Superseded"),
        ("spread", "Superseded"),
    }
    assert "retiring BrokerDecommission/heal-2 (its broker is back)" in start.events[0].message
    new = Planned(plan=Plan.of([PartitionTarget("t", 1, (1, 3), ("any", "any"))]), summary=SUMMARY)
    d = decide(replace(base, planned=new))  # new moves for the Manual policy: approved first
    assert [type(a) for a in d.actions] == [Tick]


def test_a_heal_retired_with_nothing_in_flight_and_nothing_left_to_do_stops_its_execution() -> None:
    record = executing("uid-heal-2")
    base = View([heal()], record=record, cordons_synced=True, retiring=frozenset({"uid-heal-2"}))
    d = decide(replace(base, planned=Planned(plan=Plan.of([]), summary=StatusSummary(), kept_only=True)))
    assert [type(a) for a in d.actions] == [RequestCancel, Tick]  # a cancel with nothing to revert
    assert [(n.body["metadata"]["name"], n.reason) for n in d.events] == [("heal-2", "Superseded")]
    assert "nothing is reverted" in d.events[0].message


def test_a_heal_being_retired_outside_the_execution_does_not_supersede_it() -> None:
    record = executing("uid-retire-3")
    view = View([retire(phase=st.EXECUTING), heal()], record=record, cordons_synced=True)
    assert isinstance(decide(view).actions[0], PlanIntents)  # a heal is urgent ...
    retiring = replace(view, retiring=frozenset({"uid-heal-2"}))
    assert [type(a) for a in decide(retiring).actions] == [Tick]  # ... not one on its way out


def _snapshot() -> ClusterSnapshot:
    brokers = tuple(Broker(b, None, (LogDir("/d0", 100, 100),)) for b in (1, 2, 3, 4))
    parts = (
        PartitionState("t", 0, (1, 3), ("/d0", "/d0"), 1, (1, 3), 10),
        PartitionState("t", 1, (1, 2, 3), ("/d0", "/d0", "/d0"), 1, (1, 2), 10),  # mid-move to (1, 3)
        PartitionState("t", 2, (2, 4), ("/d0", "/d0"), 2, (2, 4), 10),
    )
    return ClusterSnapshot(brokers, parts, "c1")


def test_the_new_plan_builds_on_the_moves_in_flight_and_keeps_them(tmp_path: Path) -> None:
    old_plan = Plan.of(
        [
            PartitionTarget("t", 1, (1, 3), ("any", "any")),  # in flight
            PartitionTarget("t", 2, (4, 1), ("any", "any")),  # not yet submitted
        ]
    )
    store = FileStore(tmp_path / "state.json")
    old = Execution.create(store, old_plan, limits=LIMITS, cluster_id="c1")
    old.set_baseline([Original((1, 2), ("/d0", "/d0"), 10), Original((2, 4), ("/d0", "/d0"), 10)], {})
    old.submit(0, Submission.CONFIRMED, 5.0)
    old.count_submission(0)
    old.doc.copied[0] = 7
    old.doc.throttles = ThrottleState.model_validate(
        {"brokers": [{"broker": 3, "config": "follower.replication.throttled.rate", "value": "9"}]}
    )
    old.save()
    running = in_flight(old, _snapshot()).kept  # every broker alive: nothing stranded
    assert list(running) == [("t", 1)]
    seen = as_if_done(_snapshot(), running)
    p1 = seen.partition("t", 1)
    assert p1 is not None and (p1.replicas, p1.isr, p1.log_dirs) == ((1, 3), (1, 3), ("/d0", "/d0"))
    assert seen.partition("t", 2) == _snapshot().partition("t", 2)
    # the planner (say) wants t-1 elsewhere and t-2 on (2, 3): t-1 keeps its running move's target
    planned = Plan.of(
        [PartitionTarget("t", 1, (3, 4), ("any", "any")), PartitionTarget("t", 2, (2, 3), ("any", "any"))]
    )
    merged = keeping_in_flight(planned, running)
    assert [(t.name, t.replicas) for t in merged.partitions] == [("t-1", (1, 3)), ("t-2", (2, 3))]

    new = Execution.create(store, merged, limits=LIMITS, cluster_id="c1")
    assert new.adopt(old, "test") == 1
    new.save()  # one save replaces the old record
    again = Execution.load(store)
    assert again is not None and again.doc.plan_id == merged.plan_id
    assert again.active() == [0] and again.state(0) == PState.IN_FLIGHT
    assert again.doc.in_flight[0].state == Submission.CONFIRMED and again.doc.copied == {0: 7}
    assert again.submits[0] == 1 and again.doc.counters.resubmitted == 0
    assert again.doc.adopted[0].replicas == [1, 2]  # the baseline as the superseded execution found it
    assert again.doc.throttles == old.doc.throttles  # owned now by the new execution
    (history,) = again.doc.superseded
    assert (history.plan_id, history.submissions, history.adopted) == (old.doc.plan_id, 1, 1)
    again.count_submission(0)  # were it ever sent again, it would show
    assert again.doc.counters.resubmitted == 1


def test_a_move_in_flight_toward_a_dead_broker_is_replanned_from_its_origin(tmp_path: Path) -> None:
    """A stranded move (its target names a broker that died) is not kept: the planner sees its partition
    where the move started, the new plan sends it back there (the planner wanting nothing of it), the
    new record lists it in ``retarget``, and the executor reverts the old reassignment before it moves the
    partition like any other."""
    from kafka_placement.execution import executor
    from kafka_placement.execution.supersede import in_flight, keeping_flight, planning_view
    from kafka_placement.execution.view import TickView as KafkaView
    from kafka_placement.kafka.types import Reassignment

    old_plan = Plan.of(
        [
            PartitionTarget("t", 1, (1, 3), ("any", "any")),  # in flight toward broker 3, which dies
            PartitionTarget("t", 2, (4, 1), ("any", "any")),  # in flight, all alive: kept
        ]
    )
    store = FileStore(tmp_path / "state.json")
    old = Execution.create(store, old_plan, limits=LIMITS, cluster_id="c1")
    old.set_baseline([Original((1, 2), ("/d0", "/d1"), 10), Original((2, 4), ("/d0", "/d0"), 10)], {})
    for i in (0, 1):
        old.submit(i, Submission.CONFIRMED, 5.0)
        old.count_submission(i)
    old.save()
    snap = _snapshot()
    dead = ClusterSnapshot(
        tuple(b if b.id != 3 else Broker(3, None, (), alive=False) for b in snap.brokers),
        snap.partitions,
        "c1",
    )
    flight = in_flight(old, dead)
    assert list(flight.kept) == [("t", 2)] and list(flight.stranded) == [("t", 1)]
    seen = planning_view(dead, flight)
    p1 = seen.partition("t", 1)  # Kafka shows (1, 2, 3) mid-move, ISR (1, 2): seen at its origin
    assert p1 is not None and (p1.replicas, p1.isr, p1.log_dirs, p1.leader) == (
        (1, 2),
        (1, 2),
        ("/d0", "/d1"),
        1,
    )
    p2 = seen.partition("t", 2)
    assert p2 is not None and p2.replicas == (4, 1)  # the kept move as if done

    merged = keeping_flight(Plan.of([]), flight, dead)  # the planner wants nothing of either
    assert [(t.name, t.replicas, t.log_dirs) for t in merged.partitions] == [
        ("t-1", (1, 2), ("any", "any")),  # back where it started: Kafka drops broker 3's replica
        ("t-2", (4, 1), ("any", "any")),
    ]
    elsewhere = Plan.of([PartitionTarget("t", 1, (2, 4), ("any", "any"))])
    assert keeping_flight(elsewhere, flight, dead).partitions[0].replicas == (2, 4)  # the planner's
    stuck = in_flight(old, dead)
    no_origin = ClusterSnapshot(
        tuple(Broker(b.id, None, (), alive=False) if b.id in (2, 3) else b for b in snap.brokers),
        snap.partitions,
        "c1",
    )
    kept = keeping_flight(Plan.of([]), stuck, no_origin)  # its origin names a dead broker too: kept
    assert kept.partitions[0].replicas == (1, 3)

    new = Execution.create(store, merged, limits=LIMITS, cluster_id="c1")
    assert new.adopt(old, "heal") == 1  # t-2 only
    new.save()
    again = Execution.load(store)
    assert again is not None and again.doc.retarget == [0] and again.active() == [1]
    assert again.state(0) == PState.PENDING and again.submits[0] == 0
    (history,) = again.doc.superseded
    assert (history.adopted, history.retargeted) == (1, 1)

    again.set_baseline(
        [Original((1, 3, 2), ("/d0", None, "/d1"), 10), Original((2, 4), ("/d0", "/d0"), 10)], {}
    )
    again.doc.phase = executor.Phase.MOVING
    mid = PartitionState("t", 1, (1, 3, 2), ("/d0", None, "/d1"), 1, (1, 2), 10)
    view = KafkaView(
        "c1",
        frozenset({1, 2, 4}),
        {("t", 1): mid, ("t", 2): PartitionState("t", 2, (4, 1, 2), ("/d0",) * 3, 4, (4, 1, 2), 10)},
        {("t", 1): Reassignment((1, 3, 2), (3,), (2,)), ("t", 2): Reassignment((4, 1, 2), (1,), (2,))},
        {},
    )
    assert executor._select(again, view, executor.Limits(), [0]) == []  # still moving in Kafka: waits

    class Answers:
        sent: list[dict[tuple[str, int], list[int] | None]] = []

        def alter_reassignments(self, targets: dict[tuple[str, int], list[int] | None]) -> dict[Any, Any]:
            self.sent.append(dict(targets))
            return {}

    answers = Answers()
    executor._revert_stranded(again, answers, view)  # type: ignore[arg-type]
    assert answers.sent == [{("t", 1): None}]  # KIP-455 cancel: Kafka drops the dead broker it was adding
    assert again.doc.counters.reverted_stranded == 1 and again.doc.counters.cancels == 0
    reverted = KafkaView(
        "c1",
        frozenset({1, 2, 4}),
        {("t", 1): PartitionState("t", 1, (1, 2), ("/d0", "/d1"), 1, (1, 2), 10)},
        {},
        {},
    )
    executor._revert_stranded(again, answers, reverted)  # type: ignore[arg-type]
    assert len(answers.sent) == 1  # nothing left to revert
    assert executor._select(again, reverted, executor.Limits(), [0]) == [0]  # now a move like any other


def test_a_stranded_origin_on_a_broker_the_snapshot_no_longer_lists_is_planned_as_lost(
    tmp_path: Path,
) -> None:
    """A heal of broker 5 moving (5, 1) to (4, 1) when broker 4 dies too: the move is stranded, its origin
    names broker 5, which the snapshot no longer lists (no partition of Kafka's names it any more). The
    view lists broker 5 as not alive (before, the planner failed on the unknown broker: KeyError 5, seen on
    the five-node rig), and the plan moves the partition off both dead brokers."""
    from kafka_placement.execution.supersede import planning_view
    from kafka_placement.model.intents import Intents
    from kafka_placement.planning.optimizer import compute_plan

    old_plan = Plan.of([PartitionTarget("t", 0, (4, 1), ("any", "any"))])
    store = FileStore(tmp_path / "state.json")
    old = Execution.create(store, old_plan, limits=LIMITS, cluster_id="c1")
    old.set_baseline([Original((5, 1), ("/d0", "/d0"), 10)], {})
    old.submit(0, Submission.CONFIRMED, 5.0)
    old.count_submission(0)
    brokers = (
        *(Broker(b, None, (LogDir("/d0", 100, 100),)) for b in (1, 2, 3)),
        Broker(4, None, (), alive=False),
    )
    snap = ClusterSnapshot(brokers, (PartitionState("t", 0, (4, 1), ("/d0", "/d0"), 1, (1,), 10),), "c1")
    seen = planning_view(snap, in_flight(old, snap))
    assert [(b.id, b.alive) for b in seen.brokers] == [
        (1, True),
        (2, True),
        (3, True),
        (4, False),
        (5, False),
    ]
    p = seen.partition("t", 0)
    assert p is not None and p.replicas == (5, 1)
    plan = compute_plan(seen, Intents.loads("kind: BrokerDecommission\nspec: {brokers: [4, 5]}\n")).plan
    (t,) = plan.partitions
    assert 1 in t.replicas and not {4, 5} & set(t.replicas) and len(t.replicas) == 2
