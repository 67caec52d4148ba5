"""Retiring a heal whose broker is back for good: ``decide_retirement``, a pure function.

A heal self-healing created for a dead broker (a BrokerDecommission labelled ``created-by: self-healing``)
keeps the broker cordoned, and so empty, for as long as it exists. Once the broker is back for
``brokerFailure.settleSeconds`` (its failure ended: ``healing.track_brokers``), ``brokerFailure.onReturn:
Retire`` (the default) *retires* the heal: the operator deletes it, and the deletion path every
BrokerDecommission has lifts its cordon (decide's ``SyncCordons`` releases what only deleted resources
declared; ``intent_common.wait_uncordoned`` holds the resource until then), so the standing intents may
place replicas on the broker again. Every broker failure that ends goes to ``status.pastFailures`` (the
last ``MAX_PAST_FAILURES``): since when, its heal, when the broker returned, when the heal was retired or
why it was not.

For each self-healing BrokerDecommission, one that a user edited included, whose broker at creation
(``healing.HEAL_BROKERS``, or the failure annotation of a heal made before that existed) is alive in the
cluster and no longer tracked as dead (a broker back but not settled yet, or flapping, still is):

- ``onReturn: Keep``: never retired; the entry says so (the user deletes it);
- its ``spec.brokers`` differs from what self-healing created: never retired; an Event on the
  KafkaCluster and the heal says why, once (the entry's ``notRetired`` remembers it was said);
- a participant of the execution in flight (the heal itself executing, or a completed heal planned again
  with another intent): deleting it now would cancel that execution (a KIP-455 revert of its moves in
  flight), so it is ``waiting``: the reconcile re-plans that execution without it
  (decide.py, ``View.retiring``: its moves not yet submitted are dropped, those in flight finish, nothing
  is reverted), and it is retired by the first reconcile that finds it in no execution in flight;
- otherwise it is deleted (preconditions: its uid and resourceVersion, so an edit made meanwhile wins), with
  an Event ``HealRetired`` on the KafkaCluster and on the heal.

No I/O and no clock (``now`` is passed in): unit-tested from plain values (tests/unit/reconcile/
test_retiring.py); the reconcile (cluster_pass.py ``ReconcilePass._heal``) deletes through the
KubeGateway, fenced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.cluster_spec import InvalidPart
from ..model.crd_parts import PLURALS
from ..model.errors import BadInputError
from ..model.self_healing import (
    KEEP,
    MAX_PAST_FAILURES,
    DeadBroker,
    PastFailure,
    SelfHealingSpec,
    format_time,
    parse_time,
)
from .healing import CREATED_BY, DECOMMISSION, FAILED_AT, FAILURE, HEAL_BROKERS, SELF_HEALING, HealNote

KEPT = "onReturn is Keep: delete it to let the placement use the broker again"
DELETED = "the heal was deleted by hand before it was retired"
UNKNOWN = f"the brokers self-healing created it for are not recorded (annotation {HEAL_BROKERS}): not retired"
_FAILURE_TEXT = re.compile(r"broker (\d+) not alive since .*")


@dataclass(frozen=True)
class Retire:
    """A heal to delete, and the ``HealRetired`` Event's message."""

    body: Mapping[str, Any]
    name: str
    message: str

    @property
    def kind(self) -> str:
        return str(self.body.get("kind") or DECOMMISSION)

    @property
    def plural(self) -> str:
        return PLURALS[self.kind]

    @property
    def preconditions(self) -> dict[str, str]:
        """Delete exactly the object decided on: another uid, or an edit since it was read, is refused."""
        meta = self.body.get("metadata") or {}
        return {
            k: str(meta[f])
            for k, f in (("uid", "uid"), ("resourceVersion", "resourceVersion"))
            if meta.get(f)
        }


