"""The executor's rate hold without Kafka: what each side of a broker copied (execution/rate_watch.py), the
factor it decides, and the rates set and kept through a config store (execution/rate.py);
tests/integration/test_executor_rate_hold.py runs it against the rig's brokers."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.kafka.test_throttles import _Configs

from kafka_placement.execution import executor, rate, rate_watch
from kafka_placement.execution.rate_watch import BUSY_S, SETTLE_S, WINDOW_S, RateReading, decide
from kafka_placement.execution.record import Execution, ExecutionPlan, Original
from kafka_placement.execution.record_doc import MAX_HOLD_FACTOR, Limits, Phase, RateSide, Submission
from kafka_placement.execution.store import FileStore
from kafka_placement.execution.view import TickView
from kafka_placement.kafka.throttles import FOLLOWER_RATE, LEADER_RATE, scaled
from kafka_placement.kafka.types import ConfigTarget, LogDirInfo, ReplicaInDir
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import PartitionState

T = 1_000_000
IN = (2, FOLLOWER_RATE)
OUT = (1, LEADER_RATE)


def _run(
    rates: list[float],
    side: RateSide | None = None,
    start: float = 0.0,
    tick: float = 1.0,
    left: int = 10**12,
) -> tuple[dict[tuple[int, str], RateSide], list[tuple[float, dict[tuple[int, str], int]]]]:
    """Tick once a second with the side copying ``rates[k]`` x T in second k; returns the sides and every
    write (time, writes)."""
    sides = {IN: side} if side is not None else {}
    copied, writes = 0, []
    now = start
    for r in [0.0, *rates]:
        copied += int(r * T * tick)
        d = decide(sides, {IN: RateReading(copied=copied, left=left)}, {IN: T}, now, {IN})
        sides = d.sides
        if d.writes:
            writes.append((now, d.writes))
        now += tick
    return sides, writes


def test_a_side_achieving_less_than_its_throttle_gets_kafkas_rate_raised_by_the_shortfall() -> None:
    sides, writes = _run([0.8] * 40)
    # measured from the settle time on, over the window: 0.8 T -> factor 1.25, written once
    assert writes == [(SETTLE_S + WINDOW_S, {IN: 1_250_000})]
    assert sides[IN].factor == 1.25 and sides[IN].rate == pytest.approx(0.8 * T)
    # after the change it measures afresh: at the throttle now, nothing more is written
    sides, writes = _run([1.0] * 60, sides[IN], start=100.0)
    assert writes == [] and sides[IN].factor == 1.25


def test_the_factor_moves_by_a_bounded_step_never_below_1_nor_above_the_cap() -> None:
    sides, writes = _run([0.5] * 200)  # a large shortfall: 1.25, then 1.5 (the cap), then no more
    assert [w[IN] for _, w in writes] == [1_250_000, 1_500_000]
    assert sides[IN].factor == MAX_HOLD_FACTOR
    over = RateSide(broker=2, config=FOLLOWER_RATE, target=T, factor=1.2)
    sides, writes = _run([1.5] * 40, over)  # above the throttle: lowered, never under the throttle itself
    assert [w[IN] for _, w in writes] == [T] and sides[IN].factor == 1.0


def test_a_side_starved_of_work_or_stalled_or_held_changes_nothing() -> None:
    # its moves have less than BUSY_S seconds left at the throttle: the tail of a move says nothing
    sides, writes = _run([0.5] * 60, left=int(T * BUSY_S) - 1)
    assert writes == [] and sides[IN].samples == [] and sides[IN].rate is None
    # a stall (under 30% of the throttle: no leader, a broker busy elsewhere) is no shortfall of the throttle
    sides, writes = _run([0.1] * 60)
    assert writes == [] and sides[IN].factor == 1.0 and sides[IN].rate == pytest.approx(0.1 * T)
    # not measurable (its broker not live, or held by the disk watch): no samples
    d = decide({}, {IN: RateReading(copied=5, left=10**12)}, {IN: T}, 100.0, set())
    assert d.sides[IN].samples == [] and d.writes == {}
    # unthrottled: no side at all
    assert decide({}, {IN: RateReading(copied=5, left=10**12)}, {}, 100.0, {IN}).sides == {}


def test_a_new_side_starts_at_the_factor_its_kind_learnt_and_a_new_throttle_is_measured_afresh() -> None:
    learnt = RateSide(broker=3, config=FOLLOWER_RATE, target=T, factor=1.2, rate=0.99 * T)
    d = decide({(3, FOLLOWER_RATE): learnt}, {IN: RateReading(0, 10**12)}, {IN: T}, 50.0, {IN})
    assert d.sides[IN].factor == 1.2 and d.writes == {IN: 1_200_000}
    d = decide(d.sides, {IN: RateReading(0, 10**12)}, {IN: 2 * T}, 51.0, {IN})  # a move at its own rate
    assert d.writes == {IN: 2_400_000} and d.sides[IN].since == 51.0 and d.sides[IN].target == 2 * T


PLAN = Plan.of(
    [PartitionTarget("t", 0, (1, 2), ("/d0", "/d0")), PartitionTarget("t", 1, (1, 2), ("/d0", "/d0"))]
)
SIZE = 100 * T


def _view(copied: int) -> TickView:
    parts = {("t", p): PartitionState("t", p, (1, 2), ("/d0", "/d0"), 1, (1,), SIZE) for p in (0, 1)}
    dirs = {2: (LogDirInfo(2, "/d0", None, 0, 0, None, (ReplicaInDir("t", 0, copied, 0, False),)),)}
    return TickView("c1", frozenset({1, 2, 3}), parts, {}, dirs)


def test_readings_count_the_bytes_each_side_copied_and_finished_moves_in_full() -> None:
    plan = ExecutionPlan(PLAN, [Original((1,), ("/d0",), SIZE), Original((1,), ("/d0",), SIZE)])
    seen, senders = rate_watch.readings(plan, [0], _view(30 * T), {}, [])
    assert seen[IN] == RateReading(copied=30 * T, left=70 * T) and seen[OUT] == RateReading(30 * T, 70 * T)
    assert senders == {0: 1}
    # partition 1 finished since the last tick, sent by broker 1 then: its whole size on both sides
    seen, _ = rate_watch.readings(plan, [0], _view(40 * T), {1: 1}, [1])
    assert seen[IN] == RateReading(40 * T, 60 * T, SIZE) and seen[OUT] == RateReading(40 * T, 60 * T, SIZE)


def _limits() -> Limits:
    return Limits(max_moves_per_broker=5, max_moves=10, max_bytes_per_broker=None, throttle=T, hold_rate=True)


def test_hold_rates_sets_the_raised_rate_written_ahead_keeps_it_on_new_batches_and_restores_the_previous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b1, b2, t = ConfigTarget.broker(1), ConfigTarget.broker(2), ConfigTarget.topic("t")
    gw = _Configs({b1: {}, b2: {FOLLOWER_RATE: "777"}, t: {}})
    ex = Execution.create(FileStore(tmp_path / "state.json"), PLAN, limits=_limits(), cluster_id="c1")
    ex.set_baseline([Original((1,), ("/d0",), SIZE, 1, 1), Original((1,), ("/d0",), SIZE, 1, 1)], {})
    ex.doc.phase = Phase.MOVING
    ex.submit(0, Submission.CONFIRMED, 0)
    limits = executor.Limits(throttle=T, hold_rate=True)
    executor._throttle(ex, gw, _view(0), [0], limits)  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == str(T)
    clock = [1000.0]
    monkeypatch.setattr(rate.time, "time", lambda: clock[0])
    moves = executor._moves(ex, ex.active(), limits, frozenset({1, 2}))
    for k in range(40):  # broker 2 receives at 0.8 T
        clock[0] = 1000.0 + k
        rate.hold_rates(ex, gw, _view(int(0.8 * T * k)), moves, T)  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == "1250000"
    assert gw.configs[b1][LEADER_RATE] == "1250000"  # broker 1 sent the same bytes: the same shortfall
    stored = Execution.load(FileStore(tmp_path / "state.json"))  # written ahead, before Kafka was changed
    assert stored is not None
    assert {(s.broker, s.config): s.factor for s in stored.doc.rate.sides}[IN] == 1.25
    assert stored.doc.rate.changes == 2
    ex.submit(1, Submission.CONFIRMED, 0)
    executor._throttle(ex, gw, _view(0), [1], limits)  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == "1250000"  # a new batch keeps the held rate
    previous = {(b.broker, b.config): b.previous for b in ex.doc.throttles.brokers}
    assert previous[IN] == "777"  # the broker's own rate, put back when the execution ends


def test_a_rate_near_the_top_of_javas_long_stays_exact_and_is_never_raised_past_it() -> None:
    top = 2**63 - 1
    assert scaled(top, 1.0) == top and scaled(top, 1.5) == top and scaled(T, 1.163) == 1_163_000
    d = decide({}, {IN: RateReading(0, 10**30)}, {IN: top}, 0.0, {IN})
    assert d.sides[IN].target == top and d.writes == {}
