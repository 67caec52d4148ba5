"""The local engine's tally beside the plan (spark/beside.py): the same summary and tally as the serial one,
when to use it, and no process left behind whatever happens to the plan or to the process."""

from __future__ import annotations

import concurrent.futures
import io
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.bench.generator import scenario

from kafka_placement.model.errors import PlacementError
from kafka_placement.model.intents import Intents
from kafka_placement.planning import batching, report
from kafka_placement.planning.context import PlanningContext
from kafka_placement.planning.goals import replica_placement
from kafka_placement.planning.plan_quality import Scope
from kafka_placement.spark import beside
from kafka_placement.spark.engines import EngineSettings, plan_with
from kafka_placement.spark.memory import PLAN_BYTES_PER_REPLICA, Limit


def _children() -> list[int]:
    """This process's children now (forked copies not yet reaped included): each thread's, from /proc. A
    thread that ends during the scan (its entry gone before its list is read) hands its children to another
    thread of the process, so the scan is read again (at most 100 times)."""
    for _ in range(100):
        found: list[int] = []
        try:
            for task in Path(f"/proc/{os.getpid()}/task").iterdir():
                found += [int(x) for x in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
        return found
    raise AssertionError("a thread of this process ended during each of 100 scans of /proc")


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> list[beside.Beside]:
    """Tally beside every plan here (small snapshots, whatever the CPUs), recording each process started."""
    started: list[beside.Beside] = []
    real = beside.start

    def start(snapshot: object, intents: Intents) -> beside.Beside:
        started.append(real(snapshot, intents))  # type: ignore[arg-type]
        return started[-1]

    monkeypatch.setattr(beside, "MIN_PARTITIONS", 0)
    monkeypatch.setattr(beside, "usable_cpus", lambda *_: 2.0)
    monkeypatch.setattr(beside, "start", start)
    return started


@pytest.fixture
def shifters(forced: list[beside.Beside], monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, beside.Beside]]:
    """A second copy shifts part of every plan's entries (however few), recording how many and the copy."""
    started: list[tuple[int, beside.Beside]] = []
    real = beside.shifting

    def shifting(snapshot: object, entries: list[object], scope: Scope) -> beside.Beside:
        assert not _children(), "the first copy has ended: never two at once"
        started.append((len(entries), real(snapshot, entries, scope)))  # type: ignore[arg-type]
        return started[-1][1]

    monkeypatch.setattr(beside, "MIN_SHIFTED", 0)
    monkeypatch.setattr(beside, "shifting", shifting)
    return started


@pytest.mark.parametrize("name", ["all", "decommission"])
def test_the_summary_and_the_tally_are_the_serial_ones(
    name: str, forced: list[beside.Beside], shifters: list[tuple[int, beside.Beside]]
) -> None:
    snap, text = scenario(name, brokers=12, partitions=600, seed=7)
    intents = Intents.loads(text)
    serial = plan_with(snap, intents, EngineSettings("local", beside=False))
    assert not forced and not shifters
    found = plan_with(snap, intents, EngineSettings("local"))
    assert len(forced) == 1, "the tally ran beside the plan"
    assert len(shifters) == 1, "a second copy shifted entries in"
    assert 0 < shifters[0][0] < len(found.plan.partitions), "both processes shifted some"
    assert found.plan.plan_id == serial.plan.plan_id
    assert found.summary.to_json() == serial.summary.to_json()
    assert found.summary.partitions_changed > 0
    assert found.tally is not None and serial.tally is not None
    scope = Scope.of(snap, intents.enforced_only())
    assert found.tally.evaluation(scope, "x") == serial.tally.evaluation(scope, "x")
    mine_f, theirs_f = found.tally.flows, serial.tally.flows  # what the review reads from it
    assert mine_f.largest() == theirs_f.largest() and len(mine_f.largest()) > 0
    assert (mine_f.bytes_in, mine_f.bytes_out, mine_f.dir_bytes, mine_f.topics, mine_f.entries) == (
        theirs_f.bytes_in,
        theirs_f.bytes_out,
        theirs_f.dir_bytes,
        theirs_f.topics,
        theirs_f.entries,
    )
    mine = report.build_report(snap, found.plan, intents, tally=found.tally)
    theirs = report.build_report(snap, serial.plan, intents, tally=serial.tally)
    assert mine == theirs
    assert not _children()


@pytest.mark.parametrize("name", ["all", "decommission", "drain", "rack-repair"])
def test_the_copys_repairs_are_the_hard_goals_own(name: str) -> None:
    snap, text = scenario(name, brokers=12, partitions=600, seed=11)
    enforced = Intents.loads(text).enforced_only()
    ctx = PlanningContext.of(snap, enforced)
    asked = {k for k in ctx.assignment.replicas if replica_placement.needs_repair(ctx, k)}
    assert asked
    assert set(beside.to_repair(snap, Scope.of(snap, enforced))) == asked


