"""Copies done that Kafka does not swap in (execution/promotion.py ``unpromoted``): a future replica in its
target dir, as large as the current one, is reported once seen so for ``PROMOTION_WAIT_S``; one still
copying, one in another dir than the target, or a target of any dir is not; the waits kept are only
those of replicas caught up now. The views are built by hand: the Kafka 3.8.1 defect behind it cannot be
provoked on demand (the compatibility lane met it: docs/compatibility.md)."""

from __future__ import annotations

from kafka_placement.execution.promotion import PROMOTION_WAIT_S, describe, unpromoted
from kafka_placement.execution.view import TickView
from kafka_placement.kafka.types import LogDirInfo, ReplicaInDir
from kafka_placement.model.plan import PartitionTarget

A, B = "/data/a", "/data/b"


def view(*replicas: tuple[int, str, int, int, bool]) -> TickView:
    """(broker, dir, partition, size, future) of topic ``t``."""
    dirs: dict[int, list[LogDirInfo]] = {}
    for broker, path, partition, size, future in replicas:
        dirs.setdefault(broker, []).append(
            LogDirInfo(broker, path, None, 100, 50, None, (ReplicaInDir("t", partition, size, 0, future),))
        )
    return TickView(None, frozenset(dirs), {}, {}, {b: tuple(ds) for b, ds in dirs.items()})


def target(partition: int, *dirs: str) -> PartitionTarget:
    return PartitionTarget("t", partition, tuple(range(1, len(dirs) + 1)), dirs)


def test_a_copy_caught_up_and_not_swapped_in_is_reported_after_the_wait() -> None:
    stuck = view((1, A, 0, 2000, False), (1, B, 0, 2000, True))
    caught: dict[str, float] = {}
    assert unpromoted([target(0, B)], stuck, caught, 100.0) == []
    assert caught == {"t/0/1": 100.0}
    assert unpromoted([target(0, B)], stuck, caught, 100.0 + PROMOTION_WAIT_S - 1) == []
    assert caught == {"t/0/1": 100.0}  # the first time seen is kept
    assert unpromoted([target(0, B)], stuck, caught, 100.0 + PROMOTION_WAIT_S) == [("t", 0, 1)]
    assert caught == {"t/0/1": 100.0}  # reported on each tick until Kafka swaps it in
    assert "t-0 on broker 1" in describe([("t", 0, 1)])
    swapped = view((1, B, 0, 2000, False))
    assert unpromoted([target(0, B)], swapped, caught, 1000.0) == [] and caught == {}


def test_copies_under_way_elsewhere_or_to_any_dir_are_left_alone() -> None:
    caught: dict[str, float] = {"t/9/1": 0.0}  # a replica no longer in flight: its wait goes
    late = 10 * PROMOTION_WAIT_S
    copying = view((1, A, 0, 2000, False), (1, B, 0, 1999, True))
    assert unpromoted([target(0, B)], copying, caught, late) == [] and caught == {}
    elsewhere = view((1, A, 0, 2000, False), (1, B, 0, 2000, True))
    assert unpromoted([target(0, A)], elsewhere, caught, late) == []  # at target already: Kafka's own
    assert unpromoted([target(0, "any")], elsewhere, caught, late) == []
    assert caught == {}
    caught["t/0/1"] = 0.0  # caught up before, copying again now (new writes): the wait goes
    assert unpromoted([target(0, B)], copying, caught, late) == [] and caught == {}


def test_only_the_stuck_replica_of_a_partition_is_reported() -> None:
    stuck = view(
        (1, A, 0, 2000, False),
        (1, B, 0, 2000, True),  # broker 1's copy: done, not swapped in
        (2, A, 0, 2000, False),
        (2, B, 0, 1000, True),  # broker 2's: still copying
    )
    caught = {"t/0/1": 0.0, "t/0/2": 0.0}
    assert unpromoted([target(0, B, B)], stuck, caught, PROMOTION_WAIT_S) == [("t", 0, 1)]
    assert caught == {"t/0/1": 0.0}
