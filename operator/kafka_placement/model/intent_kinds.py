# ruff: noqa: RUF009  (leaf/child return dataclasses.field specifiers, like field(): nothing is shared)
"""The intent kinds' specs, typed: BrokerDecommission, LogDirCordon, PlacementPolicy and the operator's
fields they share (``clusterRef``, ``approval``, ``approvedPlan``, ``paused``).

The one source of both the parser and the CRD schema of each kind's ``spec`` (``spec_schema``, used by
``crd_schema.py``), declared like the KafkaCluster's (``cluster_spec.py``): every field once, with its
JSON name, its schema (description, bounds, enum, pattern) and its default (``spec_fields.py``), so the
object the user wrote and the object the apiserver stores (defaults filled in) parse to the same intent
(tests/unit/model/test_intent_kinds.py). An intent is its kind's spec plus its ``name`` (from the resource's
metadata, or the document's) and ``origin`` (where its spec was read, for later messages); the planner
reads these values. The operator's fields gate execution and are parsed apart (``OperatorFields``): the
planner CLI accepts and ignores them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .crd_parts import (
    APPROVALS,
    LOG_DIR_PATTERN,
    MAX_BROKERS,
    MAX_NAME,
    MAX_PATH,
    MODES,
    Schema,
    arr_schema,
    bool_schema,
    int_schema,
    name_schema,
    obj_schema,
    str_schema,
)
from .errors import BadInputError
from .jsonio import INT32_MAX
from .spec_fields import child, json_names, leaf, object_schema, parse_object, properties, spec_of

WHOLE_BROKER = "*"
RELIEVE_MIN, RELIEVE_MAX = 0.1, 0.98  # LogDirCordon.relieveBelowShare's bounds
MAX_REPLICATION_FACTOR = 32767  # Kafka's replication factor is an int16
MAX_NEW_PARTITIONS = 1_000_000  # new partitions one `place` call assigns (planning/placement.py)
BROKER_ID = int_schema("A broker id.", 0, maximum=INT32_MAX)
SET = {"x-kubernetes-list-type": "set"}


# ---- the fields of every intent kind that belong to the operator -------------------------------------


def spec_location(body: Mapping[str, Any], kind: str | None = None) -> str:
    """Where an intent resource's spec is, for messages: ``BrokerDecommission retire-5: spec``."""
    return f"{kind or body.get('kind')} {(body.get('metadata') or {}).get('name')}: spec"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterRef:
    """``spec.clusterRef`` of an intent resource."""

    DESCRIPTION: ClassVar[str] = "The KafkaCluster (in this namespace) this resource applies to."

    name: str = leaf(
        "name", name_schema("Name of the KafkaCluster resource in the same namespace."), required=True
    )

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
    CLI accepts and ignores them."""

    DESCRIPTION: ClassVar[str] = ""  # merged into each intent kind's spec (``spec_schema``)

    approval: str = leaf(
        "approval",
        str_schema(
            "Automatic: a new plan is executed as soon as it is made. Manual: the plan waits "
            "(phase AwaitingApproval) until spec.approvedPlan names its id.",
            enum=list(APPROVALS),
            default="Automatic",
        ),
    )
    approved_plan: str | None = leaf(
        "approvedPlan",
        str_schema(
            "Declarative approval (GitOps-friendly): the id of the plan (status.plan.id) that may be "
            "executed. A plan with another id is not executed while approval is Manual.",
            minLength=1,
            maxLength=128,
        ),
    )
    paused: bool = leaf(
        "paused",
        bool_schema(
            "When true, no new batch of moves is submitted; moves already in flight finish. "
            "Setting it back to false resumes from the stored plan.",
            default=False,
        ),
    )

    ignore_windows: bool = leaf(
        "ignoreWindows",
        bool_schema(
            "When true, the execution this intent takes part in submits moves outside the KafkaCluster's "
            "spec.execution.windows too.",
            default=False,
        ),
    )

    @staticmethod
    def parse(spec: object, where: str) -> OperatorFields:
        """The operator's fields of an intent spec (its other fields are the kind's parser's)."""
        return parse_object(OperatorFields, spec, where, others=True)

    @staticmethod
    def of(body: Mapping[str, Any], kind: str | None = None) -> OperatorFields:
        """The operator's fields of an intent resource (of ``kind``, unless its own), errors naming it."""
        return OperatorFields.parse(spec_of(body), spec_location(body, kind))

    @staticmethod
    def schema() -> dict[str, Schema]:
        """Their properties, for each intent kind's spec schema."""
        return properties(OperatorFields)

    def unapproved(self, plan_id: str) -> bool:
        """Whether the plan ``plan_id`` waits for this resource's approval."""
        return self.approval == "Manual" and self.approved_plan != plan_id


