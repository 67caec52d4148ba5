"""KafkaCluster traffic sampling: a kopf daemon per KafkaCluster whose ``spec.traffic.enabled`` (or whose
``status.traffic`` is still to be cleared), apart from the reconcile's handlers, so neither holds the
other up.

The daemon exists only while its ``when`` filter matches: a cluster that does not sample has no daemon,
no wake-up and no log line. One that samples sleeps on ``stopped.wait`` until its next look is due
(``TrafficSampler.wait_s``: at most ``IDLE_S``, so a leadership gained or a shorter period is seen
soon), then asks the sampler (traffic_sampler.py) for a look in a thread pool of its own (``POOL``, not
kopf's, which the reconciles use) and merge-patches ``status.traffic`` when it changed. kopf logs
nothing per look (a daemon's outcome is logged once, when it exits). Only the leader samples: a process
that does not hold the leader Lease (or lost it during a look) closes the cluster's gateway and waits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import logging
from collections.abc import Mapping
from typing import Any

import kopf

from ..kube.gateway import KubeError
from ..model.cluster_spec import ClusterSpec
from ..model.crd_parts import GROUP, PLURALS, VERSION
from ..model.errors import BadInputError
from ..reconcile import leader
from .runtime import runtime

IDLE_S = 5.0  # longest sleep between two checks (leadership, spec changes) while sampling
POOL = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="traffic")

log = logging.getLogger(__name__)


def wanted(spec: Mapping[str, Any], status: Mapping[str, Any], **_: Any) -> bool:
    """The daemon's filter: sampling on, or a ``status.traffic`` of a sampling turned off to clear."""
    try:
        enabled = ClusterSpec.parse(spec).sampling.enabled
    except BadInputError:  # the reconcile says why; a sampler left running stops on its next look
        enabled = False
    return enabled or bool(status.get("traffic"))


def once(body: Mapping[str, Any]) -> float:
    """A look if one is due and ``status.traffic`` written when it changed; the seconds to sleep."""
    meta = body["metadata"]
    ns, name = meta["namespace"], meta["name"]
    sampler = runtime().sampler
    if meta.get("deletionTimestamp") or not leader.current().is_leader():
        sampler.forget(ns, name)  # closes its gateway: a follower holds no connection to Kafka
        return IDLE_S
    try:
        status = sampler.tick(body)
    except leader.NotLeader as e:
        log.warning("traffic look stopped: %s", e.message)
        sampler.forget(ns, name)
        return IDLE_S
    if status is not None and leader.current().is_leader():
        try:
            sampler.kube.patch_custom_status(
                GROUP, VERSION, ns, PLURALS["KafkaCluster"], name, {"traffic": status or None}
            )
        except KubeError as e:
            log.warning("KafkaCluster %s/%s: status.traffic not written: %s", ns, name, e)
    return sampler.wait_s(body, IDLE_S)


@kopf.daemon(
    GROUP, VERSION, PLURALS["KafkaCluster"], when=wanted, initial_delay=2.0, cancellation_timeout=30.0
)
async def sample_traffic(body: kopf.Body, stopped: kopf.DaemonStopped, **_: Any) -> None:
    loop = asyncio.get_running_loop()
    meta = body["metadata"]
    ns, name = meta["namespace"], meta["name"]
    try:
        while not stopped:
            # kopf updates the live body in place from its event loop: the look's thread gets a copy
            frozen = copy.deepcopy(dict(body))
            await stopped.wait(await loop.run_in_executor(POOL, once, frozen))
    finally:
        await loop.run_in_executor(POOL, runtime().sampler.forget, ns, name)
