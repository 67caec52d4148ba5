"""Strict parsing of intents: kinds, fields, locations of errors, and cross-checks against a snapshot."""

from __future__ import annotations

import pytest
from tests.unit.builders import intents, snapshot

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intents import Intents, RackAwareness, validate_against

SNAP = snapshot({1: "/dc1/r1", 2: "/dc1/r2", 3: "/dc2/r1"}, [("t", 0, [1, 2], [0, 0], 10)])


def test_all_kinds_parse_with_defaults() -> None:
    parsed = intents(
        """
kind: BrokerDecommission
spec: {brokers: [3], clusterRef: {name: prod}, approval: Automatic}
---
kind: LogDirCordon
metadata: {name: cordon-2}
spec: {broker: 2, logDirs: ["/data/d1"], drain: true}
---
apiVersion: kafkaplacement.io/v1alpha1
kind: PlacementPolicy
metadata: {name: spread}
spec:
  topics: {include: ["orders-*"], exclude: ["orders-tmp"]}
  rackAwareness: {separator: "/", levels: 2}
  replicationFactor: 3
  balance: {brokers: true, tolerance: 0.1}
  preferredBrokers: [3]
  moveBudget: {maxMoves: 10}
  mode: Advise
"""
    )
    assert parsed.decommissioned == frozenset({3})
    (cordon,) = parsed.cordons
    assert (cordon.name, cordon.broker, cordon.log_dirs, cordon.drain) == ("cordon-2", 2, ("/data/d1",), True)
    (policy,) = parsed.policies
    assert policy.name == "spread" and not policy.enforced
    assert policy.matches("orders-eu") and not policy.matches("orders-tmp") and not policy.matches("pay")
    assert policy.rack_awareness == RackAwareness("/", 2)
    assert policy.balance.brokers and not policy.balance.leaders and policy.balance.tolerance == 0.1
    assert policy.move_budget.max_moves == 10 and policy.move_budget.max_bytes == 0
    assert parsed.enforced_only().policies == ()


def test_rack_paths_split_and_pad() -> None:
    rule = RackAwareness("/", 2)
    assert rule.path("/dc1/r2") == ("dc1", "r2")
    assert rule.path("/dc1/r2/row3") == ("dc1", "r2")
    assert rule.path("/dc1") == ("dc1", "dc1")
    assert rule.path(None) == ("", "")
    assert RackAwareness("-", 1).path("eu-west-1a") == ("eu",)


@pytest.mark.parametrize(
    ("text", "location", "reason"),
    [
        ("kind: Bogus\nspec: {}\n", "document 1", "unknown kind 'Bogus'"),
        (
            "kind: BrokerDecommission\nspec: {brokers: [1], brokerz: [2]}\n",
            "spec",
            "unknown field(s) brokerz",
        ),
        ("kind: BrokerDecommission\nspec: {brokers: []}\n", "spec.brokers", "at least one broker"),
        ("kind: BrokerDecommission\nspec: {brokers: [1, 1]}\n", "spec.brokers", "duplicate broker"),
        ("kind: BrokerDecommission\nspec: {brokers: [x]}\n", "spec.brokers[0]", "expected an integer"),
        (
            "kind: LogDirCordon\nspec: {broker: 1, logDirs: [data]}\n",
            "spec.logDirs[0]",
            "not an absolute path",
        ),
        ("kind: LogDirCordon\nspec: {broker: 1, logDirs: ['*', /a]}\n", "spec.logDirs", "whole broker"),
        (
            "kind: LogDirCordon\nspec: {broker: 1, logDirs: [/a], drain: yes please}\n",
            "spec.drain",
            "true or false",
        ),
        ("kind: PlacementPolicy\nspec: {mode: Force}\n", "spec.mode", "must be one of Enforce, Advise"),
        ("kind: PlacementPolicy\nspec: {replicationFactor: 0}\n", "spec.replicationFactor", "must be >= 1"),
        ("kind: PlacementPolicy\nspec: {rackAwareness: {levels: 0}}\n", "rackAwareness.levels", ">= 1"),
        (
            "kind: PlacementPolicy\nspec: {balance: {tolerance: 5%}}\n",
            "balance.tolerance",
            "expected a number",
        ),
        ("kind: PlacementPolicy\nspec: {topics: {include: []}}\n", "topics.include", "at least one pattern"),
        ("kind: PlacementPolicy\nspec: [1]\n", "spec", "expected an object"),
        ("kind: [unclosed\n", "test.yaml", "not valid YAML"),
        ("- just a list\n", "document 1", "expected an object"),
    ],
)
def test_malformed_intents_name_the_place_and_reason(text: str, location: str, reason: str) -> None:
    with pytest.raises(BadInputError) as err:
        intents(text)
    assert location in err.value.location, err.value.message
    assert reason in err.value.detail, err.value.message
    assert err.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "location", "reason"),
    [
        ("kind: BrokerDecommission\nspec: {brokers: [9]}\n", "spec.brokers[0]", "unknown broker 9"),
        ("kind: LogDirCordon\nspec: {broker: 9, logDirs: ['*']}\n", "spec.broker", "unknown broker 9"),
        (
            "kind: LogDirCordon\nspec: {broker: 1, logDirs: [/data/x]}\n",
            "spec.logDirs[0]",
            "no log dir '/data/x'",
        ),
        (
            "kind: PlacementPolicy\nspec: {preferredBrokers: [1, 7]}\n",
            "preferredBrokers[1]",
            "unknown broker 7",
        ),
        (
            "kind: PlacementPolicy\nmetadata: {name: a}\nspec: {}\n---\n"
            "kind: PlacementPolicy\nmetadata: {name: b}\nspec: {topics: {include: ['t*']}}\n",
            "PlacementPolicy b",
            "more than one policy (a, b)",
        ),
    ],
)
def test_intents_naming_what_the_cluster_lacks_are_rejected(text: str, location: str, reason: str) -> None:
    with pytest.raises(BadInputError) as err:
        validate_against(intents(text), SNAP)
    assert location in err.value.location and reason in err.value.detail, err.value.message


def test_empty_stream_is_no_intents() -> None:
    assert Intents.loads("").empty
    assert Intents.loads("---\n---\n").empty


def test_an_intents_file_may_declare_the_brokers_capacities_once() -> None:
    from kafka_placement.model.capacity import BrokerCapacity, Capacity, CapacitySpec

    text = (
        "kind: PlacementPolicy\nspec: {balance: {networkIn: true}}\n---\n"
        "capacity: {default: {networkInBytesPerSec: 100}, maxShare: 0.5, brokers: [{id: 2, diskBytes: 9}]}\n"
    )
    got = Intents.loads(text, "i.yaml")
    assert got.capacity == CapacitySpec(
        default=Capacity(network_in=100), max_share=0.5, brokers=(BrokerCapacity(id=2, disk=9),)
    )
    assert got.policies[0].balance.network_in and got.enforced_only().capacity == got.capacity
    assert CapacitySpec.parse(got.capacity.to_json()) == got.capacity  # type: ignore[union-attr]
    with pytest.raises(BadInputError, match=r"i.yaml: document 3: a second capacity document"):
        Intents.loads(text + "---\ncapacity: {}\n", "i.yaml")
    with pytest.raises(BadInputError, match=r"document 2.capacity.maxShare: must be <= 1"):
        Intents.loads("kind: PlacementPolicy\nspec: {}\n---\ncapacity: {maxShare: 2}\n", "i.yaml")
    with pytest.raises(BadInputError, match=r"document 1"):
        Intents.loads("capacity: {}\nextra: 1\n", "i.yaml")
