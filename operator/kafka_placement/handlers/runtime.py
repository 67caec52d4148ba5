"""Process-wide operator state: the Kubernetes gateway and the reconciler, created on first use."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from ..kube.gateway import KubeGateway
from . import leader
from .reconciler import Reconciler


@dataclass
class Runtime:
    reconciler: Reconciler
    interval: float


_RUNTIME: Runtime | None = None


def _event(body: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
    kopf.event(body, type=etype, reason=reason, message=message)  # type: ignore[arg-type]


def runtime() -> Runtime:
    """The runtime (created on first use: in-cluster config, else KUBECONFIG)."""
    global _RUNTIME
    if _RUNTIME is None:
        kube = KubeGateway.from_config(event_sink=_event)
        _RUNTIME = Runtime(
            Reconciler(kube, leader.current()), float(os.environ.get("KP_RECONCILE_INTERVAL", "5"))
        )
    return _RUNTIME


INTERVAL = float(os.environ.get("KP_RECONCILE_INTERVAL", "5"))
