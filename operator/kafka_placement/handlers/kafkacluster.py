"""KafkaCluster handler: a timer reconciles the cluster and all its intents (reconciler.py); deleting it
first cancels its execution and removes the cordons of intents deleted with it (``release``), so no
throttle, move or cordon of ours outlives them.

Only the leader (reconcile/leader.py) reconciles: a process that does not hold the leader Lease skips
the tick (a debug line says so) and patches nothing.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

import kopf

from ..execution.store import RecordConflict
from ..kafka.types import KafkaOperationError
from ..model.crd_parts import GROUP, PLURALS, VERSION
from ..reconcile import leader, metrics
from .intent_common import require_leader
from .runtime import INTERVAL, runtime

RELEASE_TIMEOUT_S = (
    600.0  # a deleted cluster whose execution cannot be cancelled (Kafka gone) goes after this
)

log = logging.getLogger(__name__)


@kopf.timer(GROUP, VERSION, PLURALS["KafkaCluster"], interval=INTERVAL, initial_delay=1.0, idle=None)
def reconcile_cluster(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    lead = leader.current()
    meta = body.get("metadata", {})
    name = metrics.cluster_label(str(meta.get("namespace")), str(meta.get("name")))  # also the series' label
    if not lead.is_leader():
        log.debug("not the leader (%s): skipping KafkaCluster %s", lead.identity, name)
        return
    uid = str(meta.get("uid"))
    try:
        status = runtime().reconciler.reconcile(body)
    except leader.NotLeader as e:
        log.warning("KafkaCluster %s: stopped mid-reconcile: %s", name, e.message)
        return
    except RecordConflict as e:  # another writer was first: nothing was sent; retried in a second
        raise kopf.TemporaryError(e.message, delay=1) from None
    except KafkaOperationError as e:
        # a request that reached Kafka failed after its retries (a broker stopping mid-request in a rolling
        # restart): the next tick tries again, not kopf's minute after an exception, and without a traceback
        metrics.RECONCILE_ERRORS.labels(cluster=name).inc()
        log.warning(
            "KafkaCluster %s: a Kafka request failed: %s; reconciled again in %gs", name, e.message, INTERVAL
        )
        raise kopf.TemporaryError(e.message, delay=INTERVAL) from None
    finally:
        # kopf runs the delete handler while a reconcile may still be in flight: one that ends after the
        # handler removed the cluster's series must not bring them back
        if metrics.forgotten(name, uid):
            metrics.forget_cluster(name, uid)
    if not lead.is_leader():  # the status of a reconcile that outlived the lease is not written
        log.warning(
            "KafkaCluster %s: the leader Lease ran out during the reconcile; status not written", name
        )
        return
    status["observedGeneration"] = meta.get("generation")
    patch.status.update(status)


@kopf.on.delete(GROUP, VERSION, PLURALS["KafkaCluster"])
def release(body: kopf.Body, **_: Any) -> None:
    """The execution is cancelled, moves in flight reverted and its throttles removed, and the cordons of
    intents deleted with it removed, before the cluster (and its execution record) goes; retried every
    2 s. Past RELEASE_TIMEOUT_S since the deletion (Kafka unreachable all along) the cluster goes anyway,
    with a Warning Event naming what may be left."""
    require_leader()
    meta = body.get("metadata", {})
    label, uid = metrics.cluster_label(meta.get("namespace", ""), meta.get("name", "")), str(meta.get("uid"))
    left = runtime().reconciler.release(body)
    if left is None:
        metrics.forget_cluster(label, uid)  # no series of a deleted cluster stays on the endpoint
        return
    stamp = body.get("metadata", {}).get("deletionTimestamp")
    since = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    now = datetime.datetime.now(datetime.UTC)
    if since is not None and (now - since).total_seconds() > RELEASE_TIMEOUT_S:
        msg = (
            f"deleted without its execution cancelled or its deleted intents' cordons removed after "
            f"{RELEASE_TIMEOUT_S:.0f} s ({left}): throttles it set (replica.alter.log.dirs.io.max.bytes."
            "per.second, leader/follower.replication.throttled.rate and .replicas) or cordons "
            "(cordoned.log.dirs) may be left on the brokers: remove them with kafka-configs"
        )
        kopf.warn(body, reason="NotCancelled", message=msg)
        metrics.forget_cluster(label, uid)
        return
    raise kopf.TemporaryError(left, delay=2)
