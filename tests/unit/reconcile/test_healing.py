"""Self-healing's pure decision (reconcile/healing.py) and its typed contracts (model/self_healing.py),
from plain values and a clock passed in: no Kafka, no Kubernetes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kafka_placement.model.crd_schema import crd_documents
from kafka_placement.model.errors import BadInputError
from kafka_placement.model.self_healing import (
    MAX_AFTER_SECONDS,
    DeadBroker,
    HealingState,
    OfflineLogDir,
    PastFailure,
    SelfHealingSpec,
    UnreachableBroker,
    format_time,
    parse_time,
)
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.reconcile.healing import (
    CREATED_BY,
    FAILED_AT,
    FAILURE,
    SELF_HEALING,
    Heal,
    HealingOutcome,
    Seen,
    Tracked,
    decide_healing,
    heal_name,
    healed_in,
    heals_of,
    lost_now,
    named_in,
    seen_in_snapshot,
    seen_live,
    track_brokers,
)

T0 = parse_time("2026-11-27T12:00:00Z", "t")
OWNER: dict[str, Any] = {
    "apiVersion": "kafkaplacement.io/v1alpha1",
    "kind": "KafkaCluster",
    "metadata": {"name": "main", "namespace": "kafka", "uid": "uid-1"},
}
SPEC = {
    "brokerFailure": {"enabled": True, "afterSeconds": 600},
    "logDirFailure": {"enabled": True, "afterSeconds": 60},
    "approval": "Automatic",
    "maxConcurrentBrokerHeals": 1,
}


def seen(
    live: set[int], named: set[int] | None = None, offline: frozenset[tuple[int, str]] = frozenset()
) -> Seen:
    named = set(live) if named is None else named
    return Seen(frozenset(named | live), frozenset(live), frozenset(live), frozenset(offline))


def dead(b: int, since: float = T0, heal: str | None = None, back: float | None = None) -> DeadBroker:
    return DeadBroker(b, format_time(since), heal, back_since=None if back is None else format_time(back))


def heal_body(kind: str, name: str, spec: dict[str, Any], phase: str | None = None) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": name, "namespace": "kafka", "labels": {CREATED_BY: SELF_HEALING}},
        "spec": {"clusterRef": {"name": "main"}, **spec},
        **({"status": {"phase": phase}} if phase else {}),
    }


def run(
    previous: HealingState,
    facts: Seen,
    now: float,
    heals: list[Heal] | None = None,
    spec: object = SPEC,
    condition: dict[str, Any] | None = None,
) -> HealingOutcome:
    return decide_healing(spec, OWNER, previous, facts, heals or [], now, condition)


# ---- broker failure ---------------------------------------------------------------------------------


def test_a_dead_broker_is_tracked_from_when_it_is_first_seen_and_healed_after_the_delay() -> None:
    first = run(HealingState(), seen({1, 2}, named={1, 2, 3}), T0)
    assert first.state.dead_brokers == (dead(3),)
    assert first.creates == () and first.wake_at == T0 + 600
    assert first.condition is not None and first.condition[:2] == (True, "FailureSeen")
    assert "broker 3 not alive since 2026-11-27T12:00:00Z: healed after 600 s" in first.condition[2]

    waiting = run(first.state, seen({1, 2}, named={1, 2, 3}), T0 + 599)
    assert waiting.creates == () and waiting.state == first.state  # "since" is kept, not reset

    due = run(first.state, seen({1, 2}, named={1, 2, 3}), T0 + 600)
    (new,) = due.creates
    assert new.kind == "BrokerDecommission" and new.plural == "brokerdecommissions"
    assert new.name == "main-heal-broker-3-20261127t120000z"
    body = new.body
    assert body["metadata"]["labels"][CREATED_BY] == SELF_HEALING
    assert body["metadata"]["annotations"][FAILURE] == "broker 3 not alive since 2026-11-27T12:00:00Z"
    assert body["metadata"]["annotations"][FAILED_AT] == "2026-11-27T12:00:00Z"
    assert body["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kafkaplacement.io/v1alpha1",
            "kind": "KafkaCluster",
            "name": "main",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": False,
        }
    ]
    assert body["metadata"]["namespace"] == "kafka"
    assert body["spec"] == {"clusterRef": {"name": "main"}, "brokers": [3], "approval": "Automatic"}
    assert due.state.dead_brokers == (dead(3, heal=new.name),)
    assert due.condition is not None and due.condition[:2] == (True, "Healing")
    assert "delete it to cancel" in new.message


def test_manual_approval_is_passed_to_the_heal() -> None:
    out = run(HealingState((dead(3),)), seen({1, 2}), T0 + 600, spec={**SPEC, "approval": "Manual"})
    assert out.creates[0].body["spec"]["approval"] == "Manual"


def test_a_broker_back_before_the_delay_starts_nothing_and_its_entry_goes_once_settled() -> None:
    back = run(HealingState((dead(3),)), seen({1, 2, 3}), T0 + 30)
    assert back.state.dead_brokers == (dead(3, back=T0 + 30),) and back.creates == () and back.notes == ()
    assert back.wake_at == T0 + 30 + 120  # the default settleSeconds: the reconcile reads Kafka then
    assert back.condition is not None and back.condition[:2] == (True, "FailureSeen")
    assert "back since 2026-11-27T12:00:30Z" in back.condition[2]
    still = run(back.state, seen({1, 2, 3}), T0 + 149)
    assert still.state == back.state and still.notes == ()
    out = run(back.state, seen({1, 2, 3}), T0 + 150)
    assert out.state == HealingState() and out.creates == ()
    (note,) = out.notes
    assert note.on is None and note.type == "Normal" and "no heal was started" in note.message
    assert out.condition is not None and out.condition[:2] == (True, "NoFailure")


def test_a_broker_back_while_its_heal_runs_says_so_once_settled() -> None:
    """With onReturn Keep the heal stays (the user deletes it); with Retire (the default) the Event says it
    is retired (retiring.py decides when and deletes it)."""
    keep = {**SPEC, "brokerFailure": {**SPEC["brokerFailure"], "onReturn": "Keep"}}
    name = "main-heal-broker-3-20261127t120000z"
    body = heal_body("BrokerDecommission", name, {"brokers": [3]}, "Executing")
    settling = HealingState((dead(3, heal=name, back=T0 + 580),))
    early = run(settling, seen({1, 2, 3}), T0 + 699, heals=heals_of([body]), spec=keep)
    assert early.state == settling and early.notes == () and early.creates == ()
    out = run(settling, seen({1, 2, 3}), T0 + 700, heals=heals_of([body]), spec=keep)
    assert out.state.dead_brokers == () and out.creates == ()
    assert out.ended == (dead(3, heal=name, back=T0 + 580),) and out.live == {1, 2, 3}
    assert [n.on for n in out.notes] == [None, body]  # on the KafkaCluster and on the heal
    assert all("goes on: delete it to cancel" in n.message for n in out.notes)
    completed = heals_of([heal_body("BrokerDecommission", name, {"brokers": [3]}, "Completed")])
    out = run(settling, seen({1, 2, 3}), T0 + 700, heals=completed, spec=keep)
    assert "keeps its replicas off it" in out.notes[0].message
    retired = run(settling, seen({1, 2, 3}), T0 + 700, heals=completed)
    assert [n.reason for n in retired.notes] == ["FailureEnded", "FailureEnded"]
    assert "is retired (onReturn: Retire)" in retired.notes[0].message


def test_a_flapping_broker_keeps_its_first_since_and_is_healed_after_the_delay_from_it() -> None:
    """Dies, returns, dies again within settleSeconds, several times: one failure, since the first death."""
    facts_dead, facts_back = seen({1, 2}, named={1, 2, 3}), seen({1, 2, 3})
    state = run(HealingState(), facts_dead, T0).state
    for t in (100, 250, 400):  # back for 50 s, dead for 100 s, three times (settle is 120 s)
        state = run(state, facts_back, T0 + t).state
        assert state.dead_brokers == (dead(3, back=T0 + t),)
        out = run(state, facts_dead, T0 + t + 50)
        assert out.state.dead_brokers == (dead(3),) and out.creates == ()  # since kept, backSince gone
        state = out.state
    back = run(state, facts_back, T0 + 590)
    assert back.creates == ()  # alive now: not healed while it is back
    due = run(back.state, facts_dead, T0 + 620)  # dead again, afterSeconds after the first death
    (new,) = due.creates
    assert new.name == "main-heal-broker-3-20261127t120000z" and new.body["spec"]["brokers"] == [3]
    assert due.state.dead_brokers == (dead(3, heal=new.name),)


def test_a_broker_that_settled_and_dies_again_is_a_new_failure() -> None:
    spec = {**SPEC, "brokerFailure": {"enabled": True, "afterSeconds": 600, "settleSeconds": 5}}
    back = run(HealingState((dead(3),)), seen({1, 2, 3}), T0 + 10, spec=spec)
    assert back.wake_at == T0 + 15
    settled = run(back.state, seen({1, 2, 3}), T0 + 15, spec=spec)
    assert settled.state == HealingState()
    again = run(settled.state, seen({1, 2}, named={1, 2, 3}), T0 + 20, spec=spec)
    assert again.state.dead_brokers == (dead(3, since=T0 + 20),)


def test_a_broker_alive_in_the_cluster_that_does_not_answer_is_unreachable_never_dead() -> None:
    facts = Seen(frozenset({1, 2, 3}), frozenset({1, 2, 3}), frozenset({1, 2}), frozenset())
    first = run(HealingState(), facts, T0)
    assert first.state == HealingState(unreachable_brokers=(UnreachableBroker(3, format_time(T0)),))
    assert first.creates == () and first.wake_at is None
    assert first.condition is not None and first.condition[:2] == (True, "NoFailure")
    assert first.reachable is not None and first.reachable[:2] == (False, "BrokersUnreachable")
    assert "3 (since 2026-11-27T12:00:00Z)" in first.reachable[2] and "not dead" in first.reachable[2]
    (warning,) = first.notes
    assert (warning.type, warning.reason) == ("Warning", "BrokersUnreachable")
    old = {"type": "BrokersReachable", "status": "False", "reason": first.reachable[1]}
    later = run(first.state, facts, T0 + 10_000, condition=None)
    assert later.state == first.state and later.creates == ()  # since kept, never healed
    quiet = decide_healing(
        SPEC, OWNER, first.state, facts, [], T0 + 60, None, {**old, "message": first.reachable[2]}
    )
    assert quiet.notes == ()  # the same condition: no second Warning
    answered = decide_healing(SPEC, OWNER, first.state, seen({1, 2, 3}), [], T0 + 70, None, old)
    assert answered.state == HealingState()
    assert answered.reachable == (
        True,
        "AllBrokersReachable",
        "every broker alive in the cluster answers the operator",
    )
    assert [(n.type, n.reason) for n in answered.notes] == [("Normal", "AllBrokersReachable")]


def test_a_dead_broker_back_but_unreachable_is_back_not_dead() -> None:
    facts = Seen(frozenset({1, 2, 3}), frozenset({1, 2, 3}), frozenset({1, 2}), frozenset())
    out = run(HealingState((dead(3),)), facts, T0 + 900)
    assert out.creates == ()  # alive in the cluster: never healed for the operator's own network
    assert out.state.dead_brokers == (dead(3, back=T0 + 900),)
    assert out.state.unreachable_brokers == (UnreachableBroker(3, format_time(T0 + 900)),)


def test_a_cluster_whose_brokers_all_do_not_answer_heals_nothing_and_says_so_once() -> None:
    facts = Seen(frozenset({1, 2, 3}), frozenset({1, 2, 3}), frozenset(), frozenset())
    state = HealingState((dead(4),))
    before = {"type": "SelfHealing", "status": "True", "reason": "FailureSeen", "message": "m"}
    out = run(state, facts, T0 + 10_000, condition=before)
    assert out.creates == () and out.state.dead_brokers == state.dead_brokers  # nothing new is dead
    assert [u.id for u in out.state.unreachable_brokers] == [1, 2, 3]
    assert out.condition == (True, "FailureSeen", "m")  # self-healing's condition stays as it was
    assert out.reachable is not None and out.reachable[:2] == (False, "ClusterUnreachable")
    assert "no broker alive in the cluster (1, 2, 3) answers the operator" in out.reachable[2]
    assert [n.reason for n in out.notes] == ["ClusterUnreachable"]  # one Warning, no "dead" anywhere
    assert not any("not alive" in n.message for n in out.notes)


def test_track_brokers_is_a_function_of_the_tracked_failures_the_cluster_and_the_time() -> None:
    facts = Seen(frozenset({1, 2, 3, 4}), frozenset({1, 2, 3}), frozenset({1, 2}), frozenset())
    previous = HealingState(
        (dead(2), dead(4, since=T0 - 50)), (), (UnreachableBroker(3, format_time(T0 - 9)),)
    )
    got = track_brokers(previous, facts, T0, 120)
    assert got == Tracked(
        dead=(dead(2, back=T0), dead(4, since=T0 - 50)),
        unreachable=(UnreachableBroker(3, format_time(T0 - 9)),),
        ended=(),
        wake_at=T0 + 120,
        reachable=frozenset({1, 2}),
    )
    assert track_brokers(previous, facts, T0, 120) == got  # no hidden state, no clock


def test_more_brokers_dead_than_allowed_is_a_correlated_failure_no_heal() -> None:
    state = HealingState((dead(2), dead(3)))
    out = run(state, seen({1}, named={1, 2, 3}), T0 + 3600)
    assert out.creates == ()
    assert out.condition is not None and out.condition[:2] == (False, "CorrelatedFailure")
    assert "[2, 3]" in out.condition[2] and "maxConcurrentBrokerHeals 1" in out.condition[2]
    (warning,) = out.notes
    assert (warning.on, warning.type, warning.reason) == (None, "Warning", "CorrelatedFailure")
    # the same condition again: no second Warning
    old = {"type": "SelfHealing", "reason": out.condition[1], "message": out.condition[2]}
    assert run(state, seen({1}, named={1, 2, 3}), T0 + 3602, condition=old).notes == ()
    # a larger limit heals both
    out = run(state, seen({1}, named={1, 2, 3}), T0 + 3600, spec={**SPEC, "maxConcurrentBrokerHeals": 2})
    assert [c.body["spec"]["brokers"] for c in out.creates] == [[2], [3]]


def test_running_self_healing_decommissions_count_against_the_limit() -> None:
    running = heals_of([heal_body("BrokerDecommission", "h3", {"brokers": [3]}, "Executing")])
    out = run(HealingState((dead(2),)), seen({1, 3}, named={1, 2, 3}), T0 + 600, heals=running)
    assert out.creates == () and out.condition is not None and out.condition[1] == "CorrelatedFailure"
    done = heals_of([heal_body("BrokerDecommission", "h3", {"brokers": [3]}, "Completed")])
    out = run(HealingState((dead(2),)), seen({1, 3}, named={1, 2, 3}), T0 + 600, heals=done)
    assert [c.body["spec"]["brokers"] for c in out.creates] == [[2]]
    # a heal that Failed is not running: it would make every later failure a correlated one for good
    failed = heals_of([heal_body("BrokerDecommission", "h4", {"brokers": [4]}, "Failed")])
    state = HealingState((dead(2), dead(4, heal="h4")))
    out = run(state, seen({1, 3}, named={1, 2, 3, 4}), T0 + 600, heals=failed)
    assert [c.body["spec"]["brokers"] for c in out.creates] == [[2]]


def test_an_unreachable_cluster_is_not_a_dead_broker() -> None:
    state = HealingState((dead(3),))
    out = run(state, seen(set(), named={1, 2, 3}), T0 + 10_000)
    assert out == HealingOutcome(state)


def test_a_deleted_heal_is_cancelled_and_not_created_again() -> None:
    out = run(HealingState((dead(3, heal="h3"),)), seen({1, 2}, named={1, 2, 3}), T0 + 9000)
    assert out.creates == () and out.state.dead_brokers == (dead(3, heal="h3"),)
    assert out.condition is not None and "heal h3 (deleted: cancelled)" in out.condition[2]
    # a cancelled heal does not count against the limit: another dead broker is healed
    out = run(HealingState((dead(2), dead(3, heal="h3"))), seen({1}, named={1, 2, 3}), T0 + 9000)
    assert [c.body["spec"]["brokers"] for c in out.creates] == [[2]]


def test_a_heal_made_by_a_reconcile_whose_status_was_lost_is_adopted() -> None:
    made = heals_of([heal_body("BrokerDecommission", "h3", {"brokers": [3]})])
    out = run(HealingState((dead(3),)), seen({1, 2}, named={1, 2, 3}), T0 + 600, heals=made)
    assert out.creates == () and out.state.dead_brokers == (dead(3, heal="h3"),)


def test_a_heal_that_could_not_be_created_stays_pending() -> None:
    out = run(HealingState((dead(3),)), seen({1, 2}, named={1, 2, 3}), T0 + 600)
    name = out.creates[0].name
    left = out.not_created([name])
    assert left.creates == () and left.state.dead_brokers == (dead(3),)
    assert out.not_created([]) is out


def test_disabled_or_absent_self_healing_tracks_failures_but_heals_nothing() -> None:
    off = {**SPEC, "brokerFailure": {"enabled": False}}
    out = run(HealingState((dead(3),)), seen({1, 2}, named={1, 2, 3}), T0 + 9000, spec=off)
    assert out.creates == () and out.state.dead_brokers == (dead(3),)
    assert out.condition is not None and "not healed (disabled)" in out.condition[2]
    absent = run(HealingState((dead(3),)), seen({1, 2}, named={1, 2, 3}), T0 + 9000, spec=None)
    assert absent.creates == () and absent.condition is None and absent.state.dead_brokers == (dead(3),)


def test_an_invalid_spec_heals_nothing_and_says_why() -> None:
    out = run(HealingState(), seen({1, 2}, named={1, 2, 3}), T0, spec={"brokerFailure": {"afterSeconds": 0}})
    assert out.creates == ()
    assert out.condition == (
        False,
        "InvalidSpec",
        "spec.selfHealing: spec.selfHealing.brokerFailure.afterSeconds: must be >= 1, got 0",
    )
    assert out.notes[-1].type == "Warning" and out.state.dead_brokers == (dead(3, since=T0),)


# ---- where the facts come from --------------------------------------------------------------------------


def snapshot() -> ClusterSnapshot:
    def dirs(*offline: str) -> list[dict[str, Any]]:
        return [{"path": p, "online": p not in offline} for p in ("/d0", "/d1")]

    part = {"leader": None, "isr": [], "sizeBytes": 1}
    return ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [
                {"id": 1, "rack": None, "logDirs": dirs()},
                {"id": 2, "rack": None, "logDirs": dirs("/d1")},
                {"id": 3, "rack": None, "logDirs": [], "alive": False},
            ],
            "partitions": [
                {"topic": "one", "partition": 0, "replicas": [3], "logDirs": [None], **part},
                {"topic": "both", "partition": 0, "replicas": [3, 2], "logDirs": [None, "/d1"], **part},
                {"topic": "safe", "partition": 0, "replicas": [3, 1], "logDirs": [None, "/d0"], **part}
                | {"leader": 1, "isr": [1]},
                {"topic": "dir", "partition": 0, "replicas": [2], "logDirs": ["/d1"], **part},
                # its leader 3 died while 1 was out of sync: no in-sync replica left
                {"topic": "stuck", "partition": 0, "replicas": [3, 1], "logDirs": [None, "/d0"], **part}
                | {"isr": [3]},
            ],
        }
    )


def test_a_snapshot_names_dead_brokers_offline_dirs_and_lost_partitions() -> None:
    facts = seen_in_snapshot(snapshot())
    assert facts.named == {1, 2, 3} and facts.live == {1, 2} and facts.offline == {(2, "/d1")}
    assert facts.full and facts.lost == {
        3: (2, ("one-0", "both-0")),
        (2, "/d1"): (2, ("both-0", "dir-0")),
    }
    assert facts.no_isr == {3: (1, ("stuck-0 (out of sync: 1)",))}
    out = run(HealingState(), facts, T0)
    assert out.state == HealingState(
        (
            DeadBroker(
                3,
                format_time(T0),
                None,
                ("one-0", "both-0"),
                2,
                no_in_sync=("stuck-0 (out of sync: 1)",),
                no_in_sync_count=1,
            ),
        ),
        (OfflineLogDir(2, "/d1", format_time(T0), None, ("both-0", "dir-0"), 2),),
    )
    assert out.condition is not None and out.condition[:2] == (False, "DataLost")
    assert "one-0" in out.condition[2] and "data lost, not healed" in out.condition[2]
    assert "stuck-0 (out of sync: 1)" in out.condition[2]  # named with the lost ones
    later = run(out.state, facts, T0 + 600)
    assert {c.kind for c in later.creates} == {"BrokerDecommission", "LogDirCordon"}
    assert "one-0" in later.creates[0].message


def test_a_snapshot_with_an_unreachable_broker_has_it_alive_with_its_dirs_unread() -> None:
    doc = snapshot().to_json()
    doc["unreachableBrokers"] = [2]
    doc["brokers"][1]["logDirs"] = []
    doc["partitions"][1]["logDirs"] = [None, None]
    doc["partitions"][3]["logDirs"] = [None]
    snap = ClusterSnapshot.from_json(doc)
    assert snap.unreachable == (2,) and ClusterSnapshot.from_json(snap.to_json()) == snap
    facts = seen_in_snapshot(snap)
    assert facts.live == {1, 2} and facts.dirs_read == {1} and facts.offline == frozenset()
    assert facts.lost == {3: (1, ("one-0",))}  # both-0 has a replica on the live broker 2: not lost
    out = run(HealingState(), facts, T0 + 10_000)
    assert [d.id for d in out.state.dead_brokers] == [3]
    assert [u.id for u in out.state.unreachable_brokers] == [2]
    doc["unreachableBrokers"] = [3]  # a dead broker is not unreachable
    with pytest.raises(BadInputError, match="not a listed live broker"):
        ClusterSnapshot.from_json(doc)


def test_an_offline_dir_gets_a_draining_cordon_after_its_delay() -> None:
    facts = seen({1, 2, 3}, offline=frozenset({(2, "/d1")}))
    first = run(HealingState(), facts, T0)
    assert first.state.offline_log_dirs == (OfflineLogDir(2, "/d1", format_time(T0)),)
    assert first.wake_at == T0 + 60 and first.creates == ()
    (new,) = run(first.state, facts, T0 + 60).creates
    assert new.kind == "LogDirCordon"
    assert new.body["spec"] == {
        "clusterRef": {"name": "main"},
        "broker": 2,
        "logDirs": ["/d1"],
        "drain": True,
        "approval": "Automatic",
    }
    assert new.body["metadata"]["annotations"][FAILURE] == (
        "log dir /d1 of broker 2 offline since 2026-11-27T12:00:00Z"
    )
    back = run(first.state, seen({1, 2, 3}), T0 + 30)
    assert back.state == HealingState() and "online again" in back.notes[0].message


def test_the_dirs_of_a_dead_broker_are_kept_not_healed() -> None:
    state = HealingState((), (OfflineLogDir(2, "/d1", format_time(T0)),))
    out = run(state, seen({1, 3}, named={1, 2, 3}), T0 + 600)
    assert out.state.offline_log_dirs == state.offline_log_dirs
    assert [c.kind for c in out.creates] == []  # broker 2 (dead since now) is not due either


def test_without_a_snapshot_the_status_brokers_stand_for_the_named_ones() -> None:
    facts = seen_live([1, 2, 3], [1, 2], {1: [("/d0", True)], 2: [("/d0", True), ("/d1", False)]})
    assert facts.named == {1, 2, 3} and facts.offline == {(2, "/d1")} and not facts.full
    out = run(HealingState((DeadBroker(3, format_time(T0), None, ("one-0",), 1),)), facts, T0 + 5)
    assert out.state.dead_brokers[0].lost_partitions == ("one-0",)  # kept: not known in this reconcile
    # a broker the status no longer lists stays dead until it is seen alive
    assert run(HealingState((dead(4),)), facts, T0).state.dead_brokers == (dead(3), dead(4))


def test_a_broker_lost_during_an_execution_is_seen_at_once_and_stays_named() -> None:
    """A reconcile driving an execution reads no snapshot and lists only the brokers whose dirs it read.
    A listed broker that stops answering, or dies, and is not tracked yet is ``lost_now`` (the reconcile
    reads the cluster whole at once); a broker tracked as unreachable that then dies is still named, so it
    is tracked as dead, not forgotten because the last light status did not list it."""
    listed = {"brokers": [{"id": 1}, {"id": 2}, {"id": 3}]}
    assert lost_now(listed, [1, 2, 3], {1, 2, 3}) == frozenset()
    assert lost_now(listed, [1, 2, 3], {1, 2}) == {3}  # alive, not answering: unreachable, read whole
    assert lost_now(listed, [1, 2], {1, 2}) == {3}  # dead
    tracked = {**listed, "unreachableBrokers": [{"id": 3, "since": "2026-11-27T12:00:00Z"}]}
    assert lost_now(tracked, [1, 2], {1, 2}) == frozenset()  # tracked already: no full read per tick
    light = {"brokers": [{"id": 1}, {"id": 2}], "unreachableBrokers": [{"id": 3, "since": "x"}]}
    assert named_in(light) == {1, 2, 3}
    facts = seen_live(named_in(light), [1, 2], {1: [("/d0", True)], 2: [("/d0", True)]})
    out = run(HealingState((), (), (UnreachableBroker(3, format_time(T0)),)), facts, T0 + 5)
    assert [d.id for d in out.state.dead_brokers] == [3] and out.state.unreachable_brokers == ()
    assert named_in({"brokers": [{"id": "x"}], "deadBrokers": "bad"}) == set()  # hostile status: ignored


def test_a_dead_broker_no_replica_names_any_more_is_tracked_only_if_it_was_healed() -> None:
    facts = Seen(frozenset({1, 2}), frozenset({1, 2}), frozenset({1, 2}), frozenset(), full=True, lost={})
    # never healed (a broker retired by hand, say): nothing left to track
    out = run(HealingState((dead(3),)), facts, T0 + 9000)
    assert out.state == HealingState() and out.notes == ()
    # healed: its Completed heal emptied it; it stays tracked until it is back for settleSeconds, so that
    # its heal is retired only then, with the time it came back (a dropped entry let a return retire the
    # heal at once, with no settle time and no returnedAt: seen on the rig under load)
    out = run(HealingState((dead(3, heal="h3"),)), facts, T0 + 9000)
    assert out.state.dead_brokers == (dead(3, heal="h3"),) and out.ended == ()


def test_heals_of_reads_only_self_healing_objects_not_being_deleted() -> None:
    mine = heal_body("LogDirCordon", "c", {"broker": 2, "logDirs": ["/d1"], "drain": True}, "Executing")
    user = {**mine, "metadata": {"name": "u", "labels": {}}}
    deleting = heal_body("BrokerDecommission", "d", {"brokers": [1]})
    deleting["metadata"]["deletionTimestamp"] = "2026-11-27T12:00:00Z"
    (h,) = heals_of([mine, user, deleting])
    assert (h.kind, h.name, h.target, h.phase) == ("LogDirCordon", "c", (2, "/d1"), "Executing")


def test_heal_names_are_dns_names_within_limits() -> None:
    name = heal_name("c" * 253, "dir-2-abcdef12", "2026-11-27T12:00:00Z")
    assert len(name) <= 253 and re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name)


# ---- the typed contracts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "where", "problem"),
    [
        ({"brokerFailure": {"afterSeconds": 0}}, "spec.selfHealing.brokerFailure.afterSeconds", ">= 1"),
        (
            {"logDirFailure": {"afterSeconds": MAX_AFTER_SECONDS + 1}},
            "spec.selfHealing.logDirFailure.afterSeconds",
            f"<= {MAX_AFTER_SECONDS}",
        ),
        ({"brokerFailure": {"enabeld": True}}, "spec.selfHealing.brokerFailure", "unknown field(s) enabeld"),
        ({"approval": "Sometimes"}, "spec.selfHealing.approval", "Automatic, Manual"),
        ({"maxConcurrentBrokerHeals": 0}, "spec.selfHealing.maxConcurrentBrokerHeals", ">= 1"),
        ({"brokerFailure": {"settleSeconds": 0}}, "spec.selfHealing.brokerFailure.settleSeconds", ">= 1"),
        (
            {"brokerFailure": {"settleSeconds": 86401}},
            "spec.selfHealing.brokerFailure.settleSeconds",
            "<= 86400",
        ),
        ({"logDirFailure": {"settleSeconds": 5}}, "spec.selfHealing.logDirFailure", "unknown field(s)"),
        ({"extra": 1}, "spec.selfHealing", "unknown field(s) extra"),
    ],
)
def test_spec_parser_refuses_bad_input_naming_the_field(
    raw: dict[str, Any], where: str, problem: str
) -> None:
    with pytest.raises(BadInputError) as e:
        SelfHealingSpec.parse(raw)
    assert e.value.location == where and problem in e.value.message


def test_spec_defaults() -> None:
    s = SelfHealingSpec.parse({})
    assert (s.broker_failure.enabled, s.broker_failure.after_seconds) == (False, 600)
    assert s.broker_failure.settle_seconds == 120
    assert (s.log_dir_failure.enabled, s.log_dir_failure.after_seconds) == (False, 60)
    assert (s.approval, s.max_concurrent_broker_heals) == ("Automatic", 1)


def _cluster_schema() -> dict[str, Any]:
    (doc,) = [d for d in crd_documents() if d["spec"]["names"]["kind"] == "KafkaCluster"]
    schema: dict[str, Any] = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def test_the_crd_schema_is_the_parsers() -> None:
    spec = _cluster_schema()["properties"]["spec"]["properties"]["selfHealing"]
    assert list(spec["properties"]) == list(SelfHealingSpec.FIELDS)
    for rule in ("brokerFailure", "logDirFailure"):
        after = spec["properties"][rule]["properties"]["afterSeconds"]
        assert (after["minimum"], after["maximum"]) == (1, MAX_AFTER_SECONDS)
    settle = spec["properties"]["brokerFailure"]["properties"]["settleSeconds"]
    assert (settle["minimum"], settle["maximum"], settle["default"]) == (1, 86400, 120)
    on_return = spec["properties"]["brokerFailure"]["properties"]["onReturn"]
    assert (on_return["enum"], on_return["default"]) == (["Retire", "Keep"], "Retire")
    assert spec["properties"]["approval"]["enum"] == ["Automatic", "Manual"]
    status = _cluster_schema()["properties"]["status"]["properties"]
    when, back = "2026-11-27T12:00:00Z", "2026-11-27T12:01:00Z"
    full = DeadBroker(3, when, "h", ("t-0",), 1, back, ("t-1",), 1).to_json()
    assert set(status["deadBrokers"]["items"]["properties"]) == set(full)
    unreachable = UnreachableBroker(3, "2026-11-27T12:00:00Z").to_json()
    assert set(status["unreachableBrokers"]["items"]["properties"]) == set(unreachable)
    assert "BrokersReachable" in status["conditions"]["items"]["properties"]["type"]["enum"]
    full_dir = OfflineLogDir(2, "/d", "2026-11-27T12:00:00Z", "h", ("t-0",), 1).to_json()
    assert set(status["offlineLogDirs"]["items"]["properties"]) == set(full_dir)
    assert "SelfHealing" in status["conditions"]["items"]["properties"]["type"]["enum"]
    past = PastFailure(3, "2026-11-27T12:00:00Z", "h", "2026-11-27T12:01:00Z", "2026-11-27T12:03:00Z", "x")
    assert set(status["pastFailures"]["items"]["properties"]) == set(past.to_json())


def test_status_round_trip_and_broken_entries_are_dropped() -> None:
    """What an operator restart reads back: since, backSince (a settling broker) and unreachable brokers."""
    t0, t1 = "2026-11-27T12:00:00Z", "2026-11-27T12:01:00Z"
    state = HealingState(
        (DeadBroker(3, t0, "h3", ("t-0",), 1), DeadBroker(5, t0, back_since=t1)),
        (OfflineLogDir(2, "/d1", t1),),
        (UnreachableBroker(4, t1),),
    )
    doc = state.to_status()
    assert doc == {
        "deadBrokers": [
            {"id": 3, "since": t0, "heal": "h3", "lostPartitions": ["t-0"], "lostPartitionCount": 1},
            {"id": 5, "since": t0, "lostPartitionCount": 0, "backSince": t1},
        ],
        "offlineLogDirs": [{"broker": 2, "path": "/d1", "since": t1, "lostPartitionCount": 0}],
        "unreachableBrokers": [{"id": 4, "since": t1}],
    }
    assert HealingState.from_status(doc) == (state, [])
    broken = {
        "deadBrokers": [
            {"id": 3, "since": "yesterday"},
            {"id": "x", "since": t0},
            {"id": 4, "since": t0, "backSince": "soon"},
        ],
        "unreachableBrokers": [{"id": 1}],
    }
    got, problems = HealingState.from_status(broken)
    assert got == HealingState() and len(problems) == 4 and "not an RFC 3339 time" in problems[0]
    assert "backSince" in problems[2] and "missing required field 'since'" in problems[3]


def test_a_decommission_of_a_broker_it_emptied_and_that_is_gone_converges() -> None:
    """A dead broker's decommission empties it; the cluster then no longer names the broker at all. Planned
    again (before Completed), the accepted decommission drops that broker (nothing is on it) instead of
    failing as "unknown broker"; a broker unknown from the start still fails (a typo)."""
    from kafka_placement.model.snapshot import Broker, ClusterSnapshot
    from kafka_placement.reconcile.inputs import planning_document

    snap = ClusterSnapshot((Broker(1, None, ()), Broker(2, None, ())), ())

    def retire(brokers: list[int], phase: str | None) -> dict[str, object]:
        status = {"phase": phase} if phase else {}
        return {
            "kind": "BrokerDecommission",
            "metadata": {"name": "r"},
            "spec": {"brokers": brokers},
            "status": status,
        }

    assert planning_document(retire([3], "Executing"), snap) is None
    assert planning_document(retire([2, 3], "Completed"), snap) == {
        "kind": "BrokerDecommission", "spec": {"brokers": [2]}, "metadata": {"name": "r"}
    }  # fmt: skip
    for fresh in (None, "Pending", "Planning", "Failed"):
        assert planning_document(retire([3], fresh), snap) == {
            "kind": "BrokerDecommission", "spec": {"brokers": [3]}, "metadata": {"name": "r"}
        }  # fmt: skip


def test_a_heal_reaching_completed_measures_failure_to_end_once() -> None:
    """``healed_in``: the heal duration metric's value, only on the write that completes a heal."""
    due = run(HealingState((dead(3),)), seen({1, 2}, named={1, 2, 3}), T0 + 600)
    body = {**due.creates[0].body, "kind": "BrokerDecommission"}
    assert healed_in(body, "Executing", "Completed", T0 + 500) == 500.0
    assert healed_in(body, "Completed", "Completed", T0 + 900) is None  # completed before: counted then
    assert healed_in(body, "Executing", "Paused", T0 + 500) is None
    user_made = {**body, "metadata": {**body["metadata"], "labels": {}}}
    assert healed_in(user_made, "Executing", "Completed", T0 + 500) is None  # not a heal
    edited = {**body, "metadata": {**body["metadata"], "annotations": {FAILED_AT: "yesterday"}}}
    assert healed_in(edited, "Executing", "Completed", T0 + 500) is None  # unreadable: no observation


