"""The cluster snapshot: brokers, racks, log dirs and partition placement (docs/architecture.md).

A ``ClusterSnapshot`` is the planner's only view of Kafka. It is produced by the Kafka gateway
(``kafka-placement snapshot``) or read from JSON, and validated strictly on the way in: every replica
sits on a known broker and on one of that broker's dirs, replicas are distinct, ``replicas`` and
``logDirs`` have the same length, the leader is a replica and the ISR a subset of the replicas.
A replica whose dir is not known (its broker is offline) has the dir ``None`` (JSON ``null``).
A broker that replicas name but that is not alive (fenced after a crash, or gone from the metadata) is
listed with ``alive: false`` (JSON: the field is written only then), no rack and no dirs: its replicas
are lost, and a move off it copies from a live in-sync replica. Liveness is the cluster's word (registered
and not fenced), never whether the reader reached the broker: a broker alive in the cluster whose log dirs
could not be read is *unreachable*, listed alive with no dirs (its replicas' dirs unknown, ``None``) and
named in the optional top-level ``unreachableBrokers``; such a snapshot is not planned from.
Broker ids and partition numbers are Kafka's non-negative int32s, byte counts signed 64-bit, topic
names legal Kafka names. A log dir's ``totalBytes`` is its volume's size (0: unknown) and ``usableBytes``
its free bytes: never negative, never more than a known size (the message names the broker and dir).
A partition's traffic, when it was sampled (``kafka-placement snapshot --traffic-window``), is in the
optional ``bytesInPerSec`` (a non-negative number) and ``readFanout`` (the number of consumer groups
reading it); an absent field means unknown, never zero, and stays absent when the snapshot is written
again (``None`` here).
A topic's remote storage (tiered storage, KIP-405) is in the optional top-level ``topics`` list, one entry
per topic whose config was read: ``remoteStorageEnable`` (its ``remote.storage.enable``) and
``localRetentionBytes`` / ``localRetentionMs`` (its ``local.retention.bytes`` / ``.ms``: -2 follows
``retention.*``, -1 unlimited); the optional ``followerFetchLastTieredOffset`` is the brokers'
``follower.fetch.last.tiered.offset.enable`` (KIP-1023). Absent means unknown. When that switch is on, a
partition of a remote-storage topic has the optional ``untieredBytes``: the bytes of its log after the last
tiered offset, what a new follower then copies (absent: not read).

A partition's ``sizeBytes`` is what its largest replica holds on its broker's disk (DescribeLogDirs counts
the local log only): for a remote-storage topic the tiered segments no longer on the broker are not in it.
``PartitionState.copy_bytes`` is the one definition of what a move copies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str  # (json.dumps' own)
from typing import Any

from .documents import load_json
from .errors import BadInputError
from .jsonio import (
    INT32_MAX,
    INT64_MAX,
    as_bool,
    as_int,
    as_int32,
    as_int32_list,
    as_list,
    as_number,
    as_object,
    as_replicas,
    as_str,
    as_topic,
    brief,
    brief_list,
    check_fields,
    check_unique,
    legal_topic,
    require,
)

SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class LogDir:
    """One JBOD log directory of a broker."""

    path: str
    total_bytes: int = 0
    usable_bytes: int = 0
    cordoned: bool = False
    online: bool = True


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker with its (possibly hierarchical, ``/dc1/r2``) rack and its log dirs."""

    id: int
    rack: str | None
    log_dirs: tuple[LogDir, ...]
    alive: bool = True  # False: registered but fenced, or named by replicas only (its replicas are lost)

    def dir(self, path: str) -> LogDir | None:
        for d in self.log_dirs:
            if d.path == path:
                return d
        return None

    @property
    def dir_paths(self) -> tuple[str, ...]:
        return tuple(d.path for d in self.log_dirs)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Current placement of one partition; ``replicas[0]`` is the preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str | None, ...]
    leader: int | None = None
    isr: tuple[int, ...] = ()
    size_bytes: int = 0
    bytes_in_per_sec: float | None = None  # None: unknown (not sampled)
    read_fanout: int | None = None  # consumer groups reading it; None: unknown
    # KIP-1023: the bytes of its log after the last tiered offset (what a new follower copies when the
    # brokers' follower.fetch.last.tiered.offset.enable is on); None: not read (switch off, not tiered)
    untiered_bytes: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def under_replicated(self) -> bool:
        return len(set(self.isr)) < len(self.replicas)

    @property
    def copy_bytes(self) -> int:
        """The bytes a new replica of this partition copies (a replica move to another broker, or to another
        dir of its broker): its local size, ``size_bytes``. For a topic with remote storage (KIP-405) that is
        what the leader still holds locally, not the topic's total: a new follower builds its remote-log
        state (leader epochs, producer snapshot) from the remote storage and fetches from the leader's
        local-log-start offset, so tiered segments are never copied. With
        ``follower.fetch.last.tiered.offset.enable`` (KIP-1023) it starts after the last tiered offset
        instead and copies less: only the bytes not tiered yet, ``untiered_bytes`` when the snapshot has
        it (read for the partitions of remote-storage topics when the switch is on: the log end offset
        minus the last tiered offset, KIP-1005, times the local log's bytes per offset), never more than
        the local size. Every byte count of movement (bytes to move, the lower bound, batches, progress
        and ETA) is a sum of this."""
        if self.untiered_bytes is None:
            return self.size_bytes
        return min(self.size_bytes, self.untiered_bytes)


