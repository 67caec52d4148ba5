"""The executor's disk watch without Kafka: which moves are deferred and held (execution/disk_watch.py), the
hard stop (planning/headroom.py), and the holds applied to a config store as throttles and recorded
(execution/disk.py); tests/integration/test_disk_watch.py runs it against a broker whose dir really fills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.kafka.test_throttles import _Configs

from kafka_placement.execution import disk_watch, executor
from kafka_placement.execution.disk import describe_held, watch_disks
from kafka_placement.execution.disk_watch import DIR_MOVE, REPLICATION, TRICKLE, Write, decide
from kafka_placement.execution.record import Execution, ExecutionPlan, Original
from kafka_placement.execution.record_doc import Limits, Phase, Submission
from kafka_placement.execution.store import FileStore
from kafka_placement.execution.view import TickView
from kafka_placement.kafka.throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE
from kafka_placement.kafka.types import ConfigTarget, LogDirInfo, ReplicaInDir
from kafka_placement.model.cluster_spec import LimitsSpec
from kafka_placement.model.plan import PartitionTarget, Plan
from kafka_placement.model.snapshot import PartitionState
from kafka_placement.planning.headroom import Volume, hard_stop

MIB = 1 << 20
TOTAL = 100 * MIB


def _use(used_mib: float) -> Volume:
    return Volume(TOTAL, TOTAL - int(used_mib * MIB))


def test_the_hard_stop_is_half_the_room_above_the_limit_at_most_097() -> None:
    assert abs(hard_stop(0.85) - 0.925) < 1e-9
    assert abs(hard_stop(0.5) - 0.75) < 1e-9
    assert hard_stop(0.95) == 0.97  # 0.975 capped
    assert hard_stop(0.98) == 0.98  # never below the limit itself


def test_a_candidate_into_a_dir_above_the_limit_is_deferred_not_one_below_or_of_unknown_size() -> None:
    use = {(2, "/a"): _use(86), (2, "/b"): _use(50), (3, "/a"): _use(20)}
    cands = [
        Write(0, 2, "/a", REPLICATION),  # above 85%: deferred
        Write(1, 2, "/b", REPLICATION),  # below: goes
        Write(2, 4, "/a", REPLICATION),  # broker 4's dir of unknown size: no limit
        Write(3, 2, None, REPLICATION),  # any dir of broker 2: one of them is above, deferred
        Write(4, 3, "/a", DIR_MOVE),
    ]
    d = decide(0.85, use, {}, (), [], cands)
    assert d.deferred == {0: (2, "/a"), 3: (2, "/a")}
    assert d.held == {} and d.hold == frozenset()
    assert d.above == {(2, "/a")}


def test_moves_into_a_dir_about_to_pass_the_hard_stop_are_held_until_it_is_under_the_limit() -> None:
    active = [Write(0, 2, "/a", REPLICATION), Write(1, 2, "/b", DIR_MOVE), Write(2, 3, "/a", REPLICATION)]
    # 90% and rising 0.5% a tick: under the hard stop (92.5%) for the next AHEAD (3) ticks: not held, only
    # no new moves
    quiet = decide(0.85, {(2, "/a"): _use(90)}, {(2, "/a"): 89 * MIB + MIB // 2}, (), active, [])
    assert quiet.held == {} and quiet.watched == {(2, "/a"): _use(90)}
    # 90% and rising 1% a tick: past the hard stop within three ticks: held now, before it passes
    rising = decide(0.85, {(2, "/a"): _use(90)}, {(2, "/a"): 89 * MIB}, (), active, [])
    assert rising.held == {(2, "/a"): [0]} and rising.hold == {(2, FOLLOWER_RATE)}
    # under the limit, however fast it rises: not held (it is when it is above the limit)
    assert decide(0.85, {(2, "/a"): _use(80)}, {(2, "/a"): 60 * MIB}, (), active, []).held == {}
    # past it outright (first sight, no rise known): held
    past = decide(0.85, {(2, "/a"): _use(93), (2, "/b"): _use(93)}, {}, (), active, [])
    assert past.held == {(2, "/a"): [0], (2, "/b"): [1]}
    assert past.hold == {(2, FOLLOWER_RATE), (2, "replica.alter.log.dirs.io.max.bytes.per.second")}
    # once held, it stays held while above the limit, falling or not; released under it
    falling = decide(0.85, {(2, "/a"): _use(88)}, {(2, "/a"): 93 * MIB}, [(2, "/a")], active, [])
    assert falling.held == {(2, "/a"): [0]}
    under = decide(0.85, {(2, "/a"): _use(84)}, {(2, "/a"): 88 * MIB}, [(2, "/a")], active, [])
    assert under.held == {} and under.hold == frozenset()
    # no move in flight into it: nothing to hold
    assert decide(0.85, {(2, "/a"): _use(99)}, {}, [(2, "/a")], [], []).held == {}


def test_a_held_throttle_defers_candidates_it_governs_and_no_others() -> None:
    use = {(2, "/a"): _use(95), (2, "/b"): _use(10), (3, "/a"): _use(10)}
    active = [Write(0, 2, "/a", REPLICATION)]
    cands = [
        Write(5, 2, "/b", REPLICATION),  # copied into broker 2 under the held follower rate: deferred
        Write(6, 2, "/b", DIR_MOVE),  # governed by the dir-move rate, not held
        Write(7, 3, "/a", REPLICATION),
    ]
    d = decide(0.85, use, {}, (), active, cands)
    assert d.deferred == {5: (2, "/a")}


def test_a_replica_added_to_any_dir_writes_where_it_is_seen_else_any_dir_of_its_broker() -> None:
    plan = Plan.of([PartitionTarget("t", 0, (2, 1), ("any", "/d0")), PartitionTarget("t", 1, (1,), ("/d1",))])
    indexed = ExecutionPlan(plan, [Original((1,), ("/d0",), 10), Original((1,), ("/d0",), 10)])
    unseen = TickView("c", frozenset({1, 2}), {}, {}, {})
    assert disk_watch.writes(indexed, 0, unseen) == [Write(0, 2, None, REPLICATION)]
    seen = TickView("c", frozenset({1, 2}), {}, {}, {2: (_dir(2, "/x", 50, ("t", 0)),)})
    assert disk_watch.writes(indexed, 0, seen) == [Write(0, 2, "/x", REPLICATION)]
    assert disk_watch.writes(indexed, 1, seen) == [Write(1, 1, "/d1", DIR_MOVE)]


def _limits(share: float = 0.85, throttle: int | None = None) -> Limits:
    return Limits(
        max_moves_per_broker=5,
        max_moves=10,
        max_bytes_per_broker=None,
        throttle=throttle,
        max_disk_share=share,
    )


def _dir(broker: int, path: str, used_mib: float, *replicas: tuple[str, int]) -> LogDirInfo:
    return LogDirInfo(
        broker,
        path,
        None,
        TOTAL,
        TOTAL - int(used_mib * MIB),
        None,
        tuple(ReplicaInDir(t, p, 0, 0, False) for t, p in replicas),
    )


PLAN = Plan.of([PartitionTarget("t", 0, (2,), ("/d1",)), PartitionTarget("t", 1, (2,), ("/d1",))])


def _moving(tmp_path: Path, limits: Limits) -> Execution:
    ex = Execution.create(FileStore(tmp_path / "state.json"), PLAN, limits=limits, cluster_id="c1")
    ex.set_baseline([Original((1,), ("/d0",), 30 * MIB, 1, 1), Original((1,), ("/d0",), MIB, 1, 1)], {})
    ex.doc.phase = Phase.MOVING
    ex.submit(0, Submission.CONFIRMED, 0)
    ex.save()
    return ex


def _view(used_mib: float) -> TickView:
    parts = {("t", p): PartitionState("t", p, (1, 2), ("/d0", "/d1"), 1, (1,), 30 * MIB) for p in (0, 1)}
    dirs = {2: (_dir(2, "/d1", used_mib, ("t", 0)), _dir(2, "/d0", 1))}
    return TickView("c1", frozenset({1, 2}), parts, {}, dirs)


def test_a_hold_lowers_the_receiving_brokers_follower_rate_and_puts_it_back_when_room_returns(
    tmp_path: Path,
) -> None:
    """An unthrottled execution: the hold sets broker 2's follower rate to the trickle and lists the held
    replica for it; the record says which dir holds which moves; the candidate into that dir waits; once
    the dir is back under the limit the broker's own rate (none) is put back and the candidate goes."""
    b2, t = ConfigTarget.broker(2), ConfigTarget.topic("t")
    gw = _Configs({b2: {}, t: {}})
    ex = _moving(tmp_path, _limits(0.85))
    d = watch_disks(ex, gw, _view(60), [1])  # type: ignore[arg-type]
    assert d.deferred == {} and ex.doc.disk.held == [] and gw.configs[b2] == {}
    d = watch_disks(ex, gw, _view(94), [1])  # type: ignore[arg-type]
    assert d.deferred == {1: (2, "/d1")}
    assert gw.configs[b2] == {FOLLOWER_RATE: str(TRICKLE)}
    assert gw.configs[t] == {FOLLOWER_REPLICAS: "0:2"}
    (held,) = ex.doc.disk.held
    assert (held.broker, held.path, held.moves, held.partitions, held.share) == (2, "/d1", 1, ["t-0"], 0.94)
    assert ex.doc.disk.holds == 1 and ex.doc.disk.deferred == 1
    assert ex.doc.disk.deferred_into == ["broker 2 /d1 (94.0%)"]
    assert "broker 2 /d1 at 94.0%: 1 move(s) held (t-0)" in describe_held(ex)
    stored = Execution.load(FileStore(tmp_path / "state.json"))  # written ahead, before Kafka was changed
    assert stored is not None and [r.config for r in stored.doc.disk.rates] == [FOLLOWER_RATE]
    # falling but above the limit: still held, nothing changed in Kafka
    watch_disks(ex, gw, _view(88), [1])  # type: ignore[arg-type]
    assert gw.configs[b2] == {FOLLOWER_RATE: str(TRICKLE)} and ex.doc.disk.held[0].since == held.since
    d = watch_disks(ex, gw, _view(80), [1])  # type: ignore[arg-type]
    assert d.deferred == {} and ex.doc.disk.held == [] and ex.doc.disk.rates == []
    assert gw.configs[b2] == {}  # the broker had no rate of its own: deleted again
    assert ex.doc.disk.holds == 1
    # the throttles the execution owns still name the entry it appended: removed with the others at the end
    assert any(x.config == FOLLOWER_REPLICAS for x in ex.doc.throttles.topics)


