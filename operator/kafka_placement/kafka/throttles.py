"""Replication throttles as owned state (docs/architecture.md §5), applied through the ``KafkaGateway``.

For a set of moves, ``apply_throttles`` sets ``leader/follower.replication.throttled.rate`` on every broker
involved (and ``replica.alter.log.dirs.io.max.bytes.per.second`` on brokers with log-dir moves), appends
``partition:broker`` entries to the topics' ``leader.replication.throttled.replicas`` (current replicas)
and ``follower.replication.throttled.replicas`` (replicas being added) — Kafka's own reassign-tool rule —
and returns a ``ThrottleState`` (model/throttle_state.py) saying what it set and what was there before.
``clear_throttles`` restores exactly that: previous broker values come back (or are deleted when there
were none), only our ``*.throttled.replicas`` entries are removed. Entries or values this tool did not set
are never touched: an entry that was already there is not recorded, a topic throttled with ``*`` is left
alone. The state is the one the execution record persists, so an executor resumes it after a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..model.throttle_state import BrokerThrottle, ClaimOwner, ThrottleState, TopicThrottle
from .gateway import (
    CORDON_CONFIG,
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
# a throttle claim (kafka/throttle_claims.py): a broker config whose NAME holds the owner and what each rate
# was before (Kafka accepts a dynamic broker config it does not know, but describes its value as sensitive:
# null), ``kafka.placement.throttles/<namespace>/<name>/<uid>/<config>@<previous value, empty: unset>...``
CLAIM_PREFIX = "kafka.placement.throttles/"
CLAIM_VALUE = "claimed"  # any value: only the name is read back


def claim_key(owner: ClaimOwner, previous: Mapping[str, str | None]) -> str:
    """The broker config that claims a broker's throttles for ``owner``: its name lists the rates the
    owner set there, each with the value it had before (empty: none)."""
    was = "".join(f"/{config}@{value or ''}" for config, value in sorted(previous.items()))
    return f"{CLAIM_PREFIX}{owner.namespace}/{owner.name}/{owner.uid}{was}"


def is_claim(config: str) -> bool:
    return config.startswith(CLAIM_PREFIX)


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
    claim: ClaimOwner | None = None,
    override: Mapping[tuple[int, str], str] | None = None,
    factors: Mapping[tuple[int, str], float] | None = None,
    brokers: Collection[int] | None = None,
    ceilings: Mapping[tuple[int, str], int] | None = None,
) -> ThrottleState:
    """Throttle ``moves`` at their own rate or ``rate`` bytes/s (a broker in several moves gets the lowest;
    moves with neither are left unthrottled), dir moves at ``dir_rate`` on ``dir_move_brokers``; extends
    and returns ``state`` (pass the one from a previous call or a restart so previous values stay ours).

    ``before_alter`` gets the extended state before anything is changed in Kafka: the caller records it
    durably there (write-ahead), so a crash during or after the alter leaves nothing it cannot clear.
    Clearing a recorded state that was never applied is harmless: previous values are restored as they
    were read, and subtracting absent entries changes nothing. If ``before_alter`` raises, nothing is
    altered.

    With ``claim``, each throttled broker also gets its owner's claim (``claim_key``), set in the same
    request as its rates and kept in the state like them (previous None: deleted on clear); its value
    says what each rate was before, for a sweep once the owner is gone (kafka/throttle_claims.py).

    ``override``: (broker, config) -> value set instead of the computed one on the brokers this call
    throttles (the executor's disk holds, execution/disk_watch.py: a held rate stays held).

    ``factors``: (broker, leader or follower rate) -> the factor a rate is set at above the one computed
    (the executor's rate hold, execution/rate_watch.py: a held achieved rate stays held).

    ``brokers``: the brokers that can be configured now (None: all); rates of others are left out (a
    broker answers for its own configs: one that is down would only make the call time out).

    ``ceilings``: (broker, leader or follower rate) -> the most that rate may be before its factor (the
    adaptive throttle, execution/adaptive.py: a rate yielding to clients stays yielding)."""
    rates = [r for r in (rate, dir_rate, *(m.rate for m in moves)) if r is not None]
    if any(r <= 0 for r in rates):
        raise ValueError("throttle rates must be positive")
    state = state or ThrottleState()
    moves = [m for m in moves if (m.rate or rate) is not None]
    wanted: dict[int, dict[str, str]] = {}
    replicas = throttled_replicas(moves)
    boost, ceiling = factors or {}, ceilings or {}
    for b, r in broker_rates(moves, rate).items():
        if brokers is not None and b not in brokers:
            continue
        wanted.setdefault(b, {}).update(
            {
                name: str(scaled(min(r, ceiling.get((b, name), r)), boost.get((b, name), 1.0)))
                for name in (LEADER_RATE, FOLLOWER_RATE)
            }
        )
    if dir_rate is not None:
        for b in dir_move_brokers:
            if brokers is not None and b not in brokers:
                continue
            wanted.setdefault(b, {})[DIR_RATE] = str(dir_rate)
    for (b, name), value in (override or {}).items():
        if name in wanted.get(b, {}):
            wanted[b][name] = value
    return set_rates(gateway, state, wanted, replicas, before_alter=before_alter, claim=claim)


MAX_RATE = 2**63 - 1  # a broker rate is a Java long


def scaled(rate: int, factor: float) -> int:
    """``rate`` times ``factor``, exact when the factor is 1 (a float would round a rate near the top of
    the range) and never past what Kafka accepts."""
    return rate if factor == 1.0 else min(round(rate * factor), MAX_RATE)


def broker_rates(moves: Iterable[Move], rate: int | None) -> dict[int, int]:
    """broker -> the replication rate ``apply_throttles`` gives it for ``moves``: the lowest rate of the
    moves that copy a replica to another broker and involve it (as a current or a target replica)."""
    lowest: dict[int, int] = {}
    for m in moves:
        move_rate = m.rate or rate
        if move_rate is None or all(b in m.current for b in m.target):
            continue
        for b in (*m.current, *m.target):
            lowest[b] = min(lowest.get(b, move_rate), move_rate)
    return lowest


def set_rates(
    gateway: KafkaGateway,
    state: ThrottleState,
    wanted: Mapping[int, Mapping[str, str | None]],
    replicas: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    *,
    before_alter: Callable[[ThrottleState], None] | None = None,
    claim: ClaimOwner | None = None,
) -> ThrottleState:
    """Set broker rates (broker -> config -> value; None: the value it had before this tool first set it,
    put back while the config stays ours until cleared) and append ``replicas`` (topic -> throttled
    replicas config -> ``partition:broker`` entries), extending ``state`` as ``apply_throttles`` does
    (write-ahead through ``before_alter``, claims, previous values kept)."""
    replicas = replicas or {}
    brokers = {(e.broker, e.config): e for e in state.brokers}
    stale: dict[int, list[str]] = {}  # broker -> our earlier claims it no longer needs
    targets = [ConfigTarget.broker(b) for b in sorted(wanted)]
    targets += [ConfigTarget.topic(t) for t in sorted(replicas)]
    described = gateway.describe_configs(targets) if targets else {}

    sets: dict[int, dict[str, str | None]] = {}
    for b, configs in sorted(wanted.items()):
        current = described[ConfigTarget.broker(b)]
        out = sets.setdefault(b, {})
        for name, asked in configs.items():
            had = brokers.get((b, name))
            if had is not None:
                previous = had.previous  # ours already: the value read before we first set it stays
            else:
                was = current.get(name)
                previous = was.value if was is not None and was.is_dynamic else None
            value = asked if asked is not None else previous
            brokers[(b, name)] = BrokerThrottle(broker=b, config=name, previous=previous, value=value)
            out[name] = value
        if claim is not None:
            before = {c: e.previous for (bb, c), e in brokers.items() if bb == b and not is_claim(c)}
            key = claim_key(claim, before)
            for old in [c for (bb, c) in brokers if bb == b and is_claim(c) and c != key]:
                del brokers[(b, old)]  # our claim before a rate was added here: replaced in the same request
                stale.setdefault(b, []).append(old)
            brokers[(b, key)] = BrokerThrottle(broker=b, config=key, previous=None, value=CLAIM_VALUE)
            out[key] = CLAIM_VALUE

    recorded = {(t.topic, t.config): set(t.entries) for t in state.topics}
    topic_changes: dict[ConfigTarget, list[ConfigChange]] = {}
    for topic, per_config in replicas.items():
        target = ConfigTarget.topic(topic)
        for name, entries in per_config.items():
            was = described[target].get(name)
            present = set(config_entries(was.value if was is not None else None))
            if "*" in present:
                continue  # someone throttles every replica of this topic already: not ours to change
            new = [e for e in dict.fromkeys(entries) if e not in present]
            if new:
                topic_changes.setdefault(target, []).append(ConfigChange(name, "APPEND", ",".join(new)))
                recorded.setdefault((topic, name), set()).update(new)

    broker_changes = {
        ConfigTarget.broker(b): [
            ConfigChange(n, "SET", v) if v is not None else ConfigChange(n, "DELETE")
            for n, v in sorted(configs.items())
        ]
        + [ConfigChange(n, "DELETE") for n in stale.get(b, ())]
        for b, configs in sets.items()
    }
    new_state = ThrottleState(
        brokers=tuple(brokers.values()),
        topics=tuple(
            TopicThrottle(topic=t, config=c, entries=tuple(sorted(e)))
            for (t, c), e in sorted(recorded.items())
            if e
        ),
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
    for b in state.brokers:
        op = (
            ConfigChange(b.config, "SET", b.previous)
            if b.previous is not None
            else ConfigChange(b.config, "DELETE")
        )
        changes.setdefault(ConfigTarget.broker(b.broker), []).append(op)
    for t in state.topics:
        changes.setdefault(ConfigTarget.topic(t.topic), []).append(
            ConfigChange(t.config, "SUBTRACT", ",".join(t.entries))
        )
    errors = {
        t: e
        for t, e in gateway.incremental_alter_configs(changes).items()
        if not (t.kind == "topic" and e.code == "UNKNOWN_TOPIC_OR_PARTITION")
    }
    if errors:
        raise ThrottleError(f"removing throttles failed: {_describe(errors)}", state)


def still_set(gateway: KafkaGateway, state: ThrottleState) -> list[str]:
    """What of ``state`` Kafka still shows after ``clear_throttles`` (configs propagate asynchronously in
    KRaft: a broker may answer with the old value for a moment): broker values still ours (and not the
    previous value put back), our throttled-replica entries still listed. Deleted topics are skipped."""
    brokers = [b for b in state.brokers if b.value is not None and b.value != b.previous]
    targets = sorted(
        {ConfigTarget.broker(b.broker) for b in brokers}
        | {ConfigTarget.topic(t.topic) for t in state.topics},
        key=str,
    )
    if not targets:
        return []
    try:
        described = gateway.describe_configs(targets)
    except KafkaOperationError:  # a topic deleted meanwhile: check the brokers alone
        described = gateway.describe_configs([t for t in targets if t.kind == "broker"])
    out = []
    for b in brokers:
        live = described.get(ConfigTarget.broker(b.broker), {}).get(b.config)
        if live is not None and (live.value == b.value or is_claim(b.config)):
            out.append(f"broker {b.broker} {b.config}")
    for t in state.topics:
        live = described.get(ConfigTarget.topic(t.topic), {}).get(t.config)
        if live is not None and set(t.entries) & set(config_entries(live.value)):
            out.append(f"topic {t.topic} {t.config}")
    return out


@dataclass(frozen=True, slots=True)
class Drift:
    """A config this tool set that Kafka no longer has as set: ``found`` is the live value (None when
    deleted; for topics, the live entries)."""

    kind: str  # "broker" | "topic"
    name: str
    config: str
    expected: str
    found: str | None

    @property
    def key(self) -> str:
        return f"{self.kind} {self.name} {self.config}"

    def __str__(self) -> str:
        found = "deleted" if not self.found else f"now {self.found[:80]!r}"
        return f"{self.kind} {self.name} {self.config} {found} (ours: {self.expected[:80]!r})"


def owned_drift(
    gateway: KafkaGateway,
    state: ThrottleState,
    topics: Iterable[str],
    cordons: Mapping[int, Sequence[str]],
    brokers: Iterable[int],
) -> tuple[list[Drift], dict[ConfigTarget, list[ConfigChange]]]:
    """Compare what ``state`` says we set (broker rates; the throttled-replica entries of ``topics``, the
    topics with moves in flight) and the ``cordons`` we own (broker -> cordoned dirs) with Kafka, in one
    DescribeConfigs. Returns what changed and the changes that put it back (SET a rate, APPEND missing
    entries or cordoned dirs). Rates are checked on ``brokers`` only (the caller's live brokers with moves
    in flight: a broker answers for its own configs, and one that takes new moves gets its rate set again
    with them). Records without the values set (older records) are not checked."""
    wanted_topics, asked = set(topics), set(brokers)
    rates = [
        (b.broker, b.config, b.value) for b in state.brokers if b.value is not None and b.broker in asked
    ]
    entries = [(t.topic, t.config, t.entries) for t in state.topics if t.topic in wanted_topics and t.entries]
    targets = {ConfigTarget.broker(b) for b, _, _ in rates} | {ConfigTarget.topic(t) for t, _, _ in entries}
    targets |= {ConfigTarget.broker(b) for b, dirs in cordons.items() if dirs}
    if not targets:
        return [], {}
    described = gateway.describe_configs(sorted(targets, key=str))
    drifts: list[Drift] = []
    changes: dict[ConfigTarget, list[ConfigChange]] = {}
    for b, name, value in rates:
        target = ConfigTarget.broker(b)
        live = described.get(target, {}).get(name)
        if live is None or (live.value != value and not is_claim(name)):
            drifts.append(Drift("broker", str(b), name, value, live.value if live is not None else None))
            changes.setdefault(target, []).append(ConfigChange(name, "SET", value))
    for topic, name, ours in entries:
        target = ConfigTarget.topic(topic)
        if target not in described:
            continue  # the topic was deleted: nothing to defend
        live = described[target].get(name)
        present = set(config_entries(live.value if live is not None else None))
        missing = [e for e in ours if e not in present]
        if missing and "*" not in present:
            drifts.append(Drift("topic", topic, name, ",".join(ours), live.value if live else None))
            changes.setdefault(target, []).append(ConfigChange(name, "APPEND", ",".join(missing)))
    for b, dirs in sorted(cordons.items()):
        target = ConfigTarget.broker(b)
        live = described.get(target, {}).get(CORDON_CONFIG)
        present = set(config_entries(live.value if live is not None else None))
        missing = [d for d in dirs if d not in present]
        if missing:
            drifts.append(
                Drift("broker", str(b), CORDON_CONFIG, ",".join(dirs), live.value if live else None)
            )
            changes.setdefault(target, []).append(ConfigChange(CORDON_CONFIG, "APPEND", ",".join(missing)))
    return drifts, changes


def config_entries(value: str | None) -> list[str]:
    return [e.strip() for e in (value or "").split(",") if e.strip()]


def _describe(errors: Mapping[ConfigTarget, OpError]) -> str:
    return "; ".join(f"{t.kind} {t.name}: {e}" for t, e in sorted(errors.items(), key=lambda i: str(i[0])))
