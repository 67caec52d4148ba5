"""The Kafka reads behind a traffic look (``KafkaGateway.traffic_look``): every partition's earliest and
latest offsets, the topics' ids and every consumer group's committed offsets.

Each read goes through the gateway's ``call`` (bounded retries, failures mapped like every other: an
unreachable cluster is ``KafkaUnavailableError``, a denial ``KafkaAuthorizationError``). The cost follows
the partitions and the groups: ListOffsets in batches of ``OFFSET_BATCH`` partitions (librdkafka sends one
request per leader of a batch), DescribeTopics in batches of ``TOPIC_BATCH`` topics, one
OffsetFetch per consumer group (Kafka's admin API reads one group per request), ``GROUP_BATCH`` groups
in flight at once. A partition whose leader is moving (just elected: a look taken right after an
execution) is asked again a few times, a few seconds at most. A partition whose offsets Kafka refuses
(deleted meanwhile, its leader still moving) and a group
whose offsets cannot be read (being deleted, its coordinator moving) are left out of the look, which the
estimates treat as unknown for that look, never as zero.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..model.traffic_looks import PartitionKey
from . import access, failures
from .types import DENIED

log = logging.getLogger(__name__)

T = TypeVar("T")


class Call(Protocol):
    """The gateway's ``_call``: bounded retries, failures mapped (``needs``: the grant a denial lacks)."""

    def __call__(
        self, what: str, fn: Callable[[], T], attempts: int | None = None, needs: str | None = None
    ) -> T: ...


OFFSET_BATCH = 1000
TOPIC_BATCH = 500
GROUP_BATCH = 32
# A partition's leader is moving (just elected, or the client's metadata older than the election):
# ListOffsets answers these for a while after a reassignment or an election (on the rig, 0.5 s at most
# idle; longer under load), so the partition is asked again rather than left out of the look.
LEADER_MOVING = frozenset(
    {
        "NOT_LEADER_FOR_PARTITION",  # librdkafka's name of NOT_LEADER_OR_FOLLOWER
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "OFFSET_NOT_AVAILABLE",  # a new leader whose high watermark is not yet known (KIP-207)
        "UNKNOWN_LEADER_EPOCH",
        "FENCED_LEADER_EPOCH",
        "REPLICA_NOT_AVAILABLE",
    }
)
STALE_EPOCH = frozenset({"FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_FOR_PARTITION"})
LEADER_TRIES = 6  # asked again 0.2 to 3.2 s apart: at most 6.2 s of waiting, only for moving leaders
LEADER_BACKOFF_S = 0.2
REFRESH_TOPICS = 32  # more topics to read again: one metadata request for all
NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: the group has no committed offset there


def _batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _code(e: Exception) -> str:
    err: Any = e.args[0] if e.args else None
    return str(err.name()) if hasattr(err, "name") else type(e).__name__


class Failures:
    """The per-item failures of one request: those that concern the cluster (unreachable) or the
    principal (denied) are raised at once, to the gateway's ``call`` that maps them; the others leave
    their item out, unless every item failed (then the first is raised: ``call`` retries it)."""

    def __init__(self) -> None:
        self.first: Exception | None = None

    def add(self, e: Exception, what: str) -> None:
        code = _code(e)
        if code in failures.UNREACHABLE or code.endswith(DENIED):
            raise e
        log.debug("%s: %s, left out of this look", what, code)
        self.first = self.first or e

    def check(self, succeeded: int) -> None:
        if self.first is not None and not succeeded:
            raise self.first


