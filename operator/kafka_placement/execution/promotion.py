"""Dir moves whose copy is done but that Kafka does not complete: found and reported, never waited on in
silence.

A move between the dirs of a broker (KIP-113) copies the replica into a "future" replica in the target dir;
once the future replica has caught up, the broker swaps it in. Kafka 3.7 and 3.8 can lose that swap when the
partition changes while it is under way (a new leader, an ISR or replica list change, as a reassignment makes
as it completes): the change re-adds the broker's dir fetcher, the swap's state is dropped (a
NullPointerException in ``ReplicaAlterLogDirsThread.updateReassignmentState``), and the fetcher, re-added at
the copy's end, tries no swap again while nothing new is written to the partition; the future replica stays as
large as the current one, never swapped in (met on 3.8.1 in this project's compatibility lane, where a
decommission moved a partition's leader to the broker copying it between its dirs). Three remedies were tried
on the rig and none avoided it (docs/compatibility.md): removing the copy and copying again, starting a
partition's dir moves only once its reassignment was done, and a decommission and a dir drain as two plans
(the directory assignment of one swap came during another's). This module finds each copy caught up (as large
as the current replica) and not swapped in for ``PROMOTION_WAIT_S`` (a swap takes well under a second), and
the executor names it in the execution's last error and its log: the execution waits for Kafka, saying which
replica and why, instead of showing an ETA of 0 s forever. The first time each was seen caught up is kept in
the record (``ExecutionDoc.caught_up``), so a restart of the operator does not restart the wait.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping, Sequence

from ..model.plan import ANY_DIR, PartitionTarget
from .view import TickView

PROMOTION_WAIT_S = 60.0

ReplicaKey = tuple[str, int, int]  # (topic, partition, broker)


def caught_up_key(key: ReplicaKey) -> str:
    """The record's key of a replica (topic names have no ``/``)."""
    return f"{key[0]}/{key[1]}/{key[2]}"


def unpromoted(
    targets: Iterable[PartitionTarget],
    view: TickView,
    caught_up: MutableMapping[str, float],
    now: float,
) -> list[ReplicaKey]:
    """The future replicas in their target dirs (of ``targets``, the partitions in flight) caught up for
    ``PROMOTION_WAIT_S`` or longer and not swapped in. ``caught_up`` (replica key -> first seen caught up)
    is updated: an entry starts when first seen, and goes once its replica is no longer a caught-up
    future (swapped in, copying again, or not in flight)."""
    seen: dict[str, float] = {}
    stalled: list[ReplicaKey] = []
    for t in targets:
        for b, d in zip(t.replicas, t.log_dirs, strict=True):
            r = view.replica(t.topic, t.partition, b)
            if d == ANY_DIR or r.current is None or r.future != d or r.future_size < r.current_size:
                continue
            key = (t.topic, t.partition, b)
            name = caught_up_key(key)
            since = seen[name] = caught_up.get(name, now)
            if now - since >= PROMOTION_WAIT_S:
                stalled.append(key)
    caught_up.clear()
    caught_up.update(seen)
    return stalled


def describe(stalled: Sequence[ReplicaKey]) -> str:
    """One line for the record's last error and the log."""
    shown = ", ".join(f"{t}-{p} on broker {b}" for t, p, b in stalled[:5])
    more = f" and {len(stalled) - 5} more" if len(stalled) > 5 else ""
    return (
        f"copied into its target dir but not swapped in by Kafka for {PROMOTION_WAIT_S:.0f}s or more: "
        f"{shown}{more} (Kafka 3.7 and 3.8 can lose the swap when the partition changes meanwhile; "
        "the execution waits for Kafka; see docs/compatibility.md)"
    )
