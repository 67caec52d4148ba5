"""What one executor tick reads from Kafka, and the per-partition facts it derives from that read.

``read_view`` reads in-flight reassignments first, then placement and log dirs, so a move that finishes
in between shows as done rather than as vanished. The facts (``at_target``, ``dirs_settled``,
``involved_brokers``) are pure functions of a view, a plan entry and the execution record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..kafka.gateway import KafkaGateway, LogDirInfo, Reassignment
from ..model.plan import ANY_DIR, PartitionTarget
from ..model.snapshot import ClusterSnapshot
from . import state as st

Record = dict[str, Any]
Dirs = Mapping[int, tuple[LogDirInfo, ...]]


@dataclass(frozen=True, slots=True)
class View:
    """What one tick read from Kafka."""

    snapshot: ClusterSnapshot
    in_flight: dict[tuple[str, int], Reassignment]
    dirs: Dirs

    def replica_dirs(self, topic: str, partition: int, broker: int) -> tuple[str | None, str | None]:
        """(current dir, future dir) of one replica per DescribeLogDirs."""
        current = future = None
        for d in self.dirs.get(broker, ()):
            for r in d.replicas:
                if (r.topic, r.partition) == (topic, partition):
                    if r.is_future:
                        future = d.path
                    else:
                        current = d.path
        return current, future


def read_view(gateway: KafkaGateway) -> View:
    in_flight = gateway.list_reassignments()  # first: a move finishing meanwhile shows in the snapshot
    snapshot = gateway.snapshot()
    return View(snapshot, in_flight, gateway.describe_log_dirs())


def dirs_settled(view: View, t: PartitionTarget) -> bool:
    for b, d in zip(t.replicas, t.log_dirs, strict=True):
        if d == ANY_DIR:
            continue
        current, future = view.replica_dirs(t.topic, t.partition, b)
        if current != d or future is not None:
            return False
    return True


def at_target(view: View, t: PartitionTarget) -> bool:
    """Not reassigning, replicas equal the target (order included), every named dir matches."""
    p = view.snapshot.partition(t.topic, t.partition)
    return (
        p is not None and t.key not in view.in_flight and p.replicas == t.replicas and dirs_settled(view, t)
    )


def involved_brokers(record: Record, t: PartitionTarget) -> set[int]:
    """Brokers that gain or lose a replica, or (pure dir moves) move one between their dirs."""
    original = record["original"].get(st.tp_key(*t.key), {})
    before = set(original.get("replicas", ()))
    changed = before ^ set(t.replicas)
    if changed:
        return changed
    old_dirs = dict(zip(original.get("replicas", ()), original.get("logDirs", ()), strict=False))
    return {b for b, d in zip(t.replicas, t.log_dirs, strict=True) if d != ANY_DIR and old_dirs.get(b) != d}