def list_offsets(
    admin: Callable[[], Any],
    call: Call,
    partitions: Sequence[PartitionKey],
    timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[PartitionKey, tuple[int, int]]:
    """(earliest, latest) offset of each of ``partitions`` whose offsets Kafka gave. A partition whose
    leader is moving (``LEADER_MOVING``) is asked again, alone with the others that were, up to
    ``LEADER_TRIES`` times ``LEADER_BACKOFF_S`` doubling apart, the client's metadata of its topic read
    again first (see ``_ask_again``); still moving after that, it is left out of the look."""
    out: dict[PartitionKey, tuple[int, int]] = {}
    for batch in _batches(sorted(partitions), OFFSET_BATCH):

        def run(batch: Sequence[PartitionKey] = batch) -> dict[PartitionKey, tuple[int, int]]:
            found: dict[PartitionKey, tuple[int, int]] = {}
            failed = Failures()
            pending: Sequence[PartitionKey] = batch
            moving: dict[PartitionKey, Exception] = {}
            for attempt in range(LEADER_TRIES):
                if attempt:
                    _ask_again(admin(), moving, timeout_s)
                    sleep(LEADER_BACKOFF_S * 2 ** (attempt - 1))
                moving = _offsets(admin(), pending, timeout_s, found, failed)
                pending = sorted(moving)
                if not pending:
                    break
            for (t, p), e in moving.items():
                failed.add(e, f"list offsets of {t}-{p} (its leader still moving)")
            failed.check(len(found))
            return found

        needs = access.on_topics(sorted({t for t, _ in batch}))
        out.update(call(f"list offsets of {len(batch)} partitions", run, needs=needs))
    return out


def _offsets(
    client: Any,
    keys: Sequence[PartitionKey],
    timeout_s: float,
    found: dict[PartitionKey, tuple[int, int]],
    failed: Failures,
) -> dict[PartitionKey, Exception]:
    """One ListOffsets round (earliest, then latest) of ``keys``: the offsets Kafka gave go in ``found``,
    an item's own failure in ``failed``; returns the partitions whose leader is moving, with their error."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    got: dict[str, dict[PartitionKey, int]] = {}
    moving: dict[PartitionKey, Exception] = {}
    specs: tuple[tuple[str, Any], ...] = (
        ("earliest", OffsetSpec.earliest()),  # type: ignore[no-untyped-call]
        ("latest", OffsetSpec.latest()),  # type: ignore[no-untyped-call]
    )
    for name, spec in specs:
        asked = [k for k in keys if k not in moving]
        got[name] = {}
        if not asked:
            continue
        futures = client.list_offsets(
            {TopicPartition(t, p): spec for t, p in asked}, request_timeout=timeout_s
        )
        for tp, f in futures.items():
            key = (tp.topic, tp.partition)
            try:
                got[name][key] = int(f.result().offset)
            except KafkaException as e:
                if _code(e) in LEADER_MOVING:
                    moving[key] = e
                else:
                    failed.add(e, f"list offsets of {tp.topic}-{tp.partition}")
    found.update({k: (v, got["latest"][k]) for k, v in got["earliest"].items() if k in got["latest"]})
    return moving


def _ask_again(client: Any, moving: Mapping[PartitionKey, Exception], timeout_s: float) -> None:
    """The client's metadata of the moving partitions' topics read again (all topics' past
    ``REFRESH_TOPICS``): librdkafka's admin client keeps a leader epoch it was given, and a leader
    elected since answers FENCED_LEADER_EPOCH to every request naming it until the client reads its
    metadata again (on the rig: for the whole 20 s watched; its periodic refresh comes every 5 minutes by
    default). A read of the topic's metadata cures it at once (measured)."""
    from confluent_kafka import KafkaException

    if not any(_code(e) in STALE_EPOCH for e in moving.values()):
        return
    topics = sorted({t for t, _ in moving})
    try:
        if len(topics) > REFRESH_TOPICS:
            client.list_topics(timeout=timeout_s)
        else:
            for topic in topics:
                client.list_topics(topic=topic, timeout=timeout_s)
    except KafkaException as e:  # the next round's answer says what is wrong
        log.debug("metadata of %d topics not read again: %s", len(topics), e)


def topic_ids(
    admin: Callable[[], Any], call: Call, topics: Sequence[str], timeout_s: float
) -> dict[str, str]:
    """Each topic's id (a topic created again under the same name has a new one)."""
    from confluent_kafka import KafkaException, TopicCollection

    out: dict[str, str] = {}
    for batch in _batches(sorted(set(topics)), TOPIC_BATCH):

        def run(batch: Sequence[str] = batch) -> dict[str, str]:
            futures = admin().describe_topics(TopicCollection(list(batch)), request_timeout=timeout_s)
            ids: dict[str, str] = {}
            failed = Failures()
            for name, f in futures.items():
                try:
                    ids[name] = str(f.result().topic_id)
                except KafkaException as e:
                    failed.add(e, f"describe topic {name}")
            failed.check(len(ids))
            return ids

        out.update(call(f"describe {len(batch)} topics (ids)", run, needs=access.on_topics(batch)))
    return out


def committed_offsets(
    admin: Callable[[], Any], call: Call, timeout_s: float
) -> dict[str, dict[PartitionKey, int]]:
    """Every consumer group's committed offsets (the groups the principal may describe; a group with
    no committed offset is there with none)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

    def listing() -> list[str]:
        result = admin().list_consumer_groups(request_timeout=timeout_s).result()
        for e in result.errors or ():
            log.info("listing consumer groups: %s (some groups may be missing from this look)", e)
        return sorted({str(g.group_id) for g in result.valid or ()})

    groups = call("list consumer groups", listing)
    out: dict[str, dict[PartitionKey, int]] = {}
    for batch in _batches(groups, GROUP_BATCH):

        def run(batch: Sequence[str] = batch) -> dict[str, dict[PartitionKey, int]]:
            futures = {
                g: admin().list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(g)], request_timeout=timeout_s
                )[g]
                for g in batch
            }
            read: dict[str, dict[PartitionKey, int]] = {}
            failed = Failures()
            for g, f in futures.items():
                try:
                    tps = f.result().topic_partitions or ()
                except KafkaException as e:
                    if _code(e).endswith(DENIED):  # listed yet not describable: unread, not a failure
                        log.debug("offsets of group %s: %s", g, _code(e))
                        continue
                    failed.add(e, f"read the committed offsets of group {g}")
                    continue
                read[g] = {
                    (tp.topic, int(tp.partition)): int(tp.offset)
                    for tp in tps
                    if tp.error is None and int(tp.offset) >= 0
                }
            failed.check(len(read))
            return read

        out.update(call(f"read the committed offsets of {len(batch)} groups", run))
    return out
