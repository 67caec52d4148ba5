"""A Parquet snapshot's partitions read column by column (spark/columnar.py) are what parsing each row gives,
never another answer: for any snapshot the parser accepts (traffic fields known or not, dirs unknown or
``any``, leaders unknown, ISRs short, brokers not alive), the columnar read takes every row and gives the
same partitions; with one cell spoiled (an unknown broker or dir, a broker twice, a leader or ISR member
not a replica, a negative size or number, NaN, an illegal topic, a partition twice, a null, another Arrow
type) it gives nothing whenever the row parse refuses the file, so the error named is the row parse's, and
``read_snapshot`` answers the same either way."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.unit.model.test_snapshot_text import snapshots

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.spark import columnar, io


def parquet_round_trip(table: pa.Table) -> pa.Table:
    """``table`` written as Parquet and read back (list items come back named ``element``)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return pq.read_table(pa.BufferReader(sink.getvalue()))


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_every_valid_row_is_read_as_the_row_parse_reads_it(snap: ClusterSnapshot) -> None:
    table = io.partitions_table(snap.partitions)
    for read in (table, parquet_round_trip(table)):
        got = columnar.partitions(read, snap.brokers)
        assert got == snap.partitions
        assert got is not None
        for mine, theirs in zip(got, snap.partitions, strict=True):
            for f in ("leader", "bytes_in_per_sec", "read_fanout", "untiered_bytes"):
                assert type(getattr(mine, f)) is type(getattr(theirs, f))


def _set(table: pa.Table, name: str, row: int, value: Any, kind: Any = None) -> pa.Table:
    """``table`` with cell (``name``, ``row``) set to ``value`` (the column cast to ``kind`` when given; an
    optional column the table lacks added, null elsewhere)."""
    table = _add_missing(table, name)
    values = table.column(name).to_pylist()
    if row < len(values):
        values[row] = value
    field = table.schema.field(name)
    return table.set_column(table.column_names.index(name), name, pa.array(values, kind or field.type))


def _item(table: pa.Table, name: str, row: int, fn: Callable[[list[Any]], list[Any]]) -> pa.Table:
    values = table.column(name).to_pylist()
    if row < len(values) and values[row] is not None:
        values[row] = fn(list(values[row]))
    return table.set_column(
        table.column_names.index(name), name, pa.array(values, table.schema.field(name).type)
    )


SPOILS: dict[str, Callable[[pa.Table, int], pa.Table]] = {
    "unknown broker": lambda t, r: _item(t, "replicas", r, lambda v: [9, *v[1:]]),
    "broker twice": lambda t, r: _item(t, "replicas", r, lambda v: [*v, v[0]]),
    "no replica": lambda t, r: _item(t, "replicas", r, lambda v: []),
    "null replica": lambda t, r: _item(t, "replicas", r, lambda v: [None, *v[1:]]),
    "null replicas": lambda t, r: _set(t, "replicas", r, None),
    "dir of another broker": lambda t, r: _item(t, "dirs", r, lambda v: ["/d9/a", *v[1:]]),
    "dir of a neighbour": lambda t, r: _item(
        t, "dirs", r, lambda v: ["/d1/a" if v[0] != "/d1/a" else "/d2/a", *v[1:]]
    ),
    "one dir more": lambda t, r: _item(t, "dirs", r, lambda v: [*v, None]),
    "null dirs": lambda t, r: _set(t, "dirs", r, None),
    "any dir": lambda t, r: _item(t, "dirs", r, lambda v: ["any", *v[1:]]),  # (valid: unknown)
    "leader -1": lambda t, r: _set(t, "leader", r, -1),  # (valid: unknown)
    "leader not a replica": lambda t, r: _set(t, "leader", r, 4),
    "leader unknown": lambda t, r: _set(t, "leader", r, 9),
    "leader -5": lambda t, r: _set(t, "leader", r, -5),
    "isr not a replica": lambda t, r: _item(t, "isr", r, lambda v: [*v, 4]),
    "isr twice": lambda t, r: _item(t, "isr", r, lambda v: [*v, *v]),
    "null isr": lambda t, r: _set(t, "isr", r, None),
    "negative size": lambda t, r: _set(t, "size", r, -1),
    "null size": lambda t, r: _set(t, "size", r, None),
    "negative number": lambda t, r: _set(t, "partition", r, -1),
    "null number": lambda t, r: _set(t, "partition", r, None),
    "partition twice": lambda t, r: _set(
        _set(t, "partition", r, t.column("partition")[0].as_py()), "topic", r, t.column("topic")[0].as_py()
    ),
    "illegal topic": lambda t, r: _set(t, "topic", r, "a/b"),
    "empty topic": lambda t, r: _set(t, "topic", r, ""),
    "null topic": lambda t, r: _set(t, "topic", r, None),
    "NaN rate": lambda t, r: _set(t, "bytes_in_per_sec", r, math.nan, pa.float64()),
    "infinite rate": lambda t, r: _set(t, "bytes_in_per_sec", r, math.inf, pa.float64()),
    "negative rate": lambda t, r: _set(t, "bytes_in_per_sec", r, -1.0, pa.float64()),
    "negative fanout": lambda t, r: _set(t, "read_fanout", r, -1, pa.int32()),
    "negative untiered": lambda t, r: _set(t, "untiered_bytes", r, -1, pa.int64()),
    "numbers as int64": lambda t, r: t.set_column(1, "partition", t.column("partition").cast(pa.int64())),
    "replicas as int64": lambda t, r: t.set_column(
        2, "replicas", t.column("replicas").cast(pa.list_(pa.int64()))
    ),
    "topics as large strings": lambda t, r: t.set_column(
        0, "topic", t.column("topic").cast(pa.large_string())
    ),
}


