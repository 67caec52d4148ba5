"""What the operator process remembers of one KafkaCluster between its reconciles: one ``ClusterMemory``
per cluster, created by ``Reconciler.memory`` on first use and dropped whole when the cluster is released
(``Reconciler.release``: a namesake starts afresh). Nothing here is persisted: a new process (a restart, a
new leader) rebuilds it from Kafka, the statuses and the plan review's ConfigMap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..planning.plan_keeping import KeptPlan
from . import new_partitions as lane
from .inputs import Settled


@dataclass
class ClusterMemory:
    """One cluster's memory (see the module docstring)."""

    # the last plan made and not yet executed, kept while plan_keeping says so
    kept: KeptPlan | None = None
    # whether the cluster's review ConfigMap was looked in for a kept plan (once per process: a leader that
    # loses its Lease exits, so a new leadership is a new process; reconcile/plan_review.py)
    kept_read: bool = False
    # the last full idle reconcile that settled: its fingerprint, when, and the brokers alive then (a quiet
    # reconcile of a cluster healing dead brokers compares them: ``looked``)
    settled: Settled | None = None
    # when its next tracked failure is due for a heal (wall clock): the idle period ends then
    heal_due: float | None = None
    # the new-partition lane's partition counts and pending partitions
    watch: lane.Watch = field(default_factory=lane.Watch)
    # when the under-replicated gauges were last counted during an execution (the reconciler's clock)
    counted: float | None = None
