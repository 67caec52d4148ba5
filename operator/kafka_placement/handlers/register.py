"""Import every handler module so kopf registers them (used by ``kafka-placement operator``)."""

from __future__ import annotations

import kopf

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
