"""Declared intents: the specs of the custom resources, parsed strictly (docs/architecture.md).

An intents file is a multi-document YAML stream of ``{kind, spec}`` (optionally with ``metadata.name``
and ``apiVersion``, so a custom resource manifest is itself a valid intent document), and at most one
``{capacity: ...}`` document: the brokers' capacities, exactly ``KafkaCluster.spec.capacity``'s shape
(``capacity.py``; the operator takes them from the KafkaCluster). ``kind`` and
``spec`` are exactly the custom resources' (declared once, with their CRD schema, in
``intent_kinds.py``); ``clusterRef``, ``approval``, ``approvedPlan`` and ``paused`` are accepted and
ignored here (they belong to the operator). Every error names the document and field. Cross-checks
against a snapshot (unknown brokers or dirs) live in ``validate_against``; each intent remembers where
its spec came from (``origin``: file, document and kind), so those messages name the file and document
too (``intents.yaml: document 2 (LogDirCordon c1).spec.broker``). YAML duplicate keys are refused;
numbers are checked for range (broker ids int32, RF <= 32767, tolerance finite).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .capacity import DEFAULT_MAX_DISK_SHARE, CapacitySpec
from .crd_parts import MAX_NAME
from .effort import DEFAULT_EFFORT, Effort
from .errors import BadInputError
from .intent_kinds import (
    KINDS,
    MAX_REPLICATION_FACTOR,
    OPERATOR_FIELDS,
    WHOLE_BROKER,
    Balance,
    BrokerDecommission,
    ClusterRef,
    Intent,
    LogDirCordon,
    MoveBudget,
    OperatorFields,
    PlacementPolicy,
    RackAwareness,
    TopicSelector,
    parse_kind,
    spec_location,
)
from .jsonio import as_object, as_str, brief, brief_list, check_fields, require
from .snapshot import ClusterSnapshot
from .spec_fields import spec_of


@dataclass(frozen=True, slots=True)
class Intents:
    """All active intents of one cluster; the planner always sees them together."""

    decommissions: tuple[BrokerDecommission, ...] = ()
    cordons: tuple[LogDirCordon, ...] = ()
    policies: tuple[PlacementPolicy, ...] = ()
    # The cluster cannot cordon dirs itself (Kafka < 4.3, no KIP-1066): enforce cordons reactively by
    # moving replicas that appeared on a cordoned dir while they hold at most ``reactive_max_bytes``: 0 (only
    # empty ones) for a whole cluster's plan, which cannot tell a new replica from an old one; the
    # operator's new-partition lane, which plans only new partitions, allows more (SMALL_REPLICA_BYTES).
    reactive_cordon: bool = False
    reactive_max_bytes: int = 0
    # The brokers' capacities (KafkaCluster.spec.capacity; the CLI's --capacity): the network capacity
    # goal's limits (None: none declared, the goal is off).
    capacity: CapacitySpec | None = None
    # No log dir is planned above this share of its volume (capacity.maxDiskShare; the CLI's
    # --max-disk-share; planning/headroom.py): set from ``capacity`` by ``with_capacity`` and the parser.
    max_disk_share: float = DEFAULT_MAX_DISK_SHARE
    # Every log dir on a disk of its own (capacity.diskPerLogDir): no two dirs of a broker are taken for one
    # filesystem (planning/headroom.py ``volumes``); set from ``capacity`` by ``with_capacity``.
    disk_per_log_dir: bool = False
    # How hard the planner searches for the cheapest plan (model/effort.py: KafkaCluster
    # spec.planner.effort, the CLI's --effort); set by ``with_effort``.
    effort: Effort = DEFAULT_EFFORT
    # policy_for's answers (the planner asks once per partition; a cluster has far fewer topics)
    _policy_of: dict[str, PlacementPolicy | None] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def empty(self) -> bool:
        return not (self.decommissions or self.cordons or self.policies)

    @property
    def decommissioned(self) -> frozenset[int]:
        return frozenset(b for d in self.decommissions for b in d.brokers)

    def enforced_only(self) -> Intents:
        """The same intents without Advise-mode policies."""
        enforced = tuple(p for p in self.policies if p.enforced)
        return replace(self, policies=enforced)

    def with_reactive_cordon(self, reactive: bool = True, max_bytes: int = 0) -> Intents:
        return replace(self, reactive_cordon=reactive, reactive_max_bytes=max_bytes)

    def with_capacity(self, capacity: CapacitySpec | None) -> Intents:
        """The same intents with the brokers' capacities (the network capacity goal's limits) and their
        ``maxDiskShare`` (kept as it is without capacities)."""
        share = capacity.max_disk_share if capacity is not None else self.max_disk_share
        separate = capacity.disk_per_log_dir if capacity is not None else self.disk_per_log_dir
        return replace(self, capacity=capacity, max_disk_share=share, disk_per_log_dir=separate)

    def with_max_disk_share(self, share: float, disk_per_log_dir: bool | None = None) -> Intents:
        """The same intents with another limit of every log dir's planned share of its volume (and, when
        given, whether every log dir is on a disk of its own)."""
        separate = self.disk_per_log_dir if disk_per_log_dir is None else disk_per_log_dir
        return replace(self, max_disk_share=share, disk_per_log_dir=separate)

    def with_effort(self, effort: Effort) -> Intents:
        """The same intents planned with another effort (model/effort.py)."""
        return replace(self, effort=effort)

    def policy_for(self, topic: str) -> PlacementPolicy | None:
        """The first policy whose topic selector matches (policies are in priority order)."""
        try:
            return self._policy_of[topic]
        except KeyError:
            found = next((p for p in self.policies if p.matches(topic)), None)
            self._policy_of[topic] = found
            return found

    # ---- parsing ---------------------------------------------------------------------------------

    @staticmethod
    def loads(text: str, source: str = "intents") -> Intents:
        """A YAML stream; documents are numbered by their position in the stream (1-based)."""
        from .yaml_documents import load_yaml_stream  # here: executors unpickle Intents without PyYAML

        return Intents._of_numbered(load_yaml_stream(text, source), source)

    @staticmethod
    def from_documents(docs: Iterable[object], source: str = "intents") -> Intents:
        """Intents from resource documents (the operator): later messages name the resource
        (``BrokerDecommission retire-5: spec.brokers[0]``), not a document number."""
        return Intents._of_numbered(enumerate(docs, start=1), source, in_file=False)

    @staticmethod
    def _of_numbered(docs: Iterable[tuple[int, object]], source: str, in_file: bool = True) -> Intents:
        decommissions: list[BrokerDecommission] = []
        cordons: list[LogDirCordon] = []
        policies: list[PlacementPolicy] = []
        capacity: CapacitySpec | None = None
        for n, doc in docs:
            where = f"{source}: document {n}"
            if isinstance(doc, Mapping) and "capacity" in doc and "kind" not in doc:
                if capacity is not None:
                    raise BadInputError("a second capacity document; declare capacities once", where)
                check_fields(doc, where, ("capacity",))
                capacity = CapacitySpec.parse(doc["capacity"], f"{where}.capacity")
                continue
            parsed = parse_document(doc, where, default_name=f"doc{n}")
            if not in_file:
                parsed = replace(parsed, origin="")
            if isinstance(parsed, BrokerDecommission):
                decommissions.append(parsed)
            elif isinstance(parsed, LogDirCordon):
                cordons.append(parsed)
            else:
                policies.append(parsed)
        return Intents(tuple(decommissions), tuple(cordons), tuple(policies)).with_capacity(capacity)


def parse_document(doc: object, where: str, default_name: str = "") -> Intent:
    """One ``{kind, spec}`` document (or a whole custom resource manifest)."""
    obj = as_object(doc, where)
    check_fields(obj, where, ("kind", "spec", "apiVersion", "metadata", "status"))
    kind = as_str(require(obj, "kind", where), f"{where}.kind")
    if kind not in KINDS:
        raise BadInputError(
            f"unknown kind {brief(kind)}; expected one of {', '.join(KINDS)}", f"{where}.kind"
        )
    meta = obj.get("metadata") or {}
    name = default_name
    if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
        name = meta["name"]
        if len(name) > MAX_NAME:  # a Kubernetes object name
            raise BadInputError(f"longer than {MAX_NAME} characters: {brief(name)}", f"{where}.metadata.name")
    where = f"{where} ({kind} {name})" if name else f"{where} ({kind})"
    return parse_spec(kind, require(obj, "spec", where), f"{where}.spec", name)


def parse_spec(kind: str, raw: object, where: str, name: str) -> Intent:
    """A custom resource's spec of the given kind (used by the CLI and by the handlers); ``where`` is
    the spec's location, kept as the intent's ``origin`` for later messages (model/intent_kinds.py)."""
    if kind not in KINDS:
        raise BadInputError(f"unknown kind {brief(kind)}; expected one of {', '.join(KINDS)}", where)
    return parse_kind(kind, raw, where, name)


def parse_resource(body: Mapping[str, Any], kind: str | None = None) -> Intent:
    """The intent an intent resource (of ``kind``, unless its own) declares, errors naming the resource
    (``BrokerDecommission retire-5: spec.brokers``); its operator's fields are ``OperatorFields.of``."""
    where = spec_location(body, kind)
    return parse_spec(kind or str(body.get("kind")), spec_of(body), where, str(body["metadata"]["name"]))


