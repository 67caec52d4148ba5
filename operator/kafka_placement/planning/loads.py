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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..model.capacity import Capacity, CapacitySpec
from ..model.plan import Plan
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


def rate_text(rate: float) -> str:
    """A rate in bytes per second for people: MB/s with one decimal, kB/s or B/s below 0.1 MB/s (never
    a 0.0 that hides a small capacity)."""
    if abs(rate) >= 1e5:
        return f"{rate / 1e6:.1f} MB/s"
    return f"{rate / 1e3:.1f} kB/s" if abs(rate) >= 100 else f"{rate:.0f} B/s"


def utilisation(
    loads: Mapping[int, BrokerLoad], capacity: CapacitySpec
) -> dict[int, dict[str, float | None]]:
    """Per broker its loads over its capacity (``CapacitySpec.of``)."""
    return {b: load.utilisation(capacity.of(b)) for b, load in loads.items()}


# network in, network out and leaders' bytes in, per broker: "in", "out", "lead" -> broker -> bytes/s
NetworkLoads = dict[str, dict[int, float]]


def add_traffic(loads: NetworkLoads, replicas: Sequence[int], rate: float, fanout: int, sign: float) -> None:
    """Add (``sign`` 1) or take away (-1) a partition's traffic on ``replicas``, the first its leader:
    bytes in on each replica, network out and leaders' bytes in on the leader."""
    if not replicas:
        return
    net_in, net_out, lead = loads["in"], loads["out"], loads["lead"]
    for b in replicas:
        net_in[b] = net_in.get(b, 0.0) + sign * rate
    leader = replicas[0]
    net_out[leader] = net_out.get(leader, 0.0) + sign * rate * (len(replicas) - 1 + fanout)
    lead[leader] = lead.get(leader, 0.0) + sign * rate


@dataclass(frozen=True, slots=True)
class PlanTraffic:
    """The brokers' network loads on a snapshot's placement (``before``: its replicas as the snapshot
    lists them, the first the leader) and after a plan (``after``); ``rated``/``unrated``: partitions
    with and without a known bytes in (those without add nothing)."""

    before: NetworkLoads
    after: NetworkLoads
    rated: int
    unrated: int


def plan_traffic(snapshot: ClusterSnapshot, plan: Plan | None = None) -> PlanTraffic:
    """The network loads before and after ``plan`` (None: no plan, after = before): one pass over the
    partitions, one over the plan's entries. The one definition the summary's traffic section
    (planning/plan_quality.py) and the rule that keeps a plan (planning/plan_keeping.py) use."""
    before: NetworkLoads = {"in": {}, "out": {}, "lead": {}}
    rated = unrated = 0
    for p in snapshot.partitions:
        if p.bytes_in_per_sec is None:
            unrated += 1
            continue
        rated += 1
        add_traffic(before, p.replicas, p.bytes_in_per_sec, p.read_fanout or 0, 1.0)
    after = {k: dict(v) for k, v in before.items()}
    for t in plan.partitions if plan is not None else ():
        q = snapshot.partition(t.topic, t.partition)
        if q is not None and q.bytes_in_per_sec is not None:
            add_traffic(after, q.replicas, q.bytes_in_per_sec, q.read_fanout or 0, -1.0)
            add_traffic(after, t.replicas, q.bytes_in_per_sec, q.read_fanout or 0, 1.0)
    return PlanTraffic(before, after, rated, unrated)


__all__ = [
    "BrokerLoad",
    "NetworkLoads",
    "PlanTraffic",
    "add_traffic",
    "broker_loads",
    "plan_traffic",
    "utilisation",
]
