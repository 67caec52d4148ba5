"""KafkaCluster handler: a timer reconciles the cluster and all its intents (reconciler.py)."""

from __future__ import annotations

from typing import Any

import kopf

from .reconciler import GROUP, VERSION
from .runtime import INTERVAL, runtime


@kopf.timer(GROUP, VERSION, "kafkaclusters", interval=INTERVAL, initial_delay=1.0, idle=None)
def reconcile_cluster(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    status = runtime().reconciler.reconcile(body)
    status["observedGeneration"] = body.get("metadata", {}).get("generation")
    patch.status.update(status)
