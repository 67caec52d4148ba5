"""The plan summary's nested parts, typed (``plan_summary.py`` holds the summary itself).

Each part is a frozen dataclass with ``to_json`` (the JSON ``plan --summary`` writes: the same keys in the
same order as before the summary was typed, an optional key left out where it was absent) and
``from_json`` (a part read back from a file, a ConfigMap or a Spark job's output). The values are kept as
the planner computed them: a mean of ``0`` stays an int and ``0.0`` a float, so the JSON is unchanged.
Pure: no I/O; imported on Spark workers (no pydantic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.plan import Plan

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class TrafficBalance:
    """Network in, network out and the leaders' bytes in: max/mean over the active brokers (None: no
    load on any). Part of ``balanceBefore``/``balanceAfter`` when the snapshot has rates."""

    network_in_max_mean: float | None
    network_out_max_mean: float | None
    leader_bytes_in_max_mean: float | None

    def to_json(self) -> JSON:
        return {
            "networkInMaxMean": self.network_in_max_mean,
            "networkOutMaxMean": self.network_out_max_mean,
            "leaderBytesInMaxMean": self.leader_bytes_in_max_mean,
        }


@dataclass(frozen=True, slots=True)
class LoadBalance:
    """``balanceBefore``/``balanceAfter``: max/mean of bytes, replicas and preferred leaders over the
    active brokers, the worst broker's dirs, and with rates the traffic's (``TrafficBalance``)."""

    broker_bytes_max_mean: float | None
    broker_bytes_max: int
    broker_bytes_mean: float
    replicas_max_mean: float | None
    leaders_max_mean: float | None
    dir_bytes_max_mean_worst_broker: float | None
    traffic: TrafficBalance | None = None

    def to_json(self) -> JSON:
        out = {
            "brokerBytesMaxMean": self.broker_bytes_max_mean,
            "brokerBytesMax": self.broker_bytes_max,
            "brokerBytesMean": self.broker_bytes_mean,
            "replicasMaxMean": self.replicas_max_mean,
            "leadersMaxMean": self.leaders_max_mean,
            "dirBytesMaxMeanWorstBroker": self.dir_bytes_max_mean_worst_broker,
        }
        return out | self.traffic.to_json() if self.traffic is not None else out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> LoadBalance:
        traffic = None
        if "networkInMaxMean" in d:
            traffic = TrafficBalance(d["networkInMaxMean"], d["networkOutMaxMean"], d["leaderBytesInMaxMean"])
        return LoadBalance(
            d["brokerBytesMaxMean"],
            d["brokerBytesMax"],
            d["brokerBytesMean"],
            d["replicasMaxMean"],
            d["leadersMaxMean"],
            d["dirBytesMaxMeanWorstBroker"],
            traffic,
        )


_BOUND = (
    ("total", "total"),
    ("decommission", "decommission"),
    ("rf_growth", "rfGrowth"),
    ("drain", "drain"),
    ("rack_repair", "rackRepair"),
    ("broker_excess", "brokerExcess"),
    ("dir_excess", "dirExcess"),
    ("leaving_brokers", "leavingBrokers"),
    ("uncovered_by_repairs", "uncoveredByRepairs"),
    ("balance_unreachable", "balanceUnreachable"),
    ("failure_spread", "failureSpread"),
    ("network_in", "networkIn"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LowerBound:
    """``lowerBound``: the bytes any plan meeting the intents must copy, by term (plan_quality's module
    docstring). ``failure_spread`` (always 0) only with the failure spread goal asked, ``network_in``
    only with a traffic section."""

    total: int
    decommission: int
    rf_growth: int
    drain: int
    rack_repair: int
    broker_excess: int
    dir_excess: int
    leaving_brokers: int
    uncovered_by_repairs: int
    balance_unreachable: int
    failure_spread: int | None = None
    network_in: int | None = None

    def to_json(self) -> JSON:
        return {key: v for name, key in _BOUND if (v := getattr(self, name)) is not None}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> LowerBound:
        found: dict[str, int] = {name: d[key] for name, key in _BOUND if key in d}
        return LowerBound(**found)


_RULES = (
    ("decommissioned", "decommissioned"),
    ("drained", "drained"),
    ("cordoned", "cordoned"),
    ("replication_factor", "replicationFactor"),
    ("rack_spread", "rackSpread"),
    ("capacity", "capacity"),
)


@dataclass(frozen=True, slots=True)
class RuleViolations:
    """``violationsBefore``/``violationsAfter``: partitions (replicas) breaking each hard rule, and
    ``capacity``: volumes the plan takes above the disk headroom limit."""

    decommissioned: int
    drained: int
    cordoned: int
    replication_factor: int
    rack_spread: int
    capacity: int

    @property
    def total(self) -> int:
        return sum(getattr(self, name) for name, _ in _RULES)

    def to_json(self) -> JSON:
        return {key: getattr(self, name) for name, key in _RULES}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> RuleViolations:
        return RuleViolations(*(d[key] for _, key in _RULES))


@dataclass(frozen=True, slots=True)
class Spread:
    """The fewest and the mean distinct followers of a leading broker's partitions."""

    min: int
    mean: float

    def to_json(self) -> JSON:
        return {"min": self.min, "mean": self.mean}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Spread:
        return Spread(d["min"], d["mean"])


