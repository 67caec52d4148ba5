"""Process-wide operator state: Kubernetes API clients and settings, created at kopf startup."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import kopf
from kubernetes import client, config

from . import leader
from .reconciler import Apis, Reconciler


@dataclass
class Runtime:
    reconciler: Reconciler
    interval: float


_RUNTIME: Runtime | None = None


def _event(body: Any, etype: str, reason: str, message: str) -> None:
    kopf.event(body, type=etype, reason=reason[:128], message=message[:1024])


def load_kube_config() -> None:
    """In-cluster service account, else KUBECONFIG / ~/.kube/config (the clients' default config)."""
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config()  # type: ignore[no-untyped-call]


def runtime() -> Runtime:
    """The runtime (created on first use: in-cluster config, else KUBECONFIG)."""
    global _RUNTIME
    if _RUNTIME is None:
        load_kube_config()
        apis = Apis(client.CustomObjectsApi(), client.CoreV1Api())
        _RUNTIME = Runtime(
            Reconciler(apis, _event, leader.current()), float(os.environ.get("KP_RECONCILE_INTERVAL", "5"))
        )
    return _RUNTIME


INTERVAL = float(os.environ.get("KP_RECONCILE_INTERVAL", "5"))
