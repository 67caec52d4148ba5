"""Snapshots of issue 53's two cases (brokers 1-4, two log dirs each, broker 4 leaves, RF 2), shared by the
planner's and the CLI's disk headroom tests."""

from __future__ import annotations

from typing import Any

from kafka_placement.model.snapshot import ClusterSnapshot

GB = 10**9
DECOMMISSION_4 = "kind: BrokerDecommission\nspec: {brokers: [4]}\n"
PAIRS = [(1, 2), (2, 3), (3, 1)]


def case(
    volumes: dict[str, int], full: dict[str, int], arriving: int, leaving: tuple[int, int] = (200, 0)
) -> dict[str, Any]:
    """Brokers 1-3 with dirs ``volumes`` (path -> size, bytes) each holding ``full`` bytes (path ->
    bytes, replicas of 1 GB: the volume's used bytes are its replicas'); broker 4 holds ``arriving``
    replicas of 1 GB on /d0, each also on one of brokers 1-3 (on its /d0): they all arrive on brokers
    1-3 when broker 4 leaves. ``leaving``: broker 4's two volumes, in GB."""
    held = {(b, p): 0 for b in (1, 2, 3) for p in volumes}
    parts: list[dict[str, Any]] = []
    for i in range(arriving):
        other = i % 3 + 1
        parts.append(_part("t", i, [4, other], ["/d0", "/d0"]))
        held[(other, "/d0")] += GB
    n = 0
    for path in volumes:
        moved = True
        while moved:
            moved = False
            for a, b in PAIRS:
                if held[(a, path)] + GB <= full[path] and held[(b, path)] + GB <= full[path]:
                    parts.append(_part("f", n, [a, b], [path, path]))
                    held[(a, path)] += GB
                    held[(b, path)] += GB
                    n += 1
                    moved = True
    brokers = [
        {
            "id": b,
            "rack": None,
            "logDirs": [
                {"path": p, "totalBytes": size, "usableBytes": size - held[(b, p)]}
                for p, size in volumes.items()
            ],
        }
        for b in (1, 2, 3)
    ]
    big, small = leaving
    brokers.append(
        {
            "id": 4,
            "rack": None,
            "logDirs": [
                {"path": "/d0", "totalBytes": big * GB, "usableBytes": big * GB - arriving * GB},
                {"path": "/d1", "totalBytes": small * GB, "usableBytes": small * GB},
            ],
        }
    )
    return {"version": 1, "brokers": brokers, "partitions": parts}


def _part(topic: str, n: int, replicas: list[int], dirs: list[str]) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": n,
        "replicas": replicas,
        "logDirs": dirs,
        "leader": replicas[0],
        "isr": replicas,
        "sizeBytes": GB,
    }


def roomy() -> ClusterSnapshot:
    """/d0: a 100 GB volume 40% full, /d1: a 40 GB volume 50% full; 20 GB arrive per broker. A plan
    keeping /d1 at most 85% full exists (every arriving replica on /d0: 60%)."""
    return ClusterSnapshot.from_json(
        case({"/d0": 100 * GB, "/d1": 40 * GB}, {"/d0": 40 * GB, "/d1": 20 * GB}, 60)
    )


def tight() -> ClusterSnapshot:
    """Every dir of brokers 1-3 a 100 GB volume 90% full; 58 GB arrive (only a plan filling dirs to the
    brim fits: no plan keeps them at 85%)."""
    return ClusterSnapshot.from_json(
        case({"/d0": 100 * GB, "/d1": 100 * GB}, {"/d0": 90 * GB, "/d1": 90 * GB}, 58)
    )
