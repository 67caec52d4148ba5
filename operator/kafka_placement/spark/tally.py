"""The summary's tally in Spark tasks: every metric of a plan summed where the partitions are.

The summary (``planning.metrics``) is one pass over every partition of the snapshot, before and after
the plan, into a mergeable ``Tally``. Here the plan's entries become a DataFrame, are left-joined to the
snapshot's partitions (already hash-partitioned by (topic, partition), so only the plan side moves),
and each Spark task tallies its partitions with the same pure ``Tally.add`` (``mapInArrow``) and
returns its tally pickled; the driver merges one tally per task. What stays on the driver is what
needs the whole cluster and costs in proportion to the brokers or to the plan: finishing the metrics
from the merged totals and ordering the plan's changes into batches (``planning.optimizer.summarize``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from ..model.plan import PartitionTarget, Plan
from ..planning.metrics import Scope, Tally
from .io import partition_of, plan_table

TALLY_SCHEMA = "tally binary"


def tally_partitions(spark: Any, partitions: Any, plan: Plan, scope: Scope) -> Tally:
    """The tally of every row of ``partitions`` (a DataFrame of ``analysis.COLUMNS``) under ``plan``,
    computed by Spark tasks and merged here. The plan must already be checked against the snapshot."""
    table = plan_table(plan).rename_columns(["topic", "partition", "t_replicas", "t_dirs"])
    targets = spark.createDataFrame(table)
    joined = partitions.join(targets, ["topic", "partition"], "left")
    total = Tally()
    for row in joined.mapInArrow(_task(scope), schema=TALLY_SCHEMA).collect():
        total.merge(pickle.loads(row.tally))
    return total


def _task(scope: Scope) -> Any:
    """The function each Spark task runs on its partitions' Arrow batches: one pickled tally."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        found = Tally()
        for batch in batches:
            for r in batch.to_pylist():
                p = partition_of(r)
                reps = r["t_replicas"]
                t = (
                    None
                    if reps is None
                    else PartitionTarget(p.topic, p.partition, tuple(reps), tuple(r["t_dirs"]))
                )
                found.add(p, t, scope)
        yield pa.RecordBatch.from_pydict(
            {"tally": [pickle.dumps(found)]}, pa.schema([("tally", pa.binary())])
        )

    return run


__all__ = ["TALLY_SCHEMA", "tally_partitions"]
