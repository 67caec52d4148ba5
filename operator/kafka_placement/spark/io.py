"""Snapshot and plan files for large clusters: JSON (the contract) or Parquet.

A Parquet snapshot is a directory holding ``brokers.json`` (the snapshot's brokers, small) and
``partitions.parquet`` (one row per partition: topic, partition, replicas, dirs, leader, isr, size),
which Spark or pyarrow read column-wise without parsing a multi-gigabyte JSON document; a snapshot with
traffic adds the nullable columns ``bytes_in_per_sec`` and ``read_fanout`` (null: unknown), one with
KIP-1023's not-yet-tiered bytes the nullable ``untiered_bytes``; the Spark engine's tasks get the same
columns. A Parquet plan
is a file whose name ends in ``.parquet``: one row per plan entry (topic, partition, replicas,
log_dirs), the same content as the JSON plan and validated the same way when read.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

from ..model.documents import load_json, read_input_text
from ..model.errors import BadInputError
from ..model.jsonio import clip
from ..model.plan import PLAN_VERSION, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState
from . import columnar

PARTITION_COLUMNS = ("topic", "partition", "replicas", "dirs", "leader", "isr", "size")
# optional columns: a snapshot file's and the Spark tasks' rows carry those some partition has
TRAFFIC_COLUMNS = ("bytes_in_per_sec", "read_fanout", "untiered_bytes")


def partitions_schema() -> Any:
    """The Arrow schema of ``partitions_table``."""
    import pyarrow as pa

    ints = pa.list_(pa.int32())
    types = (pa.string(), pa.int32(), ints, pa.list_(pa.string()), pa.int32(), ints, pa.int64())
    return pa.schema(list(zip(PARTITION_COLUMNS, types, strict=True)))


def traffic_types() -> tuple[Any, ...]:
    """The Arrow types of ``TRAFFIC_COLUMNS`` (nullable)."""
    import pyarrow as pa

    return (pa.float64(), pa.int32(), pa.int64())


def arrow_table(columns: Iterable[Sequence[Any]], schema: Any) -> Any:
    """Columns of Python values, in ``schema``'s order, as an Arrow table of that schema."""
    import pyarrow as pa

    return pa.table([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def traffic_present(parts: Sequence[PartitionState]) -> tuple[str, ...]:
    """The optional columns (``TRAFFIC_COLUMNS``) some partition has a value of."""
    return tuple(c for c in TRAFFIC_COLUMNS if any(getattr(p, c) is not None for p in parts))


def partitions_table(parts: Sequence[PartitionState], traffic: tuple[str, ...] | None = None) -> Any:
    """The partitions as an Arrow table: one row each (an unknown dir or leader is null), and each optional
    column of ``TRAFFIC_COLUMNS`` that some partition has a value of (null where it has none; ``traffic``:
    those columns, as ``traffic_present`` names them, for a table that is one part of a larger one): a
    snapshot file's columns, and the Spark tasks' rows (whose tallies then count what the driver's would)."""
    import pyarrow as pa

    columns = (
        [p.topic for p in parts],
        [p.partition for p in parts],
        [p.replicas for p in parts],
        [p.log_dirs for p in parts],
        [p.leader for p in parts],
        [p.isr for p in parts],
        [p.size_bytes for p in parts],
    )
    table = arrow_table(columns, partitions_schema())
    present = traffic_present(parts) if traffic is None else traffic
    for name, kind in zip(TRAFFIC_COLUMNS, traffic_types(), strict=True):
        if name in present:
            table = table.append_column(name, pa.array([getattr(p, name) for p in parts], kind))
    return table


def give_back() -> None:
    """Return the memory Arrow and numpy freed to the system (once a large table is dropped, or handed
    to Spark's JVM): Arrow's pool keeps the pages it freed, and the C heap the large numpy arrays came
    from keeps its top. At a million partitions some 400 MB after the snapshot's read, and 130 MB of the
    Spark driver's peak after its slices and the plan's entries went to the JVM (docs/benchmarks.md, the
    CLI's plan end to end), which the plan would otherwise carry on top of its own."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # (another C library: nothing to trim)
        ctypes.CDLL(None).malloc_trim(0)  # glibc's


def ipc_bytes(table: Any) -> bytes:
    """An Arrow table as one Arrow IPC stream (how the Spark engine's tasks get and return their rows:
    bytes the JVM passes on without converting them)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def ipc_table(blob: bytes) -> Any:
    """The Arrow table of one IPC stream (``ipc_bytes``)."""
    import pyarrow as pa

    return pa.ipc.open_stream(blob).read_all()


def ipc_slices(table: Any, at_least: int, most_bytes: int) -> list[bytes]:
    """``table`` in contiguous runs of rows, each an IPC stream (``ipc_bytes``): ``at_least`` runs, more
    when that keeps each at ``most_bytes`` of Arrow data or less on average (rows are cut evenly; a Spark
    task carries its run); never an empty run, but one for an empty table."""
    count = max(1, at_least, -(-table.nbytes // max(1, most_bytes)))
    rows = table.num_rows
    bounds = sorted({rows * i // count for i in range(count + 1)})
    if len(bounds) < 2:
        return [ipc_bytes(table)]
    return [ipc_bytes(table.slice(lo, hi - lo)) for lo, hi in pairwise(bounds)]


def partitions_of(batch: Any) -> Iterator[PartitionState]:
    """The partitions of an Arrow batch or table holding ``partitions_table``'s columns (and maybe more),
    in row order; an optional column the batch lacks is None in every partition."""
    columns = [batch.column(c).to_pylist() for c in PARTITION_COLUMNS]
    names = set(batch.schema.names)
    rows = batch.num_rows
    rates, fanouts, untiered = (
        batch.column(c).to_pylist() if c in names else [None] * rows for c in TRAFFIC_COLUMNS
    )
    for (topic, number, reps, dirs, leader, isr, size), rate, fanout, tail in zip(
        zip(*columns, strict=True), rates, fanouts, untiered, strict=True
    ):
        yield PartitionState(
            topic, number, tuple(reps), tuple(dirs), leader, tuple(isr), size, rate, fanout, tail
        )


BROKERS_FILE, PARTITIONS_FILE = "brokers.json", "partitions.parquet"  # a Parquet snapshot directory's


def write_brokers(snapshot: ClusterSnapshot, path: Path) -> None:
    """A Parquet snapshot's ``brokers.json`` at ``path``: the snapshot without its partitions."""
    path.write_text(json.dumps(snapshot.header_json()), encoding="utf-8")


ROW_GROUP = 1 << 17  # partitions per row group of ``partitions.parquet``, made and written one at a time


def write_partitions(snapshot: ClusterSnapshot, path: Path) -> None:
    """A Parquet snapshot's ``partitions.parquet`` at ``path``: one row per partition, written a row group
    at a time (the Arrow columns of all of them at once would add some 200 MB to the writer's peak at a
    million partitions)."""
    import pyarrow.parquet as pq

    parts = snapshot.partitions
    traffic = traffic_present(parts)
    first = partitions_table(parts[:ROW_GROUP], traffic)
    with pq.ParquetWriter(path, first.schema) as writer:
        writer.write_table(first)
        del first
        for start in range(ROW_GROUP, len(parts), ROW_GROUP):
            writer.write_table(partitions_table(parts[start : start + ROW_GROUP], traffic))
    give_back()


def write_parquet(snapshot: ClusterSnapshot, directory: Path) -> None:
    """``snapshot`` as a Parquet snapshot directory (created if absent): ``brokers.json`` and
    ``partitions.parquet``, what ``read_snapshot`` reads back as the same snapshot. (The CLI writes the
    two files through its all-or-none writer instead: ``cli._io.write_snapshot``.)"""
    directory.mkdir(parents=True, exist_ok=True)
    write_brokers(snapshot, directory / BROKERS_FILE)
    write_partitions(snapshot, directory / PARTITIONS_FILE)


def read_snapshot(path: Path) -> ClusterSnapshot:
    """A snapshot from a JSON file or a Parquet directory, validated like any snapshot; a broken
    ``brokers.json`` or ``partitions.parquet`` is a BadInputError naming that file. The Parquet rows are
    read column by column (``columnar``) when every one is plainly valid, else parsed one by one as a
    snapshot file's partitions (which names what is wrong)."""
    if not path.exists():
        raise BadInputError("snapshot file not found", str(path))
    if not path.is_dir():
        return ClusterSnapshot.loads(read_input_text(path, "snapshot"), source=str(path))
    brokers, table_path = path / BROKERS_FILE, path / PARTITIONS_FILE
    if not brokers.is_file() or not table_path.is_file():
        raise BadInputError(
            f"a Parquet snapshot is a directory with {BROKERS_FILE} and {PARTITIONS_FILE}", str(path)
        )
    doc = load_json(read_input_text(brokers, "snapshot brokers"), str(brokers))
    header = ClusterSnapshot.from_json(doc, source=str(brokers))  # the brokers alone, named after their file
    table = _read_table(table_path, PARTITION_COLUMNS, "Parquet snapshot")
    import pyarrow as pa  # (a JSON snapshot needs none of it)

    try:
        parts = columnar.partitions(table, header.brokers)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        parts = None  # (data the columnar checks could not take: the row parse says what is wrong)
    if parts is not None:  # every row plainly valid: what the rows below parse to
        del table
        give_back()
        return replace(header, partitions=parts)
    # else each row parsed as a snapshot file's partition: what is wrong, named
    present = PARTITION_COLUMNS + tuple(c for c in TRAFFIC_COLUMNS if c in table.column_names)
    cols = _columns(table, present, table_path, "Parquet snapshot")
    rates = cols.get("bytes_in_per_sec") or [None] * len(cols["topic"])
    fanouts = cols.get("read_fanout") or [None] * len(cols["topic"])
    untiered = cols.get("untiered_bytes") or [None] * len(cols["topic"])
    doc = {
        **doc,
        "partitions": [
            {
                "topic": t,
                "partition": n,
                "replicas": r,
                "logDirs": d,
                "leader": lead,
                "isr": i,
                "sizeBytes": s,
                "bytesInPerSec": rate,
                "readFanout": fanout,
                "untieredBytes": tail,
            }
            for t, n, r, d, lead, i, s, rate, fanout, tail in zip(
                *(cols[c] for c in PARTITION_COLUMNS), rates, fanouts, untiered, strict=True
            )
        ],
    }
    return ClusterSnapshot.from_json(doc, source=str(table_path))


_PLAN_COLUMNS = ("topic", "partition", "replicas", "log_dirs")


def _read_table(path: Path, names: tuple[str, ...], what: str) -> Any:
    """A Parquet file as an Arrow table that has the named columns; anything unreadable is bad input."""
    import pyarrow.parquet as pq

    with _unreadable(path, what):
        table = pq.read_table(path)
    missing = [c for c in names if c not in table.column_names]
    if missing:
        raise BadInputError(f"a {what} needs the columns {', '.join(missing)}", str(path))
    return table


def _columns(table: Any, names: tuple[str, ...], path: Path, what: str) -> dict[str, list[Any]]:
    """The named columns of ``table`` (read from ``path``) as Python lists."""
    with _unreadable(path, what):
        return {c: table.column(c).to_pylist() for c in names}


@contextlib.contextmanager
def _unreadable(path: Path, what: str) -> Iterator[None]:
    """Arrow's errors reading or converting ``path`` as bad input naming it."""
    import pyarrow as pa

    try:
        yield
    except (OSError, pa.ArrowException, ValueError, TypeError) as e:
        raise BadInputError(f"not a readable {what}: {clip(str(e))}", str(path)) from None
    except MemoryError:
        raise BadInputError(f"{what} too large to read", str(path)) from None


def is_parquet(path: str | Path) -> bool:
    """A plan file, or a snapshot directory the CLI writes, named to be Parquet (``.parquet``)."""
    return str(path).endswith(".parquet")


def plan_table(plan: Plan) -> Any:
    """The plan's entries as an Arrow table: topic, partition, replicas, log_dirs."""
    import pyarrow as pa

    entries = plan.partitions
    return pa.table(
        {
            "topic": pa.array([t.topic for t in entries], pa.string()),
            "partition": pa.array([t.partition for t in entries], pa.int32()),
            "replicas": pa.array([t.replicas for t in entries], pa.list_(pa.int32())),
            "log_dirs": pa.array([t.log_dirs for t in entries], pa.list_(pa.string())),
        }
    )


def write_plan_table(plan: Plan, path: Path) -> None:
    """The plan as a Parquet file at ``path``, written in place (the CLI's atomic writer gives a temp
    file; ``write_plan_parquet`` adds its own temp file + rename)."""
    import pyarrow.parquet as pq

    pq.write_table(plan_table(plan), path)


def write_plan_parquet(plan: Plan, path: Path) -> None:
    """The plan as a Parquet file, written atomically (temp file + rename; the temp file never stays)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    os.close(fd)
    try:
        write_plan_table(plan, Path(tmp))
        os.replace(tmp, path)
    except OSError as e:
        raise BadInputError(f"cannot write the plan: {e}", str(path)) from None
    finally:
        Path(tmp).unlink(missing_ok=True)


def read_plan_parquet(path: Path) -> Plan:
    """A Parquet plan, validated exactly like a JSON one."""
    if not path.exists():
        raise BadInputError("plan file not found", str(path))
    if not path.is_file():
        raise BadInputError("plan is not a regular file", str(path))
    cols = _columns(_read_table(path, _PLAN_COLUMNS, "Parquet plan"), _PLAN_COLUMNS, path, "Parquet plan")
    entries = [
        {"topic": t, "partition": n, "replicas": r, "log_dirs": d}
        for t, n, r, d in zip(*(cols[c] for c in _PLAN_COLUMNS), strict=True)
    ]
    return Plan.from_json({"version": PLAN_VERSION, "partitions": entries}, source=str(path))


__all__ = [
    "BROKERS_FILE",
    "PARTITIONS_FILE",
    "PARTITION_COLUMNS",
    "PartitionState",
    "give_back",
    "ipc_bytes",
    "ipc_slices",
    "ipc_table",
    "is_parquet",
    "partitions_schema",
    "partitions_table",
    "plan_table",
    "read_plan_parquet",
    "read_snapshot",
    "traffic_types",
    "write_brokers",
    "write_parquet",
    "write_partitions",
    "write_plan_parquet",
    "write_plan_table",
]