def test_a_partition_with_no_in_sync_replica_is_named_with_a_warning_and_the_heal_still_made() -> None:
    """A leader that died while its follower was out of sync: the partition has no leader and no live
    replica in its ISR. It is not lost (broker 1 holds data) but no copy can be made: the SelfHealing
    condition says NoInSyncReplica (a Warning Event with the partition and its out-of-sync replica),
    the entry names it, and the broker's heal is created all the same (it does the rest)."""
    doc = snapshot().to_json()
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] in ("safe", "stuck")]
    facts = seen_in_snapshot(ClusterSnapshot.from_json(doc))
    out = run(HealingState(), facts, T0)
    (entry,) = out.state.dead_brokers
    assert entry.no_in_sync == ("stuck-0 (out of sync: 1)",) and entry.no_in_sync_count == 1
    assert entry.to_json()["noInSyncReplicaPartitions"] == ["stuck-0 (out of sync: 1)"]
    assert DeadBroker.from_json(entry.to_json(), "e") == entry
    assert out.condition is not None and out.condition[:2] == (False, "NoInSyncReplica")
    assert "never elects an unclean leader" in out.condition[2]
    warned = [n for n in out.notes if n.type == "Warning"]
    assert [n.reason for n in warned] == ["NoInSyncReplica"]
    assert "stuck-0 (out of sync: 1)" in warned[0].message
    said = {"status": "False", "reason": out.condition[1], "message": out.condition[2]}
    later = run(out.state, facts, T0 + 600, condition=said)
    assert "BrokerDecommission" in [c.kind for c in later.creates]  # (and broker 2's offline dir's cordon)
    assert "(deleted: cancelled)" not in later.condition[2]  # the heals made now exist
    said = {"status": "False", "reason": later.condition[1], "message": later.condition[2]}  # (heal named)
    again = run(later.state, facts, T0 + 601, heals=heals_of([c.body for c in later.creates]), condition=said)
    assert not [n for n in again.notes if n.reason == "NoInSyncReplica"]  # said once, not every reconcile
    # once elected (a leader again), the name goes
    doc["partitions"][1] |= {"leader": 1, "isr": [1]}
    fixed = run(again.state, seen_in_snapshot(ClusterSnapshot.from_json(doc)), T0 + 700)
    assert fixed.state.dead_brokers[0].no_in_sync == () and fixed.condition is not None
    assert fixed.condition[1] == "Healing"
