"""The intent kinds' typed specs (model/intent_kinds.py): one declaration gives the parser and the CRD schema,
the CRD's defaults are the model's, and the parser refuses what the schema refuses, naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.model.test_cluster_spec import apiserver_defaults, schema_defaults

from kafka_placement.model.crd_schema import crd_documents
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intent_kinds import (
    KINDS,
    Balance,
    BrokerDecommission,
    LogDirCordon,
    MoveBudget,
    PlacementPolicy,
    RackAwareness,
    TopicSelector,
    parse_kind,
    spec_schema,
)


def crd_spec_schema(kind: str) -> dict[str, Any]:
    (crd,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == kind]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


REF = {"clusterRef": {"name": "prod"}}
# every object present, with only its required fields: every schema default applies somewhere
SKELETONS: dict[str, dict[str, Any]] = {
    "BrokerDecommission": {**REF, "brokers": [3]},
    "LogDirCordon": {**REF, "broker": 2, "logDirs": ["/data/d1"]},
    "PlacementPolicy": {**REF, "topics": {}, "rackAwareness": {}, "balance": {}, "moveBudget": {}},
}
FULL: dict[str, dict[str, Any]] = {
    "BrokerDecommission": {**REF, "brokers": [3, 5], "throttle": 1000, "priority": -2, "paused": True},
    "LogDirCordon": {**REF, "broker": 2, "logDirs": ["*"], "drain": True, "approval": "Manual"},
    "PlacementPolicy": {
        **REF,
        "topics": {"include": ["orders-*"], "exclude": ["orders-tmp"]},
        "rackAwareness": {"separator": "-", "levels": 8},
        "replicationFactor": 32767,
        "balance": {
            "brokers": True,
            "logDirs": True,
            "leaders": True,
            "failureSpread": True,
            "tolerance": 10,
        },
        "preferredBrokers": [7, 7],
        "moveBudget": {"maxBytes": 2**40, "maxMoves": 2**31 - 1},
        "mode": "Advise",
        "approvedPlan": "p1",
    },
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("specs", [SKELETONS, FULL], ids=["skeleton", "full"])
def test_the_crds_defaults_are_the_models(kind: str, specs: dict[str, dict[str, Any]]) -> None:
    """The spec as written and the spec as the apiserver stores it (schema defaults filled in) parse to the
    same intent: no default of the CRD differs from the model's."""
    raw = specs[kind]
    stored, applied = copy.deepcopy(raw), []
    apiserver_defaults(crd_spec_schema(kind), stored, applied)
    assert parse_kind(kind, stored, "spec", "x") == parse_kind(kind, raw, "spec", "x")
    if specs is SKELETONS:  # every default of the schema was checked
        assert sorted(applied) == sorted(schema_defaults(crd_spec_schema(kind)))


def test_the_defaults_field_by_field() -> None:
    """The model's defaults against the CRD's (the parser's come from the declarations the schema is made
    of): an absent object is one with every field at its default."""
    policy = crd_spec_schema("PlacementPolicy")["properties"]
    default = {k: s["default"] for obj in ("topics", "rackAwareness", "balance", "moveBudget")
               for k, s in policy[obj]["properties"].items()}  # fmt: skip
    assert TopicSelector() == TopicSelector(
        include=tuple(default["include"]), exclude=tuple(default["exclude"])
    )
    assert RackAwareness() == RackAwareness(default["separator"], default["levels"])
    assert Balance() == Balance(
        brokers=default["brokers"],
        log_dirs=default["logDirs"],
        leaders=default["leaders"],
        failure_spread=default["failureSpread"],
        tolerance=default["tolerance"],
    )
    assert MoveBudget() == MoveBudget(max_bytes=default["maxBytes"], max_moves=default["maxMoves"])
    assert PlacementPolicy("p") == parse_kind("PlacementPolicy", {}, "spec", "p")
    assert PlacementPolicy("p").mode == policy["mode"]["default"] and PlacementPolicy("p").enforced
    assert (
        BrokerDecommission("r", (1,)).priority
        == crd_spec_schema("BrokerDecommission")["properties"]["priority"]["default"]
    )
    assert (
        LogDirCordon("c", 1, ("/a",)).drain
        is crd_spec_schema("LogDirCordon")["properties"]["drain"]["default"]
    )


@pytest.mark.parametrize("kind", KINDS)
def test_the_crds_spec_schema_is_the_models(kind: str) -> None:
    schema = spec_schema(kind)
    assert crd_spec_schema(kind) == schema
    assert next(iter(schema["properties"])) == "clusterRef" and schema["required"][0] == "clusterRef"
    assert list(schema["properties"])[-4:] == ["approval", "approvedPlan", "paused", "ignoreWindows"]


