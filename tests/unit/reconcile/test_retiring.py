"""Retiring a heal whose broker is back for good (reconcile/retiring.py), from plain values and a clock
passed in: no Kafka, no Kubernetes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.self_healing import (
    MAX_PAST_FAILURES,
    DeadBroker,
    HealingState,
    PastFailure,
    SelfHealingSpec,
    format_time,
    parse_time,
    past_failures,
)
from kafka_placement.reconcile.healing import (
    CREATED_BY,
    FAILED_AT,
    FAILURE,
    HEAL_BROKERS,
    SELF_HEALING,
    Seen,
    decide_healing,
)
from kafka_placement.reconcile.retiring import (
    DELETED,
    KEPT,
    Retirement,
    brokers_at_creation,
    decide_retirement,
    retiring_uids,
)

T0 = parse_time("2026-11-27T12:00:00Z", "t")
SINCE = format_time(T0)
BACK = format_time(T0 + 900)
NAME = "main-heal-broker-3-20261127t120000z"
SPEC: dict[str, Any] = {"brokerFailure": {"enabled": True, "afterSeconds": 20, "settleSeconds": 120}}
LIVE = frozenset({1, 2, 3})


def spec(**broker_failure: Any) -> dict[str, Any]:
    return {"brokerFailure": {**SPEC["brokerFailure"], **broker_failure}}


def heal(
    phase: str | None = "Completed",
    brokers: list[int] | None = None,
    made: str | None = "[3]",
    uid: str = "u3",
) -> dict[str, Any]:
    notes = {FAILURE: f"broker 3 not alive since {SINCE}", FAILED_AT: SINCE}
    if made is not None:
        notes[HEAL_BROKERS] = made
    return {
        "kind": "BrokerDecommission",
        "metadata": {
            "name": NAME,
            "namespace": "kafka",
            "uid": uid,
            "resourceVersion": "42",
            "labels": {CREATED_BY: SELF_HEALING},
            "annotations": notes,
        },
        "spec": {"clusterRef": {"name": "main"}, "brokers": [3] if brokers is None else brokers},
        **({"status": {"phase": phase}} if phase else {}),
    }


def ended() -> DeadBroker:
    return DeadBroker(3, SINCE, NAME, back_since=BACK)


def retire(
    bodies: list[dict[str, Any]],
    *,
    dead: tuple[DeadBroker, ...] = (),
    now_ended: tuple[DeadBroker, ...] = (),
    live: frozenset[int] = LIVE,
    running: frozenset[str] = frozenset(),
    past: tuple[PastFailure, ...] = (),
    raw: object = SPEC,
    now: float = T0 + 1020,
) -> Retirement:
    return decide_retirement(raw, dead, now_ended, live, bodies, running, past, now)


def test_a_completed_heal_whose_broker_is_back_for_good_is_retired() -> None:
    body = heal()
    out = retire([body], now_ended=(ended(),))
    (gone,) = out.deletes
    assert gone.name == NAME and gone.plural == "brokerdecommissions" and gone.body is body
    assert gone.preconditions == {"uid": "u3", "resourceVersion": "42"}  # an edit meanwhile wins
    assert f"retired BrokerDecommission {NAME}" in gone.message and "cordon on broker 3" in gone.message
    assert out.past == (PastFailure(3, SINCE, NAME, BACK, format_time(T0 + 1020)),)
    assert out.notes == () and out.waiting == frozenset()
    assert out.to_status() == {
        "pastFailures": [
            {
                "broker": 3,
                "since": SINCE,
                "heal": NAME,
                "returnedAt": BACK,
                "retiredAt": format_time(T0 + 1020),
            }
        ]
    }


def test_a_broker_back_but_not_settled_or_dead_again_keeps_its_heal() -> None:
    settling = DeadBroker(3, SINCE, NAME, back_since=BACK)
    out = retire([heal()], dead=(settling,))  # back, not settled yet: still tracked
    assert out.deletes == () and out.past == ()
    flapped = DeadBroker(3, SINCE, NAME)  # died again before settling: its first since, its heal
    out = retire([heal()], dead=(flapped,), live=frozenset({1, 2}))
    assert out.deletes == () and out.past == ()
    out = retire([heal()], live=frozenset({1, 2}))  # not alive and no longer named: stays
    assert out.deletes == ()


def test_on_return_keep_never_retires_and_says_so_in_the_history() -> None:
    out = retire([heal()], now_ended=(ended(),), raw=spec(onReturn="Keep"))
    assert out.deletes == () and out.notes == ()
    assert out.past == (PastFailure(3, SINCE, NAME, BACK, not_retired=KEPT),)
    again = retire([heal()], past=out.past, raw=spec(onReturn="Keep"))
    assert again.past == out.past and again.deletes == ()
    switched = retire([heal()], past=out.past)  # switched to Retire later: retired then
    assert [r.name for r in switched.deletes] == [NAME] and switched.past[0].not_retired is None


def test_an_edited_heal_is_not_retired_and_an_event_says_why_once() -> None:
    edited = heal(brokers=[3, 4])
    out = retire([edited], now_ended=(ended(),))
    assert out.deletes == ()
    assert [(n.on, n.reason) for n in out.notes] == [(None, "HealNotRetired"), (edited, "HealNotRetired")]
    assert "spec.brokers is [3, 4], not [3]" in out.notes[0].message
    (entry,) = out.past
    assert entry.not_retired == out.notes[0].message and not entry.awaiting_retirement
    later = retire([edited], past=out.past, now=T0 + 2000)
    assert later.notes == () and later.deletes == () and later.past == out.past  # once, not every reconcile


def test_a_heal_an_execution_runs_waits_and_is_retired_once_it_runs_no_more() -> None:
    body = heal(phase="Executing")
    out = retire([body], now_ended=(ended(),), running=frozenset({"u3"}))
    assert out.deletes == () and out.waiting == {"u3"}
    (entry,) = out.past
    assert entry.awaiting_retirement
    # the next reconcile re-plans the execution without it (decide's View.retiring) ...
    assert retiring_uids(SPEC, (), out.past, [body]) == {"u3"}
    assert retiring_uids(SPEC, (DeadBroker(3, SINCE),), out.past, [body]) == frozenset()  # dead again
    assert retiring_uids(spec(onReturn="Keep"), (), out.past, [body]) == frozenset()
    assert retiring_uids(None, (), out.past, [body]) == frozenset()
    # ... and once it is in no execution in flight, deletes it
    later = retire([body], past=out.past, now=T0 + 1100)
    assert [r.name for r in later.deletes] == [NAME]
    assert later.past == (PastFailure(3, SINCE, NAME, BACK, format_time(T0 + 1100)),)


def test_a_refused_delete_awaits_retirement_again() -> None:
    out = retire([heal()], now_ended=(ended(),)).not_deleted([NAME])
    assert out.deletes == () and out.past[0].retired_at is None and out.past[0].awaiting_retirement


def test_a_heal_deleted_by_hand_while_awaiting_retirement_is_not_awaited_any_more() -> None:
    waiting = (PastFailure(3, SINCE, NAME, BACK),)
    out = retire([], past=waiting)
    assert out.past == (PastFailure(3, SINCE, NAME, BACK, not_retired=DELETED),)
    out = retire([], now_ended=(ended(),))  # cancelled (deleted) before the broker came back
    assert out.past == (PastFailure(3, SINCE, NAME, BACK, not_retired=DELETED),)


def test_every_ended_failure_is_kept_and_the_history_is_bounded() -> None:
    old = tuple(PastFailure(9, format_time(T0 - 1000 + i), retired_at=format_time(T0)) for i in range(12))
    waiting = PastFailure(3, SINCE, NAME, BACK)  # awaiting retirement: kept beyond the count
    out = retire([heal()], past=(waiting, *old), now_ended=(DeadBroker(5, SINCE, back_since=BACK),))
    assert len(out.past) == MAX_PAST_FAILURES
    assert out.past[-2] == PastFailure(5, SINCE, None, BACK)  # no heal was started for it
    assert out.past[-1].heal == NAME and out.past[-1].retired_at is not None  # retired now: the newest
    assert out.past[:-2] == old[-(MAX_PAST_FAILURES - 2) :]
    same = retire([], past=out.past, now_ended=(DeadBroker(5, SINCE, back_since=BACK),))
    assert len(same.past) == MAX_PAST_FAILURES  # an ended failure is recorded once
    many = tuple(PastFailure(b, SINCE, f"h{b}", BACK) for b in range(12))
    assert retire([], past=many, live=frozenset()).past == many  # nothing known: awaiting ones all kept


def test_nothing_is_retired_without_self_healing_or_without_knowing_who_is_alive() -> None:
    assert retire([heal()], now_ended=(ended(),), raw=None).deletes == ()
    assert retire([heal()], now_ended=(ended(),), raw=None).past == (PastFailure(3, SINCE, NAME, BACK),)
    assert retire([heal()], now_ended=(ended(),), raw={"brokerFailure": {"onReturn": "x"}}).deletes == ()
    assert retire([heal()], live=frozenset()).deletes == ()
    user = heal()
    user["metadata"]["labels"] = {}  # a BrokerDecommission a user made: never ours to delete
    assert retire([user]).deletes == ()
    going = heal()
    going["metadata"]["deletionTimestamp"] = "2026-11-27T12:20:00Z"
    assert retire([going]).deletes == ()


def test_the_brokers_at_creation_come_from_the_annotation_or_an_older_heals_failure() -> None:
    assert brokers_at_creation(heal()) == (3,)
    assert brokers_at_creation(heal(made=None)) == (3,)  # made before heal-brokers existed
    assert brokers_at_creation(heal(made="[3, 4]")) == (3, 4)
    for bad in ("x", "[]", '["3"]', "[true]", "3"):
        assert brokers_at_creation(heal(made=bad)) is None
    older = heal(made=None)
    assert [r.name for r in retire([older]).deletes] == [NAME]
    unreadable = retire([heal(made="x")], past=(PastFailure(3, SINCE, NAME, BACK),))
    assert unreadable.deletes == () and not unreadable.past[0].awaiting_retirement


def test_a_heal_records_the_brokers_it_was_created_for() -> None:
    owner = {"kind": "KafkaCluster", "metadata": {"name": "main", "namespace": "kafka", "uid": "u"}}
    seen = Seen(frozenset({1, 2, 3}), frozenset({1, 2}), frozenset({1, 2}), frozenset())
    out = decide_healing(SPEC, owner, HealingState((DeadBroker(3, SINCE),)), seen, [], T0 + 20)
    (new,) = out.creates
    assert json.loads(new.body["metadata"]["annotations"][HEAL_BROKERS]) == [3]
    assert brokers_at_creation(new.body) == (3,)


def test_on_return_is_a_typed_field_refusing_unknown_values() -> None:
    assert SelfHealingSpec.parse({}).broker_failure.on_return == "Retire"
    assert SelfHealingSpec.parse(spec(onReturn="Keep")).broker_failure.on_return == "Keep"
    with pytest.raises(BadInputError) as e:
        SelfHealingSpec.parse(spec(onReturn="Forget"))
    assert e.value.location == "spec.selfHealing.brokerFailure.onReturn"
    assert "must be one of Retire, Keep" in e.value.message


def test_past_failures_round_trip_and_broken_entries_are_dropped() -> None:
    entry = PastFailure(3, SINCE, NAME, BACK, format_time(T0 + 1020))
    assert PastFailure.from_json(entry.to_json(), "e") == entry
    status = {
        "pastFailures": [
            entry.to_json(),
            {"broker": 4, "since": SINCE, "retiredAt": "later"},
            {"broker": 5},
        ]
    }
    got, problems = past_failures(status)
    assert got == (entry,) and len(problems) == 2 and "retiredAt" in problems[0]
