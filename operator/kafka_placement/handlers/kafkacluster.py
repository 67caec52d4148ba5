"""KafkaCluster handler: a timer reconciles the cluster and all its intents (reconciler.py).

Only the leader (handlers/leader.py) reconciles: a process that does not hold the leader Lease skips
the tick (a debug line says so) and patches nothing.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from . import leader
from .reconciler import GROUP, VERSION
from .runtime import INTERVAL, runtime

log = logging.getLogger(__name__)


@kopf.timer(GROUP, VERSION, "kafkaclusters", interval=INTERVAL, initial_delay=1.0, idle=None)
def reconcile_cluster(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    lead = leader.current()
    name = f"{body.get('metadata', {}).get('namespace')}/{body.get('metadata', {}).get('name')}"
    if not lead.is_leader():
        log.debug("not the leader (%s): skipping KafkaCluster %s", lead.identity, name)
        return
    try:
        status = runtime().reconciler.reconcile(body)
    except leader.NotLeader as e:
        log.warning("KafkaCluster %s: stopped mid-reconcile: %s", name, e.message)
        return
    if not lead.is_leader():  # the status of a reconcile that outlived the lease is not written
        log.warning(
            "KafkaCluster %s: the leader Lease ran out during the reconcile; status not written", name
        )
        return
    status["observedGeneration"] = body.get("metadata", {}).get("generation")
    patch.status.update(status)
