"""The Spark engine's Arrow form of partitions: ``partitions_table`` and ``partitions_of`` are inverse
(what the analysis, the shards and the tally's tasks read is what the driver sent)."""

from __future__ import annotations

import pyarrow as pa

from kafka_placement.model.snapshot import PartitionState
from kafka_placement.spark.io import partitions_of, partitions_table


def test_partitions_round_trip_through_an_arrow_table_and_its_batches() -> None:
    parts = [
        PartitionState("a", 0, (1, 2, 3), ("/d0", None, "/d1"), 1, (1, 2), 10),
        PartitionState("b", 7, (4,), (None,), None, (), 0),  # no leader, no known dir, empty ISR
        PartitionState("c\u00e9", 2**30, (5, 6), ("/d0", "/d0"), 6, (6, 5), 2**40),
    ]
    table = partitions_table(parts)
    assert list(partitions_of(table)) == parts
    extra = table.append_column("t_replicas", pa.array([[9]] * 3, pa.list_(pa.int32())))
    batches = extra.to_batches(max_chunksize=2)
    assert len(batches) == 2 and [p for b in batches for p in partitions_of(b)] == parts
