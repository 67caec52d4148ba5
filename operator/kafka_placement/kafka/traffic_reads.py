"""The Kafka reads behind a traffic look (``KafkaGateway.traffic_look``): every partition's earliest and
latest offsets, the topics' ids and every consumer group's committed offsets.

Each read goes through the gateway's ``call`` (bounded retries, failures mapped like every other: an
unreachable cluster is ``KafkaUnavailableError``, a denial ``KafkaAuthorizationError``). The cost follows
the partitions and the groups: ListOffsets in batches of ``OFFSET_BATCH`` partitions (librdkafka sends one
request per leader of a batch), DescribeTopics in batches of ``TOPIC_BATCH`` topics, one
OffsetFetch per consumer group (Kafka's admin API reads one group per request), ``GROUP_BATCH`` groups
in flight at once. A partition whose offsets Kafka refuses (deleted meanwhile, leader moving) and a group
whose offsets cannot be read (being deleted, its coordinator moving) are left out of the look, which the
estimates treat as unknown for that look, never as zero.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
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
    admin: Callable[[], Any], call: Call, partitions: Sequence[PartitionKey], timeout_s: float
) -> dict[PartitionKey, tuple[int, int]]:
    """(earliest, latest) offset of each of ``partitions`` whose offsets Kafka gave."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    out: dict[PartitionKey, tuple[int, int]] = {}
    for batch in _batches(sorted(partitions), OFFSET_BATCH):

        def run(batch: Sequence[PartitionKey] = batch) -> dict[PartitionKey, tuple[int, int]]:
            got: dict[str, dict[PartitionKey, int]] = {}
            failed = Failures()
            specs: tuple[tuple[str, Any], ...] = (
                ("earliest", OffsetSpec.earliest()),  # type: ignore[no-untyped-call]
                ("latest", OffsetSpec.latest()),  # type: ignore[no-untyped-call]
            )
            for name, spec in specs:
                request = {TopicPartition(t, p): spec for t, p in batch}
                futures = admin().list_offsets(request, request_timeout=timeout_s)
                got[name] = {}
                for tp, f in futures.items():
                    try:
                        got[name][(tp.topic, tp.partition)] = int(f.result().offset)
                    except KafkaException as e:
                        failed.add(e, f"list offsets of {tp.topic}-{tp.partition}")
                failed.check(len(got[name]))
            return {k: (v, got["latest"][k]) for k, v in got["earliest"].items() if k in got["latest"]}

        needs = access.on_topics(sorted({t for t, _ in batch}))
        out.update(call(f"list offsets of {len(batch)} partitions", run, needs=needs))
    return out


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
