"""The copy model (execution/copy_model.py): an execution's duration before it starts, by the executor's
own admission rules and the brokers' throttles. Plans built by hand, each with the duration worked out
from the rules: shared rates, bytes in flight, moves per broker, ticks, the bound, the fallback."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kafka_placement.execution import copy_model
from kafka_placement.execution.copy_model import END_TICKS, START_TICKS, estimate
from kafka_placement.execution.record import Execution, ExecutionPlan, Original
from kafka_placement.execution.record_doc import ASSUMED_UNTHROTTLED_RATE, Event, Limits
from kafka_placement.execution.store import FileStore
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan

MB = 1_000_000
TICK = 5.0
OVERHEAD = (START_TICKS + END_TICKS) * TICK


def held(**kw: Any) -> Limits:
    """Limits with the rate hold on: brokers achieve the throttle."""
    return Limits(hold_rate=True, **kw)


def plan_of(moves: list[tuple[tuple[int, ...], tuple[int, ...], int]]) -> ExecutionPlan:
    """(replicas before, replicas after, bytes) per partition of topic t; the first replica leads."""
    targets = [
        PartitionTarget("t", p, after, (ANY_DIR,) * len(after)) for p, (_, after, _) in enumerate(moves)
    ]
    base = [Original(before, ("/d",) * len(before), size, len(before)) for before, _, size in moves]
    return ExecutionPlan(Plan.of(targets), base)


def test_one_move_copies_its_bytes_at_the_throttle_seen_done_at_a_tick() -> None:
    got = estimate(plan_of([((1, 2), (1, 3), 100 * MB)]), held(throttle=10 * MB), TICK)
    assert got.copy_seconds == 10.0 and got.seconds == 10.0 + OVERHEAD
    assert got.bound_seconds == 10.0 and got.bytes == 100 * MB and got.moves == 1 and got.exact
    assert got.throttled and got.bytes_per_second == 10 * MB
    late = estimate(plan_of([((1, 2), (1, 3), 101 * MB)]), held(throttle=10 * MB), TICK)
    assert late.copy_seconds == 15.0  # done at 10.1 s, seen at the next tick


def test_moves_into_one_broker_share_its_rate() -> None:
    plan = plan_of([((1, 2), (1, 4), 100 * MB), ((2, 3), (2, 4), 100 * MB)])
    got = estimate(plan, held(throttle=10 * MB), TICK)
    assert got.copy_seconds == 20.0 and got.busiest_broker == 4 and got.bound_seconds == 20.0
    apart = plan_of([((1, 2), (1, 4), 100 * MB), ((2, 3), (2, 5), 100 * MB)])  # other brokers, other leaders
    assert estimate(apart, held(throttle=10 * MB), TICK).copy_seconds == 10.0


def test_a_leader_sending_to_two_brokers_shares_its_out_rate() -> None:
    plan = plan_of([((1, 2), (1, 4), 100 * MB), ((1, 3), (1, 5), 100 * MB)])  # both lead from broker 1
    assert estimate(plan, held(throttle=10 * MB), TICK).copy_seconds == 20.0


def test_bytes_in_flight_queue_large_moves_and_a_broker_with_nothing_in_flight_takes_one() -> None:
    plan = plan_of([((1, 2), (1, 4), 100 * MB), ((2, 3), (2, 4), 100 * MB)])
    limits = held(throttle=10 * MB, max_bytes_per_broker=50 * MB)  # neither fits: one at a time
    assert estimate(plan, limits, TICK).copy_seconds == 20.0  # 10 s each, one after the other
    odd = plan_of([((1, 2), (1, 4), 101 * MB), ((2, 3), (2, 4), 101 * MB)])
    assert estimate(odd, limits, TICK).copy_seconds == 30.0  # each seen done at the tick after 10.1 s


def test_many_small_moves_take_a_tick_per_admission_round() -> None:
    moves = [((1 + p % 3, 1 + (p + 1) % 3), (1 + p % 3, 4), 1000) for p in range(2500)]
    limits = held(throttle=10 * MB, max_moves_per_broker=1000)
    got = estimate(plan_of(moves), limits, TICK, per_move=0.0)  # (Kafka's own work left out)
    assert got.copy_seconds == 3 * TICK  # 1000, 1000, 500 into broker 4
    limits = held(throttle=10 * MB, max_moves=100)
    assert estimate(plan_of(moves), limits, TICK, per_move=0.0).copy_seconds == 25 * TICK


def test_kafkas_work_per_move_is_done_a_move_at_a_time_whatever_the_bytes() -> None:
    """2,500 moves of 1 kB: Kafka's 8 ms a move (the default) shared by the 1,000 in flight makes each
    wave take 8 s (seen at the tick after: 10 s) and the last, of 500, 4 s; at 20 ms a move the waves take
    20, 20 and 10 s; a wave of a tick's worth of work is not slowed further."""
    moves = [((1 + p % 3, 1 + (p + 1) % 3), (1 + p % 3, 4), 1000) for p in range(2500)]
    limits = held(throttle=10 * MB, max_moves_per_broker=1000)
    got = estimate(plan_of(moves), limits, TICK)
    assert got.seconds_per_move == copy_model.DEFAULT_SECONDS_PER_MOVE == 0.008
    assert got.copy_seconds == 10.0 + 10.0 + 5.0
    measured = estimate(plan_of(moves), limits, TICK, per_move=0.02)
    assert measured.copy_seconds == 20.0 + 20.0 + 10.0
    assert copy_model.estimate_json(measured, None)["microsecondsPerMove"] == 20_000
    few = estimate(plan_of(moves[:100]), limits, TICK, per_move=0.02)  # 2 s of work: one tick
    assert few.copy_seconds == TICK
    # the bytes and the work go on together: 100 MB at 10 MB/s outlasts 100 x 20 ms
    big = [((1, 2), (1, 3), 100 * MB)] + [((2, 4), (2, 5), 1000)] * 99  # (other brokers: not its rate)
    assert estimate(plan_of(big), held(throttle=10 * MB), TICK, per_move=0.02).copy_seconds == 10.0


