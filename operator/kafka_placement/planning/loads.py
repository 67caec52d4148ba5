"""Per-broker loads from a snapshot with traffic (``bytesInPerSec``, ``readFanout`` per partition), beside
the brokers' declared capacities (model/capacity.py). Pure: no I/O.

- **network in** of a broker: the sum over its replicas (leaders and followers: a follower fetches
  every byte its leader takes in) of the partition's bytes in per second;
- **network out**: over the partitions it leads, bytes in x (followers + read fan-out): each follower
  and each consumer group reading the partition fetches every byte from the leader once;
- **disk**: the sum of its replicas' sizes (the snapshot's, the largest replica's).

A partition whose bytes in is unknown adds nothing and is counted (``unmeasured``), never taken as zero
traffic silently; a known rate with an unknown fan-out counts no reader (a lower bound). Utilisation is
the load over the capacity, None where the capacity is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..model.capacity import Capacity, CapacitySpec
from ..model.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """One broker's loads; ``unmeasured``: its replicas whose partition's bytes in is unknown."""

    network_in: float = 0.0
    network_out: float = 0.0
    disk: int = 0
    unmeasured: int = 0

    def utilisation(self, capacity: Capacity) -> dict[str, float | None]:
        """Load / capacity per resource (None: capacity unknown)."""

        def share(load: float, cap: int | None) -> float | None:
            return None if cap is None else load / cap

        return {
            "networkIn": share(self.network_in, capacity.network_in),
            "networkOut": share(self.network_out, capacity.network_out),
            "disk": share(self.disk, capacity.disk),
        }


def broker_loads(snapshot: ClusterSnapshot) -> dict[int, BrokerLoad]:
    """Every broker's loads (see the module docstring), the snapshot's brokers all listed."""
    net_in: dict[int, float] = {}
    net_out: dict[int, float] = {}
    disk: dict[int, int] = {}
    unmeasured: dict[int, int] = {}
    for p in snapshot.partitions:
        for b in p.replicas:
            disk[b] = disk.get(b, 0) + p.size_bytes
            if p.bytes_in_per_sec is None:
                unmeasured[b] = unmeasured.get(b, 0) + 1
            else:
                net_in[b] = net_in.get(b, 0.0) + p.bytes_in_per_sec
        if p.bytes_in_per_sec is not None and p.leader is not None:
            readers = (len(p.replicas) - 1) + (p.read_fanout or 0)
            net_out[p.leader] = net_out.get(p.leader, 0.0) + p.bytes_in_per_sec * readers
    brokers = {b.id for b in snapshot.brokers} | set(disk)
    return {
        b: BrokerLoad(net_in.get(b, 0.0), net_out.get(b, 0.0), disk.get(b, 0), unmeasured.get(b, 0))
        for b in sorted(brokers)
    }


def utilisation(
    loads: Mapping[int, BrokerLoad], capacity: CapacitySpec
) -> dict[int, dict[str, float | None]]:
    """Per broker its loads over its capacity (``CapacitySpec.of``)."""
    return {b: load.utilisation(capacity.of(b)) for b, load in loads.items()}


__all__ = ["BrokerLoad", "broker_loads", "utilisation"]
