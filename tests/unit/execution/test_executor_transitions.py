"""The execution record (v2) without Kafka: the transition table, progress arithmetic, encoding, records of
another version refused, the file store's compare-and-swap, malformed state files, execution order and batch
limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_placement.execution import executor, lookahead, throttling
from kafka_placement.execution.executor import TRANSITIONS, Limits, next_phase
from kafka_placement.execution.progress import compute_progress, observed_rate
from kafka_placement.execution.record import Execution, ExecutionPlan, Original
from kafka_placement.execution.record_doc import (
    PHASES,
    Event,
    IllegalTransition,
    Phase,
    PState,
    Rule,
    Submission,
)
from kafka_placement.execution.store import FileStore, RecordConflict
from kafka_placement.execution.view import TickView
from kafka_placement.kafka.types import LogDirInfo, OpError, Reassignment, ReplicaInDir
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import PartitionState
from kafka_placement.model.throttle_state import ThrottleState, TopicThrottle

P, E = Phase, Event


def test_happy_path_through_every_phase() -> None:
    phase = P.PENDING
    for event in (E.START, E.VALID, E.THROTTLED, E.UNHEALTHY, E.HEALTHY, E.ALL_DONE, E.FINISHED):
        phase = next_phase(phase, event)
    assert phase == P.COMPLETED


def test_cancel_path_and_plan_already_applied() -> None:
    assert next_phase(P.MOVING, E.CANCEL) == P.CANCELLING
    assert next_phase(P.PAUSED, E.CANCEL) == P.CANCELLING
    assert next_phase(P.CANCELLING, E.REVERTED) == P.CANCELLED
    assert next_phase(P.VALIDATING, E.ALL_DONE) == P.FINISHING
    assert next_phase(P.VALIDATING, E.INVALID) == P.FAILED
    assert next_phase(P.FAILED, E.RETRY) == P.PENDING


def test_terminal_phases_accept_nothing_but_failed_retry_or_cancel() -> None:
    for (phase, event), _ in TRANSITIONS.items():
        if phase in (P.COMPLETED, P.CANCELLED):
            pytest.fail(f"terminal {phase} has a transition on {event}")
    assert {e for (p, e) in TRANSITIONS if p == P.FAILED} == {E.RETRY, E.CANCEL}


@pytest.mark.parametrize(
    ("phase", "event"),
    [
        (P.COMPLETED, E.START),
        (P.CANCELLED, E.CANCEL),
        (P.PENDING, E.ALL_DONE),
        (P.MOVING, E.FINISHED),
        (P.FINISHING, E.CANCEL),  # every move is done: finishing beats reverting
        (P.CANCELLING, E.ALL_DONE),  # nothing new once cancel is requested
        (P.MOVING, "bogus"),
    ],
)
def test_illegal_transitions_raise(phase: str, event: str) -> None:
    with pytest.raises(IllegalTransition, match=phase):
        next_phase(phase, event)


def test_table_only_names_known_phases() -> None:
    reachable = {P.PENDING} | set(TRANSITIONS.values())
    assert reachable == set(PHASES)


# ---- a record over a small plan -----------------------------------------------------------------------

PLAN = Plan.of(
    [
        PartitionTarget("t", 0, (1, 2), ("any", "any")),  # adds broker 2: one copy
        PartitionTarget("t", 1, (2, 1), ("/d1", "any")),  # reorder + dir move on broker 2: one copy
        PartitionTarget("t", 2, (3, 1), ("any", "any")),  # adds 3 and 1: two copies
    ]
)
BASELINE = [
    Original((1, 3), ("/d0", "/d0"), 100),
    Original((1, 2), ("/d0", "/d0"), 50),
    Original((2, 4), ("/d0", "/d0"), 10),
]
LIMITS = Limits(max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=None)


def _execution(tmp_path: Path, rules: list[Rule] | None = None) -> Execution:
    store = FileStore(tmp_path / "state.json")
    ex = Execution.create(store, PLAN, limits=LIMITS, cluster_id="c1", rules=rules or [])
    ex.set_baseline(BASELINE, {(2, "/d0"): 0.9})
    ex.save()
    return ex


def test_bytes_per_partition_count_every_copy(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    assert ex.plan.move_bytes == [100, 50, 20]
    assert ex.plan.adding == [(2,), (), (3, 1)]
    assert ex.plan.dir_moving == [(), (2,), ()]
    assert not ex.plan.dir_only(0)
    assert not ex.plan.dir_only(1)  # t-1 reorders [1, 2] -> [2, 1]: a reassignment, not only a dir move
    reorder = ExecutionPlan(Plan.of([PartitionTarget("t", 0, (2, 1), ("any", "any"))]), [BASELINE[1]])
    same = ExecutionPlan(Plan.of([PartitionTarget("t", 0, (1, 2), ("/d1", "any"))]), [BASELINE[1]])
    assert not reorder.dir_only(0) and same.dir_only(0)


def test_progress_counts_done_in_flight_and_pending(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.submit(0, Submission.CONFIRMED, 0)
    ex.submit(2, Submission.CONFIRMED, 0)
    ex.finish(2)
    ex.doc.copied = {0: 40}
    p = compute_progress(ex)
    counts = (p.partitions_total, p.partitions_done, p.partitions_in_flight, p.partitions_pending)
    assert counts == (3, 1, 1, 1)
    assert (p.bytes_total, p.bytes_moved, p.bytes_remaining) == (170, 60, 110)
    assert p.eta_s is None  # no rate observed yet
    ex.doc.samples = [(100.0, 0), (110.0, 60)]
    p = compute_progress(ex)
    assert p.rate_bytes_per_s == pytest.approx(6.0)
    assert p.eta_s == pytest.approx(110 / 6.0)
    assert "1/3" in p.line()


def test_partial_bytes_are_capped_and_finished_is_eta_zero(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.submit(0, Submission.CONFIRMED, 0)
    ex.doc.copied = {0: 10**9}
    assert compute_progress(ex).bytes_moved == 100
    for i in range(3):
        ex.finish(i)
    assert compute_progress(ex).eta_s == 0.0
    assert ex.all_done


def test_observed_rate_needs_two_samples_and_time() -> None:
    assert observed_rate([]) is None
    assert observed_rate([(1.0, 5)]) is None
    assert observed_rate([(1.0, 5), (1.0, 9)]) is None
    assert observed_rate([(1.0, 0), (3.0, 10)]) == 5.0


def test_record_round_trips_through_the_store(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.submit(0, Submission.INTENT, 5.0)
    ex.count_submission(0)
    ex.finish(2)
    ex.doc.phase = P.MOVING
    ex.save()
    again = Execution.load(FileStore(tmp_path / "state.json"))
    assert again is not None
    assert again.doc.plan_id == PLAN.plan_id and again.doc.cluster_id == "c1"
    assert again.phase == P.MOVING
    assert again.doc.in_flight[0].state == Submission.INTENT
    assert [again.state(i) for i in range(3)] == [PState.IN_FLIGHT, PState.PENDING, PState.DONE]
    assert again.doc.done_bytes == 20 and again.doc.counters.submissions == 1
    assert again.plan.baseline == tuple(BASELINE)
    # the plan and baseline are blobs: the document stays small and does not embed the plan
    text = (tmp_path / "state.json").read_text()
    assert '"replicas"' not in text and len(text) < 4000


def test_a_second_writer_gets_a_conflict_not_a_lost_update(tmp_path: Path) -> None:
    _execution(tmp_path)
    a = Execution.load(FileStore(tmp_path / "state.json"))
    b = Execution.load(FileStore(tmp_path / "state.json"))
    assert a is not None and b is not None
    a.doc.cancel_requested = True
    a.save()
    b.doc.last_error = "b was here"
    with pytest.raises(RecordConflict):
        b.save()
    stored = Execution.load(FileStore(tmp_path / "state.json"))
    assert stored is not None and stored.doc.cancel_requested and stored.doc.last_error is None


def test_a_resubmission_is_counted(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.count_submission(0)
    assert ex.doc.counters.resubmitted == 0
    ex.count_submission(0)
    assert ex.doc.counters.resubmitted == 1


def test_file_store_cancel_marker(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "state.json")
    assert store.load() is None
    assert not store.cancel_requested()
    store.request_cancel()
    assert store.cancel_requested()
    store.clear_cancel()
    assert not store.cancel_requested()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("phase"),
        lambda d: d.update(phase="Dancing"),
        lambda d: d.update(version=3),
        lambda d: d.update(kind="ConfigMap"),
        lambda d: d.update(partitions="many"),
        lambda d: d.update(inFlight={"7": {"state": "intent", "at": 1}}),
        lambda d: d.update(inFlight={"0": {"state": "flying", "at": 1}}),
        lambda d: d.update(states="%%%not-base64"),
        lambda d: d.update(planId="../../etc"),
        lambda d: d.update(counters={"ticks": -1}),
        lambda d: d.update(blobs={"plan": "plan-000000000000"}),
        lambda d: d.update(unknown=1),
    ],
)
def test_malformed_records_are_refused_naming_the_file(tmp_path: Path, mutate: Any) -> None:
    _execution(tmp_path)
    path = tmp_path / "state.json"
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(BadInputError, match=r"state\.json") as e:
        ex = Execution.load(FileStore(path))
        assert ex is not None
        _ = ex.plan  # a missing blob shows when the plan is needed
    assert len(e.value.message) < 1000


@pytest.mark.parametrize("text", ["", "{", "[]", "null", "[" * 5000, '{"version": 1}', "x" * 100])
def test_garbage_state_files_are_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(BadInputError, match=r"state\.json"):
        Execution.load(FileStore(path))


def test_a_record_of_another_version_is_refused_naming_its_version(tmp_path: Path) -> None:
    """Version 1 (a pre-release format: the plan embedded, no ``kind``) is not read, nor a later version;
    nothing is written."""
    v1 = {"version": 1, "planId": PLAN.plan_id, "plan": PLAN.to_json(), "phase": "Moving", "throttles": {}}
    later = {**json.loads(_execution(tmp_path).encode()), "version": 3}
    path = tmp_path / "state.json"
    for doc in (v1, later):
        path.write_text(json.dumps(doc))
        files = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()}
        with pytest.raises(BadInputError, match=r"state\.json") as e:
            Execution.load(FileStore(path))
        assert f"unsupported execution record version {doc['version']}" in e.value.message
        assert "reads version 2 only" in e.value.message
        assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p.is_file()} == files


def test_priority_then_freeing_then_small_first() -> None:
    rules = [Rule(name="BrokerDecommission/x", brokers=[4], priority=5, throttle=123)]
    plan = ExecutionPlan(PLAN, BASELINE, rules, {(1, "/d0"): 0.5, (2, "/d0"): 0.9})
    # t-2 takes a replica off broker 4 (priority 5); t-1 moves a replica off the 90% full dir of broker 2
    assert plan.order == [2, 1, 0]
    assert plan.priority == [0, 0, 5] and plan.rate == [None, None, 123]


def _view(partitions: dict[tuple[str, int], PartitionState]) -> TickView:
    return TickView("c1", frozenset({1, 2, 3, 4}), partitions, {}, {})


def _healthy(t: PartitionTarget, o: Original) -> PartitionState:
    return PartitionState(t.topic, t.partition, o.replicas, o.log_dirs, o.replicas[0], o.replicas, o.size)


def test_selection_respects_counts_bytes_and_health(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    states = {t.key: _healthy(t, o) for t, o in zip(PLAN.partitions, BASELINE, strict=True)}
    cands = list(ex.pending(10))
    # t-2 and t-1 free the 90% full dir of broker 2 (smallest first), then t-0
    assert cands == [2, 1, 0]
    assert executor._select(ex, _view(states), Limits(), cands) == [2, 1, 0]  # all fit by default
    # one move per broker: t-2 involves brokers 1-4, the others involve broker 2 too
    assert executor._select(ex, _view(states), Limits(max_moves_per_broker=1), cands) == [2]
    assert executor._select(ex, _view(states), Limits(max_moves=2), cands) == [2, 1]
    # bytes: a broker with something in flight takes no more than the cap (t-0's 100 bytes onto broker 2
    # after t-1's 50); an idle broker always takes one move, however large
    assert executor._select(ex, _view(states), Limits(max_bytes_per_broker=60), cands) == [2, 1]
    assert executor._select(ex, _view(states), Limits(max_bytes_per_broker=1), cands) == [2, 1]
    # an under-replicated partition is never moved, unless its move drops every replica out of sync
    # (a dead broker's: it repairs the partition); then it moves first
    bad = dict(states)
    t0 = PLAN.partitions[0]
    bad[t0.key] = PartitionState("t", 0, (1, 3), ("/d0", "/d0"), 3, (3,), 100)  # 1 out of sync, kept
    assert 0 not in executor._select(ex, _view(bad), Limits(), cands)
    bad[t0.key] = PartitionState("t", 0, (1, 3), ("/d0", "/d0"), 1, (1,), 100)  # 3 out of sync, dropped
    assert executor._select(ex, _view(bad), Limits(), cands) == [0, 2, 1]
    bad[t0.key] = PartitionState("t", 0, (1, 3), ("/d0", "/d0"), None, (), 100)  # no leader to copy from
    assert 0 not in executor._select(ex, _view(bad), Limits(), cands)


def test_the_fewest_in_sync_replicas_move_first(tmp_path: Path) -> None:
    """Execution order: partitions at or below min ISR with a replica out of sync, then the other
    under-replicated ones (fewest in sync first), then by priority, freeing and size; the baseline keeps
    the counts (and a record written before them still loads, in the old order)."""
    sick = [
        Original((1, 3), ("/d0", "/d0"), 100, 2, 1),  # healthy
        Original((1, 2), ("/d0", "/d0"), 50, 1, 2),  # under min ISR
        Original((2, 4), ("/d0", "/d0"), 10, 1, 0),  # under-replicated, above min ISR (smallest)
    ]
    store = FileStore(tmp_path / "state.json")
    ex = Execution.create(store, PLAN, limits=LIMITS, cluster_id="c1")
    ex.set_baseline(sick, {})
    ex.save()
    assert ex.plan.order == [1, 2, 0]
    again = Execution.load(store)
    assert again is not None and again.plan.order == [1, 2, 0] and list(again.plan.baseline or ()) == sick
    old = Original((1, 3), ("/d0", "/d0"), 100)
    assert old.urgency == (2, 0) and Original((1, 3), (None, None), 1, 1, 2).urgency == (0, 1)
    assert Original((1, 2, 3), (None,) * 3, 1, 2, 1).urgency == (1, 2)


def test_work_topics_follow_the_moves_in_flight_not_the_plan(tmp_path: Path) -> None:
    """What the operator checks ACLs on before each tick: every plan topic until the execution moves,
    then the topics of the moves in flight, of the next candidates and of the throttles held."""
    plan = Plan.of([PartitionTarget(f"t{i}", 0, (1, 2), ("any", "any")) for i in range(600)])
    targets = plan.partitions  # in the plan's (sorted) order: what plan indices refer to
    baseline = [Original((1, 3), ("/d0", "/d0"), 10)] * 600
    ex = Execution.create(FileStore(tmp_path / "s.json"), plan, limits=LIMITS, cluster_id="c1")
    ex.set_baseline(baseline, {})
    limits = Limits(max_moves_per_broker=5, max_moves=10)
    assert len(executor.work_topics(ex, limits)) == 600  # Pending: validation reads every topic
    ex.doc.phase = Phase.MOVING
    order = list(ex.plan.order)
    ex.submit(order[0], Submission.CONFIRMED, 0)
    topics = executor.work_topics(ex, limits)
    ahead = {targets[i].topic for i in order[: 1 + lookahead.MIN_LOOKAHEAD]}
    assert topics == ahead and len(topics) == 1 + lookahead.MIN_LOOKAHEAD
    far = targets[order[-1]].topic
    assert far not in topics
    ex.doc.throttles = ThrottleState(
        topics=(TopicThrottle(topic=far, config="leader.replication.throttled.replicas", entries=()),)
    )
    assert far in executor.work_topics(ex, limits)


class _Answers:
    """Kafka's answers to one AlterPartitionReassignments call, per partition (a unit-test stand-in for
    the gateway's one method ``_submit`` calls; the integration tests run the real one)."""

    def __init__(self, errors: dict[tuple[str, int], OpError]) -> None:
        self.errors, self.sent = errors, []  # type: list[dict[tuple[str, int], list[int]]]

    def alter_reassignments(
        self, targets: dict[tuple[str, int], list[int]]
    ) -> dict[tuple[str, int], OpError]:
        self.sent.append(dict(targets))
        return {k: e for k, e in self.errors.items() if k in targets}


