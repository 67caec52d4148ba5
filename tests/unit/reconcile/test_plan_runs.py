"""The planner pool (reconcile/plan_runs.py) with real threads and slow plans held by gates (no clock:
a "slow" plan is one whose gate is still closed; nothing here measures time), and the operator's planner
(reconcile/planner.py) driving it: a plan that is not ready is Planning, the next call returns it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.cluster_spec import ClusterSpec
from kafka_placement.reconcile import planner
from kafka_placement.reconcile.plan_runs import Finished, Pending, PlanRuns, holds_from_env
from kafka_placement.reconcile.planner import Made, PlanInputs, plan_cluster

A, B = ("ns", "a"), ("ns", "b")
BOUND = 60.0  # how long a test waits for a run it opened the gate of (never reached when it works)


class Work:
    """Plan functions that record their calls and, when gated, block until their gate opens."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.running = 0
        self.most = 0  # the most runs at once
        self.lock = threading.Lock()
        self.gates: dict[str, threading.Event] = {}
        self.entered: dict[str, threading.Event] = {}

    def __call__(self, name: str, gated: bool = False) -> Callable[[], str]:
        if gated:
            self.gates[name] = threading.Event()
        self.entered[name] = threading.Event()

        def run() -> str:
            with self.lock:
                self.calls.append(name)
                self.running += 1
                self.most = max(self.most, self.running)
            self.entered[name].set()
            if name in self.gates:
                assert self.gates[name].wait(BOUND), f"gate of {name} never opened"
            with self.lock:
                self.running -= 1
            return f"plan of {name}"

        return run

    def open(self, name: str) -> None:
        self.gates[name].set()


def until_finished(pool: PlanRuns[str], where: tuple[str, str], key: str, work: Callable[[], str]) -> Any:
    """The step's outcome once its run finished (the pool waits for it: ``wait_s`` raised for the call;
    asked again while the run has not started, which a step does not wait for)."""
    wait, pool.wait_s = pool.wait_s, BOUND
    deadline = time.monotonic() + BOUND
    try:
        while isinstance(got := pool.step(where, key, work), Pending):
            assert time.monotonic() < deadline, got
            time.sleep(0.01)
    finally:
        pool.wait_s = wait
    assert isinstance(got, Finished), got
    return got


