"""Self-healing of disk pressure: ``decide_pressure``, a pure function of the facts a reconcile read.

A log dir whose volume is above ``selfHealing.diskPressure.aboveShare`` (absent: the KafkaCluster's
``capacity.maxDiskShare``) is *under pressure* from when it is first seen so (``status.pressuredLogDirs``,
``since`` surviving restarts as the other failures'). Once that has lasted ``afterSeconds`` (and
``diskPressure.enabled``), the operator creates a heal: a ``LogDirCordon`` of that dir with
``relieveBelowShare: aboveShare - 0.05`` (``RELIEF_MARGIN``) and the cluster's approval, labelled and owned
like every heal (healing.py), which the planner's DiskRelief goal turns into the fewest bytes moved off it
(planning/goals/disk_relief.py). A dir back under ``aboveShare`` before its heal was created ends its
pressure with nothing done; once healed, its pressure ends only under the heal's share (no heal, delete,
heal again while it hovers at the limit). A heal whose pressure ended is *retired*: deleted (lifting its
cordon) once no execution in flight runs it (deleting a participant would cancel that execution); one
still running waits. A dir whose usage this reconcile did not read (its broker dead or not answering)
keeps its entry as it was.

No I/O and no clock (``now`` is passed in): unit-tested from plain values (tests/unit/reconcile/
test_pressure.py); the reconcile (cluster_pass.py ``ReconcilePass._heal``) creates and deletes through
the KubeGateway.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.intent_kinds import RELIEVE_MIN
from ..model.self_healing import (
    RELIEF_MARGIN,
    PressuredLogDir,
    SelfHealingSpec,
    format_time,
    parse_time,
)
from ..model.snapshot import ClusterSnapshot
from .healing import CORDON, Heal, HealNote, NewHeal, heal_manifest, heal_name
from .retiring import Retire

DirKey = tuple[int, str]


@dataclass(frozen=True)
class Pressure:
    """What ``decide_pressure`` decided: the entries to keep, the heals to create and to retire, the
    Events, and when the next tracked dir is due for a heal (epoch seconds)."""

    entries: tuple[PressuredLogDir, ...] = ()
    creates: tuple[NewHeal, ...] = ()
    retires: tuple[Retire, ...] = ()
    notes: tuple[HealNote, ...] = ()
    wake_at: float | None = None

    def to_status(self) -> dict[str, Any]:
        return {"pressuredLogDirs": [e.to_json() for e in self.entries]}

    def not_created(self, names: Collection[str]) -> Pressure:
        """The outcome with the heals ``names`` left uncreated (their dirs stay pending)."""
        if not names:
            return self
        entries = tuple(replace(e, heal=None) if e.heal in names else e for e in self.entries)
        return replace(self, entries=entries, creates=tuple(c for c in self.creates if c.name not in names))


def shares_in_snapshot(snap: ClusterSnapshot) -> dict[DirKey, float]:
    """How full each online dir's volume is, of the live brokers that answered (volumes of unknown size
    left out)."""
    unread = set(snap.unreachable)
    return {
        (b.id, d.path): (d.total_bytes - d.usable_bytes) / d.total_bytes
        for b in snap.brokers
        if b.alive and b.id not in unread
        for d in b.log_dirs
        if d.online and d.total_bytes > 0
    }


def relief_share(above: float) -> float:
    """The share a heal relieves its dir to: ``above`` less the margin (at least the field's minimum)."""
    return max(round(above - RELIEF_MARGIN, 4), RELIEVE_MIN)


def decide_pressure(
    spec: SelfHealingSpec | None,
    owner: Mapping[str, Any],
    previous: Sequence[PressuredLogDir],
    shares: Mapping[DirKey, float] | None,
    heals: Sequence[Heal],
    running: Collection[str],
    limit: float,
    now: float,
) -> Pressure:
    """The module docstring's decision. ``spec``: the KafkaCluster's parsed ``spec.selfHealing`` (None:
    not declared or invalid: nothing is tracked); ``previous``: ``status.pressuredLogDirs``; ``shares``:
    how full each dir read in this reconcile is (None: none read); ``heals``: the self-healing heals that
    exist (the disk-pressure ones are used); ``running``: the uids of the participants of the execution
    in flight; ``limit``: the cluster's ``capacity.maxDiskShare``."""
    if spec is None or not spec.disk_pressure.enabled:
        return Pressure()
    if shares is None:
        return Pressure(tuple(previous))
    rule = spec.disk_pressure
    above = rule.above_share if rule.above_share is not None else limit
    target = relief_share(above)
    stamp = format_time(now)
    by_dir = {h.target: h for h in heals if h.relief and isinstance(h.target, tuple)}
    old = {(e.broker, e.path): e for e in previous}
    entries: list[PressuredLogDir] = []
    creates: list[NewHeal] = []
    retires: list[Retire] = []
    notes: list[HealNote] = []
    wake: list[float] = []
    for key in sorted(old.keys() | {k for k, v in shares.items() if v > above} | by_dir.keys()):
        broker, path = key
        share, entry, heal = shares.get(key), old.get(key), by_dir.get(key)
        if share is None:  # not read now (its broker not alive, or not answering): kept as it was
            if entry is not None:
                entries.append(entry)
            continue
        healed = heal is not None or (entry is not None and entry.heal is not None)
        if share > above or (healed and share > target):
            entry = replace(entry or PressuredLogDir(broker, path, stamp), used_percent=int(share * 100))
            if entry.heal is None and heal is not None:
                entry = replace(entry, heal=heal.name)  # made by a reconcile whose status write was lost
            if entry.heal is None:
                due = parse_time(entry.since, "since") + rule.after_seconds
                if now >= due:
                    new = _relief(spec, owner, entry, target, rule.after_seconds)
                    creates.append(new)
                    entry = replace(entry, heal=new.name)
                else:
                    wake.append(due)
            entries.append(entry)
            continue
        what = f"log dir {path} of broker {broker} is {share:.0%} full"
        if heal is None:
            if entry is not None:
                how = "no heal was started" if entry.heal is None else f"its heal {entry.heal} was deleted"
                done = f"{what}, under {above:.0%} again ({entry.failure}): {how}"
                notes.append(HealNote(None, "Normal", "FailureEnded", done))
            continue
        if str((heal.body.get("metadata") or {}).get("uid") or "") in running:
            entries.append(
                replace(
                    entry or PressuredLogDir(broker, path, stamp, heal=heal.name),
                    used_percent=int(share * 100),
                )
            )
            continue  # retired once no execution runs it (deleting it now would cancel that execution)
        message = f"{what}, under {target:.0%}: retired {CORDON} {heal.name} (deleted, its cordon lifted)"
        retires.append(Retire(heal.body, heal.name, message))
    return Pressure(tuple(entries), tuple(creates), tuple(retires), tuple(notes), min(wake) if wake else None)


def _relief(
    spec: SelfHealingSpec, owner: Mapping[str, Any], entry: PressuredLogDir, target: float, after: int
) -> NewHeal:
    digest = hashlib.sha256(entry.path.encode()).hexdigest()[:8]
    name = heal_name(owner["metadata"]["name"], f"disk-{entry.broker}-{digest}", entry.since)
    fields = {
        "broker": entry.broker,
        "logDirs": [entry.path],
        "relieveBelowShare": target,
        "approval": spec.approval,
    }
    body = heal_manifest(CORDON, owner, name, fields, entry.failure, entry.since)
    message = (
        f"{entry.failure} ({entry.used_percent}% full, {after} s or more): created {CORDON} {name} "
        f"(relieveBelowShare {target}, approval {spec.approval}); delete it to cancel"
    )
    return NewHeal(CORDON, name, body, message)


__all__ = ["Pressure", "decide_pressure", "relief_share", "shares_in_snapshot"]