@dataclass(frozen=True)
class Retirement:
    """What ``decide_retirement`` decided: the heals to delete, the Events, ``status.pastFailures``, and the
    heals to retire that an execution in flight runs (their uids: decide re-plans it without them)."""

    deletes: tuple[Retire, ...] = ()
    notes: tuple[HealNote, ...] = ()
    past: tuple[PastFailure, ...] = ()
    waiting: frozenset[str] = frozenset()

    def not_deleted(self, names: Iterable[str]) -> Retirement:
        """The outcome with the heals ``names`` not deleted (refused): they await retirement again."""
        gone = set(names)
        if not gone:
            return self
        return replace(
            self,
            deletes=tuple(r for r in self.deletes if r.name not in gone),
            past=tuple(replace(e, retired_at=None) if e.heal in gone else e for e in self.past),
        )

    def to_status(self) -> dict[str, Any]:
        return {"pastFailures": [e.to_json() for e in self.past]}


def brokers_at_creation(body: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The brokers self-healing created the heal for (None: not recorded, or unreadable)."""
    notes = (body.get("metadata") or {}).get("annotations") or {}
    raw = notes.get(HEAL_BROKERS)
    if raw is not None:
        try:
            value = json.loads(str(raw))
        except ValueError:
            return None
        ok = isinstance(value, list) and value and all(type(b) is int for b in value)
        return tuple(value) if ok else None
    found = _FAILURE_TEXT.fullmatch(str(notes.get(FAILURE) or ""))
    return (int(found.group(1)),) if found else None


def _spec(raw: object) -> SelfHealingSpec | None:
    if isinstance(raw, SelfHealingSpec):
        return raw
    if raw is None or isinstance(raw, InvalidPart):
        return None
    try:
        return SelfHealingSpec.parse(raw)
    except BadInputError:
        return None


def _decommission_heals(bodies: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The self-healing BrokerDecommissions not being deleted, by name (edited or invalid ones too)."""
    out: dict[str, Mapping[str, Any]] = {}
    for b in bodies:
        meta = b.get("metadata") or {}
        labels = meta.get("labels") or {}
        ours = b.get("kind") == DECOMMISSION and labels.get(CREATED_BY) == SELF_HEALING
        if ours and not meta.get("deletionTimestamp") and meta.get("name"):
            out[str(meta["name"])] = b
    return out


def _since_of(body: Mapping[str, Any], fallback: str) -> str:
    """When the heal's failure started (its ``failed-at`` annotation; else when it was created)."""
    meta = body.get("metadata") or {}
    for text in (((meta.get("annotations") or {}).get(FAILED_AT)), meta.get("creationTimestamp")):
        try:
            return format_time(parse_time(str(text), "since"))
        except BadInputError:
            continue
    return fallback


def decide_retirement(
    raw_spec: object,
    dead: Sequence[DeadBroker],
    ended: Sequence[DeadBroker],
    live: frozenset[int],
    bodies: Sequence[Mapping[str, Any]],
    running: frozenset[str],
    past: Sequence[PastFailure],
    now: float,
) -> Retirement:
    """The heals to retire (module docstring), from: ``raw_spec`` the KafkaCluster's ``spec.selfHealing``
    (raw or as parsed; None or invalid: nothing is retired), ``dead`` the broker failures still tracked
    (dead, or back and not settled), ``ended`` those that ended in this reconcile, ``live`` the brokers
    alive in the cluster (empty: not known, nothing is retired), ``bodies`` the cluster's intent resources,
    ``running`` the uids of the participants of the execution in flight, ``past`` the
    ``status.pastFailures`` so far (oldest first; an entry moves last when its heal is retired), and ``now``
    (epoch seconds)."""
    stamp = format_time(now)
    entries = list(past)
    for d in ended:  # every failure that ends is kept, healed or not
        if not any(e.broker == d.id and e.since == d.since for e in entries):
            entries.append(PastFailure(d.id, d.since, d.heal, d.back_since))
    spec = _spec(raw_spec)
    if not live or spec is None:
        return Retirement(past=_trim(entries))
    heals = _decommission_heals(bodies)
    tracked = {d.id for d in dead}
    deletes: list[Retire] = []
    notes: list[HealNote] = []
    waiting: set[str] = set()
    for name, body in sorted(heals.items()):
        made = brokers_at_creation(body)
        if made is None or len(made) != 1:  # not one self-healing made as it does: never retired
            entries = [
                replace(e, not_retired=UNKNOWN) if e.awaiting_retirement and e.heal == name else e
                for e in entries
            ]
            continue
        broker = made[0]
        if broker not in live or broker in tracked:
            continue  # still dead, or back and not settled (a flapping broker stays dead)
        at = next((i for i, e in enumerate(entries) if e.heal == name), None)
        if at is None:  # its failure ended in a reconcile whose status write was lost
            entries.append(PastFailure(broker, _since_of(body, stamp), name))
            at = len(entries) - 1
        entry = entries[at]
        if spec.broker_failure.on_return == KEEP:
            entries[at] = replace(entry, not_retired=KEPT)
            continue
        given = (body.get("spec") or {}).get("brokers")
        if given != list(made):
            why = (
                f"{DECOMMISSION} {name} is not retired although broker {broker} is back: its spec.brokers "
                f"is {json.dumps(given)}, not {json.dumps(list(made))} as self-healing created it (edited by "
                f"hand); delete it to let the placement use broker {broker} again"
            )
            if entry.not_retired != why:  # said once, not on every reconcile
                notes += [HealNote(on, "Normal", "HealNotRetired", why) for on in (None, body)]
            entries[at] = replace(entry, not_retired=why)
            continue
        entry = replace(entry, not_retired=None)
        uid = str((body.get("metadata") or {}).get("uid") or "")
        if uid in running:
            waiting.add(uid)  # deleting it would cancel the execution: re-planned without it first
            entries[at] = entry
            continue
        back = f", back since {entry.returned_at}" if entry.returned_at else ""
        message = (
            f"broker {broker} is back for good (not alive since {entry.since}{back}): retired {DECOMMISSION} "
            f"{name} (deleted: its cordon on broker {broker} is lifted, the placement may use it again)"
        )
        deletes.append(Retire(body, name, message))
        del entries[at]  # the newest news: last in the history, trimmed last
        entries.append(replace(entry, retired_at=entry.retired_at or stamp))
    retired = {r.name for r in deletes}
    for i, e in enumerate(entries):
        if e.awaiting_retirement and e.heal not in heals and e.heal not in retired:
            entries[i] = replace(e, not_retired=DELETED)
    return Retirement(tuple(deletes), tuple(notes), _trim(entries), frozenset(waiting))


def _trim(entries: Sequence[PastFailure]) -> tuple[PastFailure, ...]:
    """The last ``MAX_PAST_FAILURES`` entries, oldest first; one awaiting its heal's retirement is kept."""
    out = list(entries)
    while len(out) > MAX_PAST_FAILURES:
        drop = next((i for i, e in enumerate(out) if not e.awaiting_retirement), None)
        if drop is None:
            break
        del out[drop]
    return tuple(out)


def retiring_uids(
    raw_spec: object,
    dead: Sequence[DeadBroker],
    past: Sequence[PastFailure],
    bodies: Sequence[Mapping[str, Any]],
) -> frozenset[str]:
    """The uids of the heals the last reconcile found waiting for their retirement behind the execution in
    flight (``status.pastFailures`` entries awaiting it), still as self-healing created them, with
    ``onReturn: Retire``, and whose broker is not tracked as dead again (``dead``: ``status.deadBrokers``;
    a broker that died again keeps its heal): what decide re-plans that execution without."""
    spec = _spec(raw_spec)
    if spec is None or spec.broker_failure.on_return == KEEP:
        return frozenset()
    heals = _decommission_heals(bodies)
    tracked = {d.id for d in dead}
    out: set[str] = set()
    for e in past:
        body = heals.get(e.heal or "") if e.awaiting_retirement else None
        if body is None or e.broker in tracked:
            continue
        made = brokers_at_creation(body)
        if made == (e.broker,) and (body.get("spec") or {}).get("brokers") == [e.broker]:
            uid = (body.get("metadata") or {}).get("uid")
            if uid:
                out.add(str(uid))
    return frozenset(out)


__all__ = [
    "DELETED",
    "KEPT",
    "Retire",
    "Retirement",
    "brokers_at_creation",
    "decide_retirement",
    "retiring_uids",
]