@dataclass(frozen=True, slots=True)
class TopicStorage:
    """A topic's remote (tiered) storage settings as read from its config; ``None``: unknown."""

    topic: str
    remote: bool | None = None  # remote.storage.enable
    local_retention_bytes: int | None = None  # local.retention.bytes (-2: retention.bytes, -1: unlimited)
    local_retention_ms: int | None = None  # local.retention.ms (-2: retention.ms, -1: unlimited)


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """An immutable picture of a cluster; indexes are built once at construction, each snapshot its own
    (``dataclasses.replace(snapshot, partitions=...)`` gives a snapshot with the other fields kept, the
    topics' storage and KIP-1023's switch included, and indexes of its own partitions)."""

    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionState, ...]
    cluster_id: str | None = None
    topic_storage: tuple[TopicStorage, ...] = ()  # the topics whose storage config is known
    follower_fetch_last_tiered_offset: bool | None = None  # KIP-1023 on the brokers; None: unknown
    # alive in the cluster but their log dirs could not be read (listed alive, no dirs): not dead
    unreachable: tuple[int, ...] = ()
    _broker_index: dict[int, Broker] = field(init=False, repr=False, compare=False)
    _partition_index: dict[tuple[str, int], PartitionState] = field(init=False, repr=False, compare=False)
    _storage_index: dict[str, TopicStorage] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # not init fields: ``replace`` must not hand the new snapshot the old one's dicts to fill
        object.__setattr__(self, "_broker_index", {b.id: b for b in self.brokers})
        object.__setattr__(self, "_partition_index", {p.key: p for p in self.partitions})
        object.__setattr__(self, "_storage_index", {t.topic: t for t in self.topic_storage})

    def storage(self, topic: str) -> TopicStorage | None:
        """The topic's remote storage settings, if read."""
        return self._storage_index.get(topic)

    def remote_storage(self, topic: str) -> bool | None:
        """Whether the topic has remote (tiered) storage on; ``None``: unknown."""
        found = self._storage_index.get(topic)
        return None if found is None else found.remote

    def broker(self, broker_id: int) -> Broker | None:
        return self._broker_index.get(broker_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return self._partition_index.get((topic, partition))

    def at(self, key: tuple[str, int]) -> PartitionState | None:
        """``partition(*key)`` for a (topic, partition) key already made (the planner's hot paths)."""
        return self._partition_index.get(key)

    def keys(self) -> list[tuple[str, int]]:
        """Each partition's key, in order: the index's own tuples (a million partitions keyed by them
        once more, as the planner's state is, hold no second tuple each), ``p.key`` where two partitions
        share a key (a snapshot made in code, not parsed)."""
        index = self._partition_index
        return list(index) if len(index) == len(self.partitions) else [p.key for p in self.partitions]

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self._broker_index))

    def topics(self) -> tuple[str, ...]:
        return tuple(sorted({p.topic for p in self.partitions}))

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(self.partitions)

    # ---- JSON I/O -------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        doc = self.header_json()
        doc["partitions"] = [
            {
                "topic": p.topic,
                "partition": p.partition,
                "replicas": list(p.replicas),
                "logDirs": list(p.log_dirs),
                "leader": p.leader,
                "isr": list(p.isr),
                "sizeBytes": p.size_bytes,
                **_traffic_fields(p),
            }
            for p in self.partitions
        ]
        return doc

    def header_json(self) -> dict[str, Any]:
        """The snapshot's JSON with its partitions an empty list (``to_json``, ``dumps``, the Parquet
        snapshot's ``brokers.json``)."""
        doc: dict[str, Any] = {"version": SNAPSHOT_VERSION}
        if self.cluster_id is not None:
            doc["clusterId"] = self.cluster_id
        doc["brokers"] = [
            {
                "id": b.id,
                "rack": b.rack,
                **({} if b.alive else {"alive": False}),
                "logDirs": [
                    {
                        "path": d.path,
                        "totalBytes": d.total_bytes,
                        "usableBytes": d.usable_bytes,
                        "cordoned": d.cordoned,
                        "online": d.online,
                    }
                    for d in b.log_dirs
                ],
            }
            for b in self.brokers
        ]
        doc["partitions"] = []
        if self.topic_storage:
            doc["topics"] = [_storage_fields(t) for t in self.topic_storage]
        if self.follower_fetch_last_tiered_offset is not None:
            doc["followerFetchLastTieredOffset"] = self.follower_fetch_last_tiered_offset
        if self.unreachable:
            doc["unreachableBrokers"] = list(self.unreachable)
        return doc

    def dumps(self) -> str:
        """The snapshot file's text, ``json.dumps(snapshot.to_json(), indent=1)``: its partitions written
        entry by entry (json.dumps indents in Python, not in its C encoder: at a million partitions 14 s
        of building dicts and encoding them, against 2; docs/benchmarks.md, the CLI's plan end to end)."""
        return "".join(self.pieces())

    def pieces(self, per: int = 8192) -> Iterator[str]:
        """``dumps``'s text in pieces, each of at most ``per`` partitions' entries: what a writer writes one
        after the other, never holding the whole text (245 MB at a million partitions, and its copies)."""
        head = json.dumps(self.header_json(), indent=1)
        if not self.partitions:
            yield head
            return
        lists: dict[tuple[object, ...], str] = {}  # (partitions repeat a few dir lists: each encoded once)

        def listed(values: tuple[object, ...]) -> str:
            found = lists.get(values)
            if found is None:
                found = lists[values] = entry_list([_scalar(v) for v in values])
            return found

        def entry(p: PartitionState) -> str:
            leader = "null" if p.leader is None else int.__repr__(p.leader)
            more = ""
            if p.bytes_in_per_sec is not None:
                more += f',\n   "bytesInPerSec": {_scalar(p.bytes_in_per_sec)}'
            if p.read_fanout is not None:
                more += f',\n   "readFanout": {int.__repr__(p.read_fanout)}'
            if p.untiered_bytes is not None:
                more += f',\n   "untieredBytes": {int.__repr__(p.untiered_bytes)}'
            return (
                f'  {{\n   "topic": {_json_str(p.topic)},\n   "partition": {int.__repr__(p.partition)},\n'
                f'   "replicas": {listed(p.replicas)},\n   "logDirs": {listed(p.log_dirs)},\n'
                f'   "leader": {leader},\n   "isr": {listed(p.isr)},\n'
                f'   "sizeBytes": {int.__repr__(p.size_bytes)}{more}\n  }}'
            )

        marker = '\n "partitions": []'  # (once: a string holding it would have its newline escaped)
        at = head.index(marker)
        yield head[:at] + '\n "partitions": [\n'
        parts = self.partitions
        for start in range(0, len(parts), per):
            yield (",\n" if start else "") + ",\n".join(map(entry, parts[start : start + per]))
        yield "\n ]" + head[at + len(marker) :]

    @staticmethod
    def from_json(doc: object, source: str = "snapshot") -> ClusterSnapshot:
        return _parse_snapshot(doc, source)

    @staticmethod
    def loads(text: str, source: str = "snapshot") -> ClusterSnapshot:
        return _parse_snapshot(load_json(text, source), source)


