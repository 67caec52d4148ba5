"""Traffic estimates from looks (planning/traffic_rates.py): bytes in per second and read fan-out, and every
bad input the sampler meets: no history, retention and compaction, a recreated topic, clocks set back,
looks too close together, failed reads, partitions gone."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_placement.model.traffic_looks import PartitionLook, TrafficLook
from kafka_placement.planning.traffic_rates import (
    Traffic,
    TrafficState,
    broker_totals,
    bytes_in,
    estimates,
    fold,
    with_traffic,
)

P = ("t", 0)
W = 60.0


def look(at: float, start: int, end: int, size: int, committed=None, topic_id=None) -> TrafficLook:
    return TrafficLook(at, {P: PartitionLook(start, end, size, topic_id)}, committed or {})


def run(*looks: TrafficLook, window: float = W) -> TrafficState:
    state = TrafficState()
    for lk in looks:
        state = fold(state, lk, window)
    return state


def est(state: TrafficState, window: float = W) -> Traffic:
    return estimates(state, window)[P]


def test_a_partition_seen_once_is_unknown_not_zero() -> None:
    assert est(run(look(100, 0, 500, 50_000))) == Traffic(None, None)


def test_steady_appends_give_the_size_growth_per_second() -> None:
    state = run(look(100, 0, 1000, 1_000_000), look(110, 0, 2000, 2_000_000))
    assert est(state).bytes_in_per_sec == pytest.approx(100_000)
    assert state.skipped == {}  # nothing skipped


def test_no_appends_is_a_known_zero() -> None:
    state = run(look(100, 0, 1000, 1_000_000), look(110, 0, 1000, 1_000_000))
    assert est(state) == Traffic(0.0, 0)


def test_growth_counts_new_bytes_even_when_the_history_had_smaller_records() -> None:
    # 1000 old records of 10 bytes, then 100 new ones of 1000 bytes in 10 s: 10 000 B/s, not the average
    state = run(look(0, 0, 1000, 10_000), look(10, 0, 1100, 110_000))
    assert est(state).bytes_in_per_sec == pytest.approx(10_000)


def test_retention_deleting_segments_uses_the_average_bytes_per_offset() -> None:
    # 1000 B per offset; during 10 s 500 offsets appended and the oldest 1500 deleted: size shrank
    state = run(look(0, 0, 2000, 2_000_000), look(10, 1500, 2500, 1_000_000))
    assert est(state).bytes_in_per_sec == pytest.approx(500 * 1000 / 10)


def test_a_start_offset_moved_by_delete_records_before_its_segments_go_is_not_inflated() -> None:
    # DeleteRecords moved the start to 900; the segments below stay (and in the size) until the broker's
    # next retention check: the newer look's average (5500 B per offset) would be 5.5 times too much
    state = run(look(0, 0, 1000, 1_000_000), look(10, 900, 1100, 1_100_000))
    assert est(state).bytes_in_per_sec == pytest.approx(100 * 1000 / 10)


def test_retention_deleting_everything_falls_back_to_the_older_look() -> None:
    assert bytes_in(PartitionLook(0, 100, 10_000), PartitionLook(300, 300, 0)) == pytest.approx(20_000)


def test_compaction_shrinking_the_log_gives_a_non_negative_lower_bound() -> None:
    # start unchanged, size fell (the cleaner removed old values) while 100 offsets were appended
    state = run(look(0, 0, 1000, 1_000_000), look(10, 0, 1100, 400_000))
    rate = est(state).bytes_in_per_sec
    assert rate is not None
    assert rate == pytest.approx(100 * 400_000 / 1100 / 10)
    assert 0 < rate <= 100 * 1000 / 10


def test_empty_logs_with_offsets_moving_are_unknown() -> None:
    # both looks hold no offsets (all deleted) while the end moved: no bytes per offset to go by
    state = run(look(0, 50, 50, 0), look(10, 80, 80, 0))
    assert est(state) == Traffic(None, None)


def test_an_empty_partition_without_appends_is_a_known_zero() -> None:
    assert est(run(look(0, 0, 0, 0), look(10, 0, 0, 0))) == Traffic(0.0, 0)


def test_a_recreated_topic_offsets_reset_drops_the_history() -> None:
    before = run(look(0, 0, 5000, 5_000_000), look(10, 0, 6000, 6_000_000))
    assert est(before).bytes_in_per_sec == pytest.approx(100_000)
    reset = fold(before, look(20, 0, 10, 10_000), W)
    assert est(reset) == Traffic(None, None)  # no rate across the reset, nor a negative one
    assert reset.skipped == {"recreated": 1}  # skipped and counted
    after = fold(reset, look(30, 0, 110, 110_000), W)
    assert est(after).bytes_in_per_sec == pytest.approx(10_000)  # the new topic's own rate


def test_a_recreated_topic_that_overtook_the_old_offsets_is_known_by_its_id() -> None:
    state = run(look(0, 0, 100, 100_000, topic_id="A"), look(10, 0, 5000, 5_000, topic_id="B"))
    assert est(state) == Traffic(None, None)
    assert state.skipped == {"recreated": 1}


def test_a_start_offset_going_back_is_a_reset() -> None:
    state = run(look(0, 500, 1000, 500_000), look(10, 0, 1200, 10_000))
    assert est(state) == Traffic(None, None)


def test_a_clock_set_back_gives_no_rate_and_becomes_the_baseline() -> None:
    state = run(look(100, 0, 1000, 1_000_000), look(110, 0, 2000, 2_000_000))
    back = fold(state, look(50, 0, 3000, 3_000_000), W)  # the clock went back 60 s
    assert est(back).bytes_in_per_sec == pytest.approx(100_000)  # kept, not absurd nor negative
    assert back.skipped == {"clockBack": 1}
    after = fold(back, look(60, 0, 3500, 3_500_000), W)  # measured from the new baseline
    alpha = 1 - math.exp(-10 / W)
    assert est(after).bytes_in_per_sec == pytest.approx(100_000 + alpha * (50_000 - 100_000))


def test_the_same_time_twice_gives_no_rate() -> None:
    state = run(look(100, 0, 1000, 1_000_000), look(100, 0, 2000, 2_000_000))
    assert est(state) == Traffic(None, None)
    assert state.skipped == {"clockBack": 1}


def test_looks_closer_than_the_minimum_interval_are_skipped() -> None:
    first = run(look(100, 0, 1000, 1_000_000))
    close = fold(first, look(100.2, 0, 1500, 1_500_000), W)
    assert close.partitions[P] == first.partitions[P]
    later = fold(close, look(110, 0, 2000, 2_000_000), W)  # measured from the first look
    assert est(later).bytes_in_per_sec == pytest.approx(100_000)
    assert later.skipped == {"tooClose": 1}  # counted, and kept by the later looks


def test_a_failed_read_is_ignored_for_that_partition() -> None:
    first = run(look(100, 0, 1000, 1_000_000))
    state = first
    for bad in (look(105, -1, -1, 0), look(105, 10, 5, 100), look(105, 0, 1000, -1)):
        assert fold(first, bad, W).partitions[P] == first.partitions[P]
        state = fold(state, bad, W)
    assert state.skipped == {"failedRead": 3}


def test_weighted_rate_follows_the_window() -> None:
    state = run(look(0, 0, 0, 0), look(10, 0, 100, 100_000), look(30, 0, 300, 500_000))
    alpha = 1 - math.exp(-20 / W)
    assert est(state).bytes_in_per_sec == pytest.approx(10_000 + alpha * (20_000 - 10_000))


def test_a_partition_missing_from_a_look_is_kept_for_one_window_then_forgotten() -> None:
    state = run(look(0, 0, 100, 100), look(10, 0, 200, 200))
    other = {("u", 0): PartitionLook(0, 0, 0)}
    kept = fold(state, TrafficLook(30, other), W)
    assert kept.partitions[P] == state.partitions[P]
    gone = fold(kept, TrafficLook(80, other), W)
    assert P not in gone.partitions


def test_read_fanout_counts_the_groups_whose_offsets_advanced() -> None:
    g0 = {"a": {P: 10}, "b": {P: 10}, "idle": {P: 10}}
    g1 = {"a": {P: 50}, "b": {P: 20}, "idle": {P: 10}}
    state = run(look(0, 0, 100, 100, g0), look(10, 0, 200, 200, g1))
    assert est(state).read_fanout == 2


def test_a_groups_first_commit_counts_only_when_the_group_was_read_before() -> None:
    g0 = {"a": {}, "other": {("u", 0): 3}}
    g1 = {"a": {P: 7}, "late": {P: 7}, "other": {("u", 0): 3}}
    state = run(look(0, 0, 100, 100, g0), look(10, 0, 200, 200, g1))
    assert est(state).read_fanout == 1  # "a" began reading; "late" was never read before: no baseline


def test_a_committed_offset_going_back_is_not_reading() -> None:
    state = run(look(0, 0, 100, 100, {"a": {P: 90}}), look(10, 0, 200, 200, {"a": {P: 0}}))
    assert est(state).read_fanout == 0
    assert state.skipped == {"groupBack": 1}


def test_fanout_forgets_groups_that_stopped_advancing_for_a_window() -> None:
    state = run(
        look(0, 0, 100, 100, {"a": {P: 1}}),
        look(10, 0, 100, 100, {"a": {P: 5}}),
        look(40, 0, 100, 100, {"a": {P: 5}}),
    )
    assert est(state).read_fanout == 1
    later = fold(state, look(75, 0, 100, 100, {"a": {P: 5}}), W)
    assert est(later).read_fanout == 0


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="window_s"):
        fold(TrafficState(), look(0, 0, 0, 0), 0)


def test_broker_totals_sum_the_known_estimates_of_the_partitions_each_broker_leads() -> None:
    traffic = {
        ("t", 0): Traffic(100.0, 2),
        ("t", 1): Traffic(50.0, 1),
        ("t", 2): Traffic(None, None),
        ("t", 3): Traffic(7.0, 0),
    }
    leaders = {("t", 0): 1, ("t", 1): 1, ("t", 2): 2, ("t", 3): None}
    assert broker_totals(traffic, leaders) == {1: Traffic(150.0, 3)}


def test_with_traffic_fills_known_estimates_and_leaves_unknown_absent() -> None:
    from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState

    parts = tuple(PartitionState("t", n, (1,), ("/d",), 1, (1,), 10) for n in range(3))
    snap = ClusterSnapshot((Broker(1, "r", (LogDir("/d"),)),), parts, "c")
    out = with_traffic(snap, {("t", 0): Traffic(5.0, 1), ("t", 1): Traffic(None, None)})
    docs = out.to_json()["partitions"]
    assert (docs[0]["bytesInPerSec"], docs[0]["readFanout"]) == (5.0, 1)
    assert all("bytesInPerSec" not in d and "readFanout" not in d for d in docs[1:])
    assert out.cluster_id == "c" and out.brokers == snap.brokers


_looks = st.lists(
    st.tuples(
        st.floats(-1e6, 1e6, allow_nan=False),
        st.integers(-5, 10**6),
        st.integers(-5, 10**6),
        st.integers(-5, 10**9),
        st.sampled_from([None, "A", "B"]),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_looks, st.floats(1, 3600))
def test_no_sequence_of_looks_gives_a_negative_or_infinite_rate(raw, window) -> None:
    state = TrafficState()
    for at, start, end, size, tid in raw:
        state = fold(state, look(at, start, end, size, topic_id=tid), window)
        t = estimates(state, window).get(P, Traffic(None, None))
        if t.bytes_in_per_sec is not None:
            assert math.isfinite(t.bytes_in_per_sec)
            assert t.bytes_in_per_sec >= 0
        assert t.read_fanout is None or t.read_fanout >= 0