def _spec_at(intent: Intent, kind: str) -> str:
    """The location of an intent's spec: its file and document (or resource), for messages."""
    return intent.origin or f"{kind} {intent.name}: spec"


def validate_against(intents: Intents, snapshot: ClusterSnapshot) -> None:
    """Reject intents naming brokers or dirs the cluster does not have, and overlapping policies.

    Messages name the intent's file and document (``intents.yaml: document 2 (LogDirCordon c1).spec``)
    or, for a resource, its kind and name."""
    known = brief_list(snapshot.broker_ids)

    def brokers_known(ids: Sequence[int], at: str) -> None:
        for i, b in enumerate(ids):
            if snapshot.broker(b) is None:
                raise BadInputError(f"unknown broker {b}; the cluster has brokers {known}", f"{at}[{i}]")

    for d in intents.decommissions:
        brokers_known(d.brokers, f"{_spec_at(d, 'BrokerDecommission')}.brokers")
    for c in intents.cordons:
        broker = snapshot.broker(c.broker)
        if broker is None:
            raise BadInputError(
                f"unknown broker {c.broker}; the cluster has brokers {known}",
                f"{_spec_at(c, 'LogDirCordon')}.broker",
            )
        if not c.whole_broker:
            for i, path in enumerate(c.log_dirs):
                if broker.dir(path) is None:
                    raise BadInputError(
                        f"broker {c.broker} has no log dir {brief(path)} "
                        f"(it has {brief_list(broker.dir_paths)})",
                        f"{_spec_at(c, 'LogDirCordon')}.logDirs[{i}]",
                    )
    for p in intents.policies:
        brokers_known(p.preferred_brokers, f"{_spec_at(p, 'PlacementPolicy')}.preferredBrokers")
    if len(intents.policies) > 1:
        for topic in snapshot.topics():
            matching = [p for p in intents.policies if p.matches(topic)]
            if len(matching) > 1:
                names = ", ".join(p.name for p in matching[:5]) + (", ..." if len(matching) > 5 else "")
                raise BadInputError(
                    f"topic '{topic}' is selected by more than one policy ({names}); "
                    "narrow their topics.include/exclude so each topic has one policy",
                    f"{_spec_at(matching[1], 'PlacementPolicy')}.topics",
                )


__all__ = [
    "KINDS",
    "MAX_REPLICATION_FACTOR",
    "OPERATOR_FIELDS",
    "WHOLE_BROKER",
    "Balance",
    "BrokerDecommission",
    "ClusterRef",
    "Intent",
    "Intents",
    "LogDirCordon",
    "MoveBudget",
    "OperatorFields",
    "PlacementPolicy",
    "RackAwareness",
    "TopicSelector",
    "parse_document",
    "parse_resource",
    "parse_spec",
    "validate_against",
]