def _scalar(value: object) -> str:
    """A string, an integer, a float or None as ``json.dumps`` writes it (``dumps``)."""
    if value is None:
        return "null"
    if type(value) is str:
        return _json_str(value)
    if type(value) is float:
        return json.dumps(value, allow_nan=False)  # (as json_text: a NaN is a bug, never written)
    return int.__repr__(value)  # (an int: the values of a partition are these four kinds)


def entry_list(items: list[str]) -> str:
    """A list inside an entry of a file's top-level list (a partition's replicas, a plan entry's dirs), as
    ``json.dumps(indent=1)`` writes it there, its items already encoded (``dumps`` and ``Plan.dumps``)."""
    return "[\n    " + ",\n    ".join(items) + "\n   ]" if items else "[]"


def _known(**fields: Any) -> dict[str, Any]:
    """The fields whose value is known (None: unknown, left out), in the order given."""
    return {k: v for k, v in fields.items() if v is not None}


def _traffic_fields(p: PartitionState) -> dict[str, Any]:
    """The traffic fields that are known (absent: unknown)."""
    return _known(bytesInPerSec=p.bytes_in_per_sec, readFanout=p.read_fanout, untieredBytes=p.untiered_bytes)


def _storage_fields(t: TopicStorage) -> dict[str, Any]:
    """A topic's entry of ``topics``: the fields that are known."""
    return _known(
        topic=t.topic,
        remoteStorageEnable=t.remote,
        localRetentionBytes=t.local_retention_bytes,
        localRetentionMs=t.local_retention_ms,
    )


