"""The lane-level guard: after every test on a shared Kafka rig, the cluster is back as the rig made it.

A test that fails (or passes but forgets its teardown) can leave state in a cluster that every later test
of its lane shares: replication throttles (broker rates, topics' throttled-replica lists), the operator's
throttle claims, cordoned log dirs (KIP-1066), reassignments in flight. One such leftover once failed six
later tests, each on its own "no throttle left" check (issue 51). ``tests/conftest.py`` runs ``inspect`` and
``restore`` after each test that uses the main, legacy or secure cluster (the operator of the test is
stopped by then: the guard is finalized after the test's own fixtures), whether the test passed or not,
and reports what it had to clean: in the test's warnings and in the session's closing summary, because a
leftover is itself a finding about the test that left it.

What counts as left behind is only what no rig sets: any dynamic broker value of the throttle rates, of
``cordoned.log.dirs`` and of the operator's claims (``kafka.placement.throttles.*``), any dynamic
``*.throttled.replicas`` of a topic, and any reassignment in flight. Topics are each test's own (unique
names, deleted by the ``new_topic`` fixture) and not touched here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import CORDON_CONFIG, ConfigChange, ConfigTarget, KafkaGateway
from kafka_placement.kafka.throttles import (
    CLAIM_PREFIX,
    DIR_RATE,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
)
from kafka_placement.kafka.types import KafkaOperationError

BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE, DIR_RATE, CORDON_CONFIG)
TOPIC_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
SETTLE_S = 30.0  # configs reach every broker asynchronously (KRaft): the restore is read back until then
LIST_ATTEMPTS = 3  # topics listed and their configs read, again when one was deleted in between


@dataclass
class Leftovers:
    """What a test left in one cluster: config entries (``kind name key`` -> value) and reassignments."""

    configs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    reassignments: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.configs or self.reassignments)

    def __str__(self) -> str:
        parts = [
            f"{kind} {name} {key}={value[:60]!r}" for (kind, name, key), value in sorted(self.configs.items())
        ]
        if self.reassignments:
            shown = ", ".join(self.reassignments[:5])
            more = f" and {len(self.reassignments) - 5} more" if len(self.reassignments) > 5 else ""
            parts.append(f"{len(self.reassignments)} reassignment(s) in flight ({shown}{more})")
        return "; ".join(parts)


def inspect(gw: KafkaGateway) -> Leftovers:
    """Every leftover of the cluster behind ``gw`` (its live brokers and all its topics)."""
    found = Leftovers()
    brokers = [ConfigTarget.broker(b) for b in gw.broker_ids()]
    for attempt in range(1, LIST_ATTEMPTS + 1):
        topics = [ConfigTarget.topic(t) for t in sorted(gw.partition_counts()) if not t.startswith("__")]
        try:
            described = gw.describe_configs([*brokers, *topics])
            break
        except KafkaOperationError as e:
            # a topic deleted between the list and the read (the test's own teardown, just before): the
            # topics are listed again (seen in a cold run: the guard failed a test that had passed)
            if "Unknown topic" not in e.message or attempt == LIST_ATTEMPTS:
                raise
            time.sleep(0.5)
    for target, entries in described.items():
        for key, entry in entries.items():
            wanted = BROKER_KEYS if target.kind == "broker" else TOPIC_KEYS
            claim = target.kind == "broker" and key.startswith(CLAIM_PREFIX)  # its value reads as null
            if (key in wanted and entry.is_dynamic and entry.value) or claim:
                found.configs[(target.kind, target.name, key)] = entry.value or "(claim)"
    found.reassignments = [f"{t}-{p}" for t, p in sorted(gw.list_reassignments())]
    return found


def restore(gw: KafkaGateway, found: Leftovers) -> Leftovers:
    """Cancel the reassignments in flight, delete the leftover entries, and read the cluster again until it
    is clean (at most ``SETTLE_S``); returns what is still there then (nothing, normally)."""
    if found.reassignments:
        gw.alter_reassignments({_key(r): None for r in found.reassignments})
    changes: dict[ConfigTarget, list[ConfigChange]] = {}
    for kind, name, key in found.configs:
        target = ConfigTarget.broker(int(name)) if kind == "broker" else ConfigTarget.topic(name)
        changes.setdefault(target, []).append(ConfigChange(key, "DELETE"))
    gw.incremental_alter_configs(changes)
    deadline = time.monotonic() + SETTLE_S
    while (left := inspect(gw)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _key(name: str) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


@dataclass
class Guard:
    """The reports of one pytest session: test id -> what was cleaned after it (and what could not be)."""

    cleaned: dict[str, str] = field(default_factory=dict)

    def check(
        self, test: str, cluster: str, settings: ConnectionSettings, warn: Callable[[str], None]
    ) -> None:
        with KafkaGateway(settings) as gw:
            found = inspect(gw)
            if not found:
                return
            left = restore(gw, found)
        line = f"{cluster}: {found}" + (f" -- STILL THERE after {SETTLE_S:.0f}s: {left}" if left else "")
        self.cleaned[test] = f"{self.cleaned[test]}; {line}" if test in self.cleaned else line
        warn(f"cluster guard cleaned after this test: {line}")

    def summary(self) -> list[str]:
        if not self.cleaned:
            return ["cluster guard: every shared cluster was clean after every test"]
        return [f"cluster guard: cleaned after {len(self.cleaned)} test(s):"] + [
            f"  {test}: {line}" for test, line in sorted(self.cleaned.items())
        ]
