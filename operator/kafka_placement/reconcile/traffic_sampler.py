"""The operator's traffic sampler: one look per ``spec.traffic.periodSeconds`` at a KafkaCluster, folded
into its traffic state (planning/traffic_rates.py), kept with the cluster and summed per broker for
``status.traffic`` (docs/architecture.md, "Traffic sampling").

Its own kopf daemon (handlers/traffic_daemon.py) calls ``TrafficSampler.tick``, apart from the reconcile's, so
a look never holds a reconcile up (nor a reconcile a look); only the leader samples, through the same
fenced gateway and leader fence as the reconciler. One gateway serves a cluster's looks (its clients'
connections, the access check and the topic ids it has read are reused) for ``GATEWAY_LOOKS`` looks,
then a fresh one (ACLs and topic ids checked again); it is closed earlier when the connection settings
change, a look fails, the cluster stops sampling or is deleted, or leadership is lost (``forget``).

The state is stored with the cluster by ``ConfigMapStore(document="traffic")`` (reconcile/record_store.py):
ConfigMap ``kafka-placement-<cluster>-traffic`` holds a small progress document (looks taken, the time
of the last, the name of the state's blob) and the columnar state
(planning/traffic_state.py) is a blob ``state-<look>`` gzipped over as many ConfigMaps of 900 KiB as it
needs (measured: 28 bytes of gzip per partition, ``STATE_GZ_BYTES_PER_PARTITION`` the bound tested, so
~28,000 partitions a ConfigMap; 100,000 partitions take 4), written before the
document that names it and the older blob pruned after: a look cut short leaves the previous state whole.
The state is saved at the first look and then once the looks have advanced ``SAVE_FRACTION`` of the
window since the last save (every look when the period is that long): at 1M partitions a save writes
~28 MB, so a 60 s period and the default 300 s window save every third look. After an operator restart
(or a new leader) the last saved state is loaded and the rates continue: the looks taken since it are
lost (at most ``SAVE_FRACTION`` of a window; ``looks`` counts on from the saved one), but not their
bytes, since the next look's interval runs from the saved look and measures every byte appended since.
A state that does not read (damaged from outside) is dropped with a warning: the estimates start
afresh, unknown, never wrong.

``status.traffic`` is bounded: one entry per broker (``MAX_BROKERS``; ~120 bytes each), rates rounded to
whole bytes per second, and written only when it differs from what the status holds.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..execution.store import RecordConflict
from ..kafka.connection import ConnectionSettings
from ..kafka.gateway import KafkaAuthenticationError, KafkaAuthorizationError, KafkaUnavailableError
from ..kube.gateway import KubeError, KubeGateway
from ..model.capacity import Capacity, CapacitySpec
from ..model.cluster_spec import ClusterSpec, TrafficSpec
from ..model.cluster_status import MAX_TRAFFIC_BROKERS
from ..model.errors import BadInputError, PlacementError
from ..model.snapshot import ClusterSnapshot
from ..model.traffic_looks import PartitionKey
from ..planning.loads import BrokerLoad, broker_loads
from ..planning.traffic_rates import Traffic, TrafficState, estimates, fold, with_traffic
from ..planning.traffic_state import state_from_json, state_to_json
from . import status as st
from .fencing import FencedGateway
from .leader import Leadership
from .record_store import ConfigMapStore

log = logging.getLogger(__name__)

DOC_VERSION = 1
MAX_BROKERS = MAX_TRAFFIC_BROKERS  # status.traffic lists at most this many brokers (~240 KB): 1000 fit twice
GATEWAY_LOOKS = 10  # looks one gateway serves: the access check and the topic ids read once per 10
SAVE_FRACTION = 0.5  # the state is saved once the looks advanced this fraction of the window
STATE_GZ_BYTES_PER_PARTITION = 32  # bound; 28.3 measured (tests/unit/reconcile/test_traffic_sampler.py)


def _rfc3339(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _capacity(capacity: Capacity, load: BrokerLoad) -> dict[str, Any]:
    """A broker's declared capacity and its utilisation (load / capacity, 3 decimals), known fields only."""
    caps = {"networkIn": capacity.network_in, "networkOut": capacity.network_out, "disk": capacity.disk}
    shares = load.utilisation(capacity)
    return {
        "capacity": {k: v for k, v in caps.items() if v is not None},
        "utilisation": {k: round(v, 3) for k, v in shares.items() if v is not None},
    }


