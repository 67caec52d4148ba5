"""The cordons (KIP-1066 ``cordoned.log.dirs``) the intents declare: which to set, which to remove.

One code path for both kinds that declare cordons: a LogDirCordon's dirs, and every dir of the brokers a
BrokerDecommission retires (``declared_cordons``). A reconcile's ``SyncCordons`` (decide.py) sets what the
live intents declare and Kafka does not show cordoned yet, and removes what deleted intents declared,
Kafka shows cordoned and no live intent still declares (``cordon_changes``); the cluster's deletion does
the latter for the intents deleted with it (reconciler.py ``release``). Brokers that are not alive are
skipped (a dead broker answers no config request) and named. Nothing is set or removed below Kafka 4.3:
there the planner enforces cordons by moving new replicas off (``--reactive-cordon``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..kafka.gateway import CORDON_CONFIG, ConfigTarget, KafkaGateway
from ..model.intents import WHOLE_BROKER, BrokerDecommission, Intent, LogDirCordon
from ..model.snapshot import Broker, ClusterSnapshot, LogDir


def declared_cordons(intents: Sequence[Intent]) -> list[LogDirCordon]:
    """The cordons the intents declare, as LogDirCordons (one code path for both kinds): a LogDirCordon
    as it is, and every broker a BrokerDecommission retires as a whole-broker cordon (``*``), so that no
    new replica lands on a broker while it is drained (KIP-1066's motivation) and until it is deleted."""
    out: list[LogDirCordon] = []
    for i in intents:
        if isinstance(i, LogDirCordon):
            out.append(i)
        elif isinstance(i, BrokerDecommission):
            out += [LogDirCordon(i.name, b, (WHOLE_BROKER,), origin=i.origin) for b in i.brokers]
    return out


def owned_cordons(snap: ClusterSnapshot, intents: Sequence[Intent]) -> dict[int, list[str]]:
    """broker -> the dirs declared cordoned (KIP-1066) by LogDirCordons and BrokerDecommissions, which an
    execution keeps cordoned while it moves. Only brokers of ``snap`` with dirs (alive) are named; ``*``
    stands for every dir the broker has, written out (the executor compares entries one by one)."""
    out: dict[int, list[str]] = {}
    for c in declared_cordons(intents):
        broker = snap.broker(c.broker)
        if broker is None:
            continue
        paths = broker.dir_paths if c.whole_broker else c.log_dirs
        out.setdefault(c.broker, [])
        out[c.broker] += [p for p in paths if p not in out[c.broker] and broker.dir(p) is not None]
    return {b: dirs for b, dirs in out.items() if dirs}


@dataclass(frozen=True, slots=True)
class CordonChanges:
    """What one sync changes: broker -> dirs to cordon, broker -> dirs to uncordon, and the brokers the
    deleted intents name that are not alive (their cordons cannot be removed now: skipped)."""

    cordon: dict[int, list[str]] = field(default_factory=dict)
    uncordon: dict[int, list[str]] = field(default_factory=dict)
    skipped: tuple[int, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.cordon or self.uncordon)


def cordon_changes(
    view: ClusterSnapshot, keep: Sequence[Intent], released: Sequence[Intent]
) -> CordonChanges:
    """The changes that make Kafka's cordons (``view``: each live broker's dirs with their cordon state)
    match the intents: what ``keep`` declares and Kafka does not show cordoned is cordoned; what
    ``released`` (deleted intents) declared, Kafka shows cordoned and ``keep`` does not declare is
    uncordoned. Pure."""
    kept = owned_cordons(view, keep)
    cordon: dict[int, list[str]] = {}
    for b, paths in kept.items():
        broker = view.broker(b)
        missing = [p for p in paths if not _cordoned(broker, p)]
        if missing:
            cordon[b] = missing
    uncordon: dict[int, list[str]] = {}
    for b, paths in owned_cordons(view, released).items():
        broker = view.broker(b)
        gone = [p for p in paths if p not in kept.get(b, ()) and _cordoned(broker, p)]
        if gone:
            uncordon[b] = gone
    named = sorted({c.broker for c in declared_cordons(released)})
    return CordonChanges(cordon, uncordon, tuple(b for b in named if not _alive(view.broker(b))))


def _cordoned(broker: Broker | None, path: str) -> bool:
    d = broker.dir(path) if broker is not None else None
    return d is not None and d.cordoned


def _alive(broker: Broker | None) -> bool:
    """Alive: in the cluster's live brokers, with its log dirs (a dead one has none in a snapshot)."""
    return broker is not None and bool(broker.log_dirs)


def with_cordons(snap: ClusterSnapshot, changes: CordonChanges) -> ClusterSnapshot:
    """``snap`` with ``changes`` made (the partitions are shared, not copied): what planning reads right
    after a sync, since Kafka shows a changed cordon a moment later."""
    flags = {(b, p): True for b, paths in changes.cordon.items() for p in paths}
    flags |= {(b, p): False for b, paths in changes.uncordon.items() for p in paths}
    if not flags:
        return snap
    brokers = tuple(
        replace(
            b, log_dirs=tuple(replace(d, cordoned=flags.get((b.id, d.path), d.cordoned)) for d in b.log_dirs)
        )
        for b in snap.brokers
    )
    return replace(snap, brokers=brokers)


def cordon_view(gw: KafkaGateway) -> ClusterSnapshot:
    """The live brokers' log dirs with their cordon state, and no partitions: what syncing or removing
    cordons needs, at a cost that follows brokers x dirs (DescribeLogDirs without replicas), not the
    cluster's partitions. A dir whose cordon state DescribeLogDirs does not report is looked up in the
    broker's ``cordoned.log.dirs``."""
    _, live = gw.describe_cluster()
    brokers: list[Broker] = []
    for b, infos in sorted(gw.describe_log_dirs(live, partitions=()).items()):
        configured: set[str] | None = None
        if any(d.cordoned is None for d in infos):
            target = ConfigTarget.broker(b)
            entry = gw.describe_configs([target]).get(target, {}).get(CORDON_CONFIG)
            value = (entry.value if entry is not None else None) or ""
            configured = {p.strip() for p in value.split(",") if p.strip()}
        dirs = tuple(
            LogDir(d.path, cordoned=bool(d.cordoned) or d.path in (configured or ()), online=d.online)
            for d in infos
        )
        brokers.append(Broker(b, None, dirs))
    return ClusterSnapshot(tuple(brokers), ())


def sync_cordons(
    gw: KafkaGateway,
    keep: Sequence[Intent],
    released: Sequence[Intent],
    snap: ClusterSnapshot | None = None,
    *,
    setting: bool = True,
) -> CordonChanges | None:
    """Make the changes ``cordon_changes`` names in Kafka, reading the cordon state from ``snap`` (a full
    snapshot read anyway) or else ``cordon_view``; ``setting=False`` only removes. None when there is
    nothing to do: no intent declares a cordon, or Kafka is older than 4.3 (no KIP-1066)."""
    if not declared_cordons([*keep, *released]) or not gw.supports_cordon():
        return None
    changes = cordon_changes(snap if snap is not None else cordon_view(gw), keep, released)
    if not setting:
        changes = replace(changes, cordon={})
    for b, paths in sorted(changes.cordon.items()):
        gw.set_cordon(b, paths, True)
    for b, paths in sorted(changes.uncordon.items()):
        gw.set_cordon(b, paths, False)
    return changes


def described(changes: CordonChanges) -> list[str]:
    """What a sync removed or skipped, one line each (for the KafkaCluster's Events)."""
    lines = [
        f"uncordoned {', '.join(paths)} on broker {b}: only deleted resources declared them"
        for b, paths in sorted(changes.uncordon.items())
    ]
    lines += [
        f"broker {b} is not alive: the cordons deleted resources declared on it stay, skipped"
        for b in changes.skipped
    ]
    return lines


__all__ = [
    "CordonChanges",
    "cordon_changes",
    "cordon_view",
    "declared_cordons",
    "described",
    "owned_cordons",
    "sync_cordons",
    "with_cordons",
]
