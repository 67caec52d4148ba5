"""Replication throttles as owned state (docs/architecture.md §5), applied through the ``KafkaGateway``.

For a set of moves, ``apply_throttles`` sets ``leader/follower.replication.throttled.rate`` on every broker
involved (and ``replica.alter.log.dirs.io.max.bytes.per.second`` on brokers with log-dir moves), appends
``partition:broker`` entries to the topics' ``leader.replication.throttled.replicas`` (current replicas)
and ``follower.replication.throttled.replicas`` (replicas being added) — Kafka's own reassign-tool rule —
and returns a ``ThrottleState`` saying what it set and what was there before. ``clear_throttles`` restores
exactly that: previous broker values come back (or are deleted when there were none), only our
``*.throttled.replicas`` entries are removed. Entries or values this tool did not set are never touched:
an entry that was already there is not recorded, a topic throttled with ``*`` is left alone.
The state is JSON-serializable so an executor can keep it with its resource and resume after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .gateway import (
    ConfigChange,
    ConfigTarget,
    KafkaGateway,
    KafkaOperationError,
    OpError,
)

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"


class ThrottleError(KafkaOperationError):
    """Setting or removing throttles failed for some resources; ``state`` is what may now be set."""

    def __init__(self, message: str, state: ThrottleState) -> None:
        super().__init__(message)
        self.state = state


@dataclass(frozen=True, slots=True)
class Move:
    """One partition's move: current and target replica lists (same lists = a log-dir move only) and its
    own throttle rate (None: the rate given to ``apply_throttles``)."""

    topic: str
    partition: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    rate: int | None = None


@dataclass(frozen=True, slots=True)
class ThrottleState:
    """What ``apply_throttles`` set: per broker config the previous dynamic value (None = unset), per
    topic config the ``partition:broker`` entries it appended."""

    brokers: tuple[tuple[int, str, str | None], ...] = ()
    topics: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.topics

    def to_json(self) -> dict[str, Any]:
        return {
            "brokers": [{"broker": b, "config": c, "previous": p} for b, c, p in self.brokers],
            "topics": [{"topic": t, "config": c, "entries": list(e)} for t, c, e in self.topics],
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> ThrottleState:
        return ThrottleState(
            brokers=tuple(
                (int(d["broker"]), str(d["config"]), d.get("previous")) for d in doc.get("brokers", [])
            ),
            topics=tuple(
                (str(d["topic"]), str(d["config"]), tuple(str(e) for e in d["entries"]))
                for d in doc.get("topics", [])
            ),
        )


def throttled_replicas(moves: Iterable[Move]) -> dict[str, dict[str, list[str]]]:
    """topic -> {leader/follower throttled-replicas config -> ``partition:broker`` entries} for ``moves``:
    leaders throttle the current replicas, followers the replicas being added."""
    out: dict[str, dict[str, list[str]]] = {}
    for m in moves:
        adding = [b for b in m.target if b not in m.current]
        if not adding:
            continue  # a reorder or a log-dir move: no inter-broker replication
        per_topic = out.setdefault(m.topic, {LEADER_REPLICAS: [], FOLLOWER_REPLICAS: []})
        per_topic[LEADER_REPLICAS].extend(f"{m.partition}:{b}" for b in m.current)
        per_topic[FOLLOWER_REPLICAS].extend(f"{m.partition}:{b}" for b in adding)
    return out


def apply_throttles(
    gateway: KafkaGateway,
    moves: Sequence[Move],
    rate: int | None,
    *,
    dir_rate: int | None = None,
    dir_move_brokers: Iterable[int] = (),
    state: ThrottleState | None = None,
    before_alter: Callable[[ThrottleState], None] | None = None,
) -> ThrottleState:
    """Throttle ``moves`` at their own rate or ``rate`` bytes/s (a broker in several moves gets the lowest;
    moves with neither are left unthrottled), dir moves at ``dir_rate`` on ``dir_move_brokers``; extends
    and returns ``state`` (pass the one from a previous call or a restart so previous values stay ours).

    ``before_alter`` gets the extended state before anything is changed in Kafka: the caller records it
    durably there (write-ahead), so a crash during or after the alter leaves nothing it cannot clear.
    Clearing a recorded state that was never applied is harmless: previous values are restored as they
    were read, and subtracting absent entries changes nothing. If ``before_alter`` raises, nothing is
    altered."""
    rates = [r for r in (rate, dir_rate, *(m.rate for m in moves)) if r is not None]
    if any(r <= 0 for r in rates):
        raise ValueError("throttle rates must be positive")
    state = state or ThrottleState()
    moves = [m for m in moves if (m.rate or rate) is not None]
    wanted: dict[int, dict[str, str]] = {}
    lowest: dict[int, int] = {}
    replicas = throttled_replicas(moves)
    for m in moves:
        move_rate = m.rate or rate
        assert move_rate is not None  # filtered above
        if any(b not in m.current for b in m.target):
            for b in (*m.current, *m.target):
                lowest[b] = min(lowest.get(b, move_rate), move_rate)
    for b, r in lowest.items():
        wanted.setdefault(b, {}).update({LEADER_RATE: str(r), FOLLOWER_RATE: str(r)})
    if dir_rate is not None:
        for b in dir_move_brokers:
            wanted.setdefault(b, {})[DIR_RATE] = str(dir_rate)

    known = {(b, c) for b, c, _ in state.brokers}
    targets = [ConfigTarget.broker(b) for b in sorted(wanted)]
    targets += [ConfigTarget.topic(t) for t in sorted(replicas)]
    described = gateway.describe_configs(targets) if targets else {}

    brokers = list(state.brokers)
    for b, configs in sorted(wanted.items()):
        current = described[ConfigTarget.broker(b)]
        for name in configs:
            if (b, name) not in known:
                was = current.get(name)
                brokers.append((b, name, was.value if was is not None and was.is_dynamic else None))

    recorded = {(t, c): set(e) for t, c, e in state.topics}
    topic_changes: dict[ConfigTarget, list[ConfigChange]] = {}
    for topic, per_config in replicas.items():
        target = ConfigTarget.topic(topic)
        for name, entries in per_config.items():
            was = described[target].get(name)
            present = set(_entries(was.value if was is not None else None))
            if "*" in present:
                continue  # someone throttles every replica of this topic already: not ours to change
            new = [e for e in dict.fromkeys(entries) if e not in present]
            if new:
                topic_changes.setdefault(target, []).append(ConfigChange(name, "APPEND", ",".join(new)))
                recorded.setdefault((topic, name), set()).update(new)

    broker_changes = {
        ConfigTarget.broker(b): [ConfigChange(n, "SET", v) for n, v in sorted(configs.items())]
        for b, configs in wanted.items()
    }
    new_state = ThrottleState(
        brokers=tuple(brokers),
        topics=tuple((t, c, tuple(sorted(e))) for (t, c), e in sorted(recorded.items()) if e),
    )
    if before_alter is not None:
        before_alter(new_state)
    errors = gateway.incremental_alter_configs({**broker_changes, **topic_changes})
    if errors:  # some resources may be throttled already: hand back the state so they can be cleared
        raise ThrottleError(f"setting throttles failed: {_describe(errors)}", new_state)
    return new_state


def clear_throttles(gateway: KafkaGateway, state: ThrottleState) -> None:
    """Undo ``state``: restore previous broker values, remove only our throttled-replica entries
    (a topic deleted meanwhile is fine)."""
    changes: dict[ConfigTarget, list[ConfigChange]] = {}
    for b, name, previous in state.brokers:
        op = ConfigChange(name, "SET", previous) if previous is not None else ConfigChange(name, "DELETE")
        changes.setdefault(ConfigTarget.broker(b), []).append(op)
    for topic, name, entries in state.topics:
        changes.setdefault(ConfigTarget.topic(topic), []).append(
            ConfigChange(name, "SUBTRACT", ",".join(entries))
        )
    errors = {
        t: e
        for t, e in gateway.incremental_alter_configs(changes).items()
        if not (t.kind == "topic" and e.code == "UNKNOWN_TOPIC_OR_PARTITION")
    }
    if errors:
        raise ThrottleError(f"removing throttles failed: {_describe(errors)}", state)


def _entries(value: str | None) -> list[str]:
    return [e.strip() for e in (value or "").split(",") if e.strip()]


def _describe(errors: Mapping[ConfigTarget, OpError]) -> str:
    return "; ".join(f"{t.kind} {t.name}: {e}" for t, e in sorted(errors.items(), key=lambda i: str(i[0])))
