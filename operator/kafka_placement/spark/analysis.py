"""The snapshot in Spark: one pass of parallel tasks finds the partitions to repair and tallies them all.

What the sharded planner needs before its shards run, and the plan-independent part of the summary,
computed by Spark tasks instead of by the driver. The partitions arrive as an Arrow table
(``io.partitions_table``) cut into slices of contiguous rows, a few per core, each an Arrow IPC stream
in an RDD (``SnapshotSlices``): the JVM passes those bytes to the Python tasks and back as they are,
instead of converting every row to Spark's rows and back to Arrow on each side of each task. One
``mapPartitions`` pass runs the pure planner's own rules on each slice:

- ``repair_reasons`` (``planning.goals.replica_placement``, the rule ``needs_repair`` applies): the
  partitions the hard goal must change pass through as they came (an Arrow filter, no conversion), for
  the shards;
- the summary's tally of every partition as if the plan left it (``Tally.add(p, None)``: loads before,
  the lower bound's sums, what broker balance can reach, violations before) and the partitions per
  reason: pickled, one per slice, merged on the driver. Bytes and replicas per broker and dir (the
  shards' starting point) are that tally's loads before.

The pass's output is cached: the driver reads the tallies, the shards read the rows to repair. Once
the plan is made, only its entries are tallied (``spark.tally``: ``Tally.shift``), and the plan's
tally is this one merged with theirs. The same functions select and tally in the local engine, so
there is one source of every rule; the engine still checks its plan against every hard rule on
every partition after the plan (``spark.engines``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model.snapshot import ClusterSnapshot, PartitionState
from ..planning.plan_quality import Scope, Tally, add_into
from ..planning.repairs import REPAIR_REASONS, repair_reasons
from ..planning.state import ClusterLoads
from .collector import paused_task
from .io import (
    PARTITION_COLUMNS,
    give_back,
    ipc_bytes,
    ipc_slices,
    ipc_table,
    partitions_of,
    partitions_table,
)

COLUMNS = PARTITION_COLUMNS
# Arrow bytes per slice at most: a Spark task carries its slice, and a task must stay well under
# spark.rpc.message.maxSize (128 MiB by default); ~8 MiB is ~80k partitions.
SLICE_BYTES = 8 << 20
BATCH_ROWS = 10_000  # a task reads its slice this many rows at a time (Python lists of one batch at once)


@dataclass(slots=True)
class Found:
    """What the pass found in some partitions (one task's, or all of them merged)."""

    tally: Tally = field(default_factory=Tally)  # every partition as the plan leaving it
    repairs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("total", *REPAIR_REASONS), 0))

    def merge(self, other: Found) -> None:
        self.tally.merge(other.tally)
        add_into(self.repairs, other.repairs)

    def loads(self, snapshot: ClusterSnapshot) -> ClusterLoads:
        """Bytes and replicas per broker and per dir of the snapshot (0 when it holds none)."""
        before = self.tally.before
        loads = ClusterLoads({}, {}, {}, {})
        for b in snapshot.brokers:
            loads.broker_bytes[b.id] = before.bytes.get(b.id, 0)
            loads.broker_replicas[b.id] = before.replicas.get(b.id, 0)
            for path in b.dir_paths:
                loads.dir_bytes[(b.id, path)] = before.dir_bytes.get((b.id, path), 0)
                loads.dir_replicas[(b.id, path)] = before.dir_replicas.get((b.id, path), 0)
        return loads

    def report(self, partitions: int) -> dict[str, Any]:
        """How many partitions the pass sends to the shards, in total and per rule."""
        return {
            "partitions": partitions,
            "partitionsToRepair": self.repairs["total"],
            "byRule": {r: self.repairs[r] for r in REPAIR_REASONS},
        }


@dataclass(slots=True)
class Analysis:
    """The pass's result: what it found, merged, and the partitions to repair (``to_repair``, a cached RDD;
    ``close`` releases it)."""

    found: Found
    _output: Any  # RDD of (a task's pickled Found, its partitions to repair as an Arrow IPC stream)

    @property
    def to_repair(self) -> Any:
        """The partitions to repair: an RDD of Arrow IPC streams of ``COLUMNS``, in the snapshot's order
        (one per slice of it, its position first: ``(slice, stream)``)."""
        return self._output.values()

    def repairs(self) -> list[PartitionState]:
        """The partitions to repair, read back on the driver (in the snapshot's order)."""
        return [p for _, blob in sorted(self.to_repair.collect()) for p in partitions_of(ipc_table(blob))]

    def close(self) -> None:
        self._output.unpersist()


@dataclass(slots=True)
class SnapshotSlices:
    """One snapshot's partitions in Spark: an RDD of Arrow IPC streams, one per slice (contiguous runs
    of rows), which the JVM holds and passes to the tasks as bytes (no conversion to rows and back)."""

    spark: Any
    snapshot: ClusterSnapshot  # the brokers, and the partitions the RDD holds
    slices: Any  # RDD of (slice number, IPC stream of COLUMNS: an unknown dir or leader is null)

    @staticmethod
    def of(spark: Any, snapshot: ClusterSnapshot, slices: int) -> SnapshotSlices:
        """The snapshot's partitions in at least ``slices`` Spark partitions (more when a slice would
        pass ``SLICE_BYTES``)."""
        blobs = ipc_slices(partitions_table(snapshot.partitions), slices, SLICE_BYTES)
        numbered = spark.sparkContext.parallelize(list(enumerate(blobs)), len(blobs))
        del blobs
        give_back()  # (the JVM holds the slices now)
        return SnapshotSlices(spark, snapshot, numbered)

    def analyse(self, scope: Scope) -> Analysis:
        """Run the pass (module docstring) under ``scope`` (the snapshot's enforced intents)."""
        output = self.slices.mapPartitions(paused_task(_analyse, scope)).cache()
        found = Found()
        try:
            for blob in output.keys().collect():
                found.merge(pickle.loads(blob))
        except BaseException:
            output.unpersist()
            raise
        return Analysis(found, output)


def _analyse(scope: Scope, slices: Iterator[tuple[int, bytes]]) -> Iterator[tuple[bytes, tuple[int, bytes]]]:
    """What each Spark task runs on its slices (module docstring): per slice, its pickled ``Found`` and
    its partitions to repair."""
    import pyarrow as pa

    elig = scope.elig
    for number, blob in slices:
        table = ipc_table(blob)
        found = Found()
        tally, repairs = found.tally, found.repairs
        keep = []
        for p in (p for batch in table.to_batches(BATCH_ROWS) for p in partitions_of(batch)):
            tally.add(p, None, scope)
            why = repair_reasons(
                elig,
                p.replicas,
                p.log_dirs,
                p.size_bytes,
                scope.rf(p),
                scope.policy(p.topic)[1],
                p.leader,
                p.isr,
            )
            keep.append(bool(why))
            if why:
                repairs["total"] += 1
                for r in why:
                    repairs[r] += 1
        chosen = table.filter(pa.array(keep, pa.bool_())) if keep else table
        yield pickle.dumps(found), (number, ipc_bytes(chosen))


__all__ = ["BATCH_ROWS", "COLUMNS", "SLICE_BYTES", "Analysis", "Found", "SnapshotSlices"]