_TOPIC_FIELDS = ("topic", "remoteStorageEnable", "localRetentionBytes", "localRetentionMs")
_BROKER_FIELDS = ("id", "rack", "logDirs", "alive")
_DIR_FIELDS = ("path", "totalBytes", "usableBytes", "cordoned", "online")
_PARTITION_FIELDS = frozenset(
    {
        "topic",
        "partition",
        "replicas",
        "logDirs",
        "leader",
        "isr",
        "sizeBytes",
        "bytesInPerSec",
        "readFanout",
        "untieredBytes",
    }
)


def _parse_dir(raw: object, where: str, broker: object = None) -> LogDir:
    """One log dir of broker ``broker`` (its id as read, for messages): a volume's usable bytes are
    never negative nor, when its size is known (``totalBytes`` > 0), more than its size."""
    obj = as_object(raw, where)
    check_fields(obj, where, _DIR_FIELDS)
    path = as_str(require(obj, "path", where), f"{where}.path")
    named = f"{where} (broker {brief(broker)} log dir {brief(path)})"
    total = as_int(obj.get("totalBytes", 0), f"{named}.totalBytes", minimum=0)
    usable = as_int(obj.get("usableBytes", 0), f"{named}.usableBytes", minimum=0)
    if total > 0 and usable > total:
        raise BadInputError(
            f"usableBytes {usable} exceeds totalBytes {total}: not a volume's free space",
            f"{named}.usableBytes",
        )
    return LogDir(
        path=path,
        total_bytes=total,
        usable_bytes=usable,
        cordoned=as_bool(obj.get("cordoned", False), f"{where}.cordoned"),
        online=as_bool(obj.get("online", True), f"{where}.online"),
    )


