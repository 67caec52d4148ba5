"""Process-wide operator state: the Kubernetes gateway and the reconciler, created on first use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import kopf

from ..kube.gateway import KubeGateway
from ..reconcile import leader, periods
from ..reconcile.inputs import connection_settings
from ..reconcile.reconciler import Reconciler
from ..reconcile.traffic_sampler import TrafficSampler


@dataclass
class Runtime:
    reconciler: Reconciler
    interval: float
    sampler: TrafficSampler


_RUNTIME: Runtime | None = None


def _event(body: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
    kopf.event(body, type=etype, reason=reason, message=message)  # type: ignore[arg-type]


def runtime() -> Runtime:
    """The runtime (created on first use: in-cluster config, else KUBECONFIG)."""
    global _RUNTIME
    if _RUNTIME is None:
        kube = KubeGateway.from_config(event_sink=_event)
        lead = leader.current()
        sampler = TrafficSampler(kube, lead, lambda spec, ns: connection_settings(spec, ns, kube))
        _RUNTIME = Runtime(
            Reconciler(kube, lead, rates=sampler.rates),  # plans with the sampler's current estimates
            periods.interval_s(),
            sampler,
        )
    return _RUNTIME


INTERVAL = periods.interval_s()
