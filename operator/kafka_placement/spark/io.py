"""Snapshot files for the Spark engine: JSON (the contract) or a Parquet directory for large clusters.

The Parquet form is a directory holding ``brokers.json`` (the snapshot's brokers, small) and
``partitions.parquet`` (one row per partition: topic, partition, replicas, dirs, leader, isr, size),
which Spark or pyarrow read column-wise without parsing a multi-gigabyte JSON document.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..model.errors import BadInputError
from ..model.snapshot import ClusterSnapshot, PartitionState


def write_parquet(snapshot: ClusterSnapshot, directory: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    doc = snapshot.to_json()
    doc["partitions"] = []
    (directory / "brokers.json").write_text(json.dumps(doc))
    parts = snapshot.partitions
    table = pa.table(
        {
            "topic": [p.topic for p in parts],
            "partition": pa.array([p.partition for p in parts], pa.int32()),
            "replicas": pa.array([list(p.replicas) for p in parts], pa.list_(pa.int32())),
            "dirs": pa.array([list(p.log_dirs) for p in parts], pa.list_(pa.string())),
            "leader": pa.array([p.leader for p in parts], pa.int32()),
            "isr": pa.array([list(p.isr) for p in parts], pa.list_(pa.int32())),
            "size": pa.array([p.size_bytes for p in parts], pa.int64()),
        }
    )
    pq.write_table(table, directory / "partitions.parquet")


def read_snapshot(path: Path) -> ClusterSnapshot:
    """A snapshot from a JSON file or a Parquet directory, validated like any snapshot."""
    if not path.exists():
        raise BadInputError("snapshot file not found", str(path))
    if path.is_file():
        return ClusterSnapshot.loads(path.read_text(encoding="utf-8"), source=str(path))
    brokers, table_path = path / "brokers.json", path / "partitions.parquet"
    if not brokers.is_file() or not table_path.is_file():
        raise BadInputError(
            "a Parquet snapshot is a directory with brokers.json and partitions.parquet", str(path)
        )
    import pyarrow.parquet as pq

    doc = json.loads(brokers.read_text())
    base = ClusterSnapshot.from_json(doc, source=str(brokers))
    cols = pq.read_table(table_path).to_pydict()
    doc["partitions"] = [
        {"topic": t, "partition": n, "replicas": r, "logDirs": d, "leader": lead, "isr": i, "sizeBytes": s}
        for t, n, r, d, lead, i, s in zip(
            cols["topic"],
            cols["partition"],
            cols["replicas"],
            cols["dirs"],
            cols["leader"],
            cols["isr"],
            cols["size"],
            strict=True,
        )
    ]
    del base
    return ClusterSnapshot.from_json(doc, source=str(path))


__all__ = ["PartitionState", "read_snapshot", "write_parquet"]
