"""Per-broker loads from a snapshot with traffic (planning/loads.py): network in over every replica,
network out over the partitions led (followers + readers), disk over the replicas; unknown rates
counted, never zero; utilisation against the capacity."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.capacity import BrokerCapacity, Capacity, CapacitySpec
from kafka_placement.planning.loads import BrokerLoad, broker_loads, utilisation


def test_network_in_sums_replicas_and_network_out_the_led_partitions_readers() -> None:
    snap = snapshot(
        {1: None, 2: None, 3: None, 4: None},
        [
            ("a", 0, [1, 2, 3], [0, 0, 0], 1000),  # 100 B/s, 2 groups: leader 1 sends 100 x (2 + 2)
            ("a", 1, [2, 3], [0, 0], 500),  # 40 B/s, no group: leader 2 sends 40 x 1
            ("b", 0, [3, 1], [0, 0], 200),  # unknown rate: counted, adds nothing
        ],
    )
    rates = {("a", 0): (100.0, 2), ("a", 1): (40.0, 0)}
    parts = tuple(
        replace(p, bytes_in_per_sec=rates[p.key][0], read_fanout=rates[p.key][1]) if p.key in rates else p
        for p in snap.partitions
    )
    loads = broker_loads(replace(snap, partitions=parts))
    assert loads == {
        1: BrokerLoad(network_in=100.0, network_out=400.0, disk=1200, unmeasured=1),
        2: BrokerLoad(network_in=140.0, network_out=40.0, disk=1500, unmeasured=0),
        3: BrokerLoad(network_in=140.0, network_out=0.0, disk=1700, unmeasured=1),
        4: BrokerLoad(),  # a broker holding nothing is listed, all zero
    }


def test_a_known_rate_with_an_unknown_fanout_counts_the_followers_only() -> None:
    snap = snapshot({1: None, 2: None}, [("a", 0, [1, 2], [0, 0], 0)])
    (p,) = snap.partitions
    loads = broker_loads(replace(snap, partitions=(replace(p, bytes_in_per_sec=10.0),)))
    assert loads[1].network_out == 10.0 and loads[2].network_in == 10.0


def test_utilisation_is_load_over_capacity_and_none_where_unknown() -> None:
    loads = {1: BrokerLoad(50.0, 30.0, 400), 2: BrokerLoad(10.0, 0.0, 0)}
    cap = CapacitySpec(
        default=Capacity(network_in=100, network_out=60),
        brokers=(BrokerCapacity(id=2, network_in=20, disk=1000),),
    )
    got = utilisation(loads, cap)
    assert got[1] == {"networkIn": 0.5, "networkOut": 0.5, "disk": None}
    assert got[2] == {"networkIn": 0.5, "networkOut": 0.0, "disk": 0.0}
    assert utilisation(loads, CapacitySpec())[1] == {"networkIn": None, "networkOut": None, "disk": None}


@pytest.mark.parametrize("fanout", [0, 1, 5])
def test_network_out_of_a_single_replica_partition_is_its_readers(fanout: int) -> None:
    snap = snapshot({1: None}, [("a", 0, [1], [0], 0)], dirs=1)
    (p,) = snap.partitions
    loads = broker_loads(replace(snap, partitions=(replace(p, bytes_in_per_sec=7.0, read_fanout=fanout),)))
    assert loads[1].network_out == 7.0 * fanout
