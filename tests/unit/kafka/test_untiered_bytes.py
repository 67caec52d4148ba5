"""KIP-1023's not-yet-tiered bytes (kafka/tiered.py): the tail after the last tiered offset in bytes,
from the local log's bytes per offset; all of it when nothing is tiered yet; never more than the local
size; and the three ListOffsets specs asked for every partition at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_placement.kafka.tiered import EARLIEST_LOCAL, LATEST, LATEST_TIERED, read_untiered, untiered_bytes


def test_the_tail_after_the_last_tiered_offset_in_bytes() -> None:
    # local log: offsets 1000..2000 (1000 offsets, 1 MB: 1 kB each); tiered up to 1899: 100 left
    assert untiered_bytes(1_000_000, end=2000, local_start=1000, last_tiered=1899) == 100_000
    assert untiered_bytes(1_000_000, end=2000, local_start=1000, last_tiered=1999) == 0  # all tiered
    assert untiered_bytes(1_000_000, end=2000, local_start=1000, last_tiered=-1) == 1_000_000  # none yet
    # tiered segments all gone locally and more: never more than the local log
    assert untiered_bytes(1_000_000, end=2000, local_start=1500, last_tiered=999) == 1_000_000
    assert untiered_bytes(0, end=2000, local_start=2000, last_tiered=1999) == 0  # an empty local log


@dataclass(frozen=True)
class _Answer:
    offset: int


def test_every_partition_is_asked_the_three_specs_in_one_call_each() -> None:
    asked: list[set[int]] = []
    table = {
        ("t", 0): {LATEST_TIERED: 1899, EARLIEST_LOCAL: 1000, LATEST: 2000},
        ("t", 1): {LATEST_TIERED: -1, EARLIEST_LOCAL: 0, LATEST: 10},
    }

    def list_offsets(specs: Mapping[Any, int]) -> dict[Any, _Answer]:
        asked.append(set(specs.values()))
        return {tp: _Answer(table[tp][spec]) for tp, spec in specs.items()}

    found = read_untiered(list_offsets, lambda t, p: (t, p), {("t", 0): 1_000_000, ("t", 1): 500})
    assert found == {("t", 0): 100_000, ("t", 1): 500}
    assert asked == [{LATEST_TIERED}, {EARLIEST_LOCAL}, {LATEST}]
