"""The KafkaCluster status's brokers and log dirs (``status.brokers``, ``status.dirTable``), bounded in bytes
whatever the cluster's size.

Each broker has a summary (id, rack, its dirs' count, used and usable bytes summed: ~100 bytes, so the
budget lists ~2,500 brokers); each dir a row (path, used, total
and usable bytes, cordoned, online). While every broker's summary and every dir's row fit in
``STATUS_BROKERS_BUDGET`` bytes of JSON, all are listed (``dirTable.complete``). Beyond it (a large JBOD
cluster: 1,000 brokers x 16 dirs are 1.9 MB of rows) the status lists first the dirs a user must see,
offline, then cordoned (a LogDirCordon's, draining or not, and KIP-1066's), then at least
``FULL_DIR_SHARE`` full, each with its broker's summary, then the other brokers' summaries, in that order
until the budget is met; every other dir is left out, and ``dirTable`` says how many are listed, how many
are not (dirs and brokers) and where the full table is. Nothing here reads a clock or Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.cluster_status import STATUS_BROKERS_BUDGET

# A dir whose volume is at least this full is listed (after offline and cordoned ones) when not all are:
# the share above which the executor counts a move off the dir as freeing a full dir.
FULL_DIR_SHARE = 0.85
# Room kept in the budget for ``dirTable`` itself (its message is at most 1,000 characters).
_TABLE_ROOM = 1536

# Where every dir is: the CLI's snapshot reads the cluster whole, as the operator does.
ALL_DIRS = (
    "kafka-placement snapshot --bootstrap-server <spec.bootstrapServers> (with the cluster's credentials): "
    "its brokers[].logDirs"
)

OFFLINE, CORDONED, FULL, OTHER = range(4)  # why a dir is listed, most pressing first


@dataclass(frozen=True, slots=True)
class StatusDir:
    """One log dir as the status shows it."""

    path: str
    used_bytes: int
    total_bytes: int
    usable_bytes: int
    cordoned: bool
    online: bool

    @property
    def rank(self) -> int:
        """Why the dir is listed when not all are: ``OFFLINE``, ``CORDONED``, ``FULL``, else ``OTHER``."""
        if not self.online:
            return OFFLINE
        if self.cordoned:
            return CORDONED
        if (
            self.total_bytes > 0
            and (self.total_bytes - self.usable_bytes) / self.total_bytes >= FULL_DIR_SHARE
        ):
            return FULL
        return OTHER

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "usedBytes": self.used_bytes,
            "totalBytes": self.total_bytes,
            "usableBytes": self.usable_bytes,
            "cordoned": self.cordoned,
            "online": self.online,
        }


@dataclass(frozen=True, slots=True)
class StatusBroker:
    """One broker with its dirs."""

    id: int
    rack: str | None
    dirs: tuple[StatusDir, ...]

    def summary(self) -> dict[str, Any]:
        """The broker without its dirs' rows: what is listed of every broker the budget holds. ``rack`` is
        absent when unknown (a broker not alive): the schema has no null, and a merge patch's null would
        delete it."""
        return {
            "id": self.id,
            **({} if self.rack is None else {"rack": self.rack}),
            "logDirCount": len(self.dirs),
            "usedBytes": sum(d.used_bytes for d in self.dirs),
            "usableBytes": sum(d.usable_bytes for d in self.dirs),
        }


def _size(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode())


def brokers_status(
    brokers: Iterable[StatusBroker], budget: int = STATUS_BROKERS_BUDGET, *, where_all: str = ""
) -> dict[str, Any]:
    """``status.brokers`` (by broker id) and ``status.dirTable`` of ``brokers``, their JSON at most
    ``budget`` bytes (see the module docstring for what is listed first). ``where_all`` tells where the
    full table is, for the message when not every dir is listed."""
    rows = sorted(brokers, key=lambda b: b.id)
    summaries = {b.id: b.summary() for b in rows}
    dirs = [(d.rank, b.id, i, d) for b in rows for i, d in enumerate(b.dirs)]
    # each broker's "logDirs":[...] and the separators: 14 bytes; each row + its comma
    full = sum(_size(s) + 14 for s in summaries.values()) + sum(_size(d.to_json()) + 1 for *_, d in dirs)
    if full + _TABLE_ROOM <= budget:
        listed = {(b, i) for _, b, i, _ in dirs}
        shown = set(summaries)
    else:
        room, listed, shown = budget - _TABLE_ROOM - 2, set(), set()  # 2: the list's brackets
        for rank, b, i, d in sorted(dirs, key=lambda e: e[:3]):
            if rank == OTHER:
                break
            cost = _size(d.to_json()) + 1 + (0 if b in shown else _size(summaries[b]) + 15)
            if cost > room:
                break  # the rest of this rank and the ranks after it: left out, counted
            room -= cost
            listed.add((b, i))
            shown.add(b)
        for b in (r.id for r in rows if r.id not in shown):
            cost = _size(summaries[b]) + 1
            if cost > room:
                break
            room -= cost
            shown.add(b)
    out = []
    for r in rows:
        if r.id not in shown:
            continue
        entry = dict(summaries[r.id])
        mine = [d.to_json() for i, d in enumerate(r.dirs) if (r.id, i) in listed]
        if mine or len(listed) == len(dirs):  # all listed: every broker's list, as it always was
            entry["logDirs"] = mine
        out.append(entry)
    return {"brokers": out, "dirTable": _table(rows, listed, len(dirs), len(shown), full, budget, where_all)}


def _table(
    rows: Sequence[StatusBroker],
    listed: set[tuple[int, int]],
    total: int,
    shown: int,
    full: int,
    budget: int,
    where_all: str,
) -> dict[str, Any]:
    complete = len(listed) == total and shown == len(rows)
    table: dict[str, Any] = {
        "complete": complete,
        "logDirsListed": len(listed),
        "logDirsOmitted": total - len(listed),
        "brokersOmitted": len(rows) - shown,
    }
    if not complete:
        kinds = {OFFLINE: 0, CORDONED: 0, FULL: 0}
        left = {OFFLINE: 0, CORDONED: 0, FULL: 0}
        for r in rows:
            for i, d in enumerate(r.dirs):
                if d.rank in kinds:
                    kinds[d.rank] += 1
                    left[d.rank] += (r.id, i) not in listed
        notable = sum(left.values())
        message = (
            f"{len(listed)} of {total} log dirs listed in status.brokers[].logDirs, {shown} of {len(rows)} "
            f"brokers: every dir's row would take {full} bytes, over the status's budget of {budget}. "
            f"Listed first: offline ({kinds[OFFLINE]}), cordoned ({kinds[CORDONED]}), at least "
            f"{FULL_DIR_SHARE:.0%} full ({kinds[FULL]})"
            + (f"; {notable} of these left out too." if notable else "; all listed.")
            + f" Every dir: {where_all or ALL_DIRS}."
        )
        table["message"] = message[:1000]
    return table
