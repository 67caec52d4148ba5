"""KafkaCluster traffic sampling: a kopf timer of its own per KafkaCluster (apart from the reconcile's, so
neither holds the other up) asks the sampler (traffic_sampler.py) every ``TICK_S`` whether a look is
due (``spec.traffic.periodSeconds``) and writes ``status.traffic`` when it changed. Only the leader
samples; a process that does not hold the leader Lease skips the tick.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from ..model.crd_parts import GROUP, PLURALS, VERSION
from . import leader
from .runtime import runtime

TICK_S = 1.0  # how often a due look is checked for (the period is the spec's, in whole seconds)

log = logging.getLogger(__name__)


@kopf.timer(GROUP, VERSION, PLURALS["KafkaCluster"], interval=TICK_S, initial_delay=2.0, idle=None)
def sample_traffic(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    if body.get("metadata", {}).get("deletionTimestamp") or not leader.current().is_leader():
        return
    try:
        status = runtime().sampler.tick(body)
    except leader.NotLeader as e:
        log.warning("traffic look stopped: %s", e.message)
        return
    if status is not None and leader.current().is_leader():
        patch.status["traffic"] = status or None
