"""A plan checked against a snapshot: every partition, broker and dir it names must exist, and the error
names the entry by its index in the plan's file."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot


def _cluster() -> ClusterSnapshot:
    snap = snapshot({1: "a", 2: "b", 3: "c"}, [("t", 0, [1, 2], [0, 0], 10), ("t", 1, [1, 2], [1, 1], 10)])
    doc = snap.to_json()
    doc["brokers"][2]["logDirs"] = []  # broker 3 is down: it reports no dirs
    return ClusterSnapshot.from_json(doc)


def _plan(*entries: dict[str, Any]) -> Plan:
    ok = {"topic": "t", "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/data/d1"]}
    return Plan.from_json({"version": 1, "partitions": [ok, *entries]}, "p.json")


def test_a_plan_naming_what_exists_passes() -> None:
    _plan({"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["/data/d0", "any"]}).check_against(
        _cluster()
    )


@pytest.mark.parametrize(
    ("entry", "live_only", "message", "where"),
    [
        (
            {"topic": "u", "partition": 0, "replicas": [1], "log_dirs": ["any"]},
            False,
            "partition u-0 does not exist in the cluster",
            "p.json.partitions[1] (u-0)",
        ),
        (
            {"topic": "t", "partition": 1, "replicas": [2, 9], "log_dirs": ["any", "any"]},
            False,
            "broker 9 is an unknown broker; the cluster has brokers [1, 2, 3]",
            "p.json.partitions[1] (t-1).replicas[1]",
        ),
        (
            {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
            True,
            "broker 3 is not a live broker",
            "p.json.partitions[1] (t-1).replicas[1]",
        ),
        (
            {"topic": "t", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "/data/x"]},
            False,
            "broker 1 has no log dir '/data/x'",
            "p.json.partitions[1] (t-1).log_dirs[1]",
        ),
        (
            {"topic": "t", "partition": 1, "replicas": [3, 1], "log_dirs": ["/data/d0", "any"]},
            False,
            "broker 3 has no log dir '/data/d0' (it has [])",
            "p.json.partitions[1] (t-1).log_dirs[0]",
        ),
    ],
)
def test_the_first_missing_element_is_named_at_its_place_in_the_file(
    entry: dict[str, Any], live_only: bool, message: str, where: str
) -> None:
    plan = _plan(entry)
    with pytest.raises(BadInputError) as e:
        plan.check_against(_cluster(), live_only=live_only)
    assert message in e.value.detail and e.value.location == where