@dataclass(frozen=True, slots=True)
class FollowerSpread:
    """``failureSpread``: the spread after the plan; with the goal asked, its target, the brokers below
    it and the followers they lack."""

    spread: Spread
    target: Spread | None = None
    brokers_below_target: int | None = None
    followers_short: int | None = None

    def to_json(self) -> JSON:
        out = self.spread.to_json()
        if self.target is not None:
            out["target"] = self.target.to_json()
            out["brokersBelowTarget"] = self.brokers_below_target
            out["followersShort"] = self.followers_short
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> FollowerSpread:
        if "target" not in d:
            return FollowerSpread(Spread.from_json(d))
        target = Spread.from_json(d["target"])
        return FollowerSpread(Spread.from_json(d), target, d["brokersBelowTarget"], d["followersShort"])


@dataclass(frozen=True, slots=True)
class Batches:
    """``batches``: the plan's changes in execution order, at most ``max_moves_per_broker`` per broker
    and batch (``order`` may be left out of a bounded copy: the review ConfigMap's)."""

    count: int
    max_moves_per_broker: int
    order: tuple[tuple[str, ...], ...] | None

    def to_json(self) -> JSON:
        out: JSON = {"count": self.count, "maxMovesPerBroker": self.max_moves_per_broker}
        if self.order is not None:
            out["order"] = [list(batch) for batch in self.order]
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Batches:
        order = d.get("order")
        return Batches(
            d["count"], d["maxMovesPerBroker"], None if order is None else tuple(tuple(b) for b in order)
        )


@dataclass(frozen=True, slots=True)
class DirShare:
    """A dir of known volume size: its volume's share used before and after the plan."""

    broker: int
    path: str
    total_bytes: int
    share_before: float
    share_after: float
    shares_volume_with: str | None = None  # the dir whose volume it shares (same broker)

    def to_json(self) -> JSON:
        out: JSON = {
            "broker": self.broker,
            "path": self.path,
            "totalBytes": self.total_bytes,
            "shareBefore": self.share_before,
            "shareAfter": self.share_after,
        }
        if self.shares_volume_with is not None:
            out["sharesVolumeWith"] = self.shares_volume_with
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> DirShare:
        return DirShare(
            d["broker"],
            d["path"],
            d["totalBytes"],
            d["shareBefore"],
            d["shareAfter"],
            d.get("sharesVolumeWith"),
        )


@dataclass(frozen=True, slots=True)
class FullestDir:
    """The dir whose volume the plan leaves fullest, and that share."""

    broker: int
    path: str
    share_after: float

    def to_json(self) -> JSON:
        return {"broker": self.broker, "path": self.path, "shareAfter": self.share_after}


UNKNOWN_SIZE_NOTE = "volume size unknown (totalBytes 0): no limit"


@dataclass(frozen=True, slots=True)
class DiskHeadroom:
    """``diskHeadroom``: the limit, each dir of known size (``DirShare``), the fullest after the plan,
    and the dirs of unknown volume size (broker, path), which have no limit."""

    max_disk_share: float
    dirs: tuple[DirShare, ...]
    fullest: FullestDir | None
    unknown_size: tuple[tuple[int, str], ...] = ()

    def to_json(self) -> JSON:
        out: JSON = {
            "maxDiskShare": self.max_disk_share,
            "dirs": [d.to_json() for d in self.dirs],
            "fullest": None if self.fullest is None else self.fullest.to_json(),
        }
        if self.unknown_size:
            dirs = [{"broker": b, "path": p} for b, p in self.unknown_size]
            out["unknownSize"] = {"dirs": dirs, "note": UNKNOWN_SIZE_NOTE}
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> DiskHeadroom:
        top = d["fullest"]
        unknown = (d.get("unknownSize") or {}).get("dirs", ())
        return DiskHeadroom(
            d["maxDiskShare"],
            tuple(DirShare.from_json(x) for x in d["dirs"]),
            None if top is None else FullestDir(top["broker"], top["path"], top["shareAfter"]),
            tuple((x["broker"], x["path"]) for x in unknown),
        )


