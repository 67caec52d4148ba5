"""The analysis's selection checked against the planner's own rule, in Spark tasks.

``analysis.SnapshotFrames.to_repair`` selects the partitions the hard goal must change with joins and
window functions; the pure planner's rule is ``needs_repair``. They are tested equal on random
snapshots, but the Spark engine does not lean on that alone: every run, each Spark task evaluates
``needs_repair`` on its partitions (the same pure function, on a planning context of those partitions
and every broker) and returns the partitions where the selection differs. ``needs_repair`` of a
partition depends only on that partition and the intents, so a task needs nothing of the others.

With no difference the driver's reconciliation pass checks only the partitions the shards changed
(``planning.sharding.merge_and_balance(exact_selection=True)``) instead of every partition of the
cluster; with any, it re-runs the hard goal over every partition, as before, and the report counts them.
The check runs beside the shard job (its own Spark job, from its own driver thread), so it adds no
serial time to the driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model.intents import Intents
from ..model.snapshot import ClusterSnapshot
from ..planning.context import PlanningContext
from ..planning.goals.replica_placement import needs_repair
from ..planning.state import Key
from .analysis import REASONS
from .io import partition_of

MISMATCH_SCHEMA = "topic string, partition int, selected boolean"


def selection_mismatches(flagged: Any, brokers: ClusterSnapshot, intents: Intents) -> list[tuple[Key, bool]]:
    """The partitions of ``flagged`` (``analysis.COLUMNS`` plus one boolean column per reason) where
    "some reason holds" differs from ``needs_repair``, each with whether the analysis selected it.
    ``brokers`` is the snapshot's brokers (its partitions are not used)."""
    from pyspark.sql import functions as F

    selected = F.lit(False)
    for reason in REASONS:
        selected = selected | F.coalesce(F.col(reason), F.lit(False))
    rows = flagged.withColumn("selected", selected).drop(*REASONS)
    found = rows.mapInArrow(_task(brokers, intents), schema=MISMATCH_SCHEMA).collect()
    return sorted(((str(r.topic), int(r.partition)), bool(r.selected)) for r in found)


def _task(brokers: ClusterSnapshot, intents: Intents) -> Any:
    """The function each Spark task runs on its partitions' Arrow batches."""
    known = ClusterSnapshot(brokers.brokers, (), brokers.cluster_id)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("selected", pa.bool_())])
        for batch in batches:
            rows = batch.to_pylist()
            parts = tuple(partition_of(r) for r in rows)
            ctx = PlanningContext.of(ClusterSnapshot(known.brokers, parts, known.cluster_id), intents)
            odd = [
                (p, r["selected"])
                for p, r in zip(parts, rows, strict=True)
                if needs_repair(ctx, p.key) != r["selected"]
            ]
            if odd:
                yield pa.RecordBatch.from_pydict(
                    {
                        "topic": [p.topic for p, _ in odd],
                        "partition": [p.partition for p, _ in odd],
                        "selected": [s for _, s in odd],
                    },
                    schema,
                )

    return run


__all__ = ["MISMATCH_SCHEMA", "selection_mismatches"]
