"""Maintenance windows: when an execution may submit new moves (``KafkaCluster.spec.execution``).

``spec.execution.windows`` is a list of ``{days, start, end, timeZone}``; absent or empty means always.
Outside every window no new move is submitted (moves in flight finish: nothing is reverted); an
execution one of whose intents sets ``spec.ignoreWindows`` runs at any time, and so does a heal while
``spec.selfHealing.ignoreWindows`` is true (the default: a dead broker does not wait for Saturday).

A window is wall-clock time in its IANA zone (``zoneinfo``): on each of its ``days`` it opens at
``start`` and closes at ``end``; an ``end`` at or before ``start`` closes the next day (a window crossing
midnight, e.g. 22:00-06:00 on Sat opens Saturday 22:00 and closes Sunday 06:00). Being wall-clock time,
a window keeps its hours across daylight-saving changes: on the night clocks go forward it is an hour
shorter, on the night they go back an hour longer; a start inside the skipped hour opens after the clocks
jump, one hour later by the clock (a 02:30 start opens at 03:30). ``start == end`` is refused (it
would mean nothing or everything).

Pure: the time is passed in (epoch seconds); no clock is read here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from .crd_parts import Schema, arr_schema, int_schema, str_schema
from .errors import BadInputError
from .jsonio import as_list, brief
from .spec_fields import custom, leaf, object_schema, parse_object
from .units import binary_bytes

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # datetime.weekday() order
HHMM = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
MAX_WINDOWS = 50
LOOKAHEAD_DAYS = 8  # a week and a day: every window of every day is met once


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    DESCRIPTION: ClassVar[str] = (
        "A maintenance window: on each of days, from start to end (wall-clock time in timeZone); an end "
        "at or before start closes the next day (a window crossing midnight)."
    )

    days: tuple[str, ...] = leaf(
        "days",
        arr_schema(
            "The days it opens on (Mon..Sun); absent = every day.",
            str_schema("A day.", enum=list(DAYS)),
            minItems=1,
            maxItems=7,
            **{"x-kubernetes-list-type": "set"},
            default=list(DAYS),
        ),
    )
    start: str = leaf(
        "start", str_schema('Opening time, "HH:MM" (24 h).', pattern=HHMM, maxLength=5), required=True
    )
    end: str = leaf(
        "end",
        str_schema(
            'Closing time, "HH:MM" (24 h); at or before start: the next day.', pattern=HHMM, maxLength=5
        ),
        required=True,
    )
    time_zone: str = leaf(
        "timeZone",
        str_schema(
            'IANA time zone of start and end, e.g. "Europe/Paris".', minLength=1, maxLength=64, default="UTC"
        ),
    )

    NO_LENGTH: ClassVar[str] = "a window must last (an end before start crosses midnight)"

    def check(self, where: str) -> None:
        if self.start == self.end:
            raise BadInputError(f"start and end are both {self.start}: {self.NO_LENGTH}", f"{where}.end")
        zone(self.time_zone, f"{where}.timeZone")

    @staticmethod
    def schema() -> Schema:
        """The window's schema with its CEL rule: ``start == end`` is refused by the apiserver too (the
        parser's check; the time zone's is the parser's alone)."""
        s = object_schema(Window)
        s["x-kubernetes-validations"] = [
            {
                "rule": "self.start != self.end",
                "message": f"start and end must differ: {Window.NO_LENGTH}",
                "fieldPath": ".end",
            }
        ]
        return s

    @property
    def minutes(self) -> tuple[int, int]:
        """Start and end as minutes after midnight."""
        return _minutes(self.start), _minutes(self.end)

    def spans(self, around: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
        """The window's openings (start, end; aware datetimes) from the day before ``around`` (aware) to
        ``LOOKAHEAD_DAYS`` after, in its own zone."""
        tz = zone(self.time_zone, "timeZone")
        local = around.astimezone(tz)
        first = local.date() - dt.timedelta(days=1)
        start, end = self.minutes
        out = []
        for n in range(LOOKAHEAD_DAYS + 2):
            day = first + dt.timedelta(days=n)
            if DAYS[day.weekday()] not in self.days:
                continue
            opens = _at(day, start, tz)
            closes = _at(day + dt.timedelta(days=1 if end <= start else 0), end, tz)
            out.append((opens, closes))
        return out


def _minutes(hhmm: str) -> int:
    hours, minutes = hhmm.split(":")
    return int(hours) * 60 + int(minutes)


def _at(day: dt.date, minutes: int, tz: ZoneInfo) -> dt.datetime:
    """Wall-clock ``minutes`` after midnight of ``day`` in ``tz``, as an aware instant (PEP 495, fold 0):
    a time the clocks skip (spring forward) is read with the offset before the jump, one hour later by
    the clock (02:30 opens at 03:30); a time they pass twice (fall back) is the first of the two."""
    return dt.datetime(day.year, day.month, day.day, minutes // 60, minutes % 60, tzinfo=tz)


def zone(name: str, where: str) -> ZoneInfo:
    """The IANA zone ``name``; bad input naming ``where`` when there is none of that name."""
    try:
        if name not in _ZONES:
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInputError(
            f"unknown time zone {brief(name)} (an IANA name, e.g. Europe/Paris)", where
        ) from None


_ZONES = frozenset(available_timezones()) | {"UTC"}


def _windows(raw: object, where: str) -> tuple[Window, ...]:
    items = as_list(raw, where)
    if len(items) > MAX_WINDOWS:
        raise BadInputError(f"at most {MAX_WINDOWS} windows, got {len(items)}", where)
    out = []
    for i, item in enumerate(items):
        w = parse_object(Window, item, f"{where}[{i}]")
        w.check(f"{where}[{i}]")
        out.append(w)
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionSpec:
    DESCRIPTION: ClassVar[str] = (
        "When executions may submit new moves. Outside every window no new move is submitted; moves in "
        "flight finish (nothing is reverted)."
    )

    windows: tuple[Window, ...] | None = custom(
        "windows",
        arr_schema(
            "Maintenance windows; absent or empty = always. An execution one of whose intents sets "
            "spec.ignoreWindows runs at any time, and heals too while selfHealing.ignoreWindows is true.",
            Window.schema(),
            maxItems=MAX_WINDOWS,
        ),
        _windows,
    )
    outside_window_bytes_per_second: int | None = leaf(
        "outsideWindowBytesPerSecond",
        int_schema(
            "The replication throttle (bytes/s per broker) of the moves in flight while every window is "
            "closed: they finish at this rate instead of their own; absent = at their own rate.",
            1,
            int64=True,
        ),
    )


@dataclass(frozen=True, slots=True)
class Gate:
    """Whether new moves may be submitted at an instant, and if not, when they next may (None: never,
    which a valid list of windows cannot give)."""

    open: bool
    next_open: float | None = None  # epoch seconds
    cap: int | None = None  # the throttle of the moves in flight while closed (outsideWindowBytesPerSecond)

    def says(self) -> str:
        """What the status says while closed."""
        if self.open:
            return ""
        when = (
            dt.datetime.fromtimestamp(self.next_open, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            if self.next_open is not None
            else "never"
        )
        return (
            f"outside the maintenance windows (spec.execution.windows): no new move is submitted until the "
            f"next one opens at {when}; moves in flight finish"
            + (f", throttled to {binary_bytes(self.cap)}/s per broker" if self.cap is not None else "")
        )


def gate(windows: Sequence[Window] | None, now: float) -> Gate:
    """Open when ``windows`` is empty or one of them holds ``now`` (epoch seconds); else closed, with the
    next opening."""
    if not windows:
        return Gate(True)
    at = dt.datetime.fromtimestamp(now, dt.UTC)
    upcoming: list[dt.datetime] = []
    for w in windows:
        for opens, closes in w.spans(at):
            if opens <= at < closes:
                return Gate(True)
            if opens > at:
                upcoming.append(opens)
    return Gate(False, min(upcoming).timestamp() if upcoming else None)


MAX_FINISH_WEEKS = 520  # how far ahead ``finish_at`` walks the windows (ten years) before giving up


def finish_at(windows: Sequence[Window] | None, now: float, work_s: float) -> float | None:
    """When ``work_s`` seconds of work that runs only inside ``windows`` ends, from ``now`` (epoch seconds):
    ``now + work_s`` without windows; the open time of overlapping windows counted once. None when it would
    take longer than ``MAX_FINISH_WEEKS`` (a few minutes a week against years of work)."""
    if not windows:
        return now + work_s
    left = max(work_s, 0.0)
    at = dt.datetime.fromtimestamp(now, dt.UTC)
    weeks = 0
    while weeks < MAX_FINISH_WEEKS:
        horizon = at + dt.timedelta(days=7)
        spans = sorted(  # in UTC: the difference of two times of one zone is wall-clock time (PEP 495)
            (max(o.astimezone(dt.UTC), at), min(c.astimezone(dt.UTC), horizon))
            for w in windows
            for o, c in w.spans(at)
            if c > at and o < horizon
        )
        week_s = 0.0
        for opens, closes in _merged(spans):
            open_s = (closes - opens).total_seconds()
            if left <= open_s:
                return (opens + dt.timedelta(seconds=left)).timestamp()
            left -= open_s
            week_s += open_s
        at, weeks = horizon, weeks + 1
        whole = int(left // week_s) - 1 if week_s > 0 else 0  # the weeks between repeat this one's hours
        if weeks + whole >= MAX_FINISH_WEEKS:
            return None
        if whole > 0:
            at, weeks, left = at + dt.timedelta(days=7 * whole), weeks + whole, left - whole * week_s
    return None


def _merged(spans: list[tuple[dt.datetime, dt.datetime]]) -> list[tuple[dt.datetime, dt.datetime]]:
    """Sorted spans with those that overlap or touch joined."""
    out: list[tuple[dt.datetime, dt.datetime]] = []
    for opens, closes in spans:
        if opens >= closes:
            continue
        if out and opens <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], closes))
        else:
            out.append((opens, closes))
    return out


__all__ = ["DAYS", "ExecutionSpec", "Gate", "Window", "finish_at", "gate", "zone"]
