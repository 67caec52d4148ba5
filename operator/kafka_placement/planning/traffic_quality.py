"""The plan's traffic section and the network-in term of its lower bound: per broker network in, network out
and leaders' bytes in before and after the plan (``planning/loads.py``'s definitions), their balance
(max/mean over the brokers that keep data), the network capacity goal's state and limits, and the fewest
bytes any plan meeting ``balance.networkIn`` and the limits must copy (``plan_quality``'s bound adds it).
Pure: no I/O. Computed once per plan by the optimizer, the same for every engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model.intents import Intents
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from .loads import plan_traffic
from .plan_quality import max_over_mean
from .summary_parts import TrafficBalance, TrafficRow, TrafficSection

MAX_TRAFFIC_BROKERS = 100  # brokers listed in the summary's traffic (the busiest after the plan)


@dataclass(frozen=True, slots=True)
class TrafficMeasure:
    """``traffic``'s answer: the summary's traffic section, the traffic's balance before and after (None:
    no rate) and the network in term of the lower bound (``_network_in_bound``)."""

    section: TrafficSection
    before: TrafficBalance | None
    after: TrafficBalance | None
    network_in_bound: int


def traffic(
    snapshot: ClusterSnapshot,
    plan: Plan,
    intents: Intents | None,
    active: Sequence[int],
    asked: bool = False,
) -> TrafficMeasure | None:
    """The plan's traffic section (None: no rate in the snapshot, no capacity declared and no network
    goal ``asked``): per broker
    network in, network out and leaders' bytes in before and after (``planning/loads.py``'s
    definitions; a partition without a rate counts nothing and is counted in ``partitionsWithoutRate``),
    their max/mean over ``active`` brokers, and the network capacity goal's state and limits. One pass
    over the partitions for before, one over the plan's entries for after (the same for every engine)."""
    cap = intents.capacity if intents is not None else None
    loads = plan_traffic(snapshot, plan)
    before, after, rated, unrated = loads.before, loads.after, loads.rated, loads.unrated
    if not rated and cap is None and not asked:
        return None
    limits: dict[str, dict[int, float]] = {"in": {}, "out": {}}
    if cap is not None:
        for b in snapshot.broker_ids:
            c = cap.of(b)
            if c.network_in is not None:
                limits["in"][b] = cap.max_share * c.network_in
            if c.network_out is not None:
                limits["out"][b] = cap.max_share * c.network_out
    if cap is None:
        state = "off: no network capacity declared (KafkaCluster.spec.capacity, or the intents' capacity)"
    elif not rated:
        state = "off: no rate in the snapshot (bytesInPerSec)"
    elif not (limits["in"] or limits["out"]):
        state = "off: the capacity declares no network in or out"
    else:
        state = "on"

    def over(loads: dict[str, dict[int, float]]) -> int:
        return sum(
            1
            for what in ("in", "out")
            for b, lim in limits[what].items()
            if loads[what].get(b, 0.0) > lim * (1 + 1e-9) + 1e-6
        )

    def row(b: int) -> TrafficRow:
        def pair(what: str) -> tuple[float, float]:
            return round(before[what].get(b, 0.0), 1), round(after[what].get(b, 0.0), 1)

        def limit(what: str) -> float | None:
            return round(limits[what][b], 1) if b in limits[what] else None

        return TrafficRow(b, pair("in"), pair("out"), pair("lead"), limit("in"), limit("out"))

    brokers = sorted(
        snapshot.broker_ids, key=lambda b: (-max(after["in"].get(b, 0.0), after["out"].get(b, 0.0)), b)
    )
    bound = _network_in_bound(snapshot, intents, before["in"], limits["in"] if state == "on" else {}, active)
    section = TrafficSection(
        partitions_with_rate=rated,
        partitions_without_rate=unrated,
        capacity_goal=state,
        max_share=cap.max_share if cap is not None else None,
        brokers_over_limit_before=over(before) if state == "on" else None,
        brokers_over_limit_after=over(after) if state == "on" else None,
        broker_count=len(brokers),
        brokers=tuple(row(b) for b in sorted(brokers[:MAX_TRAFFIC_BROKERS])),
    )
    if not rated:
        return TrafficMeasure(section, None, None, bound)
    return TrafficMeasure(section, _traffic_balance(before, active), _traffic_balance(after, active), bound)


def _network_in_bound(
    snapshot: ClusterSnapshot,
    intents: Intents | None,
    net_in: dict[int, float],
    limits: dict[int, float],
    active: Sequence[int],
) -> int:
    """Bytes any plan meeting ``balance.networkIn`` and the network in limits must copy off brokers that
    keep data: a broker above its threshold (or limit) by E bytes/s must lose replicas whose rates sum to
    at least E (arrivals only add to it); the fewest bytes that can carry E are at least the fractional
    knapsack of its replicas by bytes per byte/s. Summed over brokers (each replica leaving a broker is a
    copy of its own). 0 when a policy changes a replication factor (the total network in changes)."""
    policies = intents.policies if intents is not None else ()
    if any(q.replication_factor for q in policies) or not active:
        return 0
    tols = [q.balance.tolerance for q in policies if q.balance.network_in]
    threshold = (1 + min(tols)) * sum(net_in.get(b, 0.0) for b in net_in) / len(active) if tols else None
    excess: dict[int, float] = {}
    for b in active:
        e = 0.0 if threshold is None else net_in.get(b, 0.0) - threshold
        if b in limits:
            e = max(e, net_in.get(b, 0.0) - limits[b])
        if e > 1e-6:
            excess[b] = e
    if not excess:
        return 0
    held: dict[int, list[tuple[float, float, int]]] = {b: [] for b in excess}
    over = held.keys()
    for p in snapshot.partitions:
        r = p.bytes_in_per_sec
        if r and not over.isdisjoint(p.replicas):  # (one C call for a partition on no broker in excess)
            size = p.copy_bytes
            for b in p.replicas:
                found = held.get(b)
                if found is not None:
                    found.append((size / r, r, size))
    total = 0.0
    for b, need in excess.items():
        for per, r, size in sorted(held[b]):
            if need <= 0:
                break
            take = min(r, need)
            total += per * take if take < r else size
            need -= take
    return int(total)


def _traffic_balance(loads: dict[str, dict[int, float]], active: Sequence[int]) -> TrafficBalance:
    """Network in, network out and the leaders' bytes in: max/mean over the active brokers."""
    return TrafficBalance(
        max_over_mean([loads["in"].get(b, 0.0) for b in active]),
        max_over_mean([loads["out"].get(b, 0.0) for b in active]),
        max_over_mean([loads["lead"].get(b, 0.0) for b in active]),
    )
