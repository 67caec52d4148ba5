"""The Spark engine's Arrow form of partitions: ``partitions_table`` and ``partitions_of`` are inverse
(what the analysis, the shards and the tally's tasks read is what the driver sent), also through the
IPC streams the slices travel as; ``ipc_slices`` cuts a table into contiguous runs, as many as asked or
more, each under the byte bound a Spark task must stay below."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState
from kafka_placement.spark.analysis import SLICE_BYTES
from kafka_placement.spark.io import ipc_bytes, ipc_slices, ipc_table, partitions_of, partitions_table


def test_partitions_round_trip_through_an_arrow_table_and_its_batches() -> None:
    parts = [
        PartitionState("a", 0, (1, 2, 3), ("/d0", None, "/d1"), 1, (1, 2), 10),
        PartitionState("b", 7, (4,), (None,), None, (), 0),  # no leader, no known dir, empty ISR
        PartitionState("c\u00e9", 2**30, (5, 6), ("/d0", "/d0"), 6, (6, 5), 2**40),
    ]
    table = partitions_table(parts)
    assert list(partitions_of(table)) == parts
    extra = table.append_column("t_replicas", pa.array([[9]] * 3, pa.list_(pa.int32())))
    batches = extra.to_batches(max_chunksize=2)
    assert len(batches) == 2 and [p for b in batches for p in partitions_of(b)] == parts
    assert table.schema.names == ["topic", "partition", "replicas", "dirs", "leader", "isr", "size"]


def test_the_optional_fields_travel_as_nullable_columns_only_when_some_partition_has_them() -> None:
    """Traffic and KIP-1023's untiered bytes reach the tasks (their tallies count what a move copies)."""
    parts = [
        PartitionState("a", 0, (1, 2), ("/d0", "/d1"), 1, (1, 2), 10, untiered_bytes=4),
        PartitionState("a", 1, (2, 1), ("/d0", "/d1"), 2, (2, 1), 10),
        PartitionState("b", 0, (1, 2), ("/d0", "/d1"), 1, (1, 2), 10, bytes_in_per_sec=2.5, read_fanout=3),
    ]
    table = partitions_table(parts)
    assert table.schema.names[7:] == ["bytes_in_per_sec", "read_fanout", "untiered_bytes"]
    assert list(partitions_of(ipc_table(ipc_bytes(table)))) == parts
    assert [p.copy_bytes for p in partitions_of(table)] == [4, 10, 10]
    assert partitions_table(parts[:2]).schema.names[7:] == ["untiered_bytes"]


def _parts(n: int) -> list[PartitionState]:
    return [
        PartitionState(f"topic-{i % 13}", i, (1 + i % 5, 6, 7), ("/d0", None, "/d1"), 6, (6,), i * 1000)
        for i in range(n)
    ]


@pytest.mark.parametrize(("rows", "at_least"), [(0, 4), (1, 4), (3, 8), (10_000, 1), (10_000, 7)])
def test_slices_are_contiguous_runs_of_the_table_through_ipc(rows: int, at_least: int) -> None:
    parts = _parts(rows)
    slices = ipc_slices(partitions_table(parts), at_least, SLICE_BYTES)
    assert len(slices) == max(1, min(at_least, rows))  # (never an empty run, but one for no rows)
    assert [p for blob in slices for p in partitions_of(ipc_table(blob))] == parts


def test_slices_stay_under_the_byte_bound() -> None:
    table = partitions_table(_parts(50_000))
    bound = table.nbytes // 9  # nine or ten runs' worth
    slices = ipc_slices(table, 2, bound)
    assert len(slices) >= 9
    assert all(ipc_table(blob).nbytes <= bound * 1.01 for blob in slices)
    assert sum(ipc_table(blob).num_rows for blob in slices) == 50_000
    assert ipc_table(ipc_bytes(table)).equals(table)


def test_a_parquet_snapshot_written_a_row_group_at_a_time_reads_back_column_by_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``write_partitions`` writes one row group at a time (the writer's peak): every group has the optional
    columns some partition of the whole snapshot has (here only the last group's partitions have traffic),
    and the read takes the chunked columns as they come (the columnar read, not the row parse)."""
    import pyarrow.parquet as pq

    from kafka_placement.spark import columnar, io

    brokers = tuple(
        Broker(b, None, (LogDir("/d0", 10**9, 10**9), LogDir("/d1", 10**9, 10**9))) for b in range(1, 8)
    )
    parts = [*_parts(9), PartitionState("z", 0, (1, 6), ("/d0", "/d1"), 1, (1, 6), 3, bytes_in_per_sec=1.5)]
    snap = ClusterSnapshot(brokers, tuple(parts))
    monkeypatch.setattr(io, "ROW_GROUP", 4)
    io.write_parquet(snap, tmp_path / "s")
    table = pq.read_table(tmp_path / "s" / io.PARTITIONS_FILE)
    assert pq.ParquetFile(tmp_path / "s" / io.PARTITIONS_FILE).metadata.num_row_groups == 3
    assert "bytes_in_per_sec" in table.schema.names and table.column("topic").num_chunks == 3
    assert columnar.partitions(table, brokers) == snap.partitions
    assert io.read_snapshot(tmp_path / "s") == snap
