"""What one executor tick reads from Kafka: only the partitions it needs, indexed once.

``read_view(gateway, keys)`` asks for the cluster's identity and live brokers (one small request), the
in-flight reassignments *of those partitions* (ListPartitionReassignments with a filter; first, so a move
that finishes in between shows as done rather than as vanished), the metadata of their topics, and
DescribeLogDirs restricted to those partitions on the brokers that hold or will hold them. A tick asks
for the partitions in flight plus the next ones in line, so its cost follows the work in flight, not the
cluster's size; a full read (every plan partition) happens only when an execution is validated and when
its completion is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..kafka.gateway import KafkaGateway, LogDirInfo, Reassignment
from ..model.plan import ANY_DIR, PartitionTarget
from ..model.snapshot import PartitionState

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaDirs:
    """Where one replica lives per DescribeLogDirs: current dir and size, future dir and size."""

    current: str | None = None
    current_size: int = 0
    future: str | None = None
    future_size: int = 0


@dataclass(frozen=True)
class TickView:
    """What one tick read from Kafka (only the partitions it asked for)."""

    cluster_id: str | None
    live: frozenset[int]
    partitions: Mapping[Key, PartitionState]
    in_flight: Mapping[Key, Reassignment]
    dirs: Mapping[int, tuple[LogDirInfo, ...]]
    min_isr: Mapping[str, int] = field(default_factory=dict)  # topic -> min.insync.replicas (if read)
    silent: frozenset[int] = frozenset()  # live brokers that did not answer this tick's DescribeLogDirs
    _replicas: dict[tuple[str, int, int], ReplicaDirs] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, int, int], ReplicaDirs] = self._replicas
        for broker, dirs in self.dirs.items():
            for d in dirs:
                for r in d.replicas:
                    key = (r.topic, r.partition, broker)
                    old = index.get(key, ReplicaDirs())
                    if r.is_future:
                        index[key] = ReplicaDirs(old.current, old.current_size, d.path, r.size_bytes)
                    else:
                        index[key] = ReplicaDirs(d.path, r.size_bytes, old.future, old.future_size)

    @property
    def answering(self) -> frozenset[int]:
        """Live brokers that answered (or were not asked): those whose own configs can be read and set
        now. One that is live but silent (killed, not yet fenced; or cut off from the operator) would only
        make a config call wait out its timeout."""
        return self.live - self.silent

    def wholly_cordoned(self, brokers: Iterable[int]) -> list[int]:
        """The brokers among ``brokers`` whose every dir this tick read is cordoned (KIP-1066): Kafka 4.4
        refuses any reassignment naming one of them, even one that keeps its replica where it is."""
        return [b for b in brokers if (ds := self.dirs.get(b)) and all(d.cordoned for d in ds)]

    def replica(self, topic: str, partition: int, broker: int) -> ReplicaDirs:
        return self._replicas.get((topic, partition, broker), ReplicaDirs())

    def replica_dirs(self, topic: str, partition: int, broker: int) -> tuple[str | None, str | None]:
        """(current dir, future dir) of one replica per DescribeLogDirs."""
        r = self.replica(topic, partition, broker)
        return r.current, r.future


def read_view(
    gateway: KafkaGateway, keys: Iterable[Key], brokers: Iterable[int] = (), *, min_isr: bool = False
) -> TickView:
    """Read what a tick needs about ``keys``; DescribeLogDirs goes to the live brokers among those that
    hold a replica of them (per metadata) plus ``brokers`` (those a move will add); with ``min_isr`` also
    their topics' effective min.insync.replicas."""
    wanted = sorted(set(keys))
    cluster_id, live = gateway.describe_cluster()
    in_flight = gateway.list_reassignments(wanted) if wanted else {}
    described = gateway.describe_partitions({t for t, _ in wanted})
    ask = set(brokers)
    for k in wanted:
        p = described.get(k)
        if p is not None:
            ask.update(p.replicas)
        r = in_flight.get(k)
        if r is not None:
            ask.update(r.replicas)
    ask &= set(live)
    asked = ask if wanted else set()
    dirs = gateway.describe_log_dirs(sorted(asked), wanted) if asked else {}
    topics = {t for t, _ in described}
    mins = gateway.min_insync_replicas(topics) if min_isr and topics else {}
    silent = (asked | (gateway.silent & set(live))) - dirs.keys()  # refused now, or lately and not asked
    return TickView(cluster_id, frozenset(live), described, in_flight, dirs, mins, silent=frozenset(silent))


def dirs_settled(view: TickView, t: PartitionTarget) -> bool:
    for b, d in zip(t.replicas, t.log_dirs, strict=True):
        if d == ANY_DIR:
            continue
        r = view.replica(t.topic, t.partition, b)
        if r.current != d or r.future is not None:
            return False
    return True


def at_target(view: TickView, t: PartitionTarget) -> bool:
    """Not reassigning, replicas equal the target (order included), every named dir matches."""
    p = view.partitions.get(t.key)
    return (
        p is not None and t.key not in view.in_flight and p.replicas == t.replicas and dirs_settled(view, t)
    )