def test_a_move_with_nothing_to_copy_is_seen_done_at_the_next_tick() -> None:
    """A replica removed copies nothing: it is done at the next tick, and the next removal waiting for
    its broker starts then (not when a long copy elsewhere ends: the replay once had the first done at
    10 s and the second at 15 s)."""
    first = ((1, 2, 3), (1, 2), 50 * MB)  # broker 3 leaves the set: no copy
    second = ((4, 5, 3), (4, 5), 50 * MB)  # broker 3 again: waits for the first (1 move per broker)
    long = ((2, 4), (2, 6), 100 * MB)  # elsewhere: 10 s
    limits = held(throttle=10 * MB, max_moves_per_broker=1)
    got = estimate(plan_of([first, second, long]), limits, TICK, per_move=0.0)
    assert got.copy_seconds == 10.0  # the first seen done at 5 s, the second at 10 s with the copy


def test_a_dir_move_copies_at_its_brokers_rate_beside_the_network_moves() -> None:
    targets = [
        PartitionTarget("t", 0, (1, 2), ("/b", ANY_DIR)),
        PartitionTarget("t", 1, (1, 3), (ANY_DIR,) * 2),
    ]
    base = [Original((1, 2), ("/a", "/d"), 100 * MB, 2), Original((1, 2), ("/a", "/d"), 100 * MB, 2)]
    got = estimate(ExecutionPlan(Plan.of(targets), base), held(throttle=10 * MB), TICK)
    assert got.copy_seconds == 10.0 and got.bytes == 200 * MB  # the dir move does not share broker 3's in


