"""A snapshot file's text (``ClusterSnapshot.dumps``, its partitions written entry by entry) is exactly
``json.dumps(snapshot.to_json(), indent=1)``, for any snapshot the parser accepts: traffic fields known or
not, dirs unknown, leaders unknown, an empty ISR, racks and ids that need escaping, brokers not alive, topics'
storage, unreachable brokers, a cluster id, no partitions at all."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.model.test_snapshot_fast_read import BROKERS, fast, partitions

from kafka_placement.model.snapshot import ClusterSnapshot

NAMES = ["t", "orders.v1", "a-b_c", "x" * 200]  # (legal Kafka names: none needs escaping)


def _broker(b: int, alive: bool) -> dict[str, Any]:
    racks = {1: "/dc1/r\u00e9", 2: 'q"uote', 3: None, 4: "tab\there"}
    return {
        "id": b,
        "rack": racks[b],
        **({} if alive else {"alive": False}),
        "logDirs": [
            {"path": d.path, "totalBytes": 10**12, "usableBytes": 10**11} for d in BROKERS[b].log_dirs
        ],
    }


@st.composite
def snapshots(draw: Any) -> ClusterSnapshot:
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    for obj in draw(st.lists(partitions(), max_size=12)):
        if fast(obj) is None:
            continue  # (spoiled: not a snapshot the parser accepts)
        obj["topic"] = draw(st.sampled_from(NAMES))
        parts[(obj["topic"], obj["partition"])] = obj
    alive = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    doc: dict[str, Any] = {
        "version": 1,
        "brokers": [_broker(b, alive[b - 1] or b == 1) for b in sorted(BROKERS)],
        "partitions": list(parts.values()),
    }
    if draw(st.booleans()):
        doc["clusterId"] = draw(st.sampled_from(["c1", "\u2603"]))
    if draw(st.booleans()):
        doc["topics"] = [{"topic": "t", "remoteStorageEnable": True, "localRetentionBytes": 10}]
    if draw(st.booleans()):
        doc["unreachableBrokers"] = [1]
    return ClusterSnapshot.from_json(doc)


@settings(max_examples=300, deadline=None)
@given(snapshots(), st.integers(1, 5))
def test_the_snapshot_files_text_is_json_dumps_indented_by_one(snap: ClusterSnapshot, per: int) -> None:
    text = json.dumps(snap.to_json(), indent=1)
    assert snap.dumps() == text
    assert "".join(snap.pieces(per)) == text  # (what the CLI writes, piece by piece)
    assert ClusterSnapshot.loads(snap.dumps()) == snap


def test_the_cli_writes_a_snapshot_file_piece_by_piece_as_its_text(tmp_path: Path) -> None:
    from tests.unit.fuzz_support import GOLDEN

    from kafka_placement.cli._io import write_snapshot

    snap = ClusterSnapshot.loads((GOLDEN / "all" / "snapshot.json").read_text())
    write_snapshot("-o", str(tmp_path / "s.json"), snap)
    assert (tmp_path / "s.json").read_text(encoding="utf-8") == snap.dumps() + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # (no temp file left)


def test_a_rate_that_is_not_a_number_is_never_written() -> None:
    # (json_text's rule: NaN or an infinity in a written document is a bug)
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [_broker(1, True)],
            "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}],
        }
    )
    bad = replace(snap, partitions=(replace(snap.partitions[0], bytes_in_per_sec=math.nan),))
    with pytest.raises(ValueError):
        bad.dumps()