def _parse_broker(raw: object, where: str) -> Broker:
    obj = as_object(raw, where)
    check_fields(obj, where, _BROKER_FIELDS)
    rack_raw = obj.get("rack")
    rack = None if rack_raw is None else as_str(rack_raw, f"{where}.rack")
    broker = obj.get("id")
    dirs = tuple(
        _parse_dir(d, f"{where}.logDirs[{i}]", broker)
        for i, d in enumerate(as_list(obj.get("logDirs", []), where))
    )
    paths = [d.path for d in dirs]
    if len(set(paths)) != len(paths):
        raise BadInputError(f"duplicate log dir path in {brief_list(paths)}", f"{where}.logDirs")
    return Broker(
        id=as_int32(require(obj, "id", where), f"{where}.id"),
        rack=rack,
        log_dirs=dirs,
        alive=as_bool(obj.get("alive", True), f"{where}.alive"),
    )


def _parse_partition(raw: object, where: str, brokers: Mapping[int, Broker]) -> PartitionState:
    obj = as_object(raw, where)
    check_fields(obj, where, _PARTITION_FIELDS)
    topic = as_topic(require(obj, "topic", where), f"{where}.topic")
    number = as_int32(require(obj, "partition", where), f"{where}.partition")
    where = f"{where} ({topic}-{number})"
    replicas = as_replicas(require(obj, "replicas", where), f"{where}.replicas")
    dirs_raw = as_list(obj.get("logDirs", [None] * len(replicas)), f"{where}.logDirs")
    if len(dirs_raw) != len(replicas):
        raise BadInputError(
            f"has {len(dirs_raw)} entries but replicas has {len(replicas)}; they must match one to one",
            f"{where}.logDirs",
        )
    log_dirs: list[str | None] = []
    for i, (b, d) in enumerate(zip(replicas, dirs_raw, strict=True)):
        broker = brokers.get(b)
        if broker is None:
            raise BadInputError(f"replica on unknown broker {b}", f"{where}.replicas[{i}]")
        if d is None or d == "any":
            log_dirs.append(None)
            continue
        path = as_str(d, f"{where}.logDirs[{i}]")
        if broker.dir(path) is None:
            raise BadInputError(
                f"broker {b} has no log dir {brief(path)} (it has {brief_list(broker.dir_paths)})",
                f"{where}.logDirs[{i}]",
            )
        log_dirs.append(path)
    leader_raw = obj.get("leader")
    no_leader = leader_raw is None or (type(leader_raw) is int and leader_raw == -1)
    leader = None if no_leader else as_int32(leader_raw, f"{where}.leader")
    if leader is not None and leader not in replicas:
        raise BadInputError(
            f"leader {leader} is not one of the replicas {brief_list(replicas)}", f"{where}.leader"
        )
    isr = as_int32_list(obj.get("isr", list(replicas)), f"{where}.isr")
    stray = sorted(set(isr) - set(replicas))
    if stray:
        raise BadInputError(
            f"ISR members {brief_list(stray)} are not replicas {brief_list(replicas)}", f"{where}.isr"
        )
    return PartitionState(
        topic=topic,
        partition=number,
        replicas=replicas,
        log_dirs=tuple(log_dirs),
        leader=leader,
        isr=isr,
        size_bytes=as_int(obj.get("sizeBytes", 0), f"{where}.sizeBytes", minimum=0),
        bytes_in_per_sec=_rate(obj, where),
        read_fanout=_fanout(obj, where),
        untiered_bytes=_untiered(obj, where),
    )


