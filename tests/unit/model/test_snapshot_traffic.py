"""The snapshot's optional per-partition traffic fields, ``bytesInPerSec`` and ``readFanout``
(docs/architecture.md, "Snapshot JSON"): absent means unknown and stays absent through JSON and Parquet
round trips; present values are checked; the golden snapshots (no traffic) are written back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.spark.io import read_snapshot, write_parquet

GOLDEN = Path(__file__).resolve().parents[2] / "testdata" / "golden"


def _doc(**traffic: object) -> dict[str, object]:
    return {
        "version": 1,
        "brokers": [{"id": 1, "rack": "r1", "logDirs": [{"path": "/d1"}]}],
        "partitions": [
            {"topic": "hot", "partition": 0, "replicas": [1], "logDirs": ["/d1"], "sizeBytes": 10, **traffic},
            {"topic": "cold", "partition": 0, "replicas": [1], "logDirs": ["/d1"], "sizeBytes": 10},
        ],
    }


def test_known_traffic_round_trips_and_unknown_stays_absent() -> None:
    snap = ClusterSnapshot.from_json(_doc(bytesInPerSec=1234.5, readFanout=2))
    hot, cold = snap.partition("hot", 0), snap.partition("cold", 0)
    assert hot is not None and cold is not None
    assert (hot.bytes_in_per_sec, hot.read_fanout) == (1234.5, 2)
    assert (cold.bytes_in_per_sec, cold.read_fanout) == (None, None)
    hot_out, cold_out = snap.to_json()["partitions"]
    assert (hot_out["bytesInPerSec"], hot_out["readFanout"]) == (1234.5, 2)
    assert "bytesInPerSec" not in cold_out and "readFanout" not in cold_out
    assert ClusterSnapshot.loads(snap.dumps()) == snap


def test_a_measured_zero_is_kept_as_zero_not_dropped() -> None:
    out = ClusterSnapshot.from_json(_doc(bytesInPerSec=0, readFanout=0)).to_json()["partitions"][0]
    assert (out["bytesInPerSec"], out["readFanout"]) == (0.0, 0)


def test_null_is_unknown_like_absent() -> None:
    snap = ClusterSnapshot.from_json(_doc(bytesInPerSec=None, readFanout=None))
    assert "bytesInPerSec" not in snap.to_json()["partitions"][0]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("bytesInPerSec", -1, "must be >= 0"),
        ("bytesInPerSec", "fast", "expected a number"),
        ("bytesInPerSec", True, "expected a number"),
        ("readFanout", -2, ">= 0"),
        ("readFanout", 1.5, "integer"),
    ],
)
def test_bad_traffic_values_are_refused_naming_the_field(field: str, value: object, message: str) -> None:
    with pytest.raises(BadInputError, match=message) as e:
        ClusterSnapshot.from_json(_doc(**{field: value}))
    assert f"partitions[0] (hot-0).{field}" in str(e.value)


def test_parquet_keeps_known_and_unknown_traffic(tmp_path: Path) -> None:
    snap = ClusterSnapshot.from_json(_doc(bytesInPerSec=99.25, readFanout=3))
    write_parquet(snap, tmp_path / "s")
    assert read_snapshot(tmp_path / "s") == snap


@pytest.mark.parametrize("name", ["decommission", "scale-out"])
def test_golden_snapshots_without_traffic_are_written_back_unchanged(name: str, tmp_path: Path) -> None:
    doc = json.loads((GOLDEN / name / "snapshot.json").read_text())
    snap = ClusterSnapshot.from_json(doc)
    assert all(p.bytes_in_per_sec is None and p.read_fanout is None for p in snap.partitions)
    again = snap.to_json()
    assert [sorted(p) for p in again["partitions"]] == [sorted(p) for p in doc["partitions"]]
    write_parquet(snap, tmp_path / "s")
    import pyarrow.parquet as pq

    assert "bytes_in_per_sec" not in pq.read_table(tmp_path / "s" / "partitions.parquet").column_names
    assert read_snapshot(tmp_path / "s") == snap
