"""Declared intents: the specs of the custom resources, parsed strictly (docs/architecture.md).

An intents file is a multi-document YAML stream of ``{kind, spec}`` (optionally with ``metadata.name``
and ``apiVersion``, so a custom resource manifest is itself a valid intent document). ``kind`` and
``spec`` are exactly the custom resources'; ``clusterRef``, ``approval``, ``approvedPlan`` and
``paused`` are accepted and ignored here (they belong to the operator). Every error names the document
and field. Cross-checks against a snapshot (unknown brokers or dirs) live in ``validate_against``;
each intent remembers where its spec came from (``origin``: file, document and kind), so those
messages name the file and document too (``intents.yaml: document 2 (LogDirCordon c1).spec.broker``).
YAML duplicate keys are refused; numbers are checked for range (broker ids int32, RF <= 32767,
tolerance finite).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from .crd_parts import APPROVALS, MODES, Schema, _bool, _name, _str
from .errors import BadInputError
from .jsonio import (
    INT32_MAX,
    as_bool,
    as_int,
    as_int32,
    as_int32_list,
    as_number,
    as_object,
    as_str,
    as_str_list,
    brief,
    brief_list,
    check_fields,
    require,
)
from .snapshot import ClusterSnapshot
from .spec_fields import json_names, leaf, object_schema, parse_object, properties

WHOLE_BROKER = "*"
KINDS = ("BrokerDecommission", "LogDirCordon", "PlacementPolicy")
MAX_REPLICATION_FACTOR = 32767  # Kafka's replication factor is an int16
MAX_NAME_LENGTH = 253  # a Kubernetes object name


# ---- the fields of every intent kind that belong to the operator -------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterRef:
    """``spec.clusterRef`` of an intent resource (declared once: its schema and parser, spec_fields.py)."""

    DESCRIPTION: ClassVar[str] = "The KafkaCluster (in this namespace) this resource applies to."

    name: str = leaf("name", _name("Name of the KafkaCluster resource in the same namespace."), required=True)

    @staticmethod
    def schema() -> Schema:
        return object_schema(ClusterRef)

    @staticmethod
    def name_of(body: Mapping[str, Any]) -> str | None:
        """The KafkaCluster an intent resource names, None when it names none (it belongs to no cluster:
        the CRD requires the field; this only selects a cluster's resources)."""
        spec = body.get("spec")
        ref = spec.get("clusterRef") if isinstance(spec, Mapping) else None
        name = ref.get("name") if isinstance(ref, Mapping) else None
        return name if isinstance(name, str) and name else None


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorFields:
    """``approval``, ``approvedPlan`` and ``paused`` of an intent resource's spec: they gate the execution
    of the cluster's plan. The operator parses them (``parse``) next to the kind's own fields; the planner
    CLI accepts and ignores them. Declared once: their CRD schema and parser (spec_fields.py)."""

    DESCRIPTION: ClassVar[str] = ""  # merged into each intent kind's spec (``schema``)

    approval: str = leaf(
        "approval",
        _str(
            "Automatic: a new plan is executed as soon as it is made. Manual: the plan waits "
            "(phase AwaitingApproval) until spec.approvedPlan names its id.",
            enum=list(APPROVALS),
            default="Automatic",
        ),
    )
    approved_plan: str | None = leaf(
        "approvedPlan",
        _str(
            "Declarative approval (GitOps-friendly): the id of the plan (status.plan.id) that may be "
            "executed. A plan with another id is not executed while approval is Manual.",
            minLength=1,
            maxLength=128,
        ),
    )
    paused: bool = leaf(
        "paused",
        _bool(
            "When true, no new batch of moves is submitted; moves already in flight finish. "
            "Setting it back to false resumes from the stored plan.",
            default=False,
        ),
    )

    @staticmethod
    def parse(spec: object, where: str) -> OperatorFields:
        """The operator's fields of an intent spec (its other fields are the kind's parser's)."""
        return parse_object(OperatorFields, spec, where, others=True)

    @staticmethod
    def schema() -> dict[str, Schema]:
        """Their properties, for each intent kind's spec schema."""
        return properties(OperatorFields)

    def unapproved(self, plan_id: str) -> bool:
        """Whether the plan ``plan_id`` waits for this resource's approval."""
        return self.approval == "Manual" and self.approved_plan != plan_id


OPERATOR_FIELDS = ("clusterRef", *json_names(OperatorFields))  # accepted and ignored by the parsers here


@dataclass(frozen=True, slots=True)
class BrokerDecommission:
    """No replica may remain on these brokers."""

    name: str
    brokers: tuple[int, ...]
    throttle_bytes_per_sec: int | None = None
    priority: int = 0
    origin: str = field(default="", compare=False)  # where the spec was read, for messages


@dataclass(frozen=True, slots=True)
class LogDirCordon:
    """No new replica on these dirs of one broker (``*`` = all of them); with ``drain`` none left."""

    name: str
    broker: int
    log_dirs: tuple[str, ...]
    drain: bool = False
    origin: str = field(default="", compare=False)

    @property
    def whole_broker(self) -> bool:
        return WHOLE_BROKER in self.log_dirs


@dataclass(frozen=True, slots=True)
class RackAwareness:
    """KIP-879 multi-level racks: ``/dc1/r2`` splits on ``separator``; the first ``levels`` parts count."""

    separator: str = "/"
    levels: int = 1

    def path(self, rack: str | None) -> tuple[str, ...]:
        """The unit path of a rack, padded so every broker has exactly ``levels`` parts."""
        parts = [p for p in (rack or "").split(self.separator) if p] if self.separator else [rack or ""]
        if not parts:
            parts = [""]
        head = parts[: self.levels]
        while len(head) < self.levels:
            head.append(head[-1] if head else "")
        return tuple(head)


@dataclass(frozen=True, slots=True)
class Balance:
    """Balance goals; each is met when max/mean <= 1 + tolerance."""

    brokers: bool = False
    log_dirs: bool = False
    leaders: bool = False
    tolerance: float = 0.05

    @property
    def any(self) -> bool:
        return self.brokers or self.log_dirs or self.leaders


@dataclass(frozen=True, slots=True)
class MoveBudget:
    """Limits on the moves a policy may cause (0 = unlimited)."""

    max_bytes: int = 0
    max_moves: int = 0


@dataclass(frozen=True, slots=True)
class PlacementPolicy:
    """Placement rules for the topics matching ``include`` and not ``exclude`` (glob patterns)."""

    name: str
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    rack_awareness: RackAwareness | None = None
    replication_factor: int | None = None
    balance: Balance = field(default_factory=Balance)
    preferred_brokers: tuple[int, ...] = ()
    move_budget: MoveBudget = field(default_factory=MoveBudget)
    mode: str = "Enforce"
    origin: str = field(default="", compare=False)

    def matches(self, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(topic, p) for p in self.include) and not any(
            fnmatch.fnmatchcase(topic, p) for p in self.exclude
        )

    @property
    def enforced(self) -> bool:
        return self.mode == "Enforce"


@dataclass(frozen=True, slots=True)
class Intents:
    """All active intents of one cluster; the planner always sees them together."""

    decommissions: tuple[BrokerDecommission, ...] = ()
    cordons: tuple[LogDirCordon, ...] = ()
    policies: tuple[PlacementPolicy, ...] = ()
    # The cluster cannot cordon dirs itself (Kafka < 4.3, no KIP-1066): enforce cordons reactively by
    # moving replicas that appeared on a cordoned dir while they are still empty.
    reactive_cordon: bool = False
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
        return Intents(self.decommissions, self.cordons, enforced, self.reactive_cordon)

    def with_reactive_cordon(self, reactive: bool = True) -> Intents:
        return Intents(self.decommissions, self.cordons, self.policies, reactive)

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
        for n, doc in docs:
            where = f"{source}: document {n}"
            parsed = parse_document(doc, where, default_name=f"doc{n}")
            if not in_file:
                parsed = replace(parsed, origin="")
            if isinstance(parsed, BrokerDecommission):
                decommissions.append(parsed)
            elif isinstance(parsed, LogDirCordon):
                cordons.append(parsed)
            else:
                policies.append(parsed)
        return Intents(tuple(decommissions), tuple(cordons), tuple(policies))


Intent = BrokerDecommission | LogDirCordon | PlacementPolicy


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
        if len(name) > MAX_NAME_LENGTH:
            raise BadInputError(
                f"longer than {MAX_NAME_LENGTH} characters: {brief(name)}", f"{where}.metadata.name"
            )
    where = f"{where} ({kind} {name})" if name else f"{where} ({kind})"
    return parse_spec(kind, require(obj, "spec", where), f"{where}.spec", name)


def parse_spec(kind: str, raw: object, where: str, name: str) -> Intent:
    """A custom resource's spec of the given kind (used by the CLI and by the handlers); ``where`` is
    the spec's location, kept as the intent's ``origin`` for later messages."""
    spec = as_object(raw, where)
    if kind == "BrokerDecommission":
        return _decommission(spec, where, name)
    if kind == "LogDirCordon":
        return _cordon(spec, where, name)
    if kind == "PlacementPolicy":
        return _policy(spec, where, name)
    raise BadInputError(f"unknown kind {brief(kind)}; expected one of {', '.join(KINDS)}", where)


def _decommission(spec: Mapping[str, Any], where: str, name: str) -> BrokerDecommission:
    check_fields(spec, where, ("brokers", "throttle", "priority", *OPERATOR_FIELDS))
    brokers = as_int32_list(require(spec, "brokers", where), f"{where}.brokers")
    if not brokers:
        raise BadInputError("must list at least one broker", f"{where}.brokers")
    if len(set(brokers)) != len(brokers):
        raise BadInputError(f"duplicate broker in {brief_list(brokers)}", f"{where}.brokers")
    throttle = spec.get("throttle")
    return BrokerDecommission(
        name=name,
        brokers=brokers,
        throttle_bytes_per_sec=None if throttle is None else as_int(throttle, f"{where}.throttle", minimum=1),
        priority=as_int(
            spec.get("priority", 0), f"{where}.priority", minimum=-INT32_MAX - 1, maximum=INT32_MAX
        ),
        origin=where,
    )


def _cordon(spec: Mapping[str, Any], where: str, name: str) -> LogDirCordon:
    check_fields(spec, where, ("broker", "logDirs", "drain", *OPERATOR_FIELDS))
    dirs = as_str_list(require(spec, "logDirs", where), f"{where}.logDirs")
    if not dirs:
        raise BadInputError(
            'must list at least one log dir (or "*" for the whole broker)', f"{where}.logDirs"
        )
    if WHOLE_BROKER in dirs and len(dirs) > 1:
        raise BadInputError(
            '"*" means the whole broker and cannot be combined with paths', f"{where}.logDirs"
        )
    for i, d in enumerate(dirs):
        if d != WHOLE_BROKER and not d.startswith("/"):
            raise BadInputError(f"{brief(d)} is not an absolute path", f"{where}.logDirs[{i}]")
    if len(set(dirs)) != len(dirs):
        raise BadInputError(f"duplicate log dir in {brief_list(dirs)}", f"{where}.logDirs")
    return LogDirCordon(
        name=name,
        broker=as_int32(require(spec, "broker", where), f"{where}.broker"),
        log_dirs=dirs,
        drain=as_bool(spec.get("drain", False), f"{where}.drain"),
        origin=where,
    )


def _policy(spec: Mapping[str, Any], where: str, name: str) -> PlacementPolicy:
    check_fields(
        spec,
        where,
        (
            "topics",
            "rackAwareness",
            "replicationFactor",
            "balance",
            "preferredBrokers",
            "moveBudget",
            "mode",
            *OPERATOR_FIELDS,
        ),
    )
    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()
    if "topics" in spec:
        topics = as_object(spec["topics"], f"{where}.topics")
        check_fields(topics, f"{where}.topics", ("include", "exclude"))
        include = as_str_list(topics.get("include", ["*"]), f"{where}.topics.include")
        exclude = as_str_list(topics.get("exclude", []), f"{where}.topics.exclude")
        if not include:
            raise BadInputError("must list at least one pattern", f"{where}.topics.include")
    rack: RackAwareness | None = None
    if spec.get("rackAwareness") is not None:
        rw = f"{where}.rackAwareness"
        ra = as_object(spec["rackAwareness"], rw)
        check_fields(ra, rw, ("separator", "levels"))
        sep = as_str(ra.get("separator", "/"), f"{rw}.separator")
        levels = as_int(ra.get("levels", 1), f"{rw}.levels", minimum=1)
        if levels > 8:
            raise BadInputError(f"at most 8 levels are supported, got {levels}", f"{rw}.levels")
        rack = RackAwareness(sep, levels)
    rf_raw = spec.get("replicationFactor")
    rf = (
        None
        if rf_raw is None
        else as_int(rf_raw, f"{where}.replicationFactor", minimum=1, maximum=MAX_REPLICATION_FACTOR)
    )
    balance = Balance()
    if spec.get("balance") is not None:
        bw = f"{where}.balance"
        bo = as_object(spec["balance"], bw)
        check_fields(bo, bw, ("brokers", "logDirs", "leaders", "tolerance"))
        tol = as_number(bo.get("tolerance", 0.05), f"{bw}.tolerance", minimum=0.0)
        if tol > 10:
            raise BadInputError(f"tolerance is a fraction (0.05 = 5%), got {brief(tol)}", f"{bw}.tolerance")
        balance = Balance(
            brokers=as_bool(bo.get("brokers", False), f"{bw}.brokers"),
            log_dirs=as_bool(bo.get("logDirs", False), f"{bw}.logDirs"),
            leaders=as_bool(bo.get("leaders", False), f"{bw}.leaders"),
            tolerance=tol,
        )
    preferred = as_int32_list(spec.get("preferredBrokers", []), f"{where}.preferredBrokers")
    budget = MoveBudget()
    if spec.get("moveBudget") is not None:
        mw = f"{where}.moveBudget"
        mb = as_object(spec["moveBudget"], mw)
        check_fields(mb, mw, ("maxBytes", "maxMoves"))
        budget = MoveBudget(
            max_bytes=as_int(mb.get("maxBytes", 0), f"{mw}.maxBytes", minimum=0),
            max_moves=as_int(mb.get("maxMoves", 0), f"{mw}.maxMoves", minimum=0, maximum=INT32_MAX),
        )
    mode = as_str(spec.get("mode", "Enforce"), f"{where}.mode")
    if mode not in MODES:
        raise BadInputError(f"expected Enforce or Advise, got {brief(mode)}", f"{where}.mode")
    return PlacementPolicy(
        name=name,
        include=include,
        exclude=exclude,
        rack_awareness=rack,
        replication_factor=rf,
        balance=balance,
        preferred_brokers=preferred,
        move_budget=budget,
        mode=mode,
        origin=where,
    )


def _spec_at(intent: Intent, kind: str) -> str:
    """The location of an intent's spec: its file and document (or resource), for messages."""
    return intent.origin or f"{kind} {intent.name}: spec"


def validate_against(intents: Intents, snapshot: ClusterSnapshot) -> None:
    """Reject intents naming brokers or dirs the cluster does not have, and overlapping policies.

    Messages name the intent's file and document (``intents.yaml: document 2 (LogDirCordon c1).spec``)
    or, for a resource, its kind and name."""
    known = brief_list(snapshot.broker_ids)
    for d in intents.decommissions:
        for i, b in enumerate(d.brokers):
            if snapshot.broker(b) is None:
                raise BadInputError(
                    f"unknown broker {b}; the cluster has brokers {known}",
                    f"{_spec_at(d, 'BrokerDecommission')}.brokers[{i}]",
                )
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
        for i, b in enumerate(p.preferred_brokers):
            if snapshot.broker(b) is None:
                raise BadInputError(
                    f"unknown broker {b}; the cluster has brokers {known}",
                    f"{_spec_at(p, 'PlacementPolicy')}.preferredBrokers[{i}]",
                )
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
    "Balance",
    "BrokerDecommission",
    "Intent",
    "Intents",
    "LogDirCordon",
    "MoveBudget",
    "PlacementPolicy",
    "RackAwareness",
    "parse_document",
    "parse_spec",
    "validate_against",
]
