"""Snapshot and plan files for large clusters: JSON (the contract) or Parquet.

A Parquet snapshot is a directory holding ``brokers.json`` (the snapshot's brokers, small) and
``partitions.parquet`` (one row per partition: topic, partition, replicas, dirs, leader, isr, size),
which Spark or pyarrow read column-wise without parsing a multi-gigabyte JSON document. A Parquet plan
is a file whose name ends in ``.parquet``: one row per plan entry (topic, partition, replicas,
log_dirs), the same content as the JSON plan and validated the same way when read.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..model.errors import BadInputError
from ..model.plan import PLAN_VERSION, Plan
from ..model.snapshot import ClusterSnapshot, PartitionState


def partitions_table(snapshot: ClusterSnapshot) -> Any:
    """The partitions as an Arrow table: one row each (an unknown dir or leader is null)."""
    import pyarrow as pa

    parts = snapshot.partitions
    return pa.table(
        {
            "topic": pa.array([p.topic for p in parts], pa.string()),
            "partition": pa.array([p.partition for p in parts], pa.int32()),
            "replicas": pa.array([p.replicas for p in parts], pa.list_(pa.int32())),
            "dirs": pa.array([p.log_dirs for p in parts], pa.list_(pa.string())),
            "leader": pa.array([p.leader for p in parts], pa.int32()),
            "isr": pa.array([p.isr for p in parts], pa.list_(pa.int32())),
            "size": pa.array([p.size_bytes for p in parts], pa.int64()),
        }
    )


def write_parquet(snapshot: ClusterSnapshot, directory: Path) -> None:
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    doc = snapshot.to_json()
    doc["partitions"] = []
    (directory / "brokers.json").write_text(json.dumps(doc))
    pq.write_table(partitions_table(snapshot), directory / "partitions.parquet")


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


def is_parquet_plan(path: str | Path) -> bool:
    return str(path).endswith(".parquet")


def write_plan_parquet(plan: Plan, path: Path) -> None:
    """The plan as a Parquet file, written atomically (temp file + rename)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    entries = [t.to_json() for t in plan.partitions]
    table = pa.table(
        {
            "topic": pa.array([e["topic"] for e in entries], pa.string()),
            "partition": pa.array([e["partition"] for e in entries], pa.int32()),
            "replicas": pa.array([e["replicas"] for e in entries], pa.list_(pa.int32())),
            "log_dirs": pa.array([e["log_dirs"] for e in entries], pa.list_(pa.string())),
        }
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise BadInputError(f"cannot write the plan: {e}", str(path)) from None


def read_plan_parquet(path: Path) -> Plan:
    """A Parquet plan, validated exactly like a JSON one."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise BadInputError("plan file not found", str(path))
    try:
        cols = pq.read_table(path).to_pydict()
    except (OSError, pa.ArrowException) as e:
        raise BadInputError(f"not a readable Parquet plan: {e}", str(path)) from None
    missing = [c for c in ("topic", "partition", "replicas", "log_dirs") if c not in cols]
    if missing:
        raise BadInputError(f"a Parquet plan needs the columns {', '.join(missing)}", str(path))
    entries = [
        {"topic": t, "partition": n, "replicas": r, "log_dirs": d}
        for t, n, r, d in zip(
            cols["topic"], cols["partition"], cols["replicas"], cols["log_dirs"], strict=True
        )
    ]
    return Plan.from_json({"version": PLAN_VERSION, "partitions": entries}, source=str(path))


__all__ = [
    "PartitionState",
    "is_parquet_plan",
    "partitions_table",
    "read_plan_parquet",
    "read_snapshot",
    "write_parquet",
    "write_plan_parquet",
]
