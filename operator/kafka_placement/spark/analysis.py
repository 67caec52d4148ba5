"""The snapshot in Spark: one pass of parallel tasks finds the partitions to repair and tallies them all.

What the sharded planner needs before its shards run, and the plan-independent part of the summary,
computed by Spark tasks instead of by the driver. The partitions arrive as an Arrow table
(``io.partitions_table``), sliced into a few Spark partitions per core; one ``mapInArrow`` pass runs
the pure planner's own rules on each slice:

- ``repair_reasons`` (``planning.goals.replica_placement``, the rule ``needs_repair`` applies): the
  partitions the hard goal must change pass through as they came (an Arrow filter, no conversion), for
  the shards;
- the summary's tally of every partition as if the plan left it (``Tally.add(p, None)``: loads before,
  the lower bound's sums, what broker balance can reach, violations before) and the partitions per
  reason: one pickled row per task, merged on the driver. Bytes and replicas per broker and dir (the
  shards' starting point) are that tally's loads before.

The pass's output is cached: the driver reads the task rows, the shards read the rows to repair. Once
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

from ..model.snapshot import ClusterSnapshot
from ..planning.goals.replica_placement import REPAIR_REASONS, repair_reasons
from ..planning.metrics import Scope, Tally, add_into
from ..planning.state import ClusterLoads
from .collector import paused_task
from .io import PARTITION_COLUMNS, partitions_of, partitions_schema, partitions_table

COLUMNS = PARTITION_COLUMNS


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
    """The pass's result: what it found, merged, and the partitions to repair (a cached DataFrame of
    ``COLUMNS``; ``close`` releases it)."""

    found: Found
    to_repair: Any
    _output: Any

    def close(self) -> None:
        self._output.unpersist()


@dataclass(slots=True)
class SnapshotFrames:
    """One snapshot's partitions in Spark, sliced into ``slices`` Spark partitions."""

    spark: Any
    snapshot: ClusterSnapshot  # the brokers, and the partitions the DataFrame holds
    partitions: Any  # DataFrame of COLUMNS (an unknown dir or leader is null)

    @staticmethod
    def of(spark: Any, snapshot: ClusterSnapshot, slices: int) -> SnapshotFrames:
        """The snapshot's partitions as a DataFrame from an Arrow table, in ``slices`` Spark partitions
        (Arrow's batches grouped without a shuffle)."""
        df = spark.createDataFrame(partitions_table(snapshot.partitions))
        return SnapshotFrames(spark, snapshot, df.coalesce(max(1, slices)))

    def analyse(self, scope: Scope) -> Analysis:
        """Run the pass (module docstring) under ``scope`` (the snapshot's enforced intents)."""
        output = self.partitions.mapInArrow(paused_task(_analyse, scope), schema=_output_schema()).cache()
        found = Found()
        try:
            for row in output.where("found IS NOT NULL").select("found").collect():
                found.merge(pickle.loads(row.found))
        except BaseException:
            output.unpersist()
            raise
        return Analysis(found, output.where("found IS NULL").select(*COLUMNS), output)


def _output_schema() -> Any:
    """The pass's rows: ``io.partitions_schema`` and ``found`` (a task's pickled ``Found``, else null)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(partitions_schema().append(pa.field("found", pa.binary())))


def _analyse(scope: Scope, batches: Iterator[Any]) -> Iterator[Any]:
    """What each Spark task runs on its partitions' Arrow batches (module docstring)."""
    import pyarrow as pa

    found = Found()
    tally, repairs, elig = found.tally, found.repairs, scope.elig
    for batch in batches:
        keep = []
        for p in partitions_of(batch):
            tally.add(p, None, scope)
            why = repair_reasons(
                elig, p.replicas, p.log_dirs, p.size_bytes, scope.rf(p), scope.policy(p.topic)[1]
            )
            keep.append(bool(why))
            if why:
                repairs["total"] += 1
                for r in why:
                    repairs[r] += 1
        chosen = batch.filter(pa.array(keep, pa.bool_()))
        yield pa.RecordBatch.from_arrays(
            [*chosen.columns, pa.nulls(chosen.num_rows, pa.binary())], names=[*COLUMNS, "found"]
        )
    blob = pickle.dumps(found)
    yield pa.RecordBatch.from_arrays(
        [*(pa.nulls(1, f.type) for f in partitions_schema()), pa.array([blob], pa.binary())],
        names=[*COLUMNS, "found"],
    )


def shard_column(shards: int) -> Any:
    """``planning.sharding.shard_of`` as a Spark column: CRC-32 of ``topic NUL partition`` mod shards."""
    from pyspark.sql import functions as F

    key = F.concat(F.col("topic"), F.lit("\0"), F.col("partition").cast("string"))
    return (F.crc32(key) % shards).cast("int")


__all__ = ["COLUMNS", "Analysis", "Found", "SnapshotFrames", "shard_column"]
