"""Scenario generator for tests and benchmarks: brokers, hierarchical racks, JBOD dirs, topics, Zipf sizes.

``cluster(...)`` builds a snapshot whose initial placement is Kafka-like (round-robin with a random start,
rack-alternating brokers), with partition sizes drawn from a Zipf-like distribution, so a few partitions
are huge and most are small. ``scenario(name, ...)`` returns (snapshot, intents YAML) for the named
benchmark scenarios: decommission, drain, rack-repair, scale-out, all.
Deterministic for a given seed.
"""

from __future__ import annotations

import random
from typing import Any

from kafka_placement.model.snapshot import ClusterSnapshot

GIB = 1 << 30


def racks_for(n_brokers: int, dcs: int, racks_per_dc: int) -> list[str]:
    """Rack of broker i (ids 1..n): dcs and racks interleaved so consecutive ids differ in dc."""
    units = [f"/dc{d + 1}/r{r + 1}" for r in range(racks_per_dc) for d in range(dcs)]
    return [units[i % len(units)] for i in range(n_brokers)]


def zipf_sizes(rng: random.Random, n: int, topics: int, total_bytes: int, s: float = 1.0) -> list[int]:
    """Partition sizes: topic sizes follow Zipf(s) (a few huge topics, many small ones); the partitions
    of a topic are similar in size (uniform jitter 0.5x-1.5x), as keyed producers make them."""
    per_topic = max(1, n // topics)
    topic_w = [1.0 / (k + 1) ** s for k in range(topics)]
    rng.shuffle(topic_w)
    weights = [topic_w[min(i // per_topic, topics - 1)] * rng.uniform(0.5, 1.5) for i in range(n)]
    scale = total_bytes / sum(weights)
    return [max(1, int(w * scale)) for w in weights]


def cluster(
    *,
    brokers: int = 6,
    dirs: int = 2,
    dcs: int = 3,
    racks_per_dc: int = 2,
    topics: int = 10,
    partitions: int = 300,
    rf: int = 3,
    total_bytes: int = 100 * GIB,
    seed: int = 1,
    empty_brokers: int = 0,
    capacity_bytes: int = 0,
) -> ClusterSnapshot:
    """A snapshot with ``brokers`` brokers (the last ``empty_brokers`` hold nothing: a scale-out)."""
    rng = random.Random(seed)
    rack = racks_for(brokers, dcs, racks_per_dc)
    ids = list(range(1, brokers + 1))
    loaded = ids[: brokers - empty_brokers]
    sizes = zipf_sizes(rng, partitions, topics, total_bytes)
    per_topic = max(1, partitions // topics)
    doc: dict[str, Any] = {"version": 1, "brokers": [], "partitions": []}
    for b in ids:
        doc["brokers"].append(
            {
                "id": b,
                "rack": rack[b - 1],
                "logDirs": [
                    {
                        "path": f"/data/d{d}",
                        "totalBytes": capacity_bytes,
                        "usableBytes": capacity_bytes,
                        "cordoned": False,
                        "online": True,
                    }
                    for d in range(dirs)
                ],
            }
        )
    for i in range(partitions):
        t, n = divmod(i, per_topic)
        start = rng.randrange(len(loaded))
        shift = 1 + rng.randrange(max(1, len(loaded) - 1))
        reps: list[int] = []
        j = 0
        while len(reps) < min(rf, len(loaded)):
            b = loaded[(start + j * shift) % len(loaded)] if j else loaded[start]
            if b in reps:
                b = next(x for x in loaded if x not in reps)
            reps.append(b)
            j += 1
        doc["partitions"].append(
            {
                "topic": f"topic-{t:03d}",
                "partition": n,
                "replicas": reps,
                "logDirs": [f"/data/d{rng.randrange(dirs)}" for _ in reps],
                "leader": reps[0],
                "isr": reps,
                "sizeBytes": sizes[i],
            }
        )
    if capacity_bytes:
        used: dict[tuple[int, str], int] = {}
        for p in doc["partitions"]:
            for b, d in zip(p["replicas"], p["logDirs"], strict=True):
                used[(b, d)] = used.get((b, d), 0) + p["sizeBytes"]
        for b in doc["brokers"]:
            for d in b["logDirs"]:
                d["usableBytes"] = max(0, capacity_bytes - used.get((b["id"], d["path"]), 0))
    return ClusterSnapshot.from_json(doc)


def sized_volumes(
    snap: ClusterSnapshot, fullest: float, distinct: bool = True, scale: dict[int, float] | None = None
) -> tuple[ClusterSnapshot, int]:
    """The snapshot with every dir on a volume of about one size, the fullest dir at ``fullest`` of it
    (the others' usable bytes follow from their replicas): what makes the disk headroom rule
    (planning/headroom.py) bind on the fullest dirs. Returns the snapshot and the size. ``distinct``: each
    dir of a broker a few MiB larger than the one before, so that two empty dirs of one broker are not
    taken for one filesystem (equal total and usable bytes: planning/headroom.py ``volumes``); without it
    a new, empty broker's dirs count as one volume. ``scale``: broker -> a factor (>= 1) on its volumes'
    size, for brokers whose disks differ (their broker balance then compares shares of capacity)."""
    held: dict[tuple[int, str], int] = {}
    for p in snap.partitions:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                held[(b, d)] = held.get((b, d), 0) + p.size_bytes
    size = max(1, int(max(held.values(), default=0) / fullest))
    doc = snap.to_json()
    for b in doc["brokers"]:
        for i, d in enumerate(b.get("logDirs") or ()):
            total = int(size * (scale or {}).get(b["id"], 1.0)) + (i << 22 if distinct else 0)
            d["totalBytes"] = total
            d["usableBytes"] = max(0, total - held.get((b["id"], d["path"]), 0))
    return ClusterSnapshot.from_json(doc), size


def scenario(
    name: str,
    *,
    brokers: int = 12,
    partitions: int = 2000,
    topics: int = 20,
    seed: int = 1,
    capacity_bytes: int = 0,
) -> tuple[ClusterSnapshot, str]:
    """(snapshot, intents YAML) of a named benchmark scenario (``capacity_bytes``: as ``cluster``'s, the
    same replicas on volumes of that size)."""
    common = {
        "brokers": brokers,
        "partitions": partitions,
        "topics": topics,
        "seed": seed,
        "capacity_bytes": capacity_bytes,
    }
    if name == "decommission":
        snap = cluster(**common)
        return snap, f"kind: BrokerDecommission\nspec: {{brokers: [{brokers}]}}\n"
    if name == "drain":
        snap = cluster(**common)
        return snap, (
            "kind: LogDirCordon\nspec: {broker: 1, logDirs: [/data/d0], drain: true}\n---\n"
            "kind: LogDirCordon\nspec: {broker: 2, logDirs: [/data/d1], drain: true}\n"
        )
    if name == "rack-repair":
        snap = cluster(**common)
        return snap, (
            "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
            "  rackAwareness: {separator: /, levels: 2}\n"
        )
    if name == "scale-out":
        snap = cluster(**common, empty_brokers=max(1, brokers // 4))
        return snap, (
            "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
            "  balance: {brokers: true, logDirs: true, leaders: true, tolerance: 0.05}\n"
        )
    if name == "all":
        snap = cluster(**common, empty_brokers=max(1, brokers // 6))
        return snap, (
            "kind: BrokerDecommission\nspec: {brokers: [1]}\n---\n"
            "kind: LogDirCordon\nspec: {broker: 2, logDirs: [/data/d0], drain: true}\n---\n"
            "kind: PlacementPolicy\nspec:\n  topics: {include: ['*']}\n"
            "  rackAwareness: {separator: /, levels: 2}\n"
            "  balance: {brokers: true, logDirs: true, leaders: true, tolerance: 0.05}\n"
        )
    raise ValueError(f"unknown scenario {name}")


SCENARIOS = ("decommission", "drain", "rack-repair", "scale-out", "all")
