"""A ``TrafficState`` (planning/traffic_rates.py) as a small columnar JSON document, so that a sampler can
keep it with its cluster and go on after a restart. Pure: no I/O.

One column per field, one row per partition (``topic``, ``partition``, ``at``, ``start``, ``end``,
``size``, ``topicId``, ``rate``), the group names once (``groups``) and per row the groups' committed
offsets and last advances as ``[group index, value]`` pairs; ``read`` lists the groups the last look
read; ``skipped`` the samples skipped so far by reason (absent: none). Its size follows the partitions and
the groups reading them, whatever the number of looks. Read
strictly: a malformed document is a ``BadInputError`` naming the location (a sampler then starts afresh:
unknown estimates, never wrong ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.errors import BadInputError
from ..model.jsonio import as_int, as_int32, as_list, as_number, as_object, as_str, as_topic, check_fields
from ..model.traffic_looks import PartitionLook
from .traffic_rates import SKIP_REASONS, PartitionTraffic, TrafficState

STATE_VERSION = 1
_COLUMNS = ("topic", "partition", "at", "start", "end", "size", "topicId", "rate", "committed", "advanced")


def state_to_json(state: TrafficState) -> dict[str, Any]:
    keys = sorted(state.partitions)
    rows = [state.partitions[k] for k in keys]
    names = set(state.groups)
    for p in rows:
        names.update(p.committed, p.advanced)
    groups = sorted(names)
    index = {g: i for i, g in enumerate(groups)}
    return {
        "version": STATE_VERSION,
        "groups": groups,
        "read": [index[g] for g in sorted(state.groups)],
        "topic": [t for t, _ in keys],
        "partition": [n for _, n in keys],
        "at": [p.at for p in rows],
        "start": [p.look.start_offset for p in rows],
        "end": [p.look.end_offset for p in rows],
        "size": [p.look.size_bytes for p in rows],
        "topicId": [p.look.topic_id for p in rows],
        "rate": [p.rate for p in rows],
        "committed": [[[index[g], o] for g, o in sorted(p.committed.items())] for p in rows],
        "advanced": [[[index[g], t] for g, t in sorted(p.advanced.items())] for p in rows],
        **({"skipped": dict(sorted(state.skipped.items()))} if state.skipped else {}),
    }


def state_from_json(doc: object, source: str = "traffic state") -> TrafficState:
    obj = as_object(doc, source)
    check_fields(obj, source, ("version", "groups", "read", "skipped", *_COLUMNS))
    version = as_int(obj.get("version"), f"{source}.version")
    if version != STATE_VERSION:
        raise BadInputError(f"unsupported traffic state version {version}", f"{source}.version")
    groups = [
        as_str(g, f"{source}.groups[{i}]") for i, g in enumerate(as_list(obj.get("groups", []), source))
    ]

    def group(raw: object, where: str) -> str:
        i = as_int(raw, where, minimum=0)
        if i >= len(groups):
            raise BadInputError(f"group index {i} beyond the {len(groups)} groups", where)
        return groups[i]

    columns = {c: as_list(obj.get(c, []), f"{source}.{c}") for c in _COLUMNS}
    rows = len(columns["topic"])
    for c, values in columns.items():
        if len(values) != rows:
            raise BadInputError(f"has {len(values)} rows, topic has {rows}", f"{source}.{c}")
    partitions: dict[tuple[str, int], PartitionTraffic] = {}
    for r in range(rows):
        at = f"{source}.%s[{r}]"
        key = (
            as_topic(columns["topic"][r], at % "topic"),
            as_int32(columns["partition"][r], at % "partition"),
        )
        if key in partitions:
            raise BadInputError(f"duplicate partition {key[0]}-{key[1]}", at % "partition")
        tid = columns["topicId"][r]
        rate = columns["rate"][r]
        look = PartitionLook(
            as_int(columns["start"][r], at % "start", minimum=0),
            as_int(columns["end"][r], at % "end", minimum=0),
            as_int(columns["size"][r], at % "size", minimum=0),
            None if tid is None else as_str(tid, at % "topicId"),
        )
        if not look.valid:
            raise BadInputError("start offset past end offset", at % "start")
        partitions[key] = PartitionTraffic(
            at=as_number(columns["at"][r], at % "at"),
            look=look,
            rate=None if rate is None else as_number(rate, at % "rate", minimum=0),
            committed=_pairs(columns["committed"][r], at % "committed", group, _offset),
            advanced=_pairs(columns["advanced"][r], at % "advanced", group, _time),
        )
    read = frozenset(
        group(g, f"{source}.read[{i}]") for i, g in enumerate(as_list(obj.get("read", []), source))
    )
    raw_skipped = as_object(obj.get("skipped", {}), f"{source}.skipped")
    check_fields(raw_skipped, f"{source}.skipped", SKIP_REASONS)
    skipped = {r: as_int(n, f"{source}.skipped.{r}", minimum=0) for r, n in raw_skipped.items()}
    return TrafficState(partitions, read, skipped)


def _offset(raw: object, where: str) -> int:
    return as_int(raw, where, minimum=0)


def _time(raw: object, where: str) -> float:
    return as_number(raw, where)


def _pairs(raw: object, where: str, group: Any, value: Any) -> Mapping[str, Any]:
    out: dict[str, Any] = {}
    for i, pair in enumerate(as_list(raw, where)):
        items: Sequence[Any] = as_list(pair, f"{where}[{i}]")
        if len(items) != 2:
            raise BadInputError("expected [group index, value]", f"{where}[{i}]")
        out[group(items[0], f"{where}[{i}][0]")] = value(items[1], f"{where}[{i}][1]")
    return out
