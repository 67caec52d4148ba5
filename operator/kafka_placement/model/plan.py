"""The plan: Kafka's own reassignment JSON (``kafka-reassign-partitions.sh --execute`` can apply it).

``{"version": 1, "partitions": [{"topic", "partition", "replicas": [...], "log_dirs": [...]}]}``
listing only partitions whose replicas, order or dirs change. ``log_dirs`` entries are absolute
paths or ``"any"`` (Kafka's convention for "let the broker choose"). A plan's id is a short content
hash of its canonical form, so the same moves always have the same id (used for declarative approval).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .errors import BadInputError
from .jsonio import as_int, as_int_list, as_list, as_object, as_str, check_fields, require
from .snapshot import ClusterSnapshot

PLAN_VERSION = 1
ANY_DIR = "any"


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


@dataclass(frozen=True, slots=True)
class Plan:
    """An ordered set of partition targets, sorted by (topic, partition) for a canonical form."""

    partitions: tuple[PartitionTarget, ...]

    @staticmethod
    def of(targets: list[PartitionTarget] | tuple[PartitionTarget, ...]) -> Plan:
        return Plan(tuple(sorted(targets, key=lambda t: t.key)))

    @property
    def empty(self) -> bool:
        return not self.partitions

    @property
    def plan_id(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def by_key(self) -> dict[tuple[str, int], PartitionTarget]:
        return {t.key: t for t in self.partitions}

    def to_json(self) -> dict[str, Any]:
        return {"version": PLAN_VERSION, "partitions": [t.to_json() for t in self.partitions]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    @staticmethod
    def from_json(doc: object, source: str = "plan") -> Plan:
        obj = as_object(doc, source)
        check_fields(obj, source, ("version", "partitions"))
        version = as_int(obj.get("version", PLAN_VERSION), f"{source}.version")
        if version != PLAN_VERSION:
            raise BadInputError(f"unsupported plan version {version} (supported: {PLAN_VERSION})", source)
        targets: list[PartitionTarget] = []
        seen: set[tuple[str, int]] = set()
        for i, raw in enumerate(as_list(require(obj, "partitions", source), f"{source}.partitions")):
            where = f"{source}.partitions[{i}]"
            p = as_object(raw, where)
            check_fields(p, where, ("topic", "partition", "replicas", "log_dirs"))
            topic = as_str(require(p, "topic", where), f"{where}.topic")
            number = as_int(require(p, "partition", where), f"{where}.partition", minimum=0)
            replicas = as_int_list(require(p, "replicas", where), f"{where}.replicas", minimum=0)
            if not replicas:
                raise BadInputError("a partition needs at least one replica", f"{where}.replicas")
            if len(set(replicas)) != len(replicas):
                raise BadInputError(f"duplicate replica in {list(replicas)}", f"{where}.replicas")
            dirs_raw = as_list(p.get("log_dirs", [ANY_DIR] * len(replicas)), f"{where}.log_dirs")
            if len(dirs_raw) != len(replicas):
                raise BadInputError(
                    f"has {len(dirs_raw)} entries but replicas has {len(replicas)}", f"{where}.log_dirs"
                )
            dirs = tuple(as_str(d, f"{where}.log_dirs[{j}]") for j, d in enumerate(dirs_raw))
            if (topic, number) in seen:
                raise BadInputError(f"partition {topic}-{number} listed twice", where)
            seen.add((topic, number))
            targets.append(PartitionTarget(topic, number, replicas, dirs))
        return Plan.of(targets)

    def check_against(self, snapshot: ClusterSnapshot, source: str = "plan", live_only: bool = False) -> None:
        """Every partition, broker and dir the plan names exists in ``snapshot`` (``live_only``: every
        broker also reports log dirs, i.e. is up), else a BadInputError naming the element."""
        for i, t in enumerate(self.partitions):
            where = f"{source}.partitions[{i}] ({t.name})"
            if snapshot.partition(t.topic, t.partition) is None:
                raise BadInputError(f"partition {t.name} does not exist in the cluster", where)
            for j, (b, d) in enumerate(zip(t.replicas, t.log_dirs, strict=True)):
                broker = snapshot.broker(b)
                if broker is None or (live_only and not broker.log_dirs):
                    state = "not a live broker" if broker is not None else "an unknown broker"
                    raise BadInputError(
                        f"broker {b} is {state}; the cluster has brokers {list(snapshot.broker_ids)}",
                        f"{where}.replicas[{j}]",
                    )
                if d != ANY_DIR and broker.dir(d) is None:
                    raise BadInputError(
                        f"broker {b} has no log dir '{d}' (it has {list(broker.dir_paths)})",
                        f"{where}.log_dirs[{j}]",
                    )

    @staticmethod
    def loads(text: str, source: str = "plan") -> Plan:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise BadInputError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from e
        return Plan.from_json(doc, source)
