"""Traffic observations: what one look at a cluster saw of its partitions' offsets, sizes and consumer
groups' committed offsets (docs/architecture.md, "Traffic sampling").

A ``TrafficLook`` is a plain record of one moment: per partition its log start offset, log end offset
and size in bytes (the largest replica, as the snapshot has it) and, optionally, the topic's id (a
topic deleted and created again under the same name has a new one); per consumer group the committed
offset of every partition it has one on. The Kafka gateway produces looks; ``planning/traffic_rates.py`` folds
successive looks into rates and fan-outs. Times are seconds of the sampler's wall clock (looks survive a
restart of the process that took them, so a monotonic clock would not do); nothing here trusts that
clock to move forward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionLook:
    """One partition at one moment: offsets ``[start_offset, end_offset)`` hold ``size_bytes``."""

    start_offset: int
    end_offset: int
    size_bytes: int
    topic_id: str | None = None  # None: not known (never compared)

    @property
    def span(self) -> int:
        """How many offsets the log holds (records, plus compacted or aborted gaps)."""
        return self.end_offset - self.start_offset

    @property
    def valid(self) -> bool:
        """Offsets and size that a real log can have (a negative value is a failed read)."""
        return 0 <= self.start_offset <= self.end_offset and self.size_bytes >= 0


@dataclass(frozen=True, slots=True)
class TrafficLook:
    """One look at a cluster at time ``at``: its partitions and the committed offsets of the consumer
    groups whose offsets were read (``committed[group][(topic, partition)]``; a group missing here was
    not read, a partition missing under a read group has no committed offset)."""

    at: float
    partitions: Mapping[PartitionKey, PartitionLook]
    committed: Mapping[str, Mapping[PartitionKey, int]] = field(default_factory=dict)
