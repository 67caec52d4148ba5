"""A KafkaCluster's status is declared once (model/cluster_status.py): the CRD's status schema and the
parser of a stored status or a status patch derive from it, and what each writer builds parses."""

from __future__ import annotations

import json

import pytest
from tests.unit.builders import snapshot

from kafka_placement.kafka.types import LogDirInfo
from kafka_placement.model.capacity import BrokerCapacity, Capacity, CapacitySpec
from kafka_placement.model.cluster_status import (
    ClusterStatus,
    TrafficStatus,
    check_patch,
    new_partitions_of,
    traffic_of,
)
from kafka_placement.model.crd_schema import crd_documents
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.self_healing import DeadBroker, HealingState, UnreachableBroker
from kafka_placement.model.spec_fields import to_json
from kafka_placement.planning.traffic_rates import Traffic
from kafka_placement.reconcile import status as st
from kafka_placement.reconcile.traffic_sampler import traffic_status


def test_the_kafkacluster_crd_has_the_status_schema_the_model_declares() -> None:
    (doc,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "KafkaCluster"]
    (version,) = doc["spec"]["versions"]
    assert version["schema"]["openAPIV3Schema"]["properties"]["status"] == ClusterStatus.schema()


def test_what_the_writers_build_parses_and_writes_back_as_it_was() -> None:
    snap = snapshot({1: "/dc1/r1", 2: None}, [("t", 0, [1, 2], [0, 1], 10), ("t", 1, [2, 1], [1, 0], 5)])
    full = st.cluster_status(snap, 3)
    dirs = {
        1: (
            LogDirInfo(1, "/data/d0", None, 100, 40, True, ()),
            LogDirInfo(1, "/d1", "gone", -1, -1, None, ()),
        )
    }
    light = st.light_cluster_status({1: "/dc1/r1"}, dirs, 0)
    healing = HealingState(
        dead_brokers=(
            DeadBroker(id=2, since="2026-12-03T08:00:00Z", lost_partitions=("t-9",), lost_count=1),
        ),
        unreachable_brokers=(UnreachableBroker(id=3, since="2026-12-03T08:01:00Z"),),
    ).to_status()
    traffic = {("t", 0): Traffic(1000.0, 2), ("t", 1): Traffic(None, None)}
    capacity = CapacitySpec(default=Capacity(network_in=10_000, network_out=6000, disk=10**6))
    sampled = traffic_status(snap, traffic, 0.0, 300, 2, capacity, groups_read=1, skipped={"recreated": 1})
    wrong = CapacitySpec(brokers=(BrokerCapacity(id=9, disk=1),))
    error = traffic_status(snap, traffic, 0.0, 300, 2, wrong)
    assert error["capacityError"] and sampled["brokers"][0]["utilisation"]
    for patch in (full, light, healing, {"traffic": sampled}, {"traffic": error}):
        check_patch(patch)
        parsed = ClusterStatus.parse(patch)
        written = to_json(parsed)  # an empty list is absent (the healing state clears with [])
        assert written == {k: v for k, v in json.loads(json.dumps(patch)).items() if v != []}
        assert ClusterStatus.parse(written) == parsed
    assert ClusterStatus.parse(full).brokers[1].rack is None  # unknown: absent, never null
    shown = traffic_of({"traffic": sampled})
    assert isinstance(shown, TrafficStatus) and shown.samples_skipped is not None
    assert shown.samples_skipped.recreated == 1


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        ({"traffic": {"samplesDropped": 1}}, "status.traffic"),
        (
            {"brokers": [{"id": 1, "logDirs": [{"path": "/d", "usedBytes": -1}]}]},
            "status.brokers[0].logDirs[0]",
        ),
        ({"newPartitions": {"phase": "Planning"}}, "status.newPartitions.phase"),
        ({"deadBrokers": [{"id": 1}]}, "since"),
        ({"lanePlan": "x"}, "unknown field"),
    ],
)
def test_a_patch_breaking_the_schema_is_refused_naming_the_field(patch: dict[str, object], says: str) -> None:
    with pytest.raises(BadInputError) as e:
        check_patch(patch)
    assert says in str(e.value)


def test_a_patch_may_remove_fields_with_null_and_a_broken_stored_part_reads_as_absent() -> None:
    check_patch({"traffic": None, "newPartitions": None})
    assert new_partitions_of({"newPartitions": {"phase": "Nope"}}) is None
    assert new_partitions_of(None) is None
    lane = new_partitions_of({"newPartitions": {"phase": "AwaitingApproval", "planId": "p", "partitions": 2}})
    assert lane is not None and (lane.phase, lane.plan_id, lane.partitions) == ("AwaitingApproval", "p", 2)
    assert traffic_of({"traffic": {"looks": -1}}) is None


def test_racks_and_conditions_are_read_typed_each_alone_and_a_broken_one_reads_as_absent() -> None:
    from kafka_placement.model.cluster_status import conditions_of, racks_of

    ready = {"type": "Ready", "status": "True", "reason": "Connected", "message": ""}
    ready["lastTransitionTime"] = "2026-12-03T10:00:00Z"
    status = {"brokers": [{"id": 1, "rack": "/dc1/r1"}, {"id": 2}], "conditions": [ready], "traffic": 7}
    assert racks_of(status) == {1: "/dc1/r1", 2: None}  # a broken traffic part hides neither
    assert conditions_of(status) == [ready]
    assert racks_of({"brokers": [{"id": "one"}]}) == {} and racks_of(None) == {}
    assert conditions_of({"conditions": "Ready"}) == [] and conditions_of({}) == []
