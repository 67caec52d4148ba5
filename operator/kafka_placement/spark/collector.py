"""Python's cyclic garbage collector, paused while a snapshot is read and a plan is computed.

At a million partitions a plan holds tens of millions of objects (the snapshot, the working assignment,
the goals' indexes) and keeps allocating more; the collector's full passes walk every one of them, and
one comes each time the heap has grown by a quarter, so they cost in proportion to the cluster many
times over while contributing nothing: the planner makes no reference cycles that need freeing while it
runs, and reference counting frees everything else at once. Measured at 1M partitions
(docs/benchmarks.md): the three balance goals 19.7 s with the collector, 10.7 s without; reading the
snapshot 18.0 s with it, 13.7 s without (Parquet; JSON 23.1 s and 14.8 s).

The Spark engine's tasks (the analysis, the shards' hard goal, the plan's tally) pause it too, in their
Python workers, and so does the plan's report (``kafka-placement report``, the operator's plan review).
The collector is process-wide, so pauses are counted: it runs again when the last one ends (and only if
it was on when the first began), also when pauses from several threads overlap.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

S = TypeVar("S")


class _Pauses:
    """How many pauses are open, and whether the collector was on before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.resume = False


_PAUSES = _Pauses()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the ``with`` block (see the module docstring)."""
    with _PAUSES.lock:
        if _PAUSES.open == 0:
            _PAUSES.resume = gc.isenabled()
            gc.disable()
        _PAUSES.open += 1
    try:
        yield
    finally:
        with _PAUSES.lock:
            _PAUSES.open -= 1
            if _PAUSES.open == 0 and _PAUSES.resume:
                gc.enable()


def paused_task(
    body: Callable[[S, Iterator[Any]], Iterator[Any]], arg: S
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapPartitions`` function running ``body(arg, items)`` with the collector paused in the Spark
    task's Python worker (its tasks allocate as the planner does)."""

    def run(items: Iterator[Any]) -> Iterator[Any]:
        with collector_paused():
            yield from body(arg, items)

    return run


__all__ = ["collector_paused", "paused_task"]
