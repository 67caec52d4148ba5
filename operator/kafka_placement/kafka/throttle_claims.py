"""Throttle claims: the operator's throttles recognised in Kafka itself, and removed once their owner is gone.

An execution's throttles are owned state: its record keeps what it set and what was there before, and
removes exactly that when it ends (kafka/throttles.py). A record can disappear without ending: its
KafkaCluster's namespace deleted while no operator ran (the garbage collector takes the record's
ConfigMaps, the finalizer never runs). Its throttles would then stay in Kafka for good, slowing every
later reassignment by anyone. So every broker whose rates an operator execution sets also carries a
*claim*: a dynamic broker config set in the same request as the rates and deleted with them, whose name
(kafka/throttles.py ``claim_key``) holds the KafkaCluster (namespace, name, uid) and each rate's value
before it was set: ``kafka.placement.throttles/<namespace>/<name>/<uid>[/<config>@<previous>]...``. The
name, because Kafka accepts a dynamic broker config it does not know but describes its value as null (a
config of unknown type may be a password).

``find_claims`` reads them (one DescribeConfigs per live broker, as part of an idle cluster's full read);
the caller decides which owners are gone — only from the Kubernetes API's answer (the KafkaCluster absent,
or present with another uid): an owner it cannot read is never taken for gone — and ``release`` puts a
gone owner's brokers back: each rate restored to the value the claim recorded (deleted when there was
none), the claim deleted, and the ``partition:broker`` entries naming those brokers removed from the
topics' ``*.throttled.replicas`` (one DescribeConfigs of the topics: a rare path, run once per orphan).
Nothing is released while any reassignment is in flight (the orphan's own moves finish throttled, as
they were started). A rate that a live claim on the same broker also holds is left to its live owner, who
puts back the value it found (the orphan's): the orphan's claim stays for that rate, so a later sweep
restores what was there before both.
CLI executions write no claim: ``execute --resume`` or ``cancel`` ends them and clears their throttles.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from ..model.throttle_state import ClaimOwner
from .gateway import ConfigChange, ConfigTarget, KafkaGateway
from .throttles import (
    CLAIM_PREFIX,
    CLAIM_VALUE,
    DIR_RATE,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    claim_key,
    config_entries,
    is_claim,
)

log = logging.getLogger(__name__)
RATES = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE)  # what a claim may say was there before


@dataclass(frozen=True, slots=True)
class Claim:
    """One broker's claim: its config name, its owner, and the rates it covers with their previous values
    (None: the rate was not set)."""

    broker: int
    key: str
    owner: ClaimOwner
    previous: dict[str, str | None] = field(hash=False)


def parse_claim(broker: int, key: str) -> Claim | None:
    """The claim a broker config's name holds, None when it is not a well-formed claim (left alone)."""
    if not is_claim(key):
        return None
    parts = key[len(CLAIM_PREFIX) :].split("/")
    if len(parts) < 3:
        return None
    try:
        owner = ClaimOwner(namespace=parts[0], name=parts[1], uid=parts[2])
    except ValidationError:
        return None
    previous: dict[str, str | None] = {}
    for part in parts[3:]:
        config, at, value = part.partition("@")
        if config not in RATES or not at or (value and not value.isdigit()) or config in previous:
            return None
        previous[config] = value or None
    return Claim(broker, key, owner, previous) if previous else None


def find_claims(gateway: KafkaGateway, brokers: Iterable[int]) -> list[Claim]:
    """Every claim on ``brokers`` (the live ones: a broker answers for its own configs)."""
    targets = [ConfigTarget.broker(b) for b in sorted(set(brokers))]
    found: list[Claim] = []
    for target, entries in gateway.describe_configs(targets).items():
        for key in entries:
            if is_claim(key):
                claim = parse_claim(int(target.name), key)
                if claim is None:
                    log.warning(
                        "broker %s: config %s is not a well-formed throttle claim: left alone",
                        target.name,
                        key,
                    )
                else:
                    found.append(claim)
    return found


