"""Small builders of snapshots and intents for the planner's unit tests (no rig needed)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from kafka_placement.model.capacity import DEFAULT_MAX_DISK_SHARE
from kafka_placement.model.intents import Intents
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.headroom import limit_bytes

Part = tuple[str, int, Sequence[int], Sequence[int], int]  # topic, partition, replicas, dir indexes, size


VOLUME = 1 << 40  # the volume size of a dir given its room (``room_of``)


def room_of(room: int, total: int = VOLUME, share: float = DEFAULT_MAX_DISK_SHARE) -> dict[str, int]:
    """A log dir's ``totalBytes`` and ``usableBytes`` such that a plan may bring exactly ``room`` bytes
    to it under the disk headroom limit ``share`` (planning/headroom.py), as long as its replicas hold
    fewer bytes than the volume's used bytes (``total - usable``): a volume used by other data too."""
    return {"totalBytes": total, "usableBytes": room + total - limit_bytes(total, share)}


def snapshot(
    racks: dict[int, str | None], parts: Sequence[Part], dirs: int = 2, capacity: int = 0
) -> ClusterSnapshot:
    """Brokers with the given racks and ``dirs`` dirs /data/d0.. each; partitions with dir indexes.
    ``capacity``: the room of each dir under the disk headroom limit (``room_of``; dir ``d`` has ``d``
    bytes more, so no two dirs of a broker look like one shared volume); 0: volume size unknown."""
    doc: dict[str, Any] = {
        "version": 1,
        "brokers": [
            {
                "id": b,
                "rack": rack,
                "logDirs": [
                    {"path": f"/data/d{d}", **(room_of(capacity + d) if capacity else {})}
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


_RACKS = [f"/dc{d}/z{z}/r{r}" for d in (1, 2, 3) for z in (1, 2) for r in (1, 2)] + ["/dc4", None]


def racked_cluster(seed: int) -> ClusterSnapshot:
    """18 brokers in 3-level racks (some in a 1-level rack, one without), 3 JBOD dirs each; 1500
    partitions of RF 1-5 on random dirs (a few unknown), a tenth of them empty."""
    rng = random.Random(seed)
    ids = list(range(1, 19))
    brokers = [
        {
            "id": b,
            "rack": rng.choice(_RACKS),
            "logDirs": [
                {"path": f"/data/d{i}", "totalBytes": 10**12, "usableBytes": 10**12} for i in range(3)
            ],
        }
        for b in ids
    ]
    parts = []
    for i in range(1500):
        reps = rng.sample(ids, rng.choice([1, 2, 3, 3, 3, 4, 5]))
        dirs = [None if rng.random() < 0.03 else f"/data/d{rng.randrange(3)}" for _ in reps]
        parts.append(
            {
                "topic": f"{rng.choice('abcde')}{i % 7}",
                "partition": i,
                "replicas": reps,
                "logDirs": dirs,
                "leader": reps[0],
                "isr": reps,
                "sizeBytes": 0 if rng.random() < 0.1 else rng.randrange(1, 10**6),
            }
        )
    return ClusterSnapshot.from_json({"version": 1, "brokers": brokers, "partitions": parts})


RACKED_INTENTS = {  # for racked_cluster: spread at 1-3 levels; every kind of intent at once
    "spread": """
kind: PlacementPolicy
metadata: {name: dc-zone-rack}
spec: {topics: {include: ['a*']}, rackAwareness: {separator: /, levels: 3}, replicationFactor: 3}
---
kind: PlacementPolicy
metadata: {name: dc}
spec: {topics: {include: ['b*']}, rackAwareness: {separator: /, levels: 1}}
---
kind: PlacementPolicy
metadata: {name: dc-zone}
spec: {topics: {include: ['c*']}, rackAwareness: {separator: /, levels: 2}, replicationFactor: 2}
""",
    "everything": """
kind: BrokerDecommission
spec: {brokers: [3, 11]}
---
kind: LogDirCordon
spec: {broker: 5, logDirs: ['*']}
---
kind: LogDirCordon
spec: {broker: 7, logDirs: ['/data/d0', '/data/d1', '/data/d2']}
---
kind: LogDirCordon
spec: {broker: 2, logDirs: [/data/d1], drain: true}
---
kind: LogDirCordon
spec: {broker: 9, logDirs: [/data/d0]}
---
kind: PlacementPolicy
metadata: {name: dc-zone}
spec: {topics: {include: ['a*', 'b*'], exclude: ['b3']}, rackAwareness: {separator: /, levels: 2}}
---
kind: PlacementPolicy
metadata: {name: rf4}
spec: {topics: {include: ['d*']}, replicationFactor: 4}
---
kind: PlacementPolicy
metadata: {name: three-levels}
spec: {topics: {include: ['e*']}, rackAwareness: {separator: /, levels: 3}, replicationFactor: 3}
""",
}
