"""The Kafka gateway: the only code that talks to Kafka (docs/architecture.md).

``KafkaGateway`` is built from one ``ConnectionSettings`` and lazily opens a confluent-kafka
``AdminClient`` (metadata, configs, incremental config changes, leader election) and a kafka-python
``KafkaAdminClient`` (AlterPartitionReassignments, ListPartitionReassignments, DescribeLogDirs,
AlterReplicaLogDirs, DescribeFeatures — librdkafka has none of these). Every call has a timeout and a
bounded number of retries with exponential backoff on retriable errors (the failures mapped by
kafka/failures.py). An unreachable cluster raises ``KafkaUnavailableError`` naming the bootstrap servers
within about ``connect_timeout_s``; a cluster that refuses who we are raises its subclass
``KafkaAuthenticationError`` as soon as a client reports it (wrong SASL password, untrusted broker
certificate, rejected or expired client certificate: kafka/access.py); a missing ACL raises
``KafkaAuthorizationError`` naming the denied operation and resource (and ``check_authorized`` checks every
ACL an execution needs before anything is submitted); other failures raise ``KafkaOperationError``.
Per-item failures (a partition, a replica, a config resource) are returned as ``OpError`` values keyed by
the item, never raised. Results are plain dataclasses and the model's ``ClusterSnapshot``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from ..model.errors import BadInputError, PlacementError
from ..model.snapshot import Broker, ClusterSnapshot, LogDir, PartitionState, TopicStorage
from ..model.traffic_looks import PartitionLook, TrafficLook
from . import access, failures, tiered, traffic_reads
from .clients import LIBRDKAFKA_LOGGER, kafka_python_admin
from .cluster_reads import ClusterReads
from .configs import KafkaConfigs
from .connection import ConnectionSettings
from .types import (
    CORDON_CONFIG,
    CORDON_METADATA_LEVEL,
    DENIED,
    ConfigChange,
    ConfigTarget,
    ConfigValue,
    CordonUnsupportedError,
    KafkaAuthenticationError,
    KafkaAuthorizationError,
    KafkaOperationError,
    KafkaUnavailableError,
    KafkaUnsupportedError,
    LogDirInfo,
    OpError,
    PartitionKey,
    Reassignment,
    ReplicaInDir,
    ReplicaKey,
    T,
    failed_dir_of,
)

log = logging.getLogger(__name__)

METADATA_READS = 5  # snapshot: reads of the topics' metadata while it lags what the log dirs hold...
METADATA_WAIT_S = 1.0  # ...this far apart
SILENT_S = 30.0  # a broker left out of DescribeLogDirs counts as silent this long (config calls skip it)
# partitions per AlterPartitionReassignments request: a KRaft controller takes at most 10,000 records in
# one operation and refused the rest of a 20,000-partition request ("unexpected error", Kafka 4.4 on the rig)
REASSIGN_BATCH = 5_000
# the topic configs the snapshot records (tiered storage, KIP-405) and the brokers' KIP-1023 switch
REMOTE_STORAGE_ENABLE = "remote.storage.enable"
LOCAL_RETENTION_BYTES = "local.retention.bytes"
LOCAL_RETENTION_MS = "local.retention.ms"
FETCH_LAST_TIERED = "follower.fetch.last.tiered.offset.enable"


class KafkaGateway(ClusterReads, KafkaConfigs):
    """Typed access to one cluster's admin APIs; use as a context manager or call ``close()``."""

    def __init__(self, settings: ConnectionSettings, *, attempts: int = 3, backoff_s: float = 0.5) -> None:
        super().__init__(settings, attempts=attempts, backoff_s=backoff_s)
        self._silent: dict[int, float] = {}  # broker -> time.monotonic() it was left out of DescribeLogDirs
        self._answered: dict[int, float] = {}  # broker -> time.monotonic() it last answered DescribeLogDirs
        self._access_checked = False  # check_authorized passed: DESCRIBE on the cluster and every topic
        self._topic_ids: dict[str, str] = {}  # traffic_look: the ids read, for this gateway's life
        self._traffic_offsets: dict[PartitionKey, tuple[int, int]] = {}  # traffic_look: the last look's

    # ---- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> KafkaGateway:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ---- access --------------------------------------------------------------------------------

    def check_authorized(
        self, topics: Iterable[str] = (), *, configs: bool = True, moves: bool = True, when: str = ""
    ) -> None:
        """Check, before anything is changed, that the principal holds every ACL the work on ``topics``
        needs (``access.check``: ``moves`` for reassignments, log-dir moves and elections, ``configs`` for
        throttles and cordons); raises ``KafkaAuthorizationError`` naming every denial. A gateway serves
        one reconcile or one CLI command: once this passed, ``snapshot`` does not check again."""
        access.check(self.settings, self._authorized(topics), configs=configs, moves=moves, when=when)
        self._access_checked = True

    def _authorized(self, topics: Iterable[str]) -> access.Authorized:
        """The operations Kafka says the principal may do (KIP-430) on the cluster and on ``topics``, and
        what describing ``access.PROBE_TOPIC`` got (a principal that may not describe every topic)."""
        from confluent_kafka import KafkaException, TopicCollection

        cluster = self._describe_cluster("describe cluster (authorized operations)")
        timeout = self.settings.request_timeout_s

        def probe() -> str:
            futures = self._controller_admin().describe_topics(
                TopicCollection([access.PROBE_TOPIC]), request_timeout=timeout
            )
            try:
                futures[access.PROBE_TOPIC].result()
            except KafkaException as e:
                return str(e.args[0].name())
            return "EXISTS"

        names = sorted(set(topics))

        def per_topic() -> dict[str, frozenset[str] | None]:
            futures = self._controller_admin().describe_topics(
                TopicCollection(names), include_authorized_operations=True, request_timeout=timeout
            )
            out: dict[str, frozenset[str] | None] = {}
            for name, f in futures.items():
                try:
                    out[name] = _operations(f.result().authorized_operations)
                except KafkaException as e:
                    code = str(e.args[0].name())
                    if code.endswith(DENIED):
                        out[name] = None  # may not even DESCRIBE it
                    elif code not in failures.UNKNOWN_TOPIC:
                        raise  # a topic that does not exist needs no ACL (the executor reports it)
            return out

        allowed = _operations(cluster.authorized_operations)
        probed = self._call("describe topics (DESCRIBE on every topic)", probe)
        what = f"describe topics ({len(names)}, authorized operations)"
        return access.Authorized(allowed, probed, self._call(what, per_topic) if names else {})

    # ---- cluster state -------------------------------------------------------------------------

    def snapshot(self, only: Iterable[PartitionKey] | None = None) -> ClusterSnapshot:
        """Brokers with racks and log dirs (usage, cordon, online), every partition's replicas, dirs,
        leader, ISR and size (the largest replica's local log), and each topic's remote storage settings
        (one DescribeConfigs of the topics; unknown if refused). Internal topics are included. With
        ``only``, the partitions are just those (the ones that exist): DescribeTopics of their topics and
        DescribeLogDirs filtered to them, so the cost follows those partitions and the brokers, not the
        cluster's size (and no topic config is read: their remote storage is unknown)."""
        # topics or dirs we may not DESCRIBE would be silently missing: refuse, naming the ACL (unless
        # this gateway's check_authorized passed: one check per reconcile or command)
        if not self._access_checked:
            self.check_authorized(moves=False, configs=False, when="snapshot: nothing was read")
        cluster = self.cluster_brokers()
        racks = cluster.racks
        wanted = None if only is None else set(only)
        dirs = self.describe_log_dirs(cluster.live, partitions=wanted)
        cordon_config = self._cordon_configs(dirs)  # a broker that fails it is left out of ``dirs``
        # alive is the cluster's word (liveness.py): a live broker that did not answer us is unreachable,
        # listed alive with its dirs unknown, never taken for dead
        live = list(cluster.live)
        unreachable = cluster.unreachable(dirs)
        if unreachable:
            log.warning(
                "snapshot: broker(s) %s alive in the cluster but not answering: unreachable, not dead",
                ", ".join(map(str, unreachable)),
            )
        if wanted is None:
            metadata = self._current_metadata(dirs)
            described: Iterable[tuple[str, int, Sequence[Any], Any, Sequence[Any]]] = _from_metadata(metadata)
            cluster_id = cluster.cluster_id or metadata.cluster_id
        else:
            states = self.describe_partitions({t for t, _ in wanted})
            described = (
                (p.topic, p.partition, p.replicas, p.leader, p.isr)
                for k, p in sorted(states.items())
                if k in wanted
            )
            cluster_id = cluster.cluster_id

        brokers: dict[int, Broker] = {}
        where: dict[ReplicaKey, str] = {}
        sizes: dict[PartitionKey, int] = {}
        for b in live:
            log_dirs = []
            for d in dirs.get(b, ()):
                cordoned = d.cordoned if d.cordoned is not None else d.path in cordon_config.get(b, set())
                log_dirs.append(
                    LogDir(d.path, max(d.total_bytes, 0), max(d.usable_bytes, 0), cordoned, d.online)
                )
                for rep in d.replicas:
                    if rep.is_future:
                        continue
                    key = (rep.topic, rep.partition)
                    where.setdefault((rep.topic, rep.partition, b), d.path)
                    sizes[key] = max(sizes.get(key, 0), rep.size_bytes)
            brokers[b] = Broker(b, racks.get(b) or None, tuple(log_dirs))

        partitions = []
        for topic, number, replica_ids, leader_id, isr_ids in described:
            replicas = tuple(int(r) for r in replica_ids)
            if not replicas:
                continue
            for r in replicas:  # a replica on a broker that is not alive: lost, its dir unknown
                brokers.setdefault(r, Broker(r, None, (), alive=False))
            leader = int(leader_id) if leader_id is not None and int(leader_id) in replicas else None
            isr = tuple(int(i) for i in isr_ids if int(i) in replicas)
            partitions.append(
                PartitionState(
                    topic=topic,
                    partition=number,
                    replicas=replicas,
                    log_dirs=tuple(
                        where.get((topic, number, r)) or failed_dir_of(dirs.get(r, ()), r in isr)
                        for r in replicas
                    ),
                    leader=leader,
                    isr=isr,
                    size_bytes=sizes.get((topic, number), 0),
                )
            )
        storage, fetch_last_tiered = (
            self._topic_storage(sorted({p.topic for p in partitions}), sorted(dirs))
            if wanted is None
            else ((), None)
        )
        if fetch_last_tiered:
            partitions = self._with_untiered(partitions, {t.topic for t in storage if t.remote})
        return ClusterSnapshot(
            brokers=tuple(brokers[b] for b in sorted(brokers)),
            partitions=tuple(partitions),
            cluster_id=cluster_id,
            topic_storage=storage,
            follower_fetch_last_tiered_offset=fetch_last_tiered,
            unreachable=unreachable,
        )

    def _topic_storage(
        self, topics: Sequence[str], live: Sequence[int]
    ) -> tuple[tuple[TopicStorage, ...], bool | None]:
        """Each topic's remote storage settings (one DescribeConfigs request for all of them) and, when one
        has remote storage on, the KIP-1023 switch of one live broker (one more request). A principal
        without DESCRIBE_CONFIGS, or a topic deleted meanwhile, leaves them unknown: they describe what a
        move copies, they are not needed to plan it."""
        if not topics:
            return (), None
        try:
            described = self.describe_configs(ConfigTarget.topic(t) for t in topics)
        except PlacementError as e:
            log.warning("snapshot: topics' remote storage settings unknown (%s)", e)
            return (), None
        storage = tuple(
            TopicStorage(
                target.name,
                _config_bool(entries.get(REMOTE_STORAGE_ENABLE)),
                _config_int(entries.get(LOCAL_RETENTION_BYTES)),
                _config_int(entries.get(LOCAL_RETENTION_MS)),
            )
            for target, entries in sorted(described.items(), key=lambda kv: kv[0].name)
        )
        if not live or not any(t.remote for t in storage):
            return storage, None
        broker = ConfigTarget.broker(min(live))
        try:
            value = self.describe_configs([broker]).get(broker, {}).get(FETCH_LAST_TIERED)
        except PlacementError as e:
            log.warning("snapshot: broker %s's %s unknown (%s)", broker.name, FETCH_LAST_TIERED, e)
            return storage, None
        return storage, _config_bool(value)

    def _with_untiered(self, partitions: list[PartitionState], remote: set[str]) -> list[PartitionState]:
        """The partitions of the ``remote`` topics with their not-yet-tiered bytes (KIP-1023 is on:
        kafka/tiered.py), the others as they are. Unknown (the local size counts) when Kafka refuses."""
        sizes = {p.key: p.size_bytes for p in partitions if p.topic in remote}
        if not sizes:
            return partitions
        from kafka import TopicPartition
        from kafka.errors import KafkaError as PyKafkaError

        timeout_ms = int(self.settings.request_timeout_s * 1000)

        def read() -> dict[tuple[str, int], int]:
            offsets = functools.partial(self._py().list_partition_offsets, timeout_ms=timeout_ms)
            return tiered.read_untiered(offsets, TopicPartition, sizes)

        try:
            found = self._call(f"list offsets of {len(sizes)} tiered partitions (last tiered)", read)
        except (PlacementError, PyKafkaError) as e:
            log.warning("snapshot: tiered partitions' not-yet-tiered bytes unknown (%s)", e)
            return partitions
        return [
            dataclasses.replace(p, untiered_bytes=found[p.key]) if p.key in found else p for p in partitions
        ]

    def traffic_look(self) -> tuple[ClusterSnapshot, TrafficLook]:
        """A snapshot and one look at the traffic (kafka/traffic_reads.py): every partition's earliest and
        latest offsets, with its size from the snapshot and its topic's id, and every consumer group's
        committed offsets. The look's time is the wall clock's when the offsets were read.

        A gateway that takes several looks (the operator's sampler keeps one per cluster for a few) reads
        the ids of the topics it has not seen yet, and of those whose offsets went back since its last
        look (deleted and created again), not of every topic every look: DescribeTopics follows the
        partitions like the snapshot's metadata, so it would double a look's cost. A topic created again
        whose offsets passed the old ones between two looks keeps its old id until the next gateway."""
        snap = self.snapshot()
        timeout = self.settings.request_timeout_s
        started = time.time()
        ends = traffic_reads.list_offsets(self._admin, self._call, [p.key for p in snap.partitions], timeout)
        at = (started + time.time()) / 2
        last, self._traffic_offsets = self._traffic_offsets, ends
        back = {k[0] for k, (s, e) in ends.items() if k in last and (e < last[k][1] or s < last[k][0])}
        topics = snap.topics()
        unread = sorted({t for t in topics if t not in self._topic_ids} | back)
        if unread:
            self._topic_ids.update(
                traffic_reads.topic_ids(self._controller_admin, self._call, unread, timeout)
            )
        self._topic_ids = ids = {t: self._topic_ids[t] for t in topics if t in self._topic_ids}
        groups = traffic_reads.committed_offsets(self._admin, self._call, timeout)
        sizes = {p.key: p.size_bytes for p in snap.partitions}
        looks = {k: PartitionLook(s, e, sizes[k], ids.get(k[0])) for k, (s, e) in ends.items()}
        return snap, TrafficLook(at, looks, groups)

    def partition_counts(self) -> dict[str, int]:
        """Every topic's partition count (topics in error left out): one Metadata request, no log-dir,
        config or offset read; what the new-partition watch compares between two looks."""
        metadata = self._metadata()
        return {t: len(tmd.partitions) for t, tmd in metadata.topics.items() if tmd.error is None}

    def partition_states(self) -> list[PartitionState]:
        """Every partition's replicas, leader and ISR, from one Metadata request (no dirs, sizes or configs
        read): what the under-replicated gauges count while an execution runs."""
        out = []
        for topic, number, reps, leader, isrs in _from_metadata(self._metadata()):
            replicas = tuple(int(r) for r in reps)
            isr = tuple(int(i) for i in isrs if int(i) in replicas)
            led = int(leader) if leader is not None and int(leader) in replicas else None
            out.append(PartitionState(topic, number, replicas, (None,) * len(replicas), led, isr))
        return out

    def _metadata(self) -> Any:
        timeout = self.settings.request_timeout_s
        return self._call("list topics", lambda: self._admin().list_topics(timeout=timeout))

    def _current_metadata(self, dirs: Mapping[int, Sequence[LogDirInfo]]) -> Any:
        """The topics' metadata, read again (up to METADATA_READS times, METADATA_WAIT_S apart) while it
        lacks a partition that a live broker's log dirs hold: the broker that answers the metadata request
        applies the controller's records asynchronously and may lag (right after topics were created a
        snapshot missed hundreds of their partitions). A partition still missing after the last read
        (a topic being deleted: its logs go after its metadata) is left out, with a warning."""
        timeout = self.settings.request_timeout_s
        on_disk = {
            (r.topic, r.partition) for ds in dirs.values() for d in ds for r in d.replicas if not r.is_future
        }
        for read in range(1, METADATA_READS + 1):
            metadata = self._call("list topics", lambda: self._admin().list_topics(timeout=timeout))
            known = {
                (t, int(n)) for t, tmd in metadata.topics.items() if tmd.error is None for n in tmd.partitions
            }
            missing = on_disk - known
            if not missing:
                return metadata
            shown = ", ".join(f"{t}-{n}" for t, n in sorted(missing)[:5])
            if read == METADATA_READS:
                log.warning(
                    "metadata lacks %d partitions the log dirs hold (%s): left out (deleted topics?)",
                    len(missing), shown,
                )  # fmt: skip
                return metadata
            log.info("metadata lags the log dirs (%d partitions, %s): reading it again", len(missing), shown)
            time.sleep(METADATA_WAIT_S)
        raise AssertionError("unreachable")  # pragma: no cover

    def describe_partitions(self, topics: Iterable[str]) -> dict[PartitionKey, PartitionState]:
        """Replicas, leader and ISR of every partition of ``topics`` (no dirs or sizes: see
        ``describe_log_dirs``); a topic that does not exist is left out. Cost follows the topics asked."""
        from confluent_kafka import KafkaException, TopicCollection

        names = sorted(set(topics))
        if not names:
            return {}
        timeout = self.settings.request_timeout_s

        def run() -> dict[str, Any]:
            futures = self._controller_admin().describe_topics(
                TopicCollection(names), request_timeout=timeout
            )
            out: dict[str, Any] = {}
            for name, f in futures.items():
                try:
                    out[name] = f.result()
                except KafkaException as e:
                    if e.args[0].name() not in failures.UNKNOWN_TOPIC:
                        raise
            return out

        described = self._call(f"describe topics ({len(names)})", run, needs=access.on_topics(names))
        states: dict[PartitionKey, PartitionState] = {}
        for name, desc in described.items():
            for p in desc.partitions:
                replicas = tuple(int(r.id) for r in p.replicas)
                leader = int(p.leader.id) if p.leader is not None and int(p.leader.id) in replicas else None
                states[(name, int(p.id))] = PartitionState(
                    topic=name,
                    partition=int(p.id),
                    replicas=replicas,
                    log_dirs=(None,) * len(replicas),
                    leader=leader,
                    isr=tuple(int(r.id) for r in p.isr if int(r.id) in replicas),
                    size_bytes=0,
                )
        return states

    def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, partitions: Iterable[PartitionKey] | None = None
    ) -> dict[int, tuple[LogDirInfo, ...]]:
        """DescribeLogDirs per broker (all live brokers when None): dirs with usage and their replicas;
        with ``partitions``, only those replicas are described (the request's topic-partition filter).
        A broker that refuses the connection while another answers is left out: this says nothing about
        whether it is alive (the cluster decides that, kafka/liveness.py; a live broker left out here is
        unreachable); none answering raises."""
        ids = sorted(set(brokers)) if brokers is not None else list(self.broker_ids())
        wanted: dict[str, list[int]] | None = None
        if partitions is not None:
            wanted = {}
            for topic, number in partitions:
                wanted.setdefault(topic, []).append(number)
        from kafka.errors import UnknownBrokerIdError

        out: dict[int, tuple[LogDirInfo, ...]] = {}
        refused: list[KafkaUnavailableError] = []
        for b in ids:

            def one(b: int = b) -> Any:
                try:
                    return self._py().describe_log_dirs(topic_partitions=wanted, brokers=[b])
                except UnknownBrokerIdError:
                    # kafka-python's metadata lacks a broker the cluster lists (stopped a moment ago, or
                    # back after it was gone): it would not read its metadata again for this alone, so a
                    # new client asks afresh on the retry
                    self._close_py()
                    raise

            try:
                (resp,) = self._call(f"describe log dirs of broker {b}", one, needs=access.ON_CLUSTER)
            except KafkaUnavailableError as e:
                if isinstance(e, KafkaAuthenticationError):
                    raise
                refused.append(e)
                self._silent[b] = time.monotonic()
                log.warning("%s: left out (not answering the operator)", e.message)
                continue
            self._silent.pop(b, None)
            self._answered[b] = time.monotonic()
            out[b] = tuple(LogDirInfo.of_response(b, d) for d in resp["log_dirs"])
        if refused and not out:
            raise refused[0]
        return out

    @property
    def silent(self) -> frozenset[int]:
        """Brokers left out of their last DescribeLogDirs through this gateway (refused or unknown to the
        client) within ``SILENT_S``. A broker answers for its own configs, so a config call to one of these
        would only wait out its timeout: callers leave them out until one answers again (or is asked again
        once this has expired). Says nothing about death (kafka/liveness.py)."""
        now = time.monotonic()
        return frozenset(b for b, at in self._silent.items() if now - at < SILENT_S)

    def _config_route(self) -> int | None:
        """The lowest broker that answered DescribeLogDirs within ``SILENT_S`` and has not been silent
        since (kafka/configs.py routes topics' config requests through it); None: none known."""
        now, silent = time.monotonic(), self.silent
        fresh = [b for b, at in self._answered.items() if now - at < SILENT_S and b not in silent]
        return min(fresh) if fresh else None

    def _route_failed(self, broker: int) -> None:
        self._answered.pop(broker, None)  # until it answers DescribeLogDirs again

    def _cordon_configs(self, dirs: dict[int, tuple[LogDirInfo, ...]]) -> dict[int, set[str]]:
        """The cordoned dirs each broker's config names, for the brokers whose DescribeLogDirs answer did
        not say (KIP-1066's field needs DescribeLogDirs v5). A broker that answered DescribeLogDirs but
        not this (stopping in a rolling restart, say) is taken out of ``dirs``: its cordons unknown, its
        dirs are too, so the snapshot lists it unreachable, as if it had not answered, and is not planned
        from (a reconcile failed on this with a traceback before, and waited kopf's minute)."""
        out: dict[int, set[str]] = {}
        for b, ds in sorted(dirs.items()):
            if not any(d.cordoned is None for d in ds):
                continue
            try:
                out[b] = self._cordon_config(b)
            except (KafkaOperationError, KafkaUnavailableError) as e:
                log.warning("snapshot: broker %d answered DescribeLogDirs but not DescribeConfigs: %s", b, e)
                del dirs[b]
                self._silent[b] = time.monotonic()
        return out

    def _cordon_config(self, broker: int) -> set[str]:
        value = self.describe_configs([ConfigTarget.broker(broker)])[ConfigTarget.broker(broker)].get(
            CORDON_CONFIG
        )
        entries = value.value if value is not None and value.value else ""
        return {d.strip() for d in entries.split(",") if d.strip()}

    # ---- reassignments (KIP-455) ---------------------------------------------------------------

    def list_reassignments(
        self, partitions: Iterable[PartitionKey] | None = None
    ) -> dict[PartitionKey, Reassignment]:
        """In-flight reassignments (all, or of the given partitions)."""
        from kafka import TopicPartition

        py = self._py()
        tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        timeout_ms = int(self.settings.request_timeout_s * 1000)
        raw = self._call(
            "list reassignments",
            _via_controller(py, lambda: py.list_partition_reassignments(tps, timeout_ms=timeout_ms)),
            needs=access.ON_CLUSTER,
        )
        return {
            (tp.topic, tp.partition): Reassignment(
                tuple(r["replicas"]), tuple(r["adding_replicas"]), tuple(r["removing_replicas"])
            )
            for tp, r in raw.items()
        }

    def alter_reassignments(
        self, targets: Mapping[PartitionKey, Sequence[int] | None]
    ) -> dict[PartitionKey, OpError]:
        """Start (replica list) or cancel (None) reassignments; returns the partitions Kafka refused. Sent
        ``REASSIGN_BATCH`` partitions a request; a request that fails raises, the parts before it sent."""
        from kafka import TopicPartition

        if not targets:
            return {}
        request: dict[Any, list[int] | None] = {}
        for (topic, partition), replicas in targets.items():
            if replicas is not None and (not replicas or len(set(replicas)) != len(replicas)):
                raise BadInputError(
                    f"replicas {list(replicas)} must be distinct and non-empty", f"{topic}-{partition}"
                )
            request[TopicPartition(topic, partition)] = (
                None if replicas is None else [int(r) for r in replicas]
            )
        py = self._py()
        timeout_ms = int(self.settings.request_timeout_s * 1000)
        result: dict[Any, Any] = {}
        items = list(request.items())
        for start in range(0, len(items), REASSIGN_BATCH):  # (REASSIGN_BATCH: the controller's limit)
            part = dict(items[start : start + REASSIGN_BATCH])
            result.update(
                self._call(  # never re-sent here: the caller's intents tell what Kafka did with each part
                    "alter reassignments",
                    _via_controller(
                        py, functools.partial(py.alter_partition_reassignments, part, timeout_ms=timeout_ms)
                    ),
                    attempts=1,
                    needs=access.ON_CLUSTER,
                )
            )
        errors: dict[PartitionKey, OpError] = {}
        for tp in request:
            if tp not in result:
                errors[(tp.topic, tp.partition)] = OpError(
                    "UNKNOWN", "the controller did not answer for it", True
                )
            elif result[tp] is not None:
                errors[(tp.topic, tp.partition)] = failures.py_op_error(result[tp])
        self._raise_denied("alter reassignments", errors, access.ON_CLUSTER)
        return errors

    # ---- log dir moves (KIP-113) ---------------------------------------------------------------

    def alter_replica_log_dirs(self, moves: Mapping[ReplicaKey, str]) -> dict[ReplicaKey, OpError]:
        """Move replicas between the log dirs of their broker; returns the replicas that failed.
        ``OpError.replica_not_available`` means the broker does not host it yet: retry later."""
        from kafka import TopicPartitionReplica
        from kafka.errors import NoError

        if not moves:
            return {}
        py = self._py()
        request = {TopicPartitionReplica(t, p, b): path for (t, p, b), path in moves.items()}
        result = self._call(
            "alter replica log dirs", lambda: py.alter_replica_log_dirs(request), needs=access.ON_CLUSTER
        )
        errors: dict[ReplicaKey, OpError] = {}
        for tpr in request:
            key = (tpr.topic, tpr.partition, tpr.broker_id)
            err = result.get(tpr)
            if err is None:
                errors[key] = OpError("UNKNOWN", f"broker {tpr.broker_id} did not answer for it", True)
            elif err is not NoError:
                errors[key] = failures.py_op_error(err)
        self._raise_denied("alter replica log dirs", errors, access.ON_CLUSTER)
        return errors

    # ---- leaders -------------------------------------------------------------------------------

    def elect_preferred_leaders(
        self, partitions: Iterable[PartitionKey] | None
    ) -> dict[PartitionKey, OpError]:
        """Preferred-leader election (all partitions when None); ELECTION_NOT_NEEDED is not an error."""
        from confluent_kafka import ElectionType, TopicPartition

        tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        if tps == []:
            return {}
        timeout = self.settings.request_timeout_s
        result = self._call(
            "elect preferred leaders",
            lambda: (
                self._controller_admin().elect_leaders(ElectionType.PREFERRED, tps).result(timeout=timeout)
            ),
            needs=access.ON_CLUSTER,
        )
        errors: dict[PartitionKey, OpError] = {}
        for tp, outcome in result.items():
            if outcome is None:
                continue
            err: Any = outcome.args[0] if isinstance(outcome, Exception) and outcome.args else outcome
            if err.name() != "ELECTION_NOT_NEEDED":
                errors[(tp.topic, tp.partition)] = failures.confluent_op_error(err)
        self._raise_denied("elect preferred leaders", errors, access.ON_CLUSTER)
        return errors

    # ---- cordon (KIP-1066) ---------------------------------------------------------------------

    def metadata_level(self) -> int | None:
        """The finalized metadata.version feature level (30 = 4.3-IV0); None when the cluster finalizes
        none: a ZooKeeper-mode cluster (DescribeFeatures lists no metadata.version there)."""
        py = self._py()
        features = self._call("describe features", lambda: py.describe_features())
        finalized = (features.get("metadata.version") or {}).get("finalized")
        return int(finalized[1]) if finalized else None

    def metadata_version(self) -> int:
        """The finalized metadata.version feature level (30 = 4.3-IV0; 0: none, a ZooKeeper cluster)."""
        return self.metadata_level() or 0

    def supports_cordon(self) -> bool:
        return self.metadata_version() >= CORDON_METADATA_LEVEL

    def set_cordon(self, broker: int, dirs: Sequence[str], cordoned: bool) -> None:
        """Add (APPEND) or remove (SUBTRACT) dirs in the broker's ``cordoned.log.dirs``, leaving other
        entries alone. Raises ``CordonUnsupportedError`` below metadata.version 4.3-IV0 (and on a
        ZooKeeper-mode cluster, which has no metadata.version)."""
        if not dirs:
            return
        level = self.metadata_level()
        if level is None or level < CORDON_METADATA_LEVEL:
            runs = (
                "the cluster runs in ZooKeeper mode (no metadata.version: KRaft only)"
                if level is None
                else f"the cluster runs level {level}"
            )
            raise CordonUnsupportedError(
                f"cannot {'cordon' if cordoned else 'uncordon'} log dirs on broker {broker} of "
                f"{self.servers}: {CORDON_CONFIG} needs metadata.version 4.3-IV0 (level "
                f"{CORDON_METADATA_LEVEL}) or newer, {runs}; cordons are enforced by moving new replicas "
                "off instead"
            )
        target = ConfigTarget.broker(broker)
        change = ConfigChange(CORDON_CONFIG, "APPEND" if cordoned else "SUBTRACT", ",".join(dirs))
        errors = self.incremental_alter_configs({target: [change]})
        if target in errors:
            raise KafkaOperationError(
                f"{'cordoning' if cordoned else 'uncordoning'} {', '.join(dirs)} on broker {broker} failed: "
                f"{errors[target]}"
            )