def test_an_unknown_answer_keeps_the_intent_and_a_refusal_is_not_counted(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.doc.phase = Phase.MOVING
    answers = _Answers(
        {
            ("t", 0): OpError("REQUEST_TIMED_OUT", "the controller timed out", True),
            ("t", 2): OpError("INVALID_REPLICA_ASSIGNMENT", "no", False),
        }
    )
    executor._submit(ex, answers, _view({}), [0, 1, 2])  # type: ignore[arg-type]
    assert ex.doc.in_flight[0].state == Submission.INTENT  # Kafka may have it: the next tick looks
    assert ex.doc.in_flight[1].state == Submission.CONFIRMED
    assert 2 not in ex.doc.in_flight and ex.state(2) == PState.PENDING
    c = ex.doc.counters
    assert (c.submissions, c.refused, c.resubmitted) == (2, 1, 0)
    assert ex.phase == Phase.FAILED and "INVALID_REPLICA_ASSIGNMENT" in (ex.doc.last_error or "")

    # the next tick sees t-0 moving in Kafka: adopted, not sent again
    t0, o0 = PLAN.partitions[0], BASELINE[0]
    moving = {t0.key: Reassignment((1, 3, 2), (2,), (3,))}
    view = TickView("c1", frozenset({1, 2, 3, 4}), {t0.key: _healthy(t0, o0)}, moving, {})
    assert executor._reconcile(ex, view)
    assert ex.doc.in_flight[0].state == Submission.CONFIRMED
    assert (c.submissions, c.resubmitted, c.unsent) == (2, 0, 0)


def _cordoned(broker: int) -> dict[int, tuple[LogDirInfo, ...]]:
    """DescribeLogDirs of ``broker`` with both its dirs cordoned (KIP-1066)."""
    return {broker: tuple(LogDirInfo(broker, d, None, 0, 0, True, ()) for d in ("/d0", "/d1"))}


def test_a_refusal_naming_a_wholly_cordoned_broker_says_so(tmp_path: Path) -> None:
    """Kafka 4.4 refuses any reassignment naming a broker whose every dir is cordoned (4.3 accepted it):
    the execution's error names the broker and the reason, not only Kafka's "assignment is invalid"."""
    ex = _execution(tmp_path)
    ex.doc.phase = Phase.MOVING
    refused = OpError("INVALID_REPLICATION_ASSIGNMENT", "Replication assignment is invalid.", False)
    view = TickView("c1", frozenset({1, 2, 3, 4}), {}, {}, _cordoned(2))
    executor._submit(ex, _Answers({("t", 0): refused}), view, [0])  # type: ignore[arg-type]
    assert ex.phase == Phase.FAILED
    assert "t-0: INVALID_REPLICATION_ASSIGNMENT" in (ex.doc.last_error or "")
    assert "broker(s) 2 have every log dir cordoned: Kafka 4.4+ refuses it" in (ex.doc.last_error or "")
    other = _execution(tmp_path / "other")
    other.doc.phase = Phase.MOVING
    executor._submit(other, _Answers({("t", 0): refused}), _view({}), [0])  # type: ignore[arg-type]
    assert "cordoned" not in (other.doc.last_error or "")  # no cordoned broker read: Kafka's word alone


@pytest.mark.parametrize("cordoned", [True, False])
def test_a_cancel_keeps_kafkas_replica_order_when_a_wholly_cordoned_broker_forbids_the_reorder(
    tmp_path: Path, cordoned: bool
) -> None:
    """A cancelled move reverted by KIP-455 may come back with its replicas in another order; restoring
    the order is a reassignment, which Kafka 4.4 refuses when it names a broker whose every dir is
    cordoned (a decommissioned broker): the cancel ends with the replicas as before and says the order was
    kept, instead of retrying a refused reorder forever (found on the rig: a cluster deleted with its
    decommission mid-flight never finished its cancel on Kafka 4.4.0). Any other refusal is retried."""
    ex = _execution(tmp_path)
    ex.doc.phase = Phase.CANCELLING
    ex.submit(0, Submission.CONFIRMED, 0)
    reverted = PartitionState("t", 0, (3, 1), ("/d0", "/d0"), 3, (3, 1), 100)  # original (1, 3), reordered
    view = TickView("c1", frozenset({1, 2, 3, 4}), {("t", 0): reverted}, {}, _cordoned(3) if cordoned else {})
    refused = OpError("INVALID_REPLICATION_ASSIGNMENT", "Replication assignment is invalid.", False)
    answers = _Answers({("t", 0): refused})
    executor._cancel(ex, answers, view)  # type: ignore[arg-type]
    assert answers.sent == [{("t", 0): [1, 3]}]
    if cordoned:
        assert ex.phase == Phase.CANCELLED and ex.state(0) == PState.CANCELLED
        assert ex.doc.counters.orders_kept == 1
        assert "replica order not restored for 1 partition(s) (t-0)" in (ex.doc.last_error or "")
        assert "broker(s) 3, whose every log dir is cordoned" in (ex.doc.last_error or "")
    else:
        assert ex.phase == Phase.CANCELLING and 0 in ex.doc.in_flight  # retried next tick
        assert ex.doc.counters.orders_kept == 0
        assert "restoring the replica order failed for t-0" in (ex.doc.last_error or "")


def test_an_unknown_answer_kafka_never_acted_on_is_sent_again_as_a_first_submission(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.doc.phase = Phase.MOVING
    executor._submit(ex, _Answers({("t", 0): OpError("UNKNOWN", "no answer", True)}), _view({}), [0])  # type: ignore[arg-type]
    t0, o0 = PLAN.partitions[0], BASELINE[0]
    assert executor._reconcile(
        ex, TickView("c1", frozenset({1, 2, 3, 4}), {t0.key: _healthy(t0, o0)}, {}, {})
    )
    assert ex.state(0) == PState.PENDING and 0 not in ex.doc.in_flight
    executor._submit(ex, _Answers({}), _view({}), [0])  # type: ignore[arg-type]
    c = ex.doc.counters
    assert (c.submissions, c.resubmitted, c.unsent) == (1, 0, 1)


def test_completion_rereads_a_partition_a_lagging_broker_shows_off_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker applying metadata later than the controller shows a finished move's old replicas for a
    moment: completion looks again before it reopens (and re-sends) anything."""
    ex = _execution(tmp_path)
    done = {
        t.key: PartitionState(t.topic, t.partition, t.replicas, t.log_dirs, t.replicas[0], t.replicas, o.size)
        for t, o in zip(PLAN.partitions, BASELINE, strict=True)
    }
    stale = dict(done)
    t0, o0 = PLAN.partitions[0], BASELINE[0]
    stale[t0.key] = _healthy(t0, o0)
    d1 = {2: (LogDirInfo(2, "/d1", None, 0, 0, None, (ReplicaInDir("t", 1, 50, 0, False),)),)}

    def view(partitions: dict[tuple[str, int], PartitionState]) -> TickView:
        return TickView("c1", frozenset({1, 2, 3, 4}), partitions, {}, d1)

    reads = [view(stale), view(done)]
    monkeypatch.setattr(executor, "read_view", lambda gateway, keys, *a, **kw: reads.pop(0))
    monkeypatch.setattr(executor, "CONFIRM_WAIT_S", 0.0)
    assert executor._confirm_complete(ex, None)  # type: ignore[arg-type]
    assert not reads and ex.doc.last_error is None

    # off target on every read: reopened
    reads[:] = [view(stale)] * executor.CONFIRM_READS
    for i in range(3):
        ex.finish(i)
    assert not executor._confirm_complete(ex, None)  # type: ignore[arg-type]
    assert ex.state(0) == PState.PENDING and not reads and "t-0" in (ex.doc.last_error or "")


class _Configs:
    """The gateway's config calls as ``_clear_throttles`` uses them (the integration and e2e tests run
    the real ones): brokers 1 and 2 alive, every change applied at once."""

    def __init__(self, silent: frozenset[int] = frozenset()) -> None:
        self.changed: list[Any] = []
        self.silent = silent  # live brokers that refused the last DescribeLogDirs

    def describe_cluster(self) -> tuple[str, tuple[int, ...]]:
        return "c1", (1, 2)

    def incremental_alter_configs(self, changes: dict[Any, Any]) -> dict[Any, Any]:
        self.changed.append(changes)
        return {}

    def describe_configs(self, targets: Any) -> dict[Any, Any]:
        return {}


def test_throttles_of_a_dead_broker_stay_recorded_until_it_is_back(tmp_path: Path) -> None:
    """Kafka takes a broker's own config only through that broker: a finished execution removes the
    throttles of live brokers and of topics, keeps a dead broker's in the record (said in lastError), and
    removes them on a later sweep once the broker is back. So for a live broker that refused the operator
    a moment ago (killed, not fenced yet): asking it would only wait out the request timeout."""
    ex = _execution(tmp_path)
    rate = "follower.replication.throttled.rate"
    ex.doc.throttles = ThrottleState.model_validate(
        {
            "brokers": [
                {"broker": 1, "config": rate, "previous": None, "value": "9"},
                {"broker": 2, "config": rate, "previous": None, "value": "9"},
                {"broker": 3, "config": rate, "previous": None, "value": "9"},
            ],
            "topics": [
                {"topic": "t", "config": "follower.replication.throttled.replicas", "entries": ["0:3"]}
            ],
        }
    )
    gw = _Configs(silent=frozenset({2}))
    throttling.clear_owned(ex, gw)  # type: ignore[arg-type]
    (changes,) = gw.changed
    assert sorted(f"{t.kind} {t.name}" for t in changes) == ["broker 1", "topic t"]  # 2 and 3 not asked
    assert [b.broker for b in ex.doc.throttles.brokers] == [2, 3] and not ex.doc.throttles.topics
    assert "broker(s) [2, 3], not alive or not answering: removed once back" in (ex.doc.last_error or "")
    ex.doc.phase = Phase.COMPLETED
    back = _Configs()
    back.describe_cluster = lambda: ("c1", (1, 2, 3))  # type: ignore[method-assign]
    executor.sweep(back, ex)  # type: ignore[arg-type]
    (changes,) = back.changed
    assert sorted(f"{t.kind} {t.name}" for t in changes) == ["broker 2", "broker 3"]
    assert not ex.doc.throttles.brokers and not ex.doc.throttles.topics