def test_a_held_rate_stays_held_when_a_new_batch_is_throttled_and_gets_its_own_rate_back(
    tmp_path: Path,
) -> None:
    b1, b2, t = ConfigTarget.broker(1), ConfigTarget.broker(2), ConfigTarget.topic("t")
    gw = _Configs({b1: {}, b2: {FOLLOWER_RATE: "777"}, t: {}})
    ex = _moving(tmp_path, _limits(0.85, throttle=5000))
    limits = executor.Limits(throttle=5000)
    executor._throttle(ex, gw, _view(10), [0], limits)  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == "5000"
    watch_disks(ex, gw, _view(95), [])  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == str(TRICKLE) and gw.configs[b2][LEADER_RATE] == "5000"
    ex.submit(1, Submission.CONFIRMED, 0)
    executor._throttle(ex, gw, _view(95), [1], limits)  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == str(TRICKLE)  # the new batch does not undo the hold
    watch_disks(ex, gw, _view(50), [])  # type: ignore[arg-type]
    assert gw.configs[b2][FOLLOWER_RATE] == "5000"  # the execution's rate, not the broker's own 777
    previous = {(b.broker, b.config): b.previous for b in ex.doc.throttles.brokers}
    assert previous[(2, FOLLOWER_RATE)] == "777"  # still put back when the execution ends


