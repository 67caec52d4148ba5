"""When a plan made earlier is kept instead of planning again: the rule that keeps a plan's id stable while
the measured rates drift a little. Pure: no I/O, no clock.

With traffic in the snapshot every look of the sampler changes the rates a little, so planning again on
each reconcile would change the plan, and with it its id: a plan awaiting approval (``approval: Manual``)
would never be caught up with. So a plan is **kept** (not planned again) while

1. its inputs apart from rates and sizes are unchanged (``inputs_key``: the intents without their
   approval fields, the capacities, the planner's settings, and the placement: brokers, racks, dirs with
   their state, each partition's replicas and dirs); a kept plan is thus still valid against the live
   placement, move for move, and
2. the traffic it was planned from has not drifted beyond a bound (``drifted``): per broker, network in
   and network out, on the live placement and on the placement after the plan, each within
   ``DRIFT_SHARE`` x the tolerance x that load's mean over the brokers (as planned). The tolerance is the
   smallest ``balance.tolerance`` of the enforced policies (``DEFAULT_TOLERANCE`` without one). A rate a
   plan was made without (no estimate yet) that is now known is drift like any other: the mean of an
   unmeasured load is 0, so any rate exceeds it.

Sizes are not compared (as for the spark-k8s reuse rule): data keeps arriving while a plan awaits
approval, and the plan's moves stay what was shown; its bytes are measured again when it executes. A plan
kept is the plan shown (same id, same moves): approving it executes exactly it. When either condition
fails the cluster is planned again and a changed plan asks for approval again. The same bound decides
when a spark-k8s planning job's result may be reused (reconcile/planner.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.intents import Intents
from ..model.plan import Plan
from ..model.snapshot import ClusterSnapshot
from .loads import plan_traffic
from .plan_summary import PlanSummary, StatusSummary

DRIFT_SHARE = 0.5  # a broker's load may drift by this share of the tolerance x the mean before a re-plan
DEFAULT_TOLERANCE = 0.05  # Balance.tolerance's default: the bound's tolerance when no policy sets one
METRICS = ("in", "out")


def inputs_key(snapshot: ClusterSnapshot, intents_text: str, settings: str = "") -> str:
    """A digest of what a plan depends on apart from rates and sizes: the intents' text, the
    planner's ``settings``, the brokers (racks, dirs, their online and cordoned state) and each
    partition's replicas and dirs. One pass over the partitions."""
    h = hashlib.sha256(intents_text.encode())
    h.update(settings.encode())
    for b in snapshot.brokers:
        h.update(repr((b.id, b.rack, [(d.path, d.online, d.cordoned) for d in b.log_dirs])).encode())
    for p in snapshot.partitions:
        h.update(f"{p.topic}\0{p.partition}\0{p.replicas}\0{p.log_dirs}\n".encode())
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class TrafficLoads:
    """Per broker its network in and network out (bytes/s), on the live placement
    (``before``) and after a plan (``after``; equal to ``before`` for no plan). A partition without a
    rate adds no traffic (planning/loads.py's definitions; the leader is the first replica)."""

    before: Mapping[str, Mapping[int, float]]
    after: Mapping[str, Mapping[int, float]]
    brokers: tuple[int, ...] = ()

    def mean(self, metric: str) -> float:
        """The metric's mean over the brokers, on the live placement."""
        if not self.brokers:
            return 0.0
        return sum(self.before[metric].get(b, 0.0) for b in self.brokers) / len(self.brokers)

    def to_json(self) -> dict[str, Any]:
        """A compact form (per broker: in, out before and after) for a record."""
        return {
            str(b): [round(side[m].get(b, 0.0), 1) for side in (self.before, self.after) for m in METRICS]
            for b in self.brokers
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> TrafficLoads:
        before: dict[str, dict[int, float]] = {m: {} for m in METRICS}
        after: dict[str, dict[int, float]] = {m: {} for m in METRICS}
        for key, row in doc.items():
            b = int(key)
            for i, m in enumerate(METRICS):
                before[m][b], after[m][b] = float(row[i]), float(row[i + len(METRICS)])
        return TrafficLoads(before, after, tuple(sorted(int(k) for k in doc)))


def loads_of(snapshot: ClusterSnapshot, plan: Plan | None = None) -> TrafficLoads:
    """The brokers' loads on ``snapshot``'s placement and after ``plan`` (planning/loads.py's
    ``plan_traffic``, the summary's own definition)."""
    t = plan_traffic(snapshot, plan)
    return TrafficLoads(t.before, t.after, snapshot.broker_ids)


def tolerance_of(intents: Intents) -> float:
    """The smallest ``balance.tolerance`` of the enforced policies that balance anything, else
    ``DEFAULT_TOLERANCE``."""
    tols = [q.balance.tolerance for q in intents.policies if q.enforced and q.balance.any]
    return min(tols, default=DEFAULT_TOLERANCE)


def drifted(
    planned: TrafficLoads, now: TrafficLoads, tolerance: float, metrics: tuple[str, ...] = METRICS
) -> str | None:
    """Why the loads ``now`` are too far from those a plan was made from (None: within the bound): the
    first broker and metric (of ``metrics``) whose load, live or after the plan, moved by more than
    ``DRIFT_SHARE`` x ``tolerance`` x the metric's mean as planned. A broker added or gone is drift."""
    if set(planned.brokers) != set(now.brokers):
        return f"the brokers changed ({list(planned.brokers)} -> {list(now.brokers)})"
    for m in metrics:
        bound = DRIFT_SHARE * tolerance * planned.mean(m)
        for side, was, got in (("live", planned.before, now.before), ("after", planned.after, now.after)):
            for b in planned.brokers:
                delta = abs(got[m].get(b, 0.0) - was[m].get(b, 0.0))
                if delta > bound + 1e-6:
                    return (
                        f"broker {b}'s {_NAMES[m]} ({side}) moved by {delta:.0f}, more than the bound "
                        f"{bound:.0f} ({DRIFT_SHARE} x tolerance {tolerance} x mean {planned.mean(m):.0f})"
                    )
    return None


_NAMES = {"in": "network in (bytes/s)", "out": "network out (bytes/s)"}


@dataclass(frozen=True)
class KeptPlan:
    """A plan (with its summary) made from inputs ``key`` and ``loads``, kept while ``keep`` says so."""

    plan: Plan
    summary: PlanSummary | StatusSummary
    key: str
    loads: TrafficLoads
    tolerance: float

    def keep(self, key: str, now: TrafficLoads, rates_known: bool = True) -> str | None:
        """None when this plan is kept for inputs ``key`` and loads ``now``, else why not. Without
        ``rates_known`` (traffic sampled but no estimate in memory yet, e.g. right after a restart: no
        evidence of drift) only the key decides."""
        if key != self.key:
            return "the intents, the capacities, the planner's settings or the placement changed"
        return drifted(self.loads, now, self.tolerance) if rates_known else None


__all__ = [
    "DEFAULT_TOLERANCE",
    "DRIFT_SHARE",
    "KeptPlan",
    "TrafficLoads",
    "drifted",
    "inputs_key",
    "loads_of",
    "tolerance_of",
]