def test_without_the_rate_hold_brokers_achieve_less_than_their_throttle() -> None:
    got = estimate(plan_of([((1, 2), (1, 3), 82 * MB)]), Limits(throttle=10 * MB), TICK)
    assert got.bytes_per_second == 8_200_000 and got.copy_seconds == 10.0
    ruled = plan_of([((1, 2), (1, 3), 41 * MB)])
    ruled.rate[0] = 5 * MB  # a rule's throttle is achieved in the same share
    assert estimate(ruled, Limits(throttle=10 * MB), TICK).copy_seconds == 10.0


def test_unthrottled_plans_assume_a_rate_and_say_so() -> None:
    got = estimate(plan_of([((1, 2), (1, 3), 100 * MB)]), Limits(), TICK)
    assert not got.throttled and got.bytes_per_second == ASSUMED_UNTHROTTLED_RATE


def test_a_rules_throttle_slows_its_moves() -> None:
    plan = plan_of([((1, 2), (1, 3), 100 * MB)])
    plan.rate[0] = 5 * MB
    assert estimate(plan, held(throttle=10 * MB), TICK).copy_seconds == 20.0


def test_an_empty_plan_takes_no_time() -> None:
    got = estimate(plan_of([]), held(throttle=MB), TICK)
    assert got.seconds == 0.0 and got.moves == 0 and got.busiest_broker is None


@pytest.mark.parametrize("seed", range(20))
def test_never_faster_than_the_busiest_broker_allows(seed: int) -> None:
    rng = random.Random(seed)
    moves = []
    for _ in range(rng.randint(1, 300)):
        before = tuple(rng.sample(range(1, 9), 3))
        after = (before[0], *rng.sample([b for b in range(1, 9) if b != before[0]], 2))
        moves.append((before, after, rng.randint(0, 50 * MB)))
    limits = held(throttle=rng.choice([MB, 10 * MB]), max_moves_per_broker=rng.choice([1, 5, 1000]))
    got = estimate(plan_of(moves), limits, TICK)
    assert got.exact and got.copy_seconds >= got.bound_seconds - 1e-6
    assert got.seconds == pytest.approx(got.copy_seconds + OVERHEAD)


def test_a_plan_too_large_to_replay_gets_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    moves = [((1 + p % 3, 1 + (p + 1) % 3), (1 + p % 3, 4), 10 * MB) for p in range(3000)]
    monkeypatch.setattr(copy_model, "MAX_WORK", 10)
    got = estimate(plan_of(moves), held(throttle=10 * MB, max_moves_per_broker=1000), TICK)
    assert not got.exact and got.copy_seconds == got.bound_seconds == 3000.0


def test_a_record_keeps_when_it_ended_and_its_view_compares_it_with_the_estimate(tmp_path: Path) -> None:
    """The record's finishedAt is set when it reaches a terminal phase (and cleared by a retry); the
    reconcile's view of it carries status.lastExecution from the plan status it was started with."""
    from kafka_placement.reconcile.inputs import record_view

    plan = Plan.of([PartitionTarget("t", 0, (1, 3), (ANY_DIR, ANY_DIR))])
    shown = {"id": plan.plan_id, "estimate": {"seconds": 40, "throttled": True, "exact": True}}
    ex = Execution.create(FileStore(tmp_path / "state.json"), plan, limits=Limits(), plan_status=shown)
    ex.move(Event.START)
    assert ex.doc.finished_at is None
    view = record_view(ex)
    assert view is not None and view.last_execution is None  # not ended
    ex.move(Event.INVALID)
    assert ex.doc.finished_at is not None and ex.doc.finished_at >= ex.doc.created_at
    ex.doc.created_at, ex.doc.finished_at = 1_800_000_000.0, 1_800_000_050.0
    view = record_view(ex)
    assert view is not None and view.last_execution is not None
    ended = view.last_execution
    assert (ended.phase, ended.estimated_seconds, ended.actual_seconds, ended.error_ratio) == (
        "Failed",
        40,
        50,
        "1.25",
    )
    ex.move(Event.RETRY)
    assert ex.doc.finished_at is None