def test_a_record_written_before_the_disk_watch_loads_with_the_default_limit(tmp_path: Path) -> None:
    ex = _moving(tmp_path, _limits(0.6))
    raw = json.loads((tmp_path / "state.json").read_text())
    assert raw["limits"]["maxDiskShare"] == 0.6 and raw["disk"]["held"] == []
    del raw["limits"]["maxDiskShare"], raw["limits"]["batchSeconds"], raw["disk"]  # kept since
    (tmp_path / "state.json").write_text(json.dumps(raw))
    old = Execution.load(FileStore(tmp_path / "state.json"))
    assert old is not None and old.doc.limits.max_disk_share == 0.85 and old.doc.disk.held == []
    assert old.doc.limits.batch_seconds == LimitsSpec().batch_seconds
    del ex


def test_the_operator_status_names_the_held_dirs_and_what_they_hold(tmp_path: Path) -> None:
    from kafka_placement.execution.record_doc import HeldDir
    from kafka_placement.reconcile.inputs import record_view

    ex = _moving(tmp_path, _limits(0.85))
    ex.doc.disk.held = [HeldDir(broker=2, path="/d1", share=0.931, since=1.0, moves=12, partitions=["t-0"])]
    view = record_view(ex, 0, ())
    assert view is not None and view.held == ("broker 2 /d1",) and view.held_before == ()
    assert view.progress is not None and view.progress.disk_held is not None
    shown = view.progress.disk_held
    assert "broker 2 /d1 at 93.1%: 12 move(s) held (t-0 and 11 more)" in shown and "hard stop 92.5%" in shown
    assert len(shown) <= 1000