def _add_missing(table: pa.Table, name: str) -> pa.Table:
    """``table`` with a null column ``name`` when it lacks it (an optional column spoiled needs one)."""
    if name in table.column_names or name not in io.TRAFFIC_COLUMNS:
        return table
    kinds = dict(zip(io.TRAFFIC_COLUMNS, io.traffic_types(), strict=True))
    return table.append_column(name, pa.nulls(table.num_rows, kinds[name]))


def _read(snap: ClusterSnapshot, table: pa.Table, columns: bool) -> ClusterSnapshot | str:
    """``read_snapshot`` of ``snap``'s brokers with ``table`` as its partitions: the snapshot or the
    error's text; ``columns`` False: the columnar read left out (each row parsed)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        io.write_parquet(replace(snap, partitions=()), d)
        pq.write_table(table, d / "partitions.parquet")
        taken = columnar.partitions
        if not columns:
            columnar.partitions = lambda *_: None  # type: ignore[assignment]
        try:
            return io.read_snapshot(d)
        except BadInputError as e:
            return str(e).replace(tmp, "DIR")
        finally:
            columnar.partitions = taken  # type: ignore[assignment]


@settings(max_examples=400, deadline=None)
@given(snapshots(), st.sampled_from(sorted(SPOILS)), st.integers(0, 11))
def test_a_spoiled_cell_is_left_to_the_row_parse(snap: ClusterSnapshot, spoil: str, row: int) -> None:
    assume(snap.partitions)
    table = io.partitions_table(snap.partitions)
    spoiled = SPOILS[spoil](table, min(row, table.num_rows - 1))
    rows = _read(snap, spoiled, columns=False)
    got = columnar.partitions(spoiled, snap.brokers)
    if isinstance(rows, str):
        assert got is None, (spoil, rows)
    elif got is not None:
        assert got == rows.partitions
    assert _read(snap, spoiled, columns=True) == rows


def test_a_clean_table_is_read_by_columns_and_the_snapshot_is_the_files() -> None:
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [
                {"id": b, "rack": f"r{b}", "logDirs": [{"path": f"/d{b}/a"}, {"path": f"/d{b}/b"}]}
                for b in (1, 2, 3)
            ],
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [2, 1], "logDirs": ["/d2/b", None], "leader": 2,
                 "isr": [2], "sizeBytes": 10, "bytesInPerSec": 7.5, "readFanout": 2},
                {"topic": "u", "partition": 3, "replicas": [3], "logDirs": ["any"], "leader": -1, "isr": []},
            ],
            "unreachableBrokers": [3],
        }
    )  # fmt: skip
    table = io.partitions_table(snap.partitions)
    assert columnar.partitions(table, snap.brokers) == snap.partitions
    assert _read(snap, table, columns=True) == snap
    written = SPOILS["leader -1"](SPOILS["any dir"](table, 0), 0)  # as another tool may write them
    rows = _read(snap, written, columns=False)
    assert isinstance(rows, ClusterSnapshot) and rows.partitions[0].log_dirs == (None, None)
    assert rows.partitions[0].leader is None
    assert columnar.partitions(written, snap.brokers) == rows.partitions
    assert columnar.partitions(SPOILS["unknown broker"](table, 1), snap.brokers) is None
    assert columnar.partitions(SPOILS["leader not a replica"](table, 1), snap.brokers) is None
    assert columnar.partitions(SPOILS["NaN rate"](table, 1), snap.brokers) is None
    error = _read(snap, SPOILS["leader not a replica"](table, 1), columns=True)
    assert isinstance(error, str) and "leader" in error and "partitions.parquet" in error, error


def test_data_the_columnar_checks_cannot_take_is_left_to_the_row_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [{"id": 1, "rack": "r1", "logDirs": [{"path": "/d1/a"}]}],
            "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "logDirs": ["/d1/a"]}],
        }
    )
    table = io.partitions_table(snap.partitions)
    for error in (pa.ArrowInvalid("odd"), ValueError("odd"), OverflowError("odd")):

        def refuse(*_: object, error: Exception = error) -> None:
            raise error

        monkeypatch.setattr(columnar, "partitions", refuse)
        assert _read(snap, table, columns=True) == snap  # (read row by row)
        error_text = _read(snap, SPOILS["unknown broker"](table, 0), columns=True)
        assert isinstance(error_text, str) and "broker 9" in error_text, error_text