OPERATOR_FIELDS = ("clusterRef", *json_names(OperatorFields))  # accepted and ignored by the kinds' parsers


# ---- the kinds -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerDecommission:
    """No replica may remain on these brokers."""

    DESCRIPTION: ClassVar[str] = "Desired state: no replica may remain on these brokers."

    name: str
    brokers: tuple[int, ...] = leaf(
        "brokers",
        arr_schema(
            "Ids of the brokers to empty (at least one, no duplicates).",
            BROKER_ID,
            minItems=1,
            maxItems=MAX_BROKERS,
            **SET,
        ),
        required=True,
        says={"minItems": "must list at least one broker", "set": "duplicate broker in {list}"},
    )
    throttle_bytes_per_sec: int | None = leaf(
        "throttle",
        int_schema(
            "Replication throttle in bytes per second for this decommission's moves; absent = the "
            "KafkaCluster's throttleBytesPerSecond.",
            1,
            int64=True,
        ),
    )
    priority: int = leaf(
        "priority",
        int_schema(
            "Higher priority decommissions' moves are batched first when several intents compete.",
            -INT32_MAX - 1,
            maximum=INT32_MAX,
            default=0,
        ),
    )
    origin: str = field(default="", compare=False)  # where the spec was read, for messages


@dataclass(frozen=True, slots=True)
class LogDirCordon:
    """No new replica on these dirs of one broker (``*`` = all of them); with ``drain`` none left."""

    DESCRIPTION: ClassVar[str] = (
        "Desired state: no new replica on these log dirs of one broker; with drain, none left on them."
    )
    WHOLE_BROKER_ALONE: ClassVar[str] = '"*" means the whole broker and cannot be combined with paths'
    DRAIN_OR_RELIEVE: ClassVar[str] = (
        "drain moves every replica off the dirs, relieveBelowShare only enough of them: set one"
    )

    name: str
    broker: int = leaf(
        "broker",
        int_schema("Id of the broker whose log dirs are cordoned.", 0, maximum=INT32_MAX),
        required=True,
    )
    log_dirs: tuple[str, ...] = leaf(
        "logDirs",
        arr_schema(
            'Absolute paths of the broker\'s log dirs, or ["*"] for all of them (the whole broker).',
            str_schema('An absolute log dir path, or "*".', pattern=LOG_DIR_PATTERN, maxLength=MAX_PATH),
            minItems=1,
            maxItems=256,
            **SET,
            **{
                "x-kubernetes-validations": [
                    {"rule": "!self.exists(d, d == '*') || self.size() == 1", "message": WHOLE_BROKER_ALONE}
                ]
            },
        ),
        required=True,
        says={
            "minItems": 'must list at least one log dir (or "*" for the whole broker)',
            "set": "duplicate log dir in {list}",
            "pattern": "{got} is not an absolute path",
        },
    )
    drain: bool = leaf(
        "drain",
        bool_schema("When true, also move every existing replica off the cordoned dirs.", default=False),
    )
    relieve_below_share: float | None = leaf(
        "relieveBelowShare",
        {
            "type": "number",
            "description": (
                "Relieve disk pressure: move the fewest bytes off each cordoned dir that bring its volume "
                "under this share of its size (0.8 = 80%), to the broker's other dirs first (no network "
                "copy), then to other brokers. Not with drain; a dir whose volume size is unknown cannot be "
                "relieved."
            ),
            "minimum": RELIEVE_MIN,
            "maximum": RELIEVE_MAX,
        },
    )
    origin: str = field(default="", compare=False)

    @property
    def whole_broker(self) -> bool:
        return WHOLE_BROKER in self.log_dirs


