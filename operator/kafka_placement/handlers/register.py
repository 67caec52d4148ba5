"""Import every handler module so kopf registers them (used by ``kafka-placement operator``)."""

from __future__ import annotations

import contextlib
from typing import Any

import kopf

from ..kube.gateway import KubeError, load_default_config
from . import health, intents, kafkacluster, traffic_daemon

MODULES = (kafkacluster, intents, health, traffic_daemon)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    settings.persistence.finalizer = "kafkaplacement.io/finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="kafkaplacement.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="kafkaplacement.io")
    settings.posting.level = 20  # INFO and above become Events
    settings.watching.server_timeout = 60
    # A KafkaCluster deleted while its reconcile runs keeps its finalizer until kopf sees the timer's
    # thread end; kopf looks again only every ``cancellation_polling`` seconds (60 by default), which
    # held deletions for a minute after a reconcile of a few seconds.
    settings.background.cancellation_polling = 1.0


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's own login through the Kubernetes client, once the client's configuration is loaded with a
    kubeconfig's inline keys in this process's directory (kube/key_files.py): kopf's load then finds the
    files already written for that content instead of writing its own to /tmp."""
    with contextlib.suppress(KubeError):  # no configuration at all: kopf's own load below says so, as before
        load_default_config()
    return kopf.login_via_client(**kwargs)
