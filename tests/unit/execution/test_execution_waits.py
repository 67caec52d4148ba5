"""The estimate against what happened compares like with like (issue 55 item 3): the time an execution could
not run (a maintenance window closed, paused) is counted in its record (``RecordDoc.waits``, kept across
restarts; a record written before it loads with nothing waited) and left out of ``status.lastExecution``'s
``actualSeconds`` and ``errorRatio`` (shown apart as ``waitedSeconds``). While it waits for its first window,
``status.progress.eta`` is the plan's estimate counted inside the windows; ``throttleNote`` goes once no
throttle is left. No rig."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from kafka_placement.execution.executor import kept_waiting
from kafka_placement.execution.progress import Progress, compute_progress
from kafka_placement.execution.record import Execution, Original
from kafka_placement.execution.record_doc import AdaptiveSide, Event, Limits, Phase, Submission
from kafka_placement.execution.store import FileStore
from kafka_placement.model.intent_status import PlanEstimate, PlanStatus
from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan
from kafka_placement.model.throttle_state import BrokerThrottle, ThrottleState
from kafka_placement.model.windows import Window, finish_at
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.inputs import record_view

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
PLAN = Plan.of([PartitionTarget("t", 0, (1, 3), (ANY_DIR, ANY_DIR))])
SHOWN = {"id": PLAN.plan_id, "estimate": {"seconds": 28, "throttled": True, "exact": True}}


def _execution(tmp_path: Path) -> Execution:
    return Execution.create(FileStore(tmp_path / "state.json"), PLAN, limits=Limits(), plan_status=SHOWN)


def _ticks(ex: Execution, start: float, end: float, every: float, *, waiting: bool) -> float:
    """Ticks of 0.5 s every ``every`` seconds from ``start`` to ``end`` (a sample each, as ``_sample``)."""
    at = start
    while at < end:
        ex.doc.samples.append((at + 0.5, 0.0))
        del ex.doc.samples[:-30]
        ex.account(at, at + 0.5, waiting=waiting)
        at += every
    return at


def test_the_ratio_compares_the_running_time_with_the_estimate() -> None:
    """The auditor's rig run: 28 s estimated, 109 s from start to end of which 80 waited for the window:
    29 s run, ratio 1.04 (the old code said 109 s and 3.89)."""
    plan = PlanStatus(id="p-9", estimate=PlanEstimate(seconds=28, throttled=True, exact=True))
    ended = st.last_execution("p-9", "Completed", plan, T0, T0 + 109, 80.0)
    assert (ended.estimated_seconds, ended.actual_seconds, ended.waited_seconds) == (28, 29, 80)
    assert ended.error_ratio == "1.04"
    assert (ended.started_at, ended.finished_at) == ("2027-01-15T08:00:00Z", "2027-01-15T08:01:49Z")
    # approved on Friday for a Saturday window: a day waited is not a day late
    day = 86_400.0
    weekend = st.last_execution("p-9", "Completed", plan, T0, T0 + day + 30, day)
    assert (weekend.actual_seconds, weekend.error_ratio) == (30, "1.07")
    # more waited than elapsed (a clock step): never a negative running time
    odd = st.last_execution("p-9", "Completed", plan, T0, T0 + 10, 50.0)
    assert (odd.actual_seconds, odd.waited_seconds, odd.error_ratio) == (0, 10, "0.00")
    status = st.intent_status(
        {"metadata": {"generation": 1}}, st.COMPLETED, "Completed", "", last_execution=ended
    )
    assert status["lastExecution"]["waitedSeconds"] == 80 and status["lastExecution"]["actualSeconds"] == 29


def test_closed_windows_and_pauses_are_counted_and_survive_a_restart(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    at = _ticks(ex, T0, T0 + 80, 5, waiting=True)  # waiting for the first window: 80 s
    ex.save()
    again = Execution.load(ex.store)  # the operator restarted: what was waited is in the record
    assert again is not None and again.doc.waits.since == T0
    at = _ticks(again, at, at + 20, 5, waiting=False)  # the window opened at the tick at T0 + 80
    assert again.doc.waits.since is None and again.doc.waits.seconds == 80.0
    at = _ticks(again, at, at + 15, 5, waiting=True)  # paused by the safety gate: 15 s
    paused_at = at - 15
    assert again.waited(at) == 80.0 + 15.0  # a wait still running counts up to when it is asked
    at = _ticks(again, at, at + 10, 5, waiting=False)
    assert again.doc.waits.seconds == 95.0
    assert again.waited(at) == 95.0 and paused_at > T0


def test_a_long_gap_between_ticks_is_waited_and_a_usual_one_is_not(tmp_path: Path) -> None:
    """``spec.paused`` ticks nothing: the first tick after it finds a gap far longer than the usual spacing
    (the samples': one per tick), counted as waited; ticks at their usual spacing count nothing."""
    ex = _execution(tmp_path)
    at = _ticks(ex, T0, T0 + 60, 5, waiting=False)
    assert ex.doc.waits.seconds == 0.0
    resumed = at + 300  # paused by spec for five minutes
    _ticks(ex, resumed, resumed + 20, 5, waiting=False)
    assert ex.doc.waits.seconds == resumed - (at - 5 + 0.5)  # from the end of the last tick before
    # a slow operator (--interval 120): its usual spacing is no gap
    slow = _execution(tmp_path / "slow")
    _ticks(slow, T0, T0 + 2400, 120, waiting=False)
    assert slow.doc.waits.seconds == 0.0


def test_a_record_written_before_the_waits_loads_with_none(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.save()
    store = ex.store
    raw = json.loads(store.load() or b"{}")
    raw.pop("waits")  # as the current release writes it
    path = tmp_path / "state.json"
    path.write_text(json.dumps(raw))
    old = Execution.load(FileStore(path))
    assert old is not None and old.doc.waits.seconds == 0.0 and old.doc.waits.since is None
    assert old.waited(T0) == 0.0
    old.move(Event.START)
    old.move(Event.INVALID)
    old.doc.created_at, old.doc.finished_at = T0, T0 + 50
    view = record_view(old)
    assert view is not None and view.last_execution is not None
    assert (view.last_execution.actual_seconds, view.last_execution.waited_seconds) == (50, 0)


def test_the_view_of_an_ended_record_leaves_its_waits_out(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.move(Event.START)
    at = _ticks(ex, T0, T0 + 80, 5, waiting=True)
    _ticks(ex, at, at + 30, 5, waiting=False)
    ex.move(Event.INVALID)
    ex.doc.created_at, ex.doc.finished_at = T0, at + 29
    view = record_view(ex)
    assert view is not None and view.last_execution is not None
    ended = view.last_execution
    assert (ended.waited_seconds, ended.actual_seconds, ended.error_ratio) == (80, 29, "1.04")


def test_a_closed_window_or_the_safety_gate_with_nothing_in_flight_is_waiting() -> None:
    for phase in (Phase.PENDING, Phase.VALIDATING, Phase.THROTTLING, Phase.MOVING):
        assert kept_waiting(phase, window_open=False, in_flight=False)
        assert not kept_waiting(phase, window_open=True, in_flight=False)
    assert kept_waiting(Phase.PAUSED, window_open=True, in_flight=False)
    # moves in flight finishing after the window closed (or while paused) are running time
    assert not kept_waiting(Phase.MOVING, window_open=False, in_flight=True)
    assert not kept_waiting(Phase.PAUSED, window_open=True, in_flight=True)
    for phase in (Phase.FINISHING, Phase.CANCELLING, Phase.COMPLETED, Phase.FAILED, Phase.CANCELLED):
        assert not kept_waiting(phase, window_open=False, in_flight=False)


def test_waiting_for_the_first_window_the_eta_is_the_estimate_inside_the_windows(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.set_baseline([Original((1, 2), (None, None), 1000)], {})
    ex.doc.samples = [(T0, 0.0), (T0 + 60, 0.0)]  # ticks while the window is closed: nothing moves
    got = compute_progress(ex)
    assert got.eta_s is None and got.planned_s == 28.0
    now = dt.datetime.now(dt.UTC)
    opens = now + dt.timedelta(hours=3)
    window = Window(start=opens.strftime("%H:%M"), end=(opens + dt.timedelta(hours=1)).strftime("%H:%M"))
    eta = got.status_json((window,))["eta"]
    expected = finish_at((window,), now.timestamp(), 28.0)
    assert expected is not None
    assert abs(dt.datetime.fromisoformat(eta.replace("Z", "+00:00")).timestamp() - expected) <= 2
    # half the bytes moved, no rate: half the estimate is left
    ex.submit(0, Submission.CONFIRMED, T0)
    ex.doc.copied = {0: 500}
    assert compute_progress(ex).planned_s == 14.0
    assert "eta" in Progress(1, 0, 1, 0, 1000, 500, None, None, 14.0).status_json()
    assert "eta" not in Progress(1, 0, 1, 0, 1000, 500, None, None).status_json()  # no estimate: none


def test_the_throttle_note_goes_once_no_throttle_is_left(tmp_path: Path) -> None:
    ex = _execution(tmp_path)
    ex.set_baseline([Original((1, 2), (None, None), 1000)], {})
    ex.doc.adaptive.sides = [
        AdaptiveSide(broker=3, config="follower.replication.throttled.rate", value=5, note="3: no capacity")
    ]
    ex.doc.throttles = ThrottleState(
        brokers=(BrokerThrottle(broker=3, config="follower.replication.throttled.rate", value="5"),)
    )
    running = record_view(ex, 0, ())
    assert running is not None and running.progress is not None
    assert running.progress.throttle_note is not None and "no capacity" in running.progress.throttle_note
    ex.doc.throttles = ThrottleState()  # the end cleared them: the sides stay recorded
    ended = record_view(ex, 0, ())
    assert ended is not None and ended.progress is not None and ended.progress.throttle_note is None
