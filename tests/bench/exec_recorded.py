"""A recorded Kafka for the tick-cost benchmark only: an in-memory cluster answering the gateway calls an
executor tick makes, so a tick's CPU time and the bytes it saves can be measured on 10k-1M-partition
plans that the 2-core rig cannot hold. Never used by tests: tests run against the real rig.

The cluster has ``topics`` x ``per_topic`` partitions on ``brokers`` brokers; a plan moves each listed
partition's second replica to another broker. Reassignments complete ``finish_per_tick`` at a time,
oldest first, when ``advance()`` is called (what Kafka would have done between two ticks).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka_placement.kafka.gateway import (
    ConfigTarget,
    ConfigValue,
    LogDirInfo,
    OpError,
    Reassignment,
    ReplicaInDir,
)
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState

Key = tuple[str, int]
DIRS = ("/data/d0", "/data/d1")


class RecordedKafka:
    """Just enough of ``KafkaGateway`` for ``executor.tick`` (duck-typed)."""

    def __init__(self, brokers: int, topics: int, per_topic: int, finish_per_tick: int) -> None:
        self.brokers = brokers
        self.finish_per_tick = finish_per_tick
        self.replicas: dict[Key, tuple[int, ...]] = {}
        for t in range(topics):
            for p in range(per_topic):
                i = t * per_topic + p
                self.replicas[(f"topic-{t}", p)] = (i % brokers + 1, (i + 1) % brokers + 1)
        self.by_topic: dict[str, list[int]] = {}
        for topic, p in self.replicas:
            self.by_topic.setdefault(topic, []).append(p)
        self.moving: OrderedDict[Key, tuple[int, ...]] = OrderedDict()
        self.requests = 0

    def plan(self, moves: int) -> Plan:
        """``moves`` partitions (spread over all topics) whose second replica moves one broker on."""
        keys = list(self.replicas)
        step = max(len(keys) // moves, 1)
        targets = []
        for key in keys[::step][:moves]:
            a, b = self.replicas[key]
            c = b % self.brokers + 1
            c = c if c != a else c % self.brokers + 1
            targets.append(PartitionTarget(key[0], key[1], (a, c), ("any", "any")))
        return Plan.of(targets)

    def advance(self) -> None:
        for _ in range(min(self.finish_per_tick, len(self.moving))):
            key, target = self.moving.popitem(last=False)
            self.replicas[key] = target

    # ---- the gateway calls a tick makes ------------------------------------------------------------

    def snapshot(self) -> ClusterSnapshot:
        brokers = tuple(
            Broker(b, f"/dc{b % 2}/r{b % 4}", tuple(LogDir(d, 10**12, 5 * 10**11, False, True) for d in DIRS))
            for b in range(1, self.brokers + 1)
        )
        parts = tuple(
            PartitionState(t, p, r, (DIRS[0],) * len(r), r[0], r, 1000) for (t, p), r in self.replicas.items()
        )
        return ClusterSnapshot(brokers=brokers, partitions=parts, cluster_id="recorded")

    def describe_cluster(self) -> tuple[str | None, tuple[int, ...]]:
        self.requests += 1
        return "recorded", tuple(range(1, self.brokers + 1))

    def list_reassignments(self, partitions: Iterable[Key] | None = None) -> dict[Key, Reassignment]:
        self.requests += 1
        wanted = self.moving if partitions is None else [k for k in partitions if k in self.moving]
        out = {}
        for k in wanted:
            target, current = self.moving[k], self.replicas[k]
            adding = tuple(b for b in target if b not in current)
            removing = tuple(b for b in current if b not in target)
            out[k] = Reassignment(tuple(dict.fromkeys((*target, *current))), adding, removing)
        return out

    def describe_partitions(self, topics: Iterable[str]) -> dict[Key, PartitionState]:
        self.requests += 1
        out = {}
        for t in set(topics):
            for p in self.by_topic.get(t, ()):
                r = self.replicas[(t, p)]
                out[(t, p)] = PartitionState(t, p, r, (None,) * len(r), r[0], r, 0)
        return out

    def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, partitions: Iterable[Key] | None = None
    ) -> dict[int, tuple[LogDirInfo, ...]]:
        self.requests += 1
        keys = list(partitions) if partitions is not None else list(self.replicas)
        held: dict[int, list[ReplicaInDir]] = {}
        for k in keys:
            for b in self.replicas.get(k, ()):
                held.setdefault(b, []).append(ReplicaInDir(k[0], k[1], 1000, 0, False))
        return {
            b: (LogDirInfo(b, DIRS[0], None, 10**12, 5 * 10**11, False, tuple(held.get(b, ()))),)
            for b in (brokers or range(1, self.brokers + 1))
        }

    def alter_reassignments(self, targets: Mapping[Key, Sequence[int] | None]) -> dict[Key, OpError]:
        self.requests += 1
        for k, r in targets.items():
            if r is None:
                self.moving.pop(k, None)
            else:
                self.moving[k] = tuple(r)
        return {}

    def alter_replica_log_dirs(self, moves: Mapping[Any, str]) -> dict[Any, OpError]:
        self.requests += 1
        return {}

    def describe_configs(self, targets: Iterable[ConfigTarget]) -> dict[ConfigTarget, dict[str, ConfigValue]]:
        self.requests += 1
        return {t: {} for t in targets}

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        self.requests += 1
        return {t: 1 for t in topics}  # Kafka's default

    def incremental_alter_configs(self, changes: Mapping[ConfigTarget, Any]) -> dict[ConfigTarget, OpError]:
        self.requests += 1
        return {}

    def elect_preferred_leaders(self, partitions: Iterable[Key] | None) -> dict[Key, OpError]:
        return {}

    def close(self) -> None:
        pass


class MemoryStore:
    """The ``Store`` contract in memory, counting the bytes each save writes."""

    def __init__(self) -> None:
        self.doc: bytes | None = None
        self.blobs: dict[str, bytes] = {}
        self.saves: list[int] = []

    @property
    def where(self) -> str:
        return "memory"

    def load(self) -> bytes | None:
        return self.doc

    def save(self, doc: bytes) -> None:
        self.doc = doc
        self.saves.append(len(doc))

    def put_blob(self, name: str, data: bytes) -> None:
        self.blobs.setdefault(name, data)

    def get_blob(self, name: str) -> bytes | None:
        return self.blobs.get(name)

    def has_blob(self, name: str) -> bool:
        return name in self.blobs

    def prune_blobs(self, keep: set[str]) -> None:
        self.blobs = {k: v for k, v in self.blobs.items() if k in keep}
