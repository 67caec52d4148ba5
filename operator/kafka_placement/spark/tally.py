"""The plan's part of the summary's tally in Spark tasks: only its entries, added to the analysis's tally.

The summary (``planning.plan_quality``) is a mergeable ``Tally`` of every partition before and after the
plan. The analysis pass (``spark.analysis``) already tallied every partition as if the plan left it;
what the plan changes is ``Tally.shift`` of each of its entries. The driver sends the plan's entries
with their partitions as the snapshot has them (an Arrow table in slices of IPC streams, as the
analysis has the snapshot; no join, no shuffle), each Spark task shifts its entries and returns its
tally pickled, and the driver merges them into a
copy of the analysis's tally. What stays on the driver is what needs the whole cluster and costs in
proportion to the brokers or to the plan: finishing the metrics from the merged totals
(``planning.optimizer.summarize``), and ordering the plan into batches, which the engine does while the
tasks run (``spark.engines``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

from ..model.plan import PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot
from ..planning.plan_quality import Scope, Tally
from .analysis import BATCH_ROWS, SLICE_BYTES
from .collector import paused_task
from .io import give_back, ipc_slices, ipc_table, partitions_of, partitions_table


def tally_plan(
    spark: Any, snapshot: ClusterSnapshot, base: Tally, plan: Plan, scope: Scope, slices: int
) -> Tally:
    """``base`` (every partition of ``snapshot`` tallied without a plan, under ``scope``) with every
    entry of ``plan`` shifted in by Spark tasks; ``base`` itself is left as it is."""
    return tally_slices(plan_slices(spark, snapshot, plan, slices), base, scope)


def plan_slices(spark: Any, snapshot: ClusterSnapshot, plan: Plan, slices: int) -> Any:
    """The plan's entries (``entries_table``) as an RDD of IPC streams in at least ``slices`` Spark
    partitions (``io.ipc_slices``), None when the plan is empty. They are sent to Spark here, on the
    calling thread (see ``spark.engines``: before a busy thread beside it competes for the GIL)."""
    table = entries_table(snapshot, plan)
    if not table.num_rows:
        return None
    blobs = ipc_slices(table, slices, SLICE_BYTES)
    sent = spark.sparkContext.parallelize(blobs, len(blobs))
    del table, blobs
    give_back()  # (the JVM holds the entries now)
    return sent


def tally_slices(entries: Any, base: Tally, scope: Scope) -> Tally:
    """``base`` with every entry of ``entries`` (``plan_slices``, None for no entry) shifted in by Spark
    tasks; ``base`` itself is left as it is."""
    total = Tally().merge(base)
    if entries is not None:
        for blob in entries.mapPartitions(paused_task(_shift, scope)).collect():
            total.merge(pickle.loads(blob))
    return total


def entries_table(snapshot: ClusterSnapshot, plan: Plan) -> Any:
    """The plan's entries as an Arrow table: each partition as the snapshot has it (``partitions_table``'s
    columns) and its target, ``t_replicas`` and ``t_dirs``. A partition the snapshot lacks is the
    ``BadInputError`` of ``Plan.check_against``."""
    import pyarrow as pa

    entries = plan.partitions
    found = [snapshot.partition(t.topic, t.partition) for t in entries]
    if None in found:
        plan.check_against(snapshot)
    table = partitions_table(found)  # type: ignore[arg-type]
    table = table.append_column("t_replicas", pa.array([t.replicas for t in entries], pa.list_(pa.int32())))
    return table.append_column("t_dirs", pa.array([t.log_dirs for t in entries], pa.list_(pa.string())))


def _shift(scope: Scope, slices: Iterator[bytes]) -> Iterator[bytes]:
    """What each Spark task runs on its slices of entries: one pickled tally."""
    found = Tally()
    for batch in (batch for blob in slices for batch in ipc_table(blob).to_batches(BATCH_ROWS)):
        targets = zip(batch.column("t_replicas").to_pylist(), batch.column("t_dirs").to_pylist(), strict=True)
        for p, (t_reps, t_dirs) in zip(partitions_of(batch), targets, strict=True):
            found.shift(p, PartitionTarget(p.topic, p.partition, tuple(t_reps), tuple(t_dirs)), scope)
    yield pickle.dumps(found)


__all__ = ["entries_table", "plan_slices", "tally_plan", "tally_slices"]