def test_the_plan_takes_the_copys_repairs_unasked(
    forced: list[beside.Beside], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, text = scenario("decommission", brokers=12, partitions=400, seed=5)
    intents = Intents.loads(text)
    calls: list[object] = []
    real = replica_placement.needs_repair

    def counted(ctx: PlanningContext, key: tuple[str, int]) -> bool:
        calls.append(key)
        return real(ctx, key)

    monkeypatch.setattr(replica_placement, "needs_repair", counted)
    serial = plan_with(snap, intents, EngineSettings("local", beside=False))
    asked_serial = len(calls)
    calls.clear()
    found = plan_with(snap, intents, EngineSettings("local"))
    assert found.plan.plan_id == serial.plan.plan_id
    assert asked_serial > 0 and not calls  # (nothing set before the hard goal: nothing left to ask)


def test_a_copy_that_dies_leaves_the_tally_to_this_process(
    forced: list[beside.Beside], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, text = scenario("decommission", brokers=12, partitions=400, seed=3)
    intents = Intents.loads(text)
    serial = plan_with(snap, intents, EngineSettings("local", beside=False))
    assert serial.summary.partitions_changed > 0
    real = beside.start

    def stuck(snapshot: object, scope: object) -> Iterator[tuple[str, int]]:
        time.sleep(600)  # the copy (only it calls this) is alive when killed: it cannot finish first
        yield from ()

    def killed(snapshot: object, intents: Intents) -> beside.Beside:
        b = real(snapshot, intents)  # type: ignore[arg-type]
        os.kill(b.pid, signal.SIGKILL)
        return b

    monkeypatch.setattr(beside, "to_repair", stuck)
    monkeypatch.setattr(beside, "start", killed)
    found = plan_with(snap, intents, EngineSettings("local"))
    assert found.summary.to_json() == serial.summary.to_json()
    assert not _children()


def test_a_shifting_copy_that_dies_leaves_its_entries_to_this_process(
    shifters: list[tuple[int, beside.Beside]], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, text = scenario("all", brokers=12, partitions=600, seed=3)
    intents = Intents.loads(text)
    serial = plan_with(snap, intents, EngineSettings("local", beside=False))
    real = beside.shifting

    def killed(snapshot: object, entries: list[object], scope: Scope) -> beside.Beside:
        b = real(snapshot, entries, scope)  # type: ignore[arg-type]
        os.kill(b.pid, signal.SIGKILL)
        return b

    monkeypatch.setattr(beside, "shifting", killed)
    found = plan_with(snap, intents, EngineSettings("local"))
    assert found.summary.to_json() == serial.summary.to_json()
    assert found.summary.partitions_changed > 0
    assert not _children()


def test_a_plan_that_fails_after_the_shifting_copy_started_reaps_it(
    shifters: list[tuple[int, beside.Beside]], monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, text = scenario("all", brokers=12, partitions=600, seed=3)

    def broken(*_: object) -> list[list[str]]:
        raise RuntimeError("batches broke")

    monkeypatch.setattr(batching, "batches", broken)
    with pytest.raises(RuntimeError, match="batches broke"):
        plan_with(snap, Intents.loads(text), EngineSettings("local"))
    assert len(shifters) == 1
    assert not _children()


def test_an_infeasible_plan_stops_and_reaps_the_copy(forced: list[beside.Beside]) -> None:
    snap, _ = scenario("all", brokers=12, partitions=400, seed=3)
    every = ", ".join(str(b.id) for b in snap.brokers)
    with pytest.raises(PlacementError):
        plan_with(
            snap, Intents.loads(f"kind: BrokerDecommission\nspec: {{brokers: [{every}]}}\n"), EngineSettings()
        )
    assert len(forced) == 1
    assert not _children()


def test_a_result_under_other_intents_is_not_taken(forced: list[beside.Beside]) -> None:
    snap, text = scenario("decommission", brokers=12, partitions=500, seed=5)
    b = beside.start(snap, Intents.loads(text))
    assert b.result(Scope.of(snap, Intents())) is None
    b.close()
    assert not _children()


def test_when_it_is_used() -> None:
    many = beside.MIN_PARTITIONS
    assert beside.wanted(many, 3 * many, None, cpus=2)
    assert not beside.wanted(many - 1, 3 * many, None, cpus=2)
    assert not beside.wanted(many, 3 * many, None, cpus=1.5)
    # under a memory limit: only with room for the planning's estimate and the copy's pages
    need = (PLAN_BYTES_PER_REPLICA + beside.CHILD_BYTES_PER_REPLICA) * 3 * many
    assert not beside.wanted(many, 3 * many, Limit(need, "the pod's"), cpus=4)
    assert beside.wanted(many, 3 * many, Limit(10 * need + 2**32, "the pod's"), cpus=4)


def test_usable_cpus_follow_the_tightest_cpu_quota_of_the_cgroup_and_its_parents(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    own = tmp_path / "self"

    def tree(root: Path, files: dict[str, str]) -> Path:
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return root

    assert beside.usable_cpus(tmp_path / "absent", tmp_path / "missing") == affinity
    # v2: a container's own namespace (its cgroup the root it sees), then a pod's limit on a parent
    own.write_text("0::/\n")
    v2 = tree(tmp_path / "v2", {"cgroup.controllers": "cpu memory", "cpu.max": "max 100000\n"})
    assert beside.usable_cpus(v2, own) == affinity
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert beside.usable_cpus(v2, own) == min(affinity, 1.5)
    (v2 / "cpu.max").write_text("nonsense\n")
    assert beside.usable_cpus(v2, own) == affinity
    own.write_text("0::/kubepods/pod1/c1\n")
    tree(v2, {"kubepods/pod1/cpu.max": "50000 100000", "kubepods/pod1/c1/cpu.max": "max 100000"})
    assert beside.usable_cpus(v2, own) == 0.5
    # v1: the cpu hierarchy's quota over its period, -1 for none, the tightest of the cgroup and its parents
    own.write_text("5:cpu,cpuacct:/kubepods/pod2/c2\n4:memory:/kubepods/pod2/c2\n")
    v1 = tree(tmp_path / "v1", {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000",
                                "cpu/kubepods/pod2/cpu.cfs_quota_us": "75000",
                                "cpu/kubepods/pod2/cpu.cfs_period_us": "50000",
                                "cpu/kubepods/pod2/c2/cpu.cfs_quota_us": "-1",
                                "cpu/kubepods/pod2/c2/cpu.cfs_period_us": "100000"})  # fmt: skip
    assert beside.usable_cpus(v1, own) == min(affinity, 1.5)
    (v1 / "cpu/kubepods/pod2/cpu.cfs_quota_us").write_text("-1")
    assert beside.usable_cpus(v1, own) == affinity


def test_a_stuck_copy_is_stopped_and_the_tally_made_here(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, text = scenario("decommission", brokers=12, partitions=300, seed=5)
    intents = Intents.loads(text)
    monkeypatch.setattr(beside, "PATIENCE_S", 0.5)
    monkeypatch.setattr(beside, "tally_of", lambda *_: signal.pause())  # (the forked copy never answers)
    b = beside.start(snap, intents)
    assert b.result(Scope.of(snap, intents)) is None
    assert not _children()


def test_forked_from_a_thread_while_others_run(forced: list[beside.Beside]) -> None:
    """As the operator plans: on a pool thread, other threads busy meanwhile (logging, holding locks)."""
    snap, text = scenario("decommission", brokers=12, partitions=400, seed=9)
    intents = Intents.loads(text)
    serial = plan_with(snap, intents, EngineSettings("local", beside=False))
    stop = threading.Event()
    log = logging.getLogger("test_beside")
    log.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(io.StringIO())  # (its lock taken and released all the time)
    log.addHandler(handler)

    def busy() -> None:
        while not stop.is_set():
            log.debug("busy %s", "beside")

    others = [threading.Thread(target=busy) for _ in range(3)]
    for t in others:
        t.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            found = pool.submit(plan_with, snap, intents, EngineSettings("local")).result(120)
    finally:
        stop.set()
        for t in others:
            t.join()
        log.removeHandler(handler)
    assert len(forced) == 1
    assert found.summary.to_json() == serial.summary.to_json()
    assert not _children()


def test_a_signal_to_the_copy_ends_it_without_the_parents_handlers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A handler of this process (an operator's) is not run by the copy: SIGTERM ends the copy alone."""
    snap, text = scenario("decommission", brokers=12, partitions=300, seed=5)
    intents = Intents.loads(text)
    ran = tmp_path / "ran"  # (a file: what the copy's handler would write is seen here)
    previous = signal.signal(signal.SIGTERM, lambda *_: ran.write_text(str(os.getpid())))
    try:
        monkeypatch.setattr(beside, "tally_of", lambda *_: signal.pause())  # (the copy waits for a signal)
        b = beside.start(snap, intents)
        assert b.repairs(intents) is not None  # (its first frame came: it is past its set-up)
        os.kill(b.pid, signal.SIGTERM)
        assert b.result(Scope.of(snap, intents)) is None
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not ran.exists()
    assert not _children()