@dataclass(frozen=True, slots=True)
class Released:
    """What ``release`` removed, for the Event and the log; ``deferred`` says why nothing was, if so."""

    owners: tuple[str, ...] = ()
    brokers: tuple[int, ...] = ()
    configs: tuple[str, ...] = ()
    topic_entries: int = 0
    deferred: str | None = None

    def __str__(self) -> str:
        if self.deferred:
            return self.deferred
        return (
            f"throttles of {', '.join(self.owners)} (gone) removed from broker(s) "
            f"{', '.join(map(str, self.brokers))}: {', '.join(self.configs)}; "
            f"{self.topic_entries} throttled-replica entr{'y' if self.topic_entries == 1 else 'ies'} removed"
        )


def release(gateway: KafkaGateway, claims: Sequence[Claim], gone: set[str]) -> Released | None:
    """Remove the throttles of the claims whose owner uid is in ``gone`` (see the module docstring);
    None when there is none."""
    orphans = [c for c in claims if c.owner.uid in gone]
    if not orphans:
        return None
    owners = tuple(sorted({f"KafkaCluster {c.owner.namespace}/{c.owner.name}" for c in orphans}))
    if in_flight := gateway.list_reassignments():
        return Released(owners=owners, deferred=f"throttles of {', '.join(owners)} (gone) kept while "
                        f"{len(in_flight)} reassignment(s) are in flight")  # fmt: skip
    live_held = {(c.broker, k) for c in claims if c.owner.uid not in gone for k in c.previous}
    changes: dict[ConfigTarget, list[ConfigChange]] = {}
    configs: list[str] = []
    for c in orphans:
        target = ConfigTarget.broker(c.broker)
        kept: dict[str, str | None] = {}
        for name, previous in sorted(c.previous.items()):
            if (c.broker, name) in live_held:
                # a live owner set it since: it puts back the value it found (ours), so the claim stays
                # for this config and a later sweep restores what was there before both
                kept[name] = previous
                continue
            op = ConfigChange(name, "SET", previous) if previous is not None else ConfigChange(name, "DELETE")
            changes.setdefault(target, []).append(op)
            configs.append(f"{c.broker}:{name}")
        if kept == c.previous:
            continue  # all of it is held by a live owner: nothing changes here yet
        changes.setdefault(target, []).append(ConfigChange(c.key, "DELETE"))
        if kept:  # the claim now covers those rates only
            changes[target].append(ConfigChange(claim_key(c.owner, kept), "SET", CLAIM_VALUE))
    if not changes:
        return Released(owners=owners, deferred=f"throttles of {', '.join(owners)} (gone) kept: live owners "
                        "set the same rates since, and put back what they found")  # fmt: skip
    orphan_brokers = {c.broker for c in orphans} - {b for b, _ in live_held}
    entries = _topic_entries(gateway, orphan_brokers) if orphan_brokers else {}
    for target, per_config in entries.items():
        changes.setdefault(target, []).extend(
            ConfigChange(name, "SUBTRACT", ",".join(values)) for name, values in per_config.items()
        )
    errors = gateway.incremental_alter_configs(changes)
    errors = {
        t: e for t, e in errors.items() if not (t.kind == "topic" and e.code == "UNKNOWN_TOPIC_OR_PARTITION")
    }
    if errors:
        failed = "; ".join(
            f"{t.kind} {t.name}: {e}" for t, e in sorted(errors.items(), key=lambda i: str(i[0]))
        )
        return Released(
            owners=owners, deferred=f"removing the throttles of {', '.join(owners)} failed: {failed}"
        )
    return Released(
        owners=owners,
        brokers=tuple(sorted({c.broker for c in orphans})),
        configs=tuple(configs),
        topic_entries=sum(len(v) for per in entries.values() for v in per.values()),
    )


def _topic_entries(gateway: KafkaGateway, brokers: set[int]) -> dict[ConfigTarget, dict[str, list[str]]]:
    """topic -> throttled-replicas config -> its ``partition:broker`` entries naming one of ``brokers``."""
    topics = [ConfigTarget.topic(t) for t in sorted(gateway.partition_counts())]
    out: dict[ConfigTarget, dict[str, list[str]]] = {}
    for target, described in gateway.describe_configs(topics).items():
        for name in (LEADER_REPLICAS, FOLLOWER_REPLICAS):
            entry = described.get(name)
            if entry is None or not entry.is_dynamic:
                continue
            named = [
                e
                for e in config_entries(entry.value)
                if e.rpartition(":")[2].isdigit() and int(e.rpartition(":")[2]) in brokers
            ]
            if named:
                out.setdefault(target, {})[name] = named
    return out
