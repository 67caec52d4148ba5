"""Disk pressure's pure decision (reconcile/pressure.py): a dir above its share for afterSeconds gets a
relieving LogDirCordon; the heal is retired once the dir is under the heal's share and no execution runs
it. From plain values and a clock passed in: no Kafka, no Kubernetes."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.reconcile.test_healing import OWNER, T0, heal_body

from kafka_placement.model.errors import BadInputError
from kafka_placement.model.intents import parse_resource
from kafka_placement.model.self_healing import PressuredLogDir, SelfHealingSpec, format_time
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.reconcile.healing import heals_of
from kafka_placement.reconcile.pressure import decide_pressure, relief_share, shares_in_snapshot

SPEC = SelfHealingSpec.parse({"diskPressure": {"enabled": True, "aboveShare": 0.8, "afterSeconds": 300}})
DIR = (2, "/d1")


def decide(
    previous: tuple[PressuredLogDir, ...],
    shares: dict[tuple[int, str], float] | None,
    now: float,
    heals: list[dict[str, Any]] | None = None,
    running: frozenset[str] = frozenset(),
    spec: SelfHealingSpec | None = SPEC,
) -> Any:
    return decide_pressure(spec, OWNER, previous, shares, heals_of(heals or []), running, 0.85, now)


def test_a_dir_above_its_share_is_tracked_and_relieved_after_the_delay() -> None:
    out = decide((), {DIR: 0.9, (1, "/d0"): 0.5}, T0)
    (entry,) = out.entries
    assert (entry.broker, entry.path, entry.since, entry.used_percent) == (2, "/d1", format_time(T0), 90)
    assert entry.heal is None and out.creates == () and out.wake_at == T0 + 300
    out = decide(out.entries, {DIR: 0.91}, T0 + 299)
    assert out.creates == ()
    out = decide(out.entries, {DIR: 0.92}, T0 + 300)
    (new,) = out.creates
    spec = new.body["spec"]
    assert (new.kind, spec["broker"], spec["logDirs"], spec["relieveBelowShare"]) == (
        "LogDirCordon", 2, ["/d1"], 0.75
    )  # fmt: skip
    assert new.body["metadata"]["labels"]["kafkaplacement.io/created-by"] == "self-healing"
    assert "drain" not in spec and out.entries[0].heal == new.name and out.entries[0].used_percent == 92
    parsed = parse_resource({**new.body, "metadata": {**new.body["metadata"], "uid": "u"}})
    assert parsed.relieve_below_share == 0.75  # type: ignore[union-attr]  (a valid LogDirCordon)


def test_a_dir_back_under_before_its_heal_ends_with_nothing_done() -> None:
    tracked = decide((), {DIR: 0.9}, T0).entries
    out = decide(tracked, {DIR: 0.79}, T0 + 100)
    assert out.entries == () and out.creates == ()
    (note,) = out.notes
    assert note.reason == "FailureEnded" and "no heal was started" in note.message


def test_a_healed_dir_ends_only_under_the_heals_share_and_its_heal_is_retired_once_not_running() -> None:
    made = decide(decide((), {DIR: 0.9}, T0).entries, {DIR: 0.9}, T0 + 300)
    (new,) = made.creates
    body = {**new.body, "metadata": {**new.body["metadata"], "uid": "uid-h", "resourceVersion": "7"}}
    body["status"] = {"phase": "Completed"}
    # under aboveShare (0.8) but not under the heal's share (0.75): still tracked, no second heal
    out = decide(made.entries, {DIR: 0.78}, T0 + 600, [body])
    assert [e.heal for e in out.entries] == [new.name] and out.creates == () and out.retires == ()
    # under 0.75 while an execution runs the heal: kept, not deleted (that would cancel it)
    out = decide(out.entries, {DIR: 0.7}, T0 + 700, [body], running=frozenset({"uid-h"}))
    assert [e.heal for e in out.entries] == [new.name] and out.retires == ()
    out = decide(out.entries, {DIR: 0.7}, T0 + 800, [body])
    (retire,) = out.retires
    assert retire.name == new.name and retire.plural == "logdircordons" and out.entries == ()
    assert retire.preconditions == {"uid": "uid-h", "resourceVersion": "7"}
    assert "retired LogDirCordon" in retire.message


def test_a_heal_deleted_by_hand_is_a_cancelled_one() -> None:
    made = decide(decide((), {DIR: 0.9}, T0).entries, {DIR: 0.9}, T0 + 300)
    out = decide(made.entries, {DIR: 0.9}, T0 + 400)  # its heal deleted: no other is created
    assert out.creates == () and [e.heal for e in out.entries] == [made.creates[0].name]
    (note,) = decide(out.entries, {DIR: 0.5}, T0 + 500).notes
    assert f"its heal {made.creates[0].name} was deleted" in note.message


def test_a_dir_not_read_keeps_its_entry_and_a_disabled_rule_tracks_nothing() -> None:
    tracked = decide((), {DIR: 0.9}, T0).entries
    assert decide(tracked, {(1, "/d0"): 0.5}, T0 + 400).entries == tracked  # broker 2 not read
    assert decide(tracked, None, T0 + 400).entries == tracked
    off = SelfHealingSpec.parse({"diskPressure": {"enabled": False}})
    assert decide((), {DIR: 0.99}, T0, spec=off).entries == ()
    assert decide((), {DIR: 0.99}, T0, spec=None).entries == ()


def test_without_above_share_the_clusters_limit_is_used() -> None:
    spec = SelfHealingSpec.parse({"diskPressure": {"enabled": True}})
    assert spec.disk_pressure.after_seconds == 300 and spec.disk_pressure.above_share is None
    assert decide((), {DIR: 0.84}, T0, spec=spec).entries == ()
    (entry,) = decide((), {DIR: 0.86}, T0, spec=spec).entries
    assert entry.used_percent == 86 and relief_share(0.85) == 0.8


def test_a_pressure_heal_is_not_taken_for_a_failed_dirs_heal() -> None:
    relief = heal_body("LogDirCordon", "r", {"broker": 2, "logDirs": ["/d1"], "relieveBelowShare": 0.75})
    drain = heal_body("LogDirCordon", "d", {"broker": 2, "logDirs": ["/d1"], "drain": True})
    flags = {h.name: h.relief for h in heals_of([relief, drain])}
    assert flags == {"r": True, "d": False}


@pytest.mark.parametrize("bad", [{"aboveShare": 0.4}, {"aboveShare": "high"}, {"afterSeconds": 0}, {"x": 1}])
def test_bad_disk_pressure_specs_are_refused_naming_the_field(bad: dict[str, Any]) -> None:
    with pytest.raises(BadInputError, match=r"spec\.selfHealing\.diskPressure"):
        SelfHealingSpec.parse({"diskPressure": bad})


def test_the_shares_of_a_snapshot_are_of_the_dirs_read_with_a_known_size() -> None:
    snap = ClusterSnapshot.from_json(
        {
            "version": 1,
            "brokers": [
                {"id": 1, "rack": None, "logDirs": [
                    {"path": "/d0", "totalBytes": 100, "usableBytes": 10},
                    {"path": "/d1", "totalBytes": 0, "usableBytes": 0},
                ]},
            ],
            "partitions": [],
        }
    )  # fmt: skip
    assert shares_in_snapshot(snap) == {(1, "/d0"): 0.9}