def no_worker_left() -> None:
    deadline = time.monotonic() + BOUND
    while any(t.name == "kafka-placement-planner" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a planner thread outlived its work"
        time.sleep(0.01)


def test_a_quick_plan_is_returned_by_the_step_that_asked_for_it_and_not_kept() -> None:
    work, pool = Work(), PlanRuns[str](wait_s=BOUND)
    got = pool.step(A, "k1", work("p1"))
    assert isinstance(got, Finished) and (got.value, got.error, got.earlier) == ("plan of p1", None, False)
    got = pool.step(A, "k1", work("p2"))  # the same inputs planned again: a result waited for is used once
    assert isinstance(got, Finished) and got.value == "plan of p2"
    assert work.calls == ["p1", "p2"]
    no_worker_left()  # the thread ends with its work: nothing idles, nothing holds a stopping process


def test_a_slow_plan_is_pending_then_returned_to_the_next_step_and_kept_until_due() -> None:
    now = [1000.0]
    work, pool = Work(), PlanRuns[str](wait_s=0.0, reuse_s=60.0, clock=lambda: now[0])
    slow = work("slow", gated=True)
    got = pool.step(A, "k1", slow)
    assert isinstance(got, Pending) and got.key == "k1" and got.since == 1000.0
    assert work.entered["slow"].wait(BOUND)
    assert pool.step(A, "k1", work("again")) == Pending("k1", "running", 1000.0)  # not started twice
    (worker,) = [t for t in threading.enumerate() if t.name == "kafka-placement-planner"]
    assert worker.daemon  # a stop is never held by a running plan
    work.open("slow")
    got = until_finished(pool, A, "k1", work("again"))
    assert (got.value, got.earlier) == ("plan of slow", True)
    now[0] += 30  # kept for the same inputs: returned again, nothing planned
    got = pool.step(A, "k1", work("again"))
    assert isinstance(got, Finished) and got.value == "plan of slow"
    assert work.calls == ["slow"]
    now[0] += 31  # due: a refresh runs, the kept result is the answer meanwhile
    refresh = work("refresh", gated=True)
    got = pool.step(A, "k1", refresh)
    assert isinstance(got, Finished) and got.value == "plan of slow"
    work.open("refresh")
    assert until_finished(pool, A, "k1", work("again")).value == "plan of refresh"
    assert work.calls == ["slow", "refresh"]


def test_a_run_of_stale_inputs_is_awaited_its_result_dropped_and_the_current_inputs_planned_next() -> None:
    work, pool = Work(), PlanRuns[str](wait_s=0.0, workers=2)
    pool.step(A, "old", work("old", gated=True))
    assert work.entered["old"].wait(BOUND)
    newer = work("new", gated=True)
    got = pool.step(A, "new", newer)  # inputs changed while "old" runs: a thread cannot be cancelled
    assert isinstance(got, Pending) and (got.state, got.key) == ("stale", "new")
    assert got.stale_since is not None
    assert pool.step(A, "new", newer) == got  # asked again: still waiting, never two runs of a cluster
    assert work.calls == ["old"]
    work.open("old")  # its end starts the waiting run at once (no reconcile needed)
    assert work.entered["new"].wait(BOUND)
    assert work.most == 1
    work.open("new")
    assert until_finished(pool, A, "new", newer).value == "plan of new"  # "old"'s result never returned
    assert work.calls == ["old", "new"]


def test_one_plan_at_a_time_in_the_process_and_a_queued_run_plans_the_latest_inputs() -> None:
    work, pool = Work(), PlanRuns[str](wait_s=0.0)
    pool.step(A, "ka", work("a", gated=True))
    assert work.entered["a"].wait(BOUND)
    first = pool.step(B, "kb1", work("b1"))
    assert isinstance(first, Pending) and first.state == "queued"
    second = pool.step(B, "kb2", work("b2"))  # b's inputs changed before its run started
    assert isinstance(second, Pending) and (second.state, second.key) == ("queued", "kb2")
    work.open("a")
    assert until_finished(pool, B, "kb2", work("b3")).value == "plan of b2"
    assert until_finished(pool, A, "ka", work("a2")).value == "plan of a"
    assert work.calls == ["a", "b2"]  # b1's inputs were never planned
    assert work.most == 1  # two clusters' plans never at once (memory: spark/memory.py checks one plan)


def test_a_run_that_cannot_start_is_not_waited_for() -> None:
    """A reconcile waits for its plan only while it can be computed: behind another cluster's plan or a
    stale run of its own it returns at once (with an unbounded wait, a wait would never return)."""
    work, pool = Work(), PlanRuns[str](wait_s=float("inf"))
    slow = work("a", gated=True)
    got: list[Finished[str] | Pending] = []
    asked = threading.Thread(target=lambda: got.append(pool.step(A, "ka", slow)), daemon=True)
    asked.start()  # a runs: its step waits for it
    assert work.entered["a"].wait(BOUND)
    queued = pool.step(B, "kb", work("b"))
    assert isinstance(queued, Pending) and queued.state == "queued"
    stale = pool.step(A, "ka2", work("a2", gated=True))
    assert isinstance(stale, Pending) and stale.state == "stale"
    work.open("a")
    asked.join(BOUND)
    assert got and isinstance(got[0], Finished) and got[0].value == "plan of a"
    work.open("a2")


def test_an_unexpected_exception_is_the_runs_result_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> str:
        raise ZeroDivisionError("division by zero in a goal")

    pool = PlanRuns[str](wait_s=BOUND)
    with caplog.at_level(logging.ERROR, logger="kafka_placement.reconcile.plan_runs"):
        got = pool.step(A, "k", broken)
    assert isinstance(got, Finished) and got.value is None
    assert got.error == "ZeroDivisionError: division by zero in a goal"
    assert "planning ns/a failed unexpectedly" in caplog.text and "Traceback" in caplog.text
    assert until_finished(pool, A, "k", lambda: "fine").value == "fine"  # the worker survived it


def test_a_forgotten_clusters_queued_run_never_starts_and_a_dropped_result_is_planned_again() -> None:
    work, pool = Work(), PlanRuns[str](wait_s=0.0)
    pool.step(A, "ka", work("a", gated=True))
    assert work.entered["a"].wait(BOUND)
    pool.step(B, "kb", work("b"))
    pool.forget(B)  # deleted while queued
    work.open("a")
    assert until_finished(pool, A, "ka", work("a2")).value == "plan of a"
    assert until_finished(pool, A, "ka", work("a3")).value == "plan of a"  # kept
    pool.drop(A, "ka")  # the caller judged it unusable (its rates drifted)
    assert until_finished(pool, A, "ka", work("a4")).value == "plan of a4"
    assert work.calls == ["a", "a4"]


def test_the_test_only_hold_seam_holds_a_clusters_runs_until_its_file_exists(tmp_path: Path) -> None:
    release = tmp_path / "release"
    env = {"KP_TEST_PLAN_HOLD": f"slow={release}, broken,=x"}
    assert holds_from_env(env) == {"slow": release} and holds_from_env({}) == {}
    pool = PlanRuns[str](wait_s=0.0, workers=2, holds=holds_from_env(env))
    got = pool.step(("ns", "slow"), "k", lambda: "held plan")
    assert isinstance(got, Pending)
    assert until_finished(pool, A, "k", lambda: "not held").value == "not held"  # another cluster's name
    again = pool.step(("ns", "slow"), "k", lambda: "again")
    assert isinstance(again, Pending) and again.state == "running"
    release.touch()
    assert until_finished(pool, ("ns", "slow"), "k", lambda: "again").value == "held plan"


# ---- the operator's planner on the pool ------------------------------------------------------------------

SPEC = ClusterSpec.parse({"bootstrapServers": "k:9092", "planner": {"engine": "local"}})
RETIRE = {"kind": "BrokerDecommission", "metadata": {"name": "retire-4"}, "spec": {"brokers": [4]}}


def cluster_snapshot(rate: float | None = None) -> Any:
    snap = snapshot(
        {1: None, 2: None, 3: None, 4: None},
        [("t", i, [1 + i % 4, 1 + (i + 1) % 4], [0, 0], 10) for i in range(8)],
    )
    if rate is None:
        return snap
    return replace(snap, partitions=tuple(replace(p, bytes_in_per_sec=rate) for p in snap.partitions))


def plan(pool: PlanRuns[Made], snap: Any, body: dict[str, Any] = RETIRE) -> Any:
    return plan_cluster(
        None,  # type: ignore[arg-type]  # (no spark-k8s here)
        None,  # type: ignore[arg-type]
        "ns",
        SPEC,
        snap,
        PlanInputs.of([body], False),
        False,
        plans=pool,
        cluster="prod",
    )


def test_the_operators_plan_is_planning_until_its_run_is_done_then_the_plan() -> None:
    pool = PlanRuns[Made](wait_s=0.0)  # no wait: every run outlives the call that asks for it
    snap = cluster_snapshot()
    running = plan(pool, snap)
    assert running.plan is None and running.error is None
    assert "with the local engine in the operator since " in (running.running or "")
    pool.wait_s = BOUND
    done = plan(pool, snap)
    direct = plan(PlanRuns[Made](wait_s=BOUND), snap)
    assert done.running is None and done.plan is not None and done.plan == direct.plan
    assert done.plan.partitions and all(4 not in p.replicas for p in done.plan.partitions)


def test_a_result_of_drifted_rates_is_planned_again_and_errors_map_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = PlanRuns[Made](wait_s=0.0, reuse_s=60.0)
    plan(pool, cluster_snapshot(rate=1000.0))
    pool.wait_s = BOUND
    assert plan(pool, cluster_snapshot(rate=1000.0)).plan is not None  # finished between two calls: kept
    pool.wait_s = 0.0
    assert plan(pool, cluster_snapshot(rate=1000.0)).plan is not None  # reused (same inputs and rates)
    assert plan(pool, cluster_snapshot(rate=3000.0)).running is not None  # drifted: planned again

    five = {**RETIRE, "spec": {"brokers": [5]}}  # a broker the cluster does not have
    fresh = PlanRuns[Made](wait_s=0.0)
    assert plan(fresh, cluster_snapshot(), five).running is not None
    fresh.wait_s = BOUND
    bad = plan(fresh, cluster_snapshot(), five)
    assert bad.error_reason == "InvalidInput" and "5" in (bad.error or "")

    def broken(*_: Any, **__: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(planner, "plan_with", broken)
    failed = plan(PlanRuns[Made](wait_s=BOUND), cluster_snapshot())
    assert failed.error_reason == "PlanningFailed"
    assert "the local planner failed unexpectedly: KeyError: 'a bug'" in (failed.error or "")
