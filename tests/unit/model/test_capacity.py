"""``spec.capacity`` (model/capacity.py): a default and per-broker overrides, field by field; bad input
refused by the parser and, where a schema can say it, by the CRD (positive values, a broker once)."""

from __future__ import annotations

import pytest

from kafka_placement.model.capacity import Capacity, CapacitySpec
from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.model.errors import BadInputError


def spec(capacity: object) -> ClusterSpec:
    return ClusterSpec.parse({"bootstrapServers": "k:9092", "capacity": capacity})


def test_an_override_takes_the_default_for_the_fields_it_leaves_out() -> None:
    cap = spec(
        {
            "default": {"networkInBytesPerSec": 100_000_000, "networkOutBytesPerSec": 200_000_000},
            "brokers": [{"id": 3, "networkInBytesPerSec": 50_000_000, "diskBytes": 10**12}],
        }
    ).capacity
    assert cap is not None
    assert cap.of(3) == Capacity(network_in=50_000_000, network_out=200_000_000, disk=10**12)
    assert cap.of(1) == Capacity(network_in=100_000_000, network_out=200_000_000, disk=None)
    assert spec({}).capacity == CapacitySpec()  # nothing declared: every capacity unknown
    assert CapacitySpec().of(1) == Capacity()
    assert ClusterSpec.parse({"bootstrapServers": "k:9092"}).capacity is None


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        (
            {"default": {"networkInBytesPerSec": -1}},
            "spec.capacity.default.networkInBytesPerSec: must be >= 1",
        ),
        ({"default": {"diskBytes": 0}}, "spec.capacity.default.diskBytes: must be >= 1"),
        (
            {"brokers": [{"id": 1, "networkOutBytesPerSec": -5}]},
            "spec.capacity.brokers[0].networkOutBytesPerSec",
        ),
        ({"brokers": [{"id": 1}, {"id": 1}]}, "spec.capacity.brokers[1].id: broker 1 is listed twice"),
        ({"brokers": [{"diskBytes": 1}]}, "spec.capacity.brokers[0]: missing required field 'id'"),
        ({"brokers": [{"id": -2}]}, "spec.capacity.brokers[0].id: must be >= 0"),
        ({"default": {"networkIn": 5}}, "spec.capacity.default"),
    ],
)
def test_bad_capacities_are_refused_naming_the_field(capacity: object, message: str) -> None:
    with pytest.raises(BadInputError) as e:
        spec(capacity)
    assert str(e.value).startswith(message), str(e.value)


def test_an_override_of_a_broker_the_cluster_lacks_is_named() -> None:
    cap = spec({"brokers": [{"id": 1, "diskBytes": 5}, {"id": 7, "diskBytes": 5}]}).capacity
    assert cap is not None
    cap.unknown_brokers([1, 2, 3, 7])  # nothing raised: every override names a broker
    with pytest.raises(BadInputError) as e:
        cap.unknown_brokers([1, 2])
    assert (
        str(e.value) == "spec.capacity.brokers[1].id: broker 7 is not a broker of the cluster (brokers: 1, 2)"
    )


def test_the_crd_refuses_what_a_schema_can_say() -> None:
    schema = ClusterSpec.schema()["properties"]["capacity"]["properties"]
    for s in (schema["default"], schema["brokers"]["items"]):
        for name in ("networkInBytesPerSec", "networkOutBytesPerSec", "diskBytes"):
            assert s["properties"][name]["minimum"] == 1
    brokers = schema["brokers"]
    assert brokers["x-kubernetes-list-type"] == "map" and brokers["x-kubernetes-list-map-keys"] == ["id"]
    assert brokers["items"]["required"] == ["id"]
