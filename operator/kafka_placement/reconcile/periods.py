"""The operator's two periods, defined and read in one place: how often each KafkaCluster is reconciled
(``--interval``, ``KP_RECONCILE_INTERVAL``) and how often an idle, unchanged one is read from Kafka whole
and re-planned (``--resync-seconds``, ``KP_RESYNC_SECONDS``). The CLI writes the environment from its
flags before the handlers are imported (kopf's timer takes its interval at registration)."""

from __future__ import annotations

import os

DEFAULT_INTERVAL_S = 5.0
DEFAULT_RESYNC_S = 60.0


def _seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def interval_s() -> float:
    """Seconds between two reconciles of one cluster."""
    return _seconds("KP_RECONCILE_INTERVAL", DEFAULT_INTERVAL_S)


def resync_s() -> float:
    """Seconds an idle, unchanged cluster goes without a full read (0: every reconcile reads it)."""
    return _seconds("KP_RESYNC_SECONDS", DEFAULT_RESYNC_S)
