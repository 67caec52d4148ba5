"""The executor's state machine table and its pure progress computations (no Kafka)."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_placement.execution import state as st
from kafka_placement.execution.executor import TRANSITIONS, next_phase
from kafka_placement.execution.progress import compute_progress, observed_rate, partition_bytes
from kafka_placement.execution.state import FileStore, IllegalTransition
from kafka_placement.model.plan import PartitionTarget, Plan


def test_happy_path_through_every_phase() -> None:
    phase = st.PENDING
    for event in (st.START, st.VALID, st.THROTTLED, st.UNHEALTHY, st.HEALTHY, st.ALL_DONE, st.FINISHED):
        phase = next_phase(phase, event)
    assert phase == st.COMPLETED


def test_cancel_path_and_plan_already_applied() -> None:
    assert next_phase(st.MOVING, st.CANCEL) == st.CANCELLING
    assert next_phase(st.PAUSED, st.CANCEL) == st.CANCELLING
    assert next_phase(st.CANCELLING, st.REVERTED) == st.CANCELLED
    assert next_phase(st.VALIDATING, st.ALL_DONE) == st.FINISHING
    assert next_phase(st.VALIDATING, st.INVALID) == st.FAILED
    assert next_phase(st.FAILED, st.RETRY) == st.PENDING


def test_terminal_phases_accept_nothing_but_failed_retry_or_cancel() -> None:
    for (phase, event), _ in TRANSITIONS.items():
        if phase in (st.COMPLETED, st.CANCELLED):
            pytest.fail(f"terminal {phase} has a transition on {event}")
    assert {e for (p, e) in TRANSITIONS if p == st.FAILED} == {st.RETRY, st.CANCEL}


@pytest.mark.parametrize(
    ("phase", "event"),
    [
        (st.COMPLETED, st.START),
        (st.CANCELLED, st.CANCEL),
        (st.PENDING, st.ALL_DONE),
        (st.MOVING, st.FINISHED),
        (st.FINISHING, st.CANCEL),  # every move is done: finishing beats reverting
        (st.CANCELLING, st.ALL_DONE),  # nothing new once cancel is requested
        (st.MOVING, "bogus"),
    ],
)
def test_illegal_transitions_raise(phase: str, event: str) -> None:
    with pytest.raises(IllegalTransition, match=phase):
        next_phase(phase, event)


def test_table_only_names_known_phases() -> None:
    for (phase, _), target in TRANSITIONS.items():
        assert phase in st.PHASES and target in st.PHASES
    reachable = {st.PENDING} | set(TRANSITIONS.values())
    assert reachable == set(st.PHASES)


def test_partition_keys_round_trip_topics_with_dashes() -> None:
    assert st.parse_tp(st.tp_key("a-b-c", 12)) == ("a-b-c", 12)


def _record() -> dict[str, Any]:
    plan = Plan.of(
        [
            PartitionTarget("t", 0, (1, 2), ("any", "any")),  # adds broker 2: one copy
            PartitionTarget("t", 1, (2, 1), ("/d1", "any")),  # reorder + dir move on broker 2: one copy
            PartitionTarget("t", 2, (3, 1), ("any", "any")),  # adds 3 and 1: two copies
        ]
    )
    record = st.new_record(plan)
    record["original"] = {
        "t-0": {"replicas": [1, 3], "logDirs": ["/d0", "/d0"], "sizeBytes": 100},
        "t-1": {"replicas": [1, 2], "logDirs": ["/d0", "/d0"], "sizeBytes": 50},
        "t-2": {"replicas": [2, 4], "logDirs": ["/d0", "/d0"], "sizeBytes": 10},
    }
    return record


def test_bytes_per_partition_count_every_copy() -> None:
    record = _record()
    sizes = [partition_bytes(record, t) for t in record["plan"]["partitions"]]
    assert sizes == [100, 50, 20]


def test_progress_counts_done_in_flight_and_pending() -> None:
    record = _record()
    record["done"] = ["t-2"]
    record["submitted"] = {
        "t-0": {"replicas": [1, 2], "submittedAt": 0, "state": "confirmed"},
        "t-2": {"replicas": [3, 1], "submittedAt": 0, "state": "confirmed"},
    }
    p = compute_progress(record, {"t-0": 40, "t-1": 999})  # t-1 is not ours yet: ignored
    assert (p.partitions_total, p.partitions_done, p.partitions_in_flight, p.partitions_pending) == (
        3,
        1,
        1,
        1,
    )
    assert (p.bytes_total, p.bytes_moved, p.bytes_remaining) == (170, 60, 110)
    assert p.eta_s is None  # no rate observed yet
    record["samples"] = [[100.0, 0], [110.0, 60]]
    p = compute_progress(record, {"t-0": 40})
    assert p.rate_bytes_per_s == pytest.approx(6.0)
    assert p.eta_s == pytest.approx(110 / 6.0)
    assert "1/3" in p.line()


def test_partial_bytes_are_capped_and_finished_is_eta_zero() -> None:
    record = _record()
    record["submitted"] = {"t-0": {"replicas": [1, 2], "submittedAt": 0, "state": "confirmed"}}
    assert compute_progress(record, {"t-0": 10**9}).bytes_moved == 100
    record["done"] = ["t-0", "t-1", "t-2"]
    assert compute_progress(record, {}).eta_s == 0.0


def test_observed_rate_needs_two_samples_and_time() -> None:
    assert observed_rate([]) is None
    assert observed_rate([[1.0, 5]]) is None
    assert observed_rate([[1.0, 5], [1.0, 9]]) is None
    assert observed_rate([[1.0, 0], [3.0, 10]]) == 5.0


def test_file_store_round_trip_and_cancel_marker(tmp_path: Any) -> None:
    store = FileStore(tmp_path / "state.json")
    assert store.load() is None
    record = _record()
    store.save(record)
    loaded = store.load()
    assert loaded is not None and loaded["planId"] == record["planId"]
    assert not store.cancel_requested()
    store.request_cancel()
    assert store.cancel_requested()
    store.clear_cancel()
    assert not store.cancel_requested()