def _fast_partition(
    obj: object, paths: Mapping[int, Mapping[str, str]], topics: dict[str, str], ids: Mapping[int, int]
) -> PartitionState | None:
    """The partition ``_parse_partition`` reads from ``obj`` when every field is plainly valid, without a
    location built for each field (at a million partitions those strings were most of the read); None
    when anything is odd (a missing or unknown field, a value of another type, out of range, an unknown
    broker or dir), and ``_parse_partition`` then says what, or accepts it (an integer subclass, a number
    too large for a float). ``paths``: each broker's dir paths (each mapped to itself); ``topics``: names
    already found legal, ``ids``: the brokers' ids (each mapped to itself).

    The partition holds one object per topic name, dir path and broker id (those of ``topics``, ``paths``
    and ``ids``) instead of the copies a parse makes of each: a million partitions of 2,000 topics on a
    thousand brokers took 739 MB instead of 1,417."""
    if type(obj) is not dict or not obj.keys() <= _PARTITION_FIELDS:
        return None
    topic, number, replicas = obj.get("topic"), obj.get("partition"), obj.get("replicas")
    if type(topic) is not str or type(number) is not int or not 0 <= number <= INT32_MAX:
        return None
    known = topics.get(topic)
    if known is None:
        if not legal_topic(topic):
            return None
        known = topics[topic] = topic
    if type(replicas) is not list or not all(type(b) is int and b in paths for b in replicas):
        return None
    n = len(replicas)
    if not n or len(set(replicas)) != n:
        return None
    if "logDirs" in obj:
        dirs = obj["logDirs"]
        if type(dirs) is not list or len(dirs) != n:
            return None
        log_dirs: list[str | None] = []
        for b, d in zip(replicas, dirs, strict=True):
            if d is None or d == "any":
                log_dirs.append(None)
            elif type(d) is str and (path := paths[b].get(d)) is not None:
                log_dirs.append(path)
            else:
                return None
    else:
        log_dirs = [None] * n
    leader = obj.get("leader")
    if leader is not None and not (type(leader) is int and (leader == -1 or leader in replicas)):
        return None
    isr = obj.get("isr", replicas)
    if type(isr) is not list or not all(type(b) is int and b in replicas for b in isr):
        return None
    size = obj.get("sizeBytes", 0)
    if type(size) is not int or not 0 <= size <= INT64_MAX:
        return None
    rate, fanout, untiered = obj.get("bytesInPerSec"), obj.get("readFanout"), obj.get("untieredBytes")
    if rate is not None:
        if type(rate) is int and 0 <= rate <= INT64_MAX:
            rate = float(rate)
        elif type(rate) is not float or not 0 <= rate < math.inf:  # (NaN compares false)
            return None
    if fanout is not None and not (type(fanout) is int and 0 <= fanout <= INT32_MAX):
        return None
    if untiered is not None and not (type(untiered) is int and 0 <= untiered <= INT64_MAX):
        return None
    reps = tuple(map(ids.__getitem__, replicas))
    return PartitionState(
        topic=known,
        partition=number,
        replicas=reps,
        log_dirs=tuple(log_dirs),
        leader=None if leader is None or leader == -1 else reps[replicas.index(leader)],
        isr=reps if isr == replicas else tuple(reps[replicas.index(b)] for b in isr),
        size_bytes=size,
        bytes_in_per_sec=rate,
        read_fanout=fanout,
        untiered_bytes=untiered,
    )


def _rate(obj: Mapping[str, Any], where: str) -> float | None:
    """``bytesInPerSec``: absent or null is unknown; present, a non-negative number."""
    value = obj.get("bytesInPerSec")
    return None if value is None else as_number(value, f"{where}.bytesInPerSec", minimum=0)


def _fanout(obj: Mapping[str, Any], where: str) -> int | None:
    """``readFanout``: absent or null is unknown; present, a non-negative count."""
    value = obj.get("readFanout")
    return None if value is None else as_int(value, f"{where}.readFanout", minimum=0, maximum=2**31 - 1)