# ---- helpers ---------------------------------------------------------------------------------------


def _via_controller(py: Any, send: Callable[[], T]) -> Callable[[], T]:
    """``send``, a kafka-python request it routes to "the controller": with KRaft, the broker the metadata
    names as such, any live one, which forwards it to the quorum. When it fails (that broker does not
    answer this operator, say: a network that cuts us off from one broker must not fail every reconcile),
    the next attempt goes to the least loaded broker the client reaches (one just refused is in reconnect
    backoff, so not that one); kafka-python itself asks again on NOT_CONTROLLER (a ZooKeeper controller)."""

    def run() -> T:
        try:
            return send()
        except Exception:
            with contextlib.suppress(Exception):
                py._controller_id = py._manager.least_loaded_node()
            raise

    return run


def _from_metadata(metadata: Any) -> Iterable[tuple[str, int, Sequence[Any], Any, Sequence[Any]]]:
    """(topic, partition, replicas, leader, ISR) of every partition a Metadata response lists, sorted."""
    for topic, tmd in sorted(metadata.topics.items()):
        if tmd.error is not None:
            log.warning("skipping topic %s: %s", topic, tmd.error)
            continue
        for number, pmd in sorted(tmd.partitions.items()):
            yield topic, int(number), pmd.replicas, pmd.leader, pmd.isrs


