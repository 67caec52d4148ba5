"""The plan: Kafka's own reassignment JSON (``kafka-reassign-partitions.sh --execute`` can apply it).

``{"version": 1, "partitions": [{"topic", "partition", "replicas": [...], "log_dirs": [...]}]}``
listing only partitions whose replicas, order or dirs change. ``log_dirs`` entries are absolute
paths or ``"any"`` (Kafka's convention for "let the broker choose"). A plan's id is a short content
hash of its canonical form, so the same moves always have the same id (used for declarative approval).
A plan read from a file remembers the file (``source``) and each entry's position in it, so messages
about an entry name the file and the index the user sees there, not the index after sorting.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str  # (json.dumps' own, ensure_ascii)
from typing import Any, NoReturn

from .documents import load_json
from .errors import BadInputError
from .jsonio import (
    as_int,
    as_int32,
    as_list,
    as_object,
    as_replicas,
    as_str,
    as_topic,
    brief,
    brief_list,
    check_fields,
    require,
)
from .snapshot import ClusterSnapshot, entry_list

PLAN_VERSION = 1
ANY_DIR = "any"
# the default per-broker limit of a plan's batches (`plan`/`report --max-moves-per-broker`)
BATCH_MAX_PER_BROKER = 5


@dataclass(frozen=True, slots=True)
class PartitionTarget:
    """The target placement of one partition; ``replicas[0]`` becomes the preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "replicas": list(self.replicas),
            "log_dirs": list(self.log_dirs),
        }


_by_key = operator.attrgetter("topic", "partition")  # a target's key, without the property's call