@dataclass(frozen=True, slots=True)
class TrafficRow:
    """One broker's network in, network out and leaders' bytes in (bytes/s, before and after the plan),
    and its limits under the network capacity goal."""

    id: int
    network_in: tuple[float, float]
    network_out: tuple[float, float]
    leader_bytes_in: tuple[float, float]
    network_in_limit: float | None = None
    network_out_limit: float | None = None

    def to_json(self) -> JSON:
        out: JSON = {
            "id": self.id,
            "networkIn": list(self.network_in),
            "networkOut": list(self.network_out),
            "leaderBytesIn": list(self.leader_bytes_in),
        }
        if self.network_in_limit is not None:
            out["networkInLimit"] = self.network_in_limit
        if self.network_out_limit is not None:
            out["networkOutLimit"] = self.network_out_limit
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TrafficRow:
        def pair(key: str) -> tuple[float, float]:
            before, after = d[key]
            return before, after

        return TrafficRow(
            d["id"],
            pair("networkIn"),
            pair("networkOut"),
            pair("leaderBytesIn"),
            d.get("networkInLimit"),
            d.get("networkOutLimit"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrafficSection:
    """``traffic``: partitions with and without a rate, the network capacity goal's state (``"on"`` or
    why it is off), its share and the brokers over their limits, and the busiest brokers' rows."""

    partitions_with_rate: int
    partitions_without_rate: int
    capacity_goal: str
    max_share: float | None
    brokers_over_limit_before: int | None
    brokers_over_limit_after: int | None
    broker_count: int
    brokers: tuple[TrafficRow, ...]

    def to_json(self) -> JSON:
        return {
            "partitionsWithRate": self.partitions_with_rate,
            "partitionsWithoutRate": self.partitions_without_rate,
            "capacityGoal": self.capacity_goal,
            "maxShare": self.max_share,
            "brokersOverLimitBefore": self.brokers_over_limit_before,
            "brokersOverLimitAfter": self.brokers_over_limit_after,
            "brokerCount": self.broker_count,
            "brokers": [r.to_json() for r in self.brokers],
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> TrafficSection:
        return TrafficSection(
            partitions_with_rate=d["partitionsWithRate"],
            partitions_without_rate=d["partitionsWithoutRate"],
            capacity_goal=d["capacityGoal"],
            max_share=d["maxShare"],
            brokers_over_limit_before=d["brokersOverLimitBefore"],
            brokers_over_limit_after=d["brokersOverLimitAfter"],
            broker_count=d["brokerCount"],
            brokers=tuple(TrafficRow.from_json(r) for r in d["brokers"]),
        )


@dataclass(frozen=True, slots=True)
class GoalEntry:
    """One entry of ``goals``: a goal a policy asks for (the hard one always), its value after the plan
    against its target, whether it is met and hard, and why no plan can meet it when that is known."""

    goal: str
    hard: bool
    met: bool
    value: float | None
    target: float
    unreachable: str | None = None

    def to_json(self) -> JSON:
        out: JSON = {
            "goal": self.goal,
            "hard": self.hard,
            "met": self.met,
            "value": self.value,
            "target": self.target,
        }
        if self.unreachable:
            out["unreachable"] = self.unreachable
        return out

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> GoalEntry:
        return GoalEntry(d["goal"], d["hard"], d["met"], d["value"], d["target"], d.get("unreachable"))


@dataclass(frozen=True, slots=True)
class Advisories:
    """``advisories``: what the Advise-mode ``policies`` would move beyond the plan (never executed), or
    why they cannot be met (``error``; no plan then)."""

    policies: tuple[str, ...]
    error: str | None = None
    partitions: int = 0
    bytes_to_move: int = 0
    plan: Plan | None = None

    def to_json(self) -> JSON:
        if self.plan is None:
            return {"policies": list(self.policies), "error": self.error}
        return {
            "policies": list(self.policies),
            "partitions": self.partitions,
            "bytesToMove": self.bytes_to_move,
            "plan": self.plan.to_json(),
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Advisories:
        policies = tuple(d["policies"])
        if "plan" not in d:
            return Advisories(policies, d["error"])
        plan = Plan.from_json(d["plan"], "advisories.plan")
        return Advisories(policies, None, d["partitions"], d["bytesToMove"], plan)