def _config_bool(entry: ConfigValue | None) -> bool | None:
    """A boolean config entry's value; ``None``: absent (an older Kafka) or not a boolean."""
    value = None if entry is None or entry.value is None else entry.value.strip().lower()
    return {"true": True, "false": False}.get(value or "")


def _config_int(entry: ConfigValue | None) -> int | None:
    """An integer config entry's value; ``None``: absent or not an integer."""
    value = None if entry is None or entry.value is None else entry.value.strip()
    return int(value) if value and re.fullmatch(r"-?[0-9]{1,18}", value) else None


def _operations(authorized: Any) -> frozenset[str]:
    """The names of KIP-430 authorized operations (AclOperation values; None: none reported)."""
    return frozenset(str(getattr(op, "name", op)) for op in authorized or ())


__all__ = [  # the gateway's results and errors, importable from it
    "CORDON_CONFIG",
    "CORDON_METADATA_LEVEL",
    "LIBRDKAFKA_LOGGER",
    "ConfigChange",
    "ConfigTarget",
    "ConfigValue",
    "CordonUnsupportedError",
    "KafkaAuthenticationError",
    "KafkaAuthorizationError",
    "KafkaGateway",
    "KafkaOperationError",
    "KafkaUnavailableError",
    "KafkaUnsupportedError",
    "LogDirInfo",
    "OpError",
    "Reassignment",
    "ReplicaInDir",
    "kafka_python_admin",
]