@pytest.mark.parametrize(
    ("kind", "spec", "location", "says"),
    [
        ("BrokerDecommission", {"brokers": [1, 1]}, "spec.brokers", "duplicate broker in [1, 1]"),
        ("BrokerDecommission", {"brokers": [2**31]}, "spec.brokers[0]", "must be <= 2147483647"),
        ("BrokerDecommission", {"brokers": [-1]}, "spec.brokers[0]", "must be >= 0"),
        ("BrokerDecommission", {"brokers": list(range(10001))}, "spec.brokers", "at most 10000 entries"),
        ("BrokerDecommission", {"brokers": [1], "priority": 2**31}, "spec.priority", "must be <= 2147483647"),
        ("BrokerDecommission", {"brokers": 1}, "spec.brokers", "expected an array"),
        ("LogDirCordon", {"broker": 1, "logDirs": []}, "spec.logDirs", 'at least one log dir (or "*"'),
        ("LogDirCordon", {"broker": 1, "logDirs": ["/a", "/a"]}, "spec.logDirs", "duplicate log dir"),
        ("LogDirCordon", {"broker": 1, "logDirs": [""]}, "spec.logDirs[0]", "'' is not an absolute path"),
        ("LogDirCordon", {"broker": 1, "logDirs": ["/" * 4097]}, "spec.logDirs[0]", "longer than 4096"),
        ("LogDirCordon", {"broker": 1, "logDirs": ["*", "/a"]}, "spec.logDirs", "the whole broker"),
        ("LogDirCordon", {"logDirs": ["/a"]}, "spec", "missing required field 'broker'"),
        ("PlacementPolicy", {"topics": {"include": [""]}}, "spec.topics.include[0]", "must not be empty"),
        (
            "PlacementPolicy",
            {"topics": {"exclude": ["x" * 254]}},
            "spec.topics.exclude[0]",
            "longer than 253",
        ),
        ("PlacementPolicy", {"rackAwareness": {"separator": ""}}, "spec.rackAwareness.separator", "empty"),
        ("PlacementPolicy", {"rackAwareness": {"levels": 9}}, "spec.rackAwareness.levels", "must be <= 8"),
        ("PlacementPolicy", {"replicationFactor": 32768}, "spec.replicationFactor", "must be <= 32767"),
        ("PlacementPolicy", {"balance": {"tolerance": 10.5}}, "spec.balance.tolerance", "must be <= 10"),
        (
            "PlacementPolicy",
            {"balance": {"failureSpread": "yes"}},
            "spec.balance.failureSpread",
            "true or false",
        ),
        ("PlacementPolicy", {"balance": {"failureSpread": 1}}, "spec.balance.failureSpread", "true or false"),
        ("PlacementPolicy", {"moveBudget": {"maxMoves": 2**31}}, "spec.moveBudget.maxMoves", "<= 2147483647"),
        ("PlacementPolicy", {"mode": "Force"}, "spec.mode", "must be one of Enforce, Advise, got 'Force'"),
        ("PlacementPolicy", {"approval": "Later", "topics": {"zz": 1}}, "spec.topics", "unknown field(s) zz"),
    ],
)
def test_the_parser_refuses_what_the_schema_refuses(
    kind: str, spec: dict[str, Any], location: str, says: str
) -> None:
    with pytest.raises(BadInputError) as e:
        parse_kind(kind, spec, "spec", "x")
    assert (e.value.location, says in e.value.detail) == (location, True), e.value.message


def test_the_operator_fields_are_accepted_and_left_to_their_own_parser() -> None:
    """``approval: Later`` is the operator's to refuse (OperatorFields), not the planner's."""
    assert parse_kind("PlacementPolicy", {"approval": "Later"}, "spec", "p") == PlacementPolicy("p")
    policy = parse_kind("PlacementPolicy", FULL["PlacementPolicy"], "at", "spread")
    assert isinstance(policy, PlacementPolicy) and policy.origin == "at" and policy.name == "spread"
    assert policy.matches("orders-eu") and not policy.matches("orders-tmp") and not policy.enforced
    assert policy.preferred_brokers == (7, 7)  # not a set: a repeated id changes nothing


def test_failure_spread_is_off_unless_asked() -> None:
    """``balance.failureSpread`` (issue 39): absent is false, so plans without it stay as they were; the
    schema declares it a boolean with that default."""
    assert parse_kind("PlacementPolicy", {"balance": {}}, "spec", "x").balance.failure_spread is False
    on = parse_kind("PlacementPolicy", {"balance": {"failureSpread": True}}, "spec", "x")
    assert on.balance.failure_spread is True and on.balance.any
    field = crd_spec_schema("PlacementPolicy")["properties"]["balance"]["properties"]["failureSpread"]
    assert (field["type"], field["default"]) == ("boolean", False)