def _untiered(obj: Mapping[str, Any], where: str) -> int | None:
    """``untieredBytes``: absent or null is not read; present, a non-negative byte count."""
    value = obj.get("untieredBytes")
    return None if value is None else as_int(value, f"{where}.untieredBytes", minimum=0)


def _retention(obj: Mapping[str, Any], name: str, where: str) -> int | None:
    """A local retention: absent or null is unknown; present, -2, -1 or a non-negative count."""
    value = obj.get(name)
    return None if value is None else as_int(value, f"{where}.{name}", minimum=-2)


def _parse_topic(raw: object, where: str) -> TopicStorage:
    obj = as_object(raw, where)
    check_fields(obj, where, _TOPIC_FIELDS)
    topic = as_topic(require(obj, "topic", where), f"{where}.topic")
    remote = obj.get("remoteStorageEnable")
    return TopicStorage(
        topic=topic,
        remote=None if remote is None else as_bool(remote, f"{where}.remoteStorageEnable"),
        local_retention_bytes=_retention(obj, "localRetentionBytes", where),
        local_retention_ms=_retention(obj, "localRetentionMs", where),
    )


def _parse_topics(raw: object, source: str) -> tuple[TopicStorage, ...]:
    topics = tuple(
        _parse_topic(t, f"{source}.topics[{i}]") for i, t in enumerate(as_list(raw, f"{source}.topics"))
    )
    check_unique(
        (t.topic for t in topics), lambda t: f"duplicate topic {brief(t)}", lambda i: f"{source}.topics[{i}]"
    )
    return topics


def _parse_snapshot(doc: object, source: str) -> ClusterSnapshot:
    obj = as_object(doc, source)
    fields = (
        "version",
        "clusterId",
        "brokers",
        "partitions",
        "topics",
        "followerFetchLastTieredOffset",
        "unreachableBrokers",
    )
    check_fields(obj, source, fields)
    version = as_int(obj.get("version", SNAPSHOT_VERSION), f"{source}.version")
    if version != SNAPSHOT_VERSION:
        raise BadInputError(f"unsupported snapshot version {version} (supported: {SNAPSHOT_VERSION})", source)
    brokers = tuple(
        _parse_broker(b, f"{source}.brokers[{i}]")
        for i, b in enumerate(as_list(require(obj, "brokers", source), f"{source}.brokers"))
    )
    check_unique(
        (b.id for b in brokers), "duplicate broker id {}".format, lambda i: f"{source}.brokers[{i}].id"
    )
    index = {b.id: b for b in brokers}
    paths = {b.id: {d: d for d in b.dir_paths} for b in brokers}
    topics: dict[str, str] = {}
    ids = {b.id: b.id for b in brokers}
    parts = tuple(
        _fast_partition(p, paths, topics, ids) or _parse_partition(p, f"{source}.partitions[{i}]", index)
        for i, p in enumerate(as_list(require(obj, "partitions", source), f"{source}.partitions"))
    )
    check_unique(
        (p.key for p in parts),
        lambda k: f"duplicate partition {k[0]}-{k[1]}",
        lambda i: f"{source}.partitions[{i}]",
    )
    cid = obj.get("clusterId")
    kip1023 = obj.get("followerFetchLastTieredOffset")
    unreachable = as_int32_list(obj.get("unreachableBrokers", []), f"{source}.unreachableBrokers")
    for i, b in enumerate(unreachable):
        if b not in index or not index[b].alive:
            raise BadInputError(
                f"broker {b} is not a listed live broker", f"{source}.unreachableBrokers[{i}]"
            )
    return ClusterSnapshot(
        brokers=brokers,
        partitions=parts,
        cluster_id=None if cid is None else as_str(cid, f"{source}.clusterId"),
        topic_storage=_parse_topics(obj.get("topics", []), source),
        follower_fetch_last_tiered_offset=(
            None if kip1023 is None else as_bool(kip1023, f"{source}.followerFetchLastTieredOffset")
        ),
        unreachable=tuple(sorted(set(unreachable))),
    )
