"""How much of Kafka one reconcile of a KafkaCluster reads: a pure function of what the process remembers
(the last full idle reconcile that settled, memory.py) and what the reconcile found in Kubernetes.

A full read (the snapshot, a plan) happens when something of ours changed (the fingerprint of the specs,
the record and the lane's plan), an execution is in flight, an intent is being deleted, a tracked failure
is due for a heal, or the resync period has ended; otherwise the reconcile is **quiet**. A quiet reconcile
still runs the new-partition lane's look when a policy enforces it, and, on a cluster that heals dead
brokers, compares the live brokers with those of the settled reconcile (``watch_live``: one DescribeCluster).
A lane execution in flight with no main execution runs the lane alone (``lane_only``): a full re-plan
waits for it. Unit-tested in tests/unit/reconcile/test_reading.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    """What one reconcile reads (see the module docstring)."""

    quiet: bool  # nothing of ours changed since the settled reconcile, within the resync period
    lane_only: bool  # the new-partition lane (its look, its execution's tick) and nothing else
    keep_settled: bool  # the settled reconcile stays remembered for the next one
    watch_live: bool  # compare the live brokers with the settled ones (a death or return reads all)
    skip: bool  # nothing to read at all: the reconcile ends at once

    @property
    def full(self) -> bool:
        return not self.lane_only


def reading(
    *,
    fingerprint: str,
    settled_fingerprint: str | None,  # None: no settled reconcile remembered
    settled_age_s: float,  # how long ago it settled (ignored without one)
    resync_s: float,
    active: bool,  # an execution in flight
    leaving: bool,  # an intent resource being deleted whose cordons are not removed yet
    lane_active: bool,  # a new-partition lane execution in flight
    heal_due: bool,  # a tracked failure is due for a heal
    heals_dead_brokers: bool,  # selfHealing.brokerFailure is on
    lane_enforced: Callable[[], bool],  # a policy enforces the lane (asked only when it decides: it parses)
) -> Reading:
    settled = settled_fingerprint is not None
    quiet = (
        settled
        and settled_fingerprint == fingerprint
        and not active
        and not leaving
        and not heal_due
        and settled_age_s < resync_s
    )
    lane_only = quiet or (lane_active and not active)
    watch_live = quiet and heals_dead_brokers
    return Reading(
        quiet=quiet,
        lane_only=lane_only,
        keep_settled=settled and lane_only,
        watch_live=watch_live,
        skip=lane_only and not lane_active and not watch_live and not lane_enforced(),
    )