def traffic_status(
    snapshot: ClusterSnapshot,
    traffic: Mapping[tuple[str, int], Traffic],
    at: float,
    window_s: int,
    looks: int,
    capacity: CapacitySpec | None = None,
    groups_read: int | None = None,
    skipped: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """``status.traffic``: per broker the bytes in per second of every replica it holds (leaders and
    followers: each replica writes what its leader takes in: its network in), of the partitions it
    leads, its network out (planning/loads.py) and the replicas with a known rate; with ``capacity``
    its declared capacity and utilisation (an override naming a broker the cluster lacks:
    ``capacityError`` instead); the look's time, the partitions with a known rate and, when given, the
    consumer groups whose committed offsets the look read (only those the principal may describe: read
    fan-out counts no other); the samples skipped so far by reason (``planning/traffic_rates.py``) and whether
    the network capacity goal is on (``networkCapacityGoal``: ``on`` or ``off: <why>``). Pure."""
    loads = broker_loads(with_traffic(snapshot, traffic))
    capacity_error: str | None = None
    if capacity is not None:
        try:
            capacity.unknown_brokers(b.id for b in snapshot.brokers)
        except BadInputError as e:
            capacity_error, capacity = str(e), None
    total: dict[int, float] = {}
    leader_in: dict[int, float] = {}
    replicas: dict[int, int] = {}
    measured = 0
    for p in snapshot.partitions:
        t = traffic.get(p.key)
        if t is None or t.bytes_in_per_sec is None:
            continue
        measured += 1
        for b in p.replicas:
            total[b] = total.get(b, 0.0) + t.bytes_in_per_sec
            replicas[b] = replicas.get(b, 0) + 1
        if p.leader is not None:
            leader_in[p.leader] = leader_in.get(p.leader, 0.0) + t.bytes_in_per_sec
    brokers = sorted({b.id for b in snapshot.brokers} | set(total))
    return {
        "sampledAt": _rfc3339(at),
        "windowSeconds": window_s,
        "looks": looks,
        "partitionsMeasured": measured,
        **({"groupsRead": groups_read} if groups_read is not None else {}),
        "brokers": [
            {
                "id": b,
                "bytesInPerSec": round(total.get(b, 0.0)),
                "leaderBytesInPerSec": round(leader_in.get(b, 0.0)),
                "networkOutBytesPerSec": round(loads[b].network_out) if b in loads else 0,
                "diskBytes": loads[b].disk if b in loads else 0,
                "replicasMeasured": replicas.get(b, 0),
                **(_capacity(capacity.of(b), loads.get(b, BrokerLoad())) if capacity else {}),
            }
            for b in brokers[:MAX_BROKERS]
        ],
        "brokersOmitted": max(0, len(brokers) - MAX_BROKERS),
        **({"capacityError": capacity_error} if capacity_error else {}),
        "samplesSkipped": dict(sorted((skipped or {}).items())),
        "networkCapacityGoal": _capacity_goal(capacity, capacity_error, measured, brokers),
    }


def _capacity_goal(
    capacity: CapacitySpec | None, error: str | None, measured: int, brokers: Sequence[int]
) -> str:
    """Whether the plans keep every broker under ``maxShare`` of its declared network capacity, and if
    not why (the goal needs declared network capacities and measured rates: planning/goals/network.py)."""
    if error:
        return "off: spec.capacity names a broker the cluster does not have (capacityError)"
    if capacity is None:
        return "off: spec.capacity is not set"
    if not any(capacity.of(b).network_in or capacity.of(b).network_out for b in brokers):
        return "off: spec.capacity declares no networkIn or networkOut"
    if not measured:
        return "off: no partition has a measured rate yet"
    return f"on: no broker planned above {capacity.max_share:g} of its declared network capacity"


def progress_doc(looks: int, at: float, blob: str) -> bytes:
    """The progress document (its other fields are ignored on reading: a document of an older release
    also held the window, which the spec gives)."""
    return json.dumps({"version": DOC_VERSION, "looks": looks, "at": at, "blob": blob}).encode()


def save_due(saved_at: float, at: float, window_s: float) -> bool:
    """Whether the look at ``at`` saves the state (the last save at ``saved_at``, 0: none): the first,
    then once the looks advanced ``SAVE_FRACTION`` of the window (a clock set back saves too)."""
    return not saved_at or at < saved_at or at - saved_at >= SAVE_FRACTION * window_s


def read_progress(raw: bytes, where: str) -> tuple[int, float, str]:
    """(looks, time of the last look, blob name) of a progress document; ``BadInputError`` otherwise."""
    try:
        doc = json.loads(raw)
        looks, at, blob = int(doc["looks"]), float(doc["at"]), str(doc["blob"])
        if doc.get("version") != DOC_VERSION or looks < 0:
            raise ValueError(f"version {doc.get('version')}, looks {looks}")
    except (ValueError, KeyError, TypeError) as e:
        raise BadInputError(f"not a traffic progress document: {e}", where) from None
    return looks, at, blob


@dataclass
class _Cluster:
    """What the sampler keeps in memory of one cluster between looks."""

    uid: str
    store: ConfigMapStore
    state: TrafficState
    looks: int
    at: float  # wall-clock time of the last look (0: none)
    saved_at: float  # time of the look whose state is stored (0: none)
    gateway: FencedGateway | None = None
    settings: ConnectionSettings | None = None  # the gateway's
    gateway_looks: int = 0  # looks the gateway served

    def close(self) -> None:
        gateway, self.gateway, self.settings, self.gateway_looks = self.gateway, None, None, 0
        if gateway is not None:
            gateway.close()


class TrafficSampler:
    """Takes the looks of every KafkaCluster whose ``spec.traffic.enabled`` (see the module docstring)."""

    def __init__(
        self,
        kube: KubeGateway,
        leadership: Leadership,
        settings_of: Callable[[ClusterSpec, str], ConnectionSettings],
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.kube, self.leadership, self.settings_of, self.wall = kube, leadership, settings_of, wall
        self._clusters: dict[tuple[str, str], _Cluster] = {}

    def _load(self, cluster: Mapping[str, Any]) -> _Cluster:
        meta = cluster["metadata"]
        ns, name, uid = meta["namespace"], meta["name"], meta.get("uid", "")
        lead = self.leadership
        store = ConfigMapStore(
            self.kube, ns, name, cluster, fence=lead.fence, writer=lead.identity, document="traffic"
        )
        fresh = _Cluster(uid, store, TrafficState(), 0, 0.0, 0.0)
        try:
            raw = store.load()
            if raw is None:
                return fresh
            looks, at, blob = read_progress(raw, store.where)
            data = store.get_blob(blob)
            if data is None:
                raise BadInputError(f"blob {blob} is missing", store.where)
            state = state_from_json(json.loads(data), f"{store.where} blob {blob}")
        except (BadInputError, ValueError) as e:
            log.warning("KafkaCluster %s/%s: traffic state dropped, starting afresh: %s", ns, name, e)
            return fresh
        log.info("KafkaCluster %s/%s: traffic state loaded (%d looks)", ns, name, looks)
        return _Cluster(uid, store, state, looks, at, at)

    def forget(self, namespace: str, name: str) -> None:
        """Drop what is kept of a cluster and close its gateway (sampling off, cluster deleted,
        leadership lost: the next look loads the stored state afresh)."""
        c = self._clusters.pop((namespace, name), None)
        if c is not None:
            c.close()

    def rates(self, cluster: Mapping[str, Any]) -> dict[PartitionKey, Traffic] | None:
        """The cluster's current estimates, for the reconcile's planning snapshot: read from the state in
        memory (no Kafka or Kubernetes read; cost proportional to partitions). None when the cluster does
        not sample, or this process has no state of it yet (no look since it led, none stored)."""
        meta = cluster["metadata"]
        c = self._clusters.get((meta["namespace"], meta["name"]))
        if c is None or c.uid != meta.get("uid", "") or not c.at:
            return None
        try:
            sampling = ClusterSpec.of(cluster).sampling
        except BadInputError:
            return None
        if not sampling.enabled:
            return None
        return estimates(c.state, float(sampling.window_seconds))

    def wait_s(self, cluster: Mapping[str, Any], at_most: float) -> float:
        """Seconds until the cluster's next look is due, at most ``at_most`` (and never below 0.1)."""
        meta = cluster["metadata"]
        c = self._clusters.get((meta["namespace"], meta["name"]))
        try:
            period = ClusterSpec.of(cluster).sampling.period_seconds
        except BadInputError:
            return at_most
        if c is None or not c.at:
            return at_most
        return max(0.1, min(at_most, c.at + period - self.wall()))

    def _gateway(self, c: _Cluster, spec: ClusterSpec, ns: str) -> FencedGateway:
        settings = self.settings_of(spec, ns)
        if c.gateway is not None and (c.settings != settings or c.gateway_looks >= GATEWAY_LOOKS):
            c.close()
        if c.gateway is None:
            c.gateway, c.settings = FencedGateway(settings, self.leadership.fence), settings
        c.gateway_looks += 1
        return c.gateway

    def tick(self, cluster: Mapping[str, Any]) -> dict[str, Any] | None:
        """One look if one is due: the new ``status.traffic`` when it changed (None: unchanged, not due,
        or sampling off; ``{}`` clears a status of a sampling turned off)."""
        meta = cluster["metadata"]
        ns, name = meta["namespace"], meta["name"]
        shown = (cluster.get("status") or {}).get("traffic")
        try:
            spec = ClusterSpec.of(cluster)
        except BadInputError:
            return None  # the reconcile reports an invalid spec (InvalidSpec condition)
        sampling = spec.sampling
        if not sampling.enabled:
            self.forget(ns, name)
            return {} if shown else None
        c = self._clusters.get((ns, name))
        if c is None or c.uid != meta.get("uid", ""):
            self.forget(ns, name)
            c = self._clusters[(ns, name)] = self._load(cluster)
        now = self.wall()
        if c.at and 0 <= now - c.at < sampling.period_seconds:
            return None
        try:
            status = self._look(c, spec, sampling, ns, shown)
            problem = None if status is None else st.patch_problem({"traffic": status})
            if problem is not None:
                log.error("KafkaCluster %s/%s: status.traffic breaks its schema: %s", ns, name, problem)
            return status
        except RecordConflict as e:  # another writer (a new leader's claim): reload before the next look
            log.warning("KafkaCluster %s/%s: traffic state not saved: %s", ns, name, e)
            self.forget(ns, name)
            return None
        except (KafkaUnavailableError, KafkaAuthorizationError, KafkaAuthenticationError) as e:
            log.warning("KafkaCluster %s/%s: no traffic look: %s", ns, name, e.message)
        except (BadInputError, PlacementError, KubeError) as e:
            log.warning("KafkaCluster %s/%s: traffic sampling failed: %s", ns, name, e)
        c.close()  # the next look connects afresh
        c.at = now  # a failed look waits a period too (never a tight retry loop)
        return None

    def _look(
        self, c: _Cluster, spec: ClusterSpec, sampling: TrafficSpec, ns: str, shown: object
    ) -> dict[str, Any] | None:
        snapshot, look = self._gateway(c, spec, ns).traffic_look()
        window = float(sampling.window_seconds)
        state = fold(c.state, look, window)
        looks = c.looks + 1
        if save_due(c.saved_at, look.at, window):
            blob = f"state-{looks}"
            c.store.put_blob(blob, json.dumps(state_to_json(state), separators=(",", ":")).encode())
            c.store.save(progress_doc(looks, look.at, blob))
            c.store.prune_blobs({blob})
            c.saved_at = look.at
        c.state, c.looks, c.at = state, looks, look.at
        status = traffic_status(
            snapshot,
            estimates(state, window),
            look.at,
            sampling.window_seconds,
            looks,
            spec.capacity,
            groups_read=len(state.groups),
            skipped=state.skipped,
        )
        return None if status == shown else status


__all__ = [
    "GATEWAY_LOOKS",
    "MAX_BROKERS",
    "SAVE_FRACTION",
    "STATE_GZ_BYTES_PER_PARTITION",
    "TrafficSampler",
    "progress_doc",
    "read_progress",
    "save_due",
    "traffic_status",
]
