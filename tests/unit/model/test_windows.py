"""Maintenance windows (model/windows.py): parsing, bad input, open or closed at an instant, the next
opening, windows crossing midnight and daylight-saving changes. Times are passed in: no clock."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.windows import gate


def spec(*windows: dict[str, Any]) -> ClusterSpec:
    return ClusterSpec.parse({"bootstrapServers": "k:9092", "execution": {"windows": list(windows)}})


def at(text: str, zone: str = "UTC") -> float:
    """Epoch seconds of a wall-clock time in ``zone`` ("2026-12-05 21:00")."""
    from zoneinfo import ZoneInfo

    return dt.datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


def test_absent_or_empty_windows_are_always_open() -> None:
    assert ClusterSpec.parse({"bootstrapServers": "k:9092"}).execution is None
    assert gate(None, 0).open and gate((), 0).open
    empty = spec()
    assert empty.execution is not None and gate(empty.execution.windows, 0).open


def test_a_window_opens_on_its_days_from_start_to_end_in_its_zone() -> None:
    w = spec({"days": ["Mon", "Tue"], "start": "09:00", "end": "17:30", "timeZone": "Europe/Paris"})
    assert w.execution is not None
    windows = w.execution.windows
    # 2026-12-07 is a Monday
    assert gate(windows, at("2026-12-07 09:00", "Europe/Paris")).open
    assert gate(windows, at("2026-12-07 17:29", "Europe/Paris")).open
    shut = gate(windows, at("2026-12-07 17:30", "Europe/Paris"))
    assert not shut.open and shut.next_open == at("2026-12-08 09:00", "Europe/Paris")
    wednesday = gate(windows, at("2026-12-09 10:00", "Europe/Paris"))
    assert not wednesday.open and wednesday.next_open == at("2026-12-14 09:00", "Europe/Paris")  # Monday
    assert "next one opens at 2026-12-14T08:00:00Z" in wednesday.says()  # (UTC in the status)
    assert "moves in flight finish" in wednesday.says()


def test_a_window_crossing_midnight_closes_the_next_day() -> None:
    w = spec({"days": ["Sat"], "start": "22:00", "end": "06:00", "timeZone": "UTC"})
    assert w.execution is not None
    windows = w.execution.windows
    # 2026-12-05 is a Saturday
    assert not gate(windows, at("2026-12-05 21:59")).open
    assert gate(windows, at("2026-12-05 22:00")).open
    assert gate(windows, at("2026-12-06 05:59")).open  # Sunday morning: Saturday's window
    assert not gate(windows, at("2026-12-06 06:00")).open
    assert not gate(windows, at("2026-12-06 23:00")).open  # Sunday night: no window of its own


def test_daylight_saving_keeps_the_wall_clock_hours() -> None:
    """Europe/Paris: clocks go forward at 02:00 on 2026-03-29 (02:00-03:00 does not exist) and back at
    03:00 on 2026-10-25 (02:00-03:00 happens twice). A 01:00-04:00 window is two hours long the first
    night and four the second; a 02:30 start opens when the clocks read 03:30 on the first night."""
    paris = "Europe/Paris"
    w = spec({"start": "01:00", "end": "04:00", "timeZone": paris})
    assert w.execution is not None
    windows = w.execution.windows
    spring = dt.datetime(2026, 3, 29, 0, 30, tzinfo=dt.UTC).timestamp()  # 01:30 CET
    assert gate(windows, spring).open
    assert gate(windows, spring + 3600).open  # 03:30 CEST
    assert not gate(windows, spring + 2 * 3600).open  # 04:30 CEST: two hours after opening, closed
    autumn = dt.datetime(2026, 10, 24, 23, 30, tzinfo=dt.UTC).timestamp()  # 01:30 CEST
    assert all(gate(windows, autumn + h * 3600).open for h in range(3))  # 01:30, 02:30, 02:30 (CET)
    assert not gate(windows, autumn + 4 * 3600).open  # 04:30 CET
    skipped = spec({"start": "02:30", "end": "05:00", "timeZone": paris})
    assert skipped.execution is not None
    closed = gate(skipped.execution.windows, dt.datetime(2026, 3, 29, 0, 0, tzinfo=dt.UTC).timestamp())
    assert not closed.open
    assert closed.next_open == dt.datetime(2026, 3, 29, 1, 30, tzinfo=dt.UTC).timestamp()  # 03:30 CEST


def test_several_windows_the_next_opening_is_the_earliest() -> None:
    w = spec(
        {"days": ["Sun"], "start": "01:00", "end": "05:00"},
        {"days": ["Wed"], "start": "20:00", "end": "21:00", "timeZone": "America/New_York"},
    )
    assert w.execution is not None
    closed = gate(w.execution.windows, at("2026-12-08 12:00"))  # a Tuesday
    assert not closed.open and closed.next_open == at("2026-12-09 20:00", "America/New_York")


@pytest.mark.parametrize(
    ("window", "says"),
    [
        ({"start": "09:00", "end": "09:00"}, "spec.execution.windows[0].end: start and end are both 09:00"),
        ({"days": ["Monday"], "start": "09:00", "end": "10:00"}, "spec.execution.windows[0].days[0]"),
        ({"days": [], "start": "09:00", "end": "10:00"}, "spec.execution.windows[0].days"),
        ({"start": "9:00", "end": "10:00"}, "spec.execution.windows[0].start"),
        ({"start": "24:00", "end": "10:00"}, "spec.execution.windows[0].start"),
        ({"start": "09:00"}, "spec.execution.windows[0]: missing required field 'end'"),
        ({"start": "09:00", "end": "10:00", "timeZone": "Mars/Olympus"}, "unknown time zone"),
        ({"start": "09:00", "end": "10:00", "tz": "UTC"}, "spec.execution.windows[0]"),
    ],
)
def test_bad_windows_are_refused_naming_the_field(window: dict[str, Any], says: str) -> None:
    with pytest.raises(BadInputError) as e:
        spec(window)
    assert says in str(e.value), str(e.value)


def test_too_many_windows_are_refused() -> None:
    with pytest.raises(BadInputError, match="at most 50 windows"):
        spec(*({"start": "09:00", "end": "10:00"} for _ in range(51)))


def test_outside_the_windows_the_moves_in_flight_may_be_capped_and_the_status_says_so() -> None:
    from kafka_placement.execution.window_cap import capped
    from kafka_placement.kafka.throttles import Move
    from kafka_placement.reconcile.decide import window_gate
    from kafka_placement.reconcile.inputs import limits_of

    capped_spec = ClusterSpec.parse(
        {
            "bootstrapServers": "k:9092",
            "throttleBytesPerSecond": 5_000_000,
            "execution": {
                "windows": [{"start": "01:00", "end": "02:00"}],
                "outsideWindowBytesPerSecond": 100_000,
            },
        }
    )
    assert limits_of(capped_spec).outside_window == 100_000 and limits_of(spec()).outside_window is None
    closed = window_gate(capped_spec.execution, None, [], at("2026-12-14 12:00"))
    assert not closed.open and closed.cap == 100_000
    assert closed.says().endswith("moves in flight finish, throttled to 97.7 KiB/s per broker")
    assert window_gate(capped_spec.execution, None, [], at("2026-12-14 01:30")).cap is None  # open
    moves = [
        Move("t", 0, (1, 2), (2, 3), 5_000_000),
        Move("t", 1, (1, 2), (2, 4)),
        Move("t", 2, (1,), (3,), 50),
    ]
    assert [m.rate for m in capped(moves, 100_000)] == [100_000, 100_000, 50]  # the unthrottled one too
    assert capped(moves, None) == moves
    with pytest.raises(BadInputError, match=r"spec.execution.outsideWindowBytesPerSecond: must be >= 1"):
        ClusterSpec.parse({"bootstrapServers": "k:9092", "execution": {"outsideWindowBytesPerSecond": 0}})


def test_the_eta_of_an_execution_that_waits_for_windows_counts_only_their_open_time() -> None:
    from kafka_placement.model.windows import finish_at

    sat_night = spec({"days": ["Sat"], "start": "22:00", "end": "02:00"})  # 4 h a week, across midnight
    windows = sat_night.execution.windows if sat_night.execution else None
    monday = at("2026-12-14 12:00")
    assert finish_at(windows, monday, 3600) == at("2026-12-19 23:00")  # waits for Saturday
    assert finish_at(windows, monday, 5 * 3600) == at("2026-12-26 23:00")  # 4 h, then 1 h a week later
    assert finish_at(windows, at("2026-12-19 23:00"), 3600) == at("2026-12-20 00:00")  # inside one now
    assert finish_at(windows, monday, 100 * 4 * 3600 + 3600) == at("2028-11-18 23:00")  # weeks skipped whole
    assert finish_at(windows, monday, 1e12) is None  # beyond ten years: no ETA
    assert finish_at(None, 100.0, 5) == 105.0 and finish_at((), 100.0, 0) == 100.0
    overlapping = spec({"start": "10:00", "end": "12:00"}, {"start": "11:00", "end": "13:00"})
    both = overlapping.execution.windows if overlapping.execution else None
    assert finish_at(both, at("2026-12-14 10:00"), 3 * 3600) == at("2026-12-14 13:00")  # counted once
    assert finish_at(both, at("2026-12-14 10:00"), 3 * 3600 + 60) == at("2026-12-15 10:01")
    # the night clocks go back in Paris (2026-10-25 03:00 -> 02:00) a 01:00-04:00 window lasts 4 h
    paris = spec({"days": ["Sun"], "start": "01:00", "end": "04:00", "timeZone": "Europe/Paris"})
    fall = paris.execution.windows if paris.execution else None
    assert finish_at(fall, at("2026-10-24 12:00"), 4 * 3600) == at("2026-10-25 04:00", "Europe/Paris")


def test_a_window_with_start_equal_to_end_is_refused_by_the_crd_schema_too() -> None:
    """The parser's ``start == end`` check is also the CRD's CEL rule on the window, naming ``end``: a
    KafkaCluster the apiserver stored with such a window could not be reconciled, nor its intents deleted
    (their cordons wait for the cluster's reconcile)."""
    from kafka_placement.model.crd_schema import crd_documents

    (cluster,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "KafkaCluster"]
    spec_schema = cluster["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    window = spec_schema["properties"]["execution"]["properties"]["windows"]["items"]
    assert window["x-kubernetes-validations"] == [
        {
            "rule": "self.start != self.end",
            "message": "start and end must differ: a window must last (an end before start crosses midnight)",
            "fieldPath": ".end",
        }
    ]
    # the rule's cost is bounded: "HH:MM" strings
    assert window["properties"]["start"]["maxLength"] == window["properties"]["end"]["maxLength"] == 5
