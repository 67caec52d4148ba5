"""KIP-1023's not-yet-tiered bytes of remote-storage partitions, read from Kafka (ListOffsets).

With ``follower.fetch.last.tiered.offset.enable`` on, a new follower of a remote-storage topic starts after
the partition's last tiered offset instead of at its leader's local-log-start offset, so a move copies only
the log's tail that is not tiered yet. Kafka answers ListOffsets with the timestamp -5 (LATEST_TIERED,
KIP-1005, ListOffsets v9) with that offset (-1: nothing tiered yet), -4 (EARLIEST_LOCAL) with the local
log's start and -1 (LATEST) with its end; the local log's bytes per offset (its size over its offset span)
turns the tail's offsets into bytes. kafka-python sends each spec as one request per partition leader
(librdkafka refuses -5), so the cost is three requests per leader of those partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

LATEST = -1
EARLIEST_LOCAL = -4
LATEST_TIERED = -5

Key = tuple[str, int]


def untiered_bytes(size: int, end: int, local_start: int, last_tiered: int) -> int:
    """The bytes a KIP-1023 follower copies of a partition whose local log holds ``size`` bytes from
    offset ``local_start`` up to ``end`` (the log end offset), its last tiered offset ``last_tiered``
    (negative: none yet, the follower starts at the local log's start and copies it all). Never more
    than ``size``."""
    span = end - local_start
    if last_tiered < 0 or span <= 0:
        return size if last_tiered < 0 else 0
    tail = max(0, end - (last_tiered + 1))
    return min(size, round(size * tail / span))


def read_untiered(
    list_offsets: Callable[[Mapping[Any, int]], Mapping[Any, Any]],
    make_key: Callable[[str, int], Any],
    sizes: Mapping[Key, int],
) -> dict[Key, int]:
    """Each partition of ``sizes`` (its local size) with its not-yet-tiered bytes. ``list_offsets`` is
    kafka-python's ``list_partition_offsets`` (a spec per partition, answered with ``.offset``);
    ``make_key`` builds its partition keys (``TopicPartition``)."""
    keys: Sequence[Key] = sorted(sizes)
    tps = {k: make_key(*k) for k in keys}

    def offsets(spec: int) -> dict[Key, int]:
        found = list_offsets({tp: spec for tp in tps.values()})
        return {k: int(found[tp].offset) for k, tp in tps.items()}

    tiered, start, end = offsets(LATEST_TIERED), offsets(EARLIEST_LOCAL), offsets(LATEST)
    return {k: untiered_bytes(sizes[k], end[k], start[k], tiered[k]) for k in keys}
