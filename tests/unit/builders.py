"""Small builders of snapshots and intents for the planner's unit tests (no rig needed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot

Part = tuple[str, int, Sequence[int], Sequence[int], int]  # topic, partition, replicas, dir indexes, size


def snapshot(
    racks: dict[int, str | None], parts: Sequence[Part], dirs: int = 2, capacity: int = 0
) -> ClusterSnapshot:
    """Brokers with the given racks and ``dirs`` dirs /data/d0.. each; partitions with dir indexes."""
    doc: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {
                "id": b,
                "rack": rack,
                "logDirs": [
                    {"path": f"/data/d{d}", "totalBytes": capacity, "usableBytes": capacity}
                    for d in range(dirs)
                ],
            }
            for b, rack in racks.items()
        ],
        "partitions": [
            {
                "topic": t,
                "partition": n,
                "replicas": list(reps),
                "logDirs": [f"/data/d{d}" for d in dix],
                "leader": reps[0],
                "isr": list(reps),
                "sizeBytes": size,
            }
            for t, n, reps, dix, size in parts
        ],
    }
    return ClusterSnapshot.from_json(doc)


def intents(text: str) -> Intents:
    return Intents.loads(text, source="test.yaml")