@dataclass(frozen=True, slots=True)
class Plan:
    """An ordered set of partition targets, sorted by (topic, partition) for a canonical form."""

    partitions: tuple[PartitionTarget, ...]
    source: str = field(default="plan", compare=False)
    # each entry's index in the file it was read from (absent: the index in ``partitions``)
    positions: Mapping[tuple[str, int], int] = field(default_factory=dict, compare=False, repr=False)
    _memo: dict[str, str] = field(default_factory=dict, init=False, compare=False, repr=False)  # plan_id

    @staticmethod
    def of(targets: list[PartitionTarget] | tuple[PartitionTarget, ...]) -> Plan:
        return Plan(tuple(sorted(targets, key=_by_key)))

    @property
    def empty(self) -> bool:
        return not self.partitions

    @property
    def plan_id(self) -> str:
        """The first 12 hex digits of the SHA-256 of the plan's canonical JSON (computed once: at a
        million entries it takes seconds, and the summary and the handlers ask for it repeatedly)."""
        found = self._memo.get("id")
        if found is None:
            found = self._memo["id"] = hashlib.sha256(self.canonical().encode()).hexdigest()[:12]
        return found

    def canonical(self) -> str:
        """The plan's canonical JSON, ``json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"))``
        (keys sorted, no spaces, non-ASCII escaped), written entry by entry without the dicts: a sixth
        of the time at 333k entries."""
        dirs_of: dict[tuple[str, ...], str] = {}  # (plans repeat a few dir lists: each encoded once)
        entries = []
        for t in self.partitions:
            dirs = dirs_of.get(t.log_dirs)
            if dirs is None:
                dirs = dirs_of[t.log_dirs] = ",".join(map(_json_str, t.log_dirs))
            replicas = ",".join(map(int.__repr__, t.replicas))
            entries.append(
                f'{{"log_dirs":[{dirs}],"partition":{int.__repr__(t.partition)},'
                f'"replicas":[{replicas}],"topic":{_json_str(t.topic)}}}'
            )
        return f'{{"partitions":[{",".join(entries)}],"version":{PLAN_VERSION}}}'

    def by_key(self) -> dict[tuple[str, int], PartitionTarget]:
        return {t.key: t for t in self.partitions}

    def to_json(self) -> dict[str, Any]:
        return {"version": PLAN_VERSION, "partitions": [t.to_json() for t in self.partitions]}

    def dumps(self) -> str:
        """The plan file's text, ``json.dumps(plan.to_json(), indent=1)``: ``pieces`` joined."""
        return "".join(self.pieces())

    def pieces(self, per: int = 8192) -> Iterator[str]:
        """``dumps``'s text in pieces of at most ``per`` entries, written entry by entry as ``canonical`` is
        (json.dumps indents in Python, not in its C encoder: at 365k entries 3.8 s of building dicts and
        encoding them, against 0.5 s; docs/benchmarks.md, the CLI's plan end to end); a writer writes them
        one after the other, never holding the whole text (60 MB at a million partitions)."""
        if not self.partitions:
            yield f'{{\n "version": {PLAN_VERSION},\n "partitions": []\n}}'
            return
        dirs_of: dict[tuple[str, ...], str] = {}

        def entry(t: PartitionTarget) -> str:
            dirs = dirs_of.get(t.log_dirs)
            if dirs is None:
                dirs = dirs_of[t.log_dirs] = entry_list(list(map(_json_str, t.log_dirs)))
            replicas = entry_list(list(map(int.__repr__, t.replicas)))
            return (
                f'  {{\n   "topic": {_json_str(t.topic)},\n   "partition": {int.__repr__(t.partition)},\n'
                f'   "replicas": {replicas},\n   "log_dirs": {dirs}\n  }}'
            )

        yield f'{{\n "version": {PLAN_VERSION},\n "partitions": [\n'
        parts = self.partitions
        for start in range(0, len(parts), per):
            yield (",\n" if start else "") + ",\n".join(map(entry, parts[start : start + per]))
        yield "\n ]\n}"

    @staticmethod
    def from_json(doc: object, source: str = "plan") -> Plan:
        obj = as_object(doc, source)
        check_fields(obj, source, ("version", "partitions"))
        version = as_int(obj.get("version", PLAN_VERSION), f"{source}.version")
        if version != PLAN_VERSION:
            raise BadInputError(f"unsupported plan version {version} (supported: {PLAN_VERSION})", source)
        targets: list[PartitionTarget] = []
        seen: dict[tuple[str, int], int] = {}
        for i, raw in enumerate(as_list(require(obj, "partitions", source), f"{source}.partitions")):
            where = f"{source}.partitions[{i}]"
            p = as_object(raw, where)
            check_fields(p, where, ("topic", "partition", "replicas", "log_dirs"))
            topic = as_topic(require(p, "topic", where), f"{where}.topic")
            number = as_int32(require(p, "partition", where), f"{where}.partition")
            replicas = as_replicas(require(p, "replicas", where), f"{where}.replicas")
            dirs_raw = as_list(p.get("log_dirs", [ANY_DIR] * len(replicas)), f"{where}.log_dirs")
            if len(dirs_raw) != len(replicas):
                raise BadInputError(
                    f"has {len(dirs_raw)} entries but replicas has {len(replicas)}", f"{where}.log_dirs"
                )
            dirs = tuple(_log_dir(d, f"{where}.log_dirs[{j}]") for j, d in enumerate(dirs_raw))
            if (topic, number) in seen:
                raise BadInputError(
                    f"partition {topic}-{number} listed twice (also at index {seen[(topic, number)]})", where
                )
            seen[(topic, number)] = i
            targets.append(PartitionTarget(topic, number, replicas, dirs))
        return Plan(tuple(sorted(targets, key=lambda t: t.key)), source, seen)

    def check_against(
        self, snapshot: ClusterSnapshot, source: str | None = None, live_only: bool = False
    ) -> None:
        """Every partition, broker and dir the plan names exists in ``snapshot`` (``live_only``: every
        broker also reports log dirs, i.e. is up), else a BadInputError naming the element by its
        position in the plan's file (``source`` defaults to that file)."""
        known = {b.id: (frozenset(b.dir_paths), bool(b.log_dirs)) for b in snapshot.brokers}
        for i, t in enumerate(self.partitions):  # the common case: every entry valid, checked by lookups
            ok = snapshot.partition(t.topic, t.partition) is not None
            for b, d in zip(t.replicas, t.log_dirs, strict=True):
                dirs = known.get(b)
                ok = ok and dirs is not None and (dirs[1] or not live_only) and (d == ANY_DIR or d in dirs[0])
            if not ok:
                self._raise_for(i, t, snapshot, self.source if source is None else source, live_only)

    def _raise_for(
        self, i: int, t: PartitionTarget, snapshot: ClusterSnapshot, name: str, live_only: bool
    ) -> NoReturn:
        """The BadInputError for entry ``i`` (``t``), which names something ``snapshot`` lacks."""
        where = f"{name}.partitions[{self.positions.get(t.key, i)}] ({t.name})"
        if snapshot.partition(t.topic, t.partition) is None:
            raise BadInputError(f"partition {t.name} does not exist in the cluster", where)
        for j, (b, d) in enumerate(zip(t.replicas, t.log_dirs, strict=True)):
            broker = snapshot.broker(b)
            if broker is None or (live_only and not broker.log_dirs):
                state = "not a live broker" if broker is not None else "an unknown broker"
                raise BadInputError(
                    f"broker {b} is {state}; the cluster has brokers {brief_list(snapshot.broker_ids)}",
                    f"{where}.replicas[{j}]",
                )
            if d != ANY_DIR and broker.dir(d) is None:
                raise BadInputError(
                    f"broker {b} has no log dir {brief(d)} (it has {brief_list(broker.dir_paths)})",
                    f"{where}.log_dirs[{j}]",
                )
        raise AssertionError(f"{where}: check_against found a fault that it cannot name")

    @staticmethod
    def loads(text: str, source: str = "plan") -> Plan:
        return Plan.from_json(load_json(text, source), source)


def _log_dir(value: object, where: str) -> str:
    """A target dir: an absolute path or ``any`` (Kafka's "the broker chooses")."""
    d = as_str(value, where)
    if d != ANY_DIR and not d.startswith("/"):
        raise BadInputError(f'expected an absolute path or "{ANY_DIR}", got {brief(d)}', where)
    return d