def test_a_hold_kafka_never_got_is_not_recorded_and_is_tried_again(tmp_path: Path) -> None:
    from kafka_placement.kafka.gateway import KafkaOperationError

    b2, t = ConfigTarget.broker(2), ConfigTarget.topic("t")

    class Refusing(_Configs):
        refuse = True

        def describe_configs(self, targets):  # type: ignore[no-untyped-def]
            if self.refuse:
                self.refuse = False
                raise KafkaOperationError("describe configs: timed out")
            return super().describe_configs(targets)

    gw = Refusing({b2: {}, t: {}})
    ex = _moving(tmp_path, _limits(0.85))
    with pytest.raises(KafkaOperationError):
        watch_disks(ex, gw, _view(94), [])  # type: ignore[arg-type]
    assert ex.doc.disk.rates == [] and gw.configs[b2] == {}
    watch_disks(ex, gw, _view(94), [])  # type: ignore[arg-type]
    assert gw.configs[b2] == {FOLLOWER_RATE: str(TRICKLE)} and len(ex.doc.disk.rates) == 1


def test_a_superseding_execution_takes_over_the_holds_and_releases_them(tmp_path: Path) -> None:
    b2, t = ConfigTarget.broker(2), ConfigTarget.topic("t")
    gw = _Configs({b2: {}, t: {}})
    old = _moving(tmp_path, _limits(0.85))
    watch_disks(old, gw, _view(94), [])  # type: ignore[arg-type]
    assert gw.configs[b2] == {FOLLOWER_RATE: str(TRICKLE)}
    new = Execution.create(FileStore(tmp_path / "new.json"), PLAN, limits=_limits(0.85), cluster_id="c1")
    assert new.adopt(old, "urgent") == 1
    assert [(h.broker, h.path) for h in new.doc.disk.held] == [(2, "/d1")] and len(new.doc.disk.rates) == 1
    new.set_baseline([Original((1,), ("/d0",), 30 * MIB, 1, 1), Original((1,), ("/d0",), MIB, 1, 1)], {})
    watch_disks(new, gw, _view(50), [])  # type: ignore[arg-type]
    assert gw.configs[b2] == {} and new.doc.disk.rates == [] and new.doc.disk.held == []
