"""Which dirs the operator keeps cordoned (KIP-1066) and which a deleted resource releases, from plain values.

One code path for LogDirCordon and BrokerDecommission (reconcile/cordons.py: ``declared_cordons``,
``owned_cordons``, ``cordon_changes``); the rig tests (tests/e2e/test_operator.py) show the same against
Kafka.
"""

from __future__ import annotations

from collections.abc import Collection

from tests.unit.builders import intents, snapshot

from kafka_placement.model.intents import BrokerDecommission, Intent, LogDirCordon, PlacementPolicy
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir
from kafka_placement.planning.optimizer import compute_plan
from kafka_placement.reconcile.cordons import (
    CordonChanges,
    cordon_changes,
    declared_cordons,
    described,
    owned_cordons,
    with_cordons,
)


def cluster(cordoned: Collection[tuple[int, str]] = (), dead: tuple[int, ...] = ()) -> ClusterSnapshot:
    """Brokers 1-3 with dirs /a and /b; ``dead`` brokers are listed without dirs (as a snapshot does)."""
    return ClusterSnapshot(
        tuple(
            Broker(b, None, ())
            if b in dead
            else Broker(b, None, tuple(LogDir(p, cordoned=(b, p) in cordoned) for p in ("/a", "/b")))
            for b in (1, 2, 3)
        ),
        (),
    )


RETIRE = BrokerDecommission("retire", (3, 2))
DRAIN = LogDirCordon("drain", 1, ("/a",))
WHOLE = LogDirCordon("whole", 3, ("*",))


def test_a_decommission_declares_every_broker_it_retires_as_a_whole_broker_cordon() -> None:
    declared = declared_cordons([RETIRE, DRAIN, PlacementPolicy("p")])
    assert [(c.broker, c.log_dirs) for c in declared] == [(3, ("*",)), (2, ("*",)), (1, ("/a",))]
    assert all(c.whole_broker for c in declared[:2])


def test_owned_cordons_name_every_dir_of_retired_brokers_merged_with_log_dir_cordons() -> None:
    owned = owned_cordons(cluster(), [RETIRE, WHOLE, DRAIN, LogDirCordon("gone", 1, ("/nope",))])
    assert owned == {3: ["/a", "/b"], 2: ["/a", "/b"], 1: ["/a"]}  # each dir once; unknown dirs left out


def test_owned_cordons_leave_out_brokers_that_are_not_alive_or_unknown() -> None:
    owned = owned_cordons(cluster(dead=(2,)), [RETIRE, BrokerDecommission("ghost", (9,))])
    assert owned == {3: ["/a", "/b"]}


def released(
    view: ClusterSnapshot, gone: Intent, others: list[Intent]
) -> tuple[dict[int, list[str]], tuple[int, ...]]:
    """What deleting ``gone`` uncordons while ``others`` stay, and the brokers it names that are skipped."""
    changes = cordon_changes(view, others, [gone])
    return changes.uncordon, changes.skipped


def test_deleting_a_decommission_releases_only_what_kafka_has_cordoned_and_no_one_else_declares() -> None:
    view = cluster(cordoned={(3, "/a"), (3, "/b"), (2, "/a"), (2, "/b")})
    release, dead = released(view, RETIRE, [])
    assert release == {3: ["/a", "/b"], 2: ["/a", "/b"]} and dead == ()
    # a LogDirCordon of all broker 3 and one of broker 2's /a keep those cordoned
    release, _ = released(view, RETIRE, [WHOLE, LogDirCordon("one", 2, ("/a",))])
    assert release == {2: ["/b"]}
    # another decommission of broker 2 keeps it; dirs Kafka does not report cordoned are left alone
    release, _ = released(cluster(cordoned={(3, "/a")}), RETIRE, [BrokerDecommission("o", (2,))])
    assert release == {3: ["/a"]}


def test_deleting_a_log_dir_cordon_keeps_what_a_decommission_still_declares() -> None:
    view = cluster(cordoned={(3, "/a"), (3, "/b")})
    assert released(view, WHOLE, [RETIRE]) == ({}, ())
    assert released(view, WHOLE, [DRAIN]) == ({3: ["/a", "/b"]}, ())


def test_a_broker_that_is_not_alive_is_skipped_and_named() -> None:
    view = cluster(cordoned={(2, "/a")}, dead=(3,))
    release, dead = released(view, BrokerDecommission("r", (3, 2, 7)), [])
    assert release == {2: ["/a"]} and dead == (3, 7)
    assert described(cordon_changes(view, [], [BrokerDecommission("r", (3, 2))])) == [
        "uncordoned /a on broker 2: only deleted resources declared them",
        "broker 3 is not alive: the cordons deleted resources declared on it stay, skipped",
    ]


def test_one_sync_sets_the_live_intents_cordons_and_removes_only_the_deleted_ones() -> None:
    view = cluster(cordoned={(1, "/b"), (3, "/a")})
    changes = cordon_changes(view, [DRAIN, RETIRE], [LogDirCordon("old", 1, ("/b",))])
    # broker 3 /a is cordoned already: only what Kafka does not show is set
    assert changes.cordon == {1: ["/a"], 3: ["/b"], 2: ["/a", "/b"]} and changes.uncordon == {1: ["/b"]}
    planned = with_cordons(view, changes)  # what planning reads right after the sync
    shown = {(b.id, d.path): d.cordoned for b in planned.brokers for d in b.log_dirs}
    assert shown == {(b, p): (b, p) != (1, "/b") for b in (1, 2, 3) for p in ("/a", "/b")}
    assert cordon_changes(view, [], []).empty and with_cordons(view, CordonChanges()) is view


def test_without_kip_1066_a_new_replica_on_a_decommissioned_broker_is_moved_off_anyway() -> None:
    """The reactive fallback (Kafka < 4.3, ``--reactive-cordon``) needs nothing for a decommission: a
    decommissioned broker keeps no replica, new (empty) or old, so its plan moves new ones off too."""
    snap = snapshot(
        {1: None, 2: None, 3: None}, [("new", 0, [3, 1], [0, 0], 0), ("kept", 0, [1, 2], [0, 0], 9)]
    )
    text = "kind: BrokerDecommission\nspec: {brokers: [3]}\n"
    for declared in (intents(text), intents(text).with_reactive_cordon()):
        (target,) = compute_plan(snap, declared).plan.partitions
        assert target.name == "new-0" and 3 not in target.replicas and 1 in target.replicas
