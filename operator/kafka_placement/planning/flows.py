"""What a plan's entries copy, per broker, per topic and per entry: the report's flows (``report.py``).

Summed by the summary's tally as it shifts each plan entry in (``plan_quality.Tally.shift``; the Spark
engine's tasks shift the entries, so they sum these too) and merged with it, so a report of the
planner's plan reads them from the planner's tally instead of a second pass over the plan. Only sums per
broker and topic are kept, and of the entries only the ``LARGEST`` moving the most bytes (plus some
candidates, cut as they come), so they stay small however large the plan. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.snapshot import PartitionState

LARGEST = 50  # the entries kept, by bytes moved (the report lists at most this many: report.MAX_MOVES)

# an entry among the largest: (-bytes moved, partition name, copy bytes, replicas before, replicas after)
Entry = tuple[int, str, int, tuple[int, ...], tuple[int, ...]]


@dataclass(slots=True)
class Flows:
    """Per broker: bytes copied to it (``bytes_in``), of its replicas leaving it (``bytes_out``) and moved
    between its own dirs (``dir_bytes``), each a copy of the partition's ``copy_bytes``; per topic:
    ``[entries, replica moves, bytes to move]`` (``plan_quality.count_move``'s counts); the entries
    counted, and the largest of them (``largest``)."""

    bytes_in: dict[int, int] = field(default_factory=dict)
    bytes_out: dict[int, int] = field(default_factory=dict)
    dir_bytes: dict[int, int] = field(default_factory=dict)
    topics: dict[str, list[int]] = field(default_factory=dict)
    entries: int = 0
    # the LARGEST smallest entries (by -bytes, then name) with other candidates, unsorted; every entry
    # left out is at or past ``_floor``
    _kept: list[Entry] = field(default_factory=list)
    _floor: tuple[int, str] | None = None

    def add(self, p: PartitionState, q: PartitionState) -> None:
        """Plan entry moving partition ``p`` to ``q`` (``plan_quality.after_move``)."""
        self.entries += 1
        copy = p.copy_bytes
        reps, dirs, q_reps, q_dirs = p.replicas, p.log_dirs, q.replicas, q.log_dirs
        moves = moved = 0
        if q_reps != reps or q_dirs != dirs:  # (tuples of a few: no dict, no set)
            bytes_in, dir_bytes, bytes_out = self.bytes_in, self.dir_bytes, self.bytes_out
            for b, d in zip(q_reps, q_dirs, strict=True):
                if b not in reps:
                    moves += 1
                    moved += copy
                    bytes_in[b] = bytes_in.get(b, 0) + copy
                elif d is not None and (was := dirs[reps.index(b)]) is not None and d != was:
                    moved += p.size_bytes  # (a dir move copies the whole local log: count_move)
                    dir_bytes[b] = dir_bytes.get(b, 0) + copy
            for b in reps:
                if b not in q_reps:
                    bytes_out[b] = bytes_out.get(b, 0) + copy
        row = self.topics.get(p.topic)
        if row is None:
            self.topics[p.topic] = [1, moves, moved]
        else:
            row[0] += 1
            row[1] += moves
            row[2] += moved
        floor = self._floor
        if floor is None or -moved <= floor[0]:
            name = f"{p.topic}-{p.partition}"
            if floor is None or (-moved, name) < floor:
                self._kept.append((-moved, name, copy, reps, q_reps))
                if len(self._kept) >= 4 * LARGEST:
                    self._cut()

    def _cut(self) -> None:
        kept = self._kept
        kept.sort()
        del kept[LARGEST:]
        if len(kept) == LARGEST:
            self._floor = kept[-1][:2]

    def merge(self, other: Flows) -> None:
        """Add ``other`` (the flows of other entries) into these."""
        for mine, theirs in (
            (self.bytes_in, other.bytes_in),
            (self.bytes_out, other.bytes_out),
            (self.dir_bytes, other.dir_bytes),
        ):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for topic, row in other.topics.items():
            found = self.topics.get(topic)
            if found is None:
                self.topics[topic] = list(row)
            else:
                found[0] += row[0]
                found[1] += row[1]
                found[2] += row[2]
        self.entries += other.entries
        self._kept.extend(other._kept)
        self._cut()

    def largest(self, n: int = LARGEST) -> list[Entry]:
        """The ``n`` (at most ``LARGEST``) entries moving the most bytes, then by name."""
        if n > LARGEST:
            raise ValueError(f"only the {LARGEST} largest entries are kept, not {n}")
        return sorted(self._kept)[:n]