def _glob_list(description: str, **extra: Any) -> Schema:
    return arr_schema(
        description,
        str_schema(
            "A glob pattern (fnmatch: *, ?, [seq]) matched against topic names.",
            minLength=1,
            maxLength=MAX_NAME,
        ),
        maxItems=1000,
        **extra,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicSelector:
    """The topics a policy applies to: those matching ``include`` and not ``exclude`` (glob patterns)."""

    DESCRIPTION: ClassVar[str] = (
        "Topic selector: topics matching an include pattern and no exclude pattern. A topic may be "
        "selected by at most one policy."
    )

    include: tuple[str, ...] = leaf(
        "include",
        _glob_list("Glob patterns of the topics to include.", minItems=1, default=["*"]),
        says={"minItems": "must list at least one pattern"},
    )
    exclude: tuple[str, ...] = leaf(
        "exclude", _glob_list("Glob patterns of topics to leave out.", default=[])
    )

    def matches(self, topic: str) -> bool:
        return any(fnmatch.fnmatchcase(topic, p) for p in self.include) and not any(
            fnmatch.fnmatchcase(topic, p) for p in self.exclude
        )


@dataclass(frozen=True, slots=True)
class RackAwareness:
    """KIP-879 multi-level racks: ``/dc1/r2`` splits on ``separator``; the first ``levels`` parts count."""

    DESCRIPTION: ClassVar[str] = (
        "Multi-level rack spread (KIP-879): replicas spread evenly at the top level first, then "
        "inside each unit, level by level."
    )

    separator: str = leaf(
        "separator",
        str_schema(
            'Separator of the rack hierarchy ("/dc1/r2" with "/" -> [dc1, r2]).',
            minLength=1,
            maxLength=16,
            default="/",
        ),
    )
    levels: int = leaf(
        "levels", int_schema("How many leading levels of the rack path count.", 1, maximum=8, default=1)
    )

    def path(self, rack: str | None) -> tuple[str, ...]:
        """The unit path of a rack, padded so every broker has exactly ``levels`` parts."""
        parts = [p for p in (rack or "").split(self.separator) if p] if self.separator else [rack or ""]
        if not parts:
            parts = [""]
        head = parts[: self.levels]
        while len(head) < self.levels:
            head.append(head[-1] if head else "")
        return tuple(head)


@dataclass(frozen=True, slots=True, kw_only=True)
class Balance:
    """Balance goals; each is met when max/mean <= 1 + tolerance."""

    DESCRIPTION: ClassVar[str] = "Balance goals; each is met when max/mean <= 1 + tolerance."

    brokers: bool = leaf("brokers", bool_schema("Balance bytes and replicas across brokers.", default=False))
    log_dirs: bool = leaf(
        "logDirs", bool_schema("Balance bytes across the log dirs of each broker.", default=False)
    )
    leaders: bool = leaf("leaders", bool_schema("Balance partition leaders across brokers.", default=False))
    failure_spread: bool = leaf(
        "failureSpread",
        bool_schema(
            "Spread the followers of the partitions each broker leads over as many other brokers as the"
            " rules allow, so that a broker's failure moves its leadership onto many survivors.",
            default=False,
        ),
    )
    network_in: bool = leaf(
        "networkIn",
        bool_schema(
            "Balance network in (bytes per second into each broker: every replica's partition's bytes in)"
            " across brokers; needs traffic in the snapshot (docs/operations.md).",
            default=False,
        ),
    )
    network_out: bool = leaf(
        "networkOut",
        bool_schema(
            "Balance network out (bytes per second a broker's led partitions send to followers and"
            " consumer groups) and the leaders' bytes in across brokers; needs traffic in the snapshot.",
            default=False,
        ),
    )
    tolerance: float = leaf(
        "tolerance",
        {
            "type": "number",
            "description": "Allowed imbalance as a fraction (0.05 = 5%).",
            "minimum": 0,
            "maximum": 10,
            "default": 0.05,
        },
    )

    @property
    def any(self) -> bool:
        return (
            self.brokers
            or self.log_dirs
            or self.leaders
            or self.failure_spread
            or self.network_in
            or self.network_out
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MoveBudget:
    """Limits on the moves a policy may cause (0 = unlimited)."""

    DESCRIPTION: ClassVar[str] = "Limits on the moves this policy may cause (0 = unlimited)."

    max_bytes: int = leaf(
        "maxBytes", int_schema("Most bytes this policy may move (0 = unlimited).", 0, int64=True, default=0)
    )
    max_moves: int = leaf(
        "maxMoves",
        int_schema(
            "Most partition moves this policy may cause (0 = unlimited).", 0, maximum=INT32_MAX, default=0
        ),
    )


@dataclass(frozen=True, slots=True)
class PlacementPolicy:
    """Placement rules for the topics its selector matches."""

    DESCRIPTION: ClassVar[str] = "Placement rules for the topics it selects."

    name: str
    topics: TopicSelector = child("topics", TopicSelector, absent=True)
    rack_awareness: RackAwareness | None = child("rackAwareness", RackAwareness)
    replication_factor: int | None = leaf(
        "replicationFactor",
        int_schema(
            "Replication factor of the selected topics; absent = keep each partition's.",
            1,
            maximum=MAX_REPLICATION_FACTOR,
        ),
    )
    balance: Balance = child("balance", Balance, absent=True)
    preferred_brokers: tuple[int, ...] = leaf(
        "preferredBrokers",
        arr_schema(
            "Broker ids filled first (e.g. newly added brokers).", BROKER_ID, maxItems=MAX_BROKERS, default=[]
        ),
    )
    move_budget: MoveBudget = child("moveBudget", MoveBudget, absent=True)
    mode: str = leaf(
        "mode",
        str_schema(
            "Enforce: plan and execute moves. Advise: only report what would move.",
            enum=list(MODES),
            default="Enforce",
        ),
    )
    origin: str = field(default="", compare=False)

    def matches(self, topic: str) -> bool:
        return self.topics.matches(topic)

    @property
    def enforced(self) -> bool:
        return self.mode == "Enforce"


Intent = BrokerDecommission | LogDirCordon | PlacementPolicy
KIND_CLASSES: dict[str, type[Intent]] = {
    "BrokerDecommission": BrokerDecommission,
    "LogDirCordon": LogDirCordon,
    "PlacementPolicy": PlacementPolicy,
}
KINDS = tuple(KIND_CLASSES)


def parse_kind(kind: str, raw: object, where: str, name: str) -> Intent:
    """The spec of a resource of the intent kind ``kind`` (``where``: the spec's location, kept as the
    intent's ``origin``); the operator's fields are accepted and left to ``OperatorFields``."""
    cls = KIND_CLASSES[kind]
    intent = parse_object(cls, raw, where, also=OPERATOR_FIELDS, name=name, origin=where)
    if isinstance(intent, LogDirCordon) and intent.whole_broker and len(intent.log_dirs) > 1:
        raise BadInputError(LogDirCordon.WHOLE_BROKER_ALONE, f"{where}.logDirs")  # the CRD's CEL rule
    if isinstance(intent, LogDirCordon) and intent.drain and intent.relieve_below_share is not None:
        raise BadInputError(LogDirCordon.DRAIN_OR_RELIEVE, f"{where}.relieveBelowShare")
    return intent


def spec_schema(kind: str) -> Schema:
    """The CRD schema of the kind's ``spec``: ``clusterRef``, the kind's fields, the operator's fields."""
    own = object_schema(KIND_CLASSES[kind])
    out = obj_schema(
        own["description"],
        {"clusterRef": ClusterRef.schema(), **own["properties"], **OperatorFields.schema()},
        ["clusterRef", *own.get("required", [])],
    )
    if kind == "LogDirCordon":  # parse_kind's rule, in the apiserver too
        rule = "!(has(self.drain) && self.drain && has(self.relieveBelowShare))"
        out["x-kubernetes-validations"] = [{"rule": rule, "message": LogDirCordon.DRAIN_OR_RELIEVE}]
    return out


__all__ = [
    "KINDS",
    "MAX_NEW_PARTITIONS",
    "MAX_REPLICATION_FACTOR",
    "OPERATOR_FIELDS",
    "WHOLE_BROKER",
    "Balance",
    "BrokerDecommission",
    "ClusterRef",
    "Intent",
    "LogDirCordon",
    "MoveBudget",
    "OperatorFields",
    "PlacementPolicy",
    "RackAwareness",
    "TopicSelector",
    "parse_kind",
    "spec_location",
    "spec_schema",
]
