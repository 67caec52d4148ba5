"""The garbage collector's pause around reading and planning: counted across nested and concurrent
pauses, restored after errors, and left off when it was off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from tests.unit.builders import snapshot

from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning.optimizer import optimize
from kafka_placement.spark import engines
from kafka_placement.spark.collector import collector_paused, paused_task
from kafka_placement.spark.engines import EngineSettings, plan_with


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_nested_pauses_resume_the_collector_when_the_last_ends() -> None:
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_still_resumes_it() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_pauses_in_threads_resume_it_once_all_end() -> None:
    inside, release = threading.Barrier(3), threading.Event()

    def pause() -> None:
        with collector_paused():
            inside.wait()
            release.wait(10)

    threads = [threading.Thread(target=pause) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    release.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_planning_runs_with_the_collector_paused_and_resumes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = snapshot({1: "a", 2: "b", 3: "c"}, [("t", 0, [1, 2], [0, 0], 10)])
    seen: list[bool] = []

    def probed(s: ClusterSnapshot, i: Intents) -> Plan:
        seen.append(gc.isenabled())
        return optimize(s, i)

    monkeypatch.setattr(engines, "optimize", probed)
    result = plan_with(
        snap, Intents.loads("kind: BrokerDecommission\nspec: {brokers: [1]}\n"), EngineSettings()
    )
    assert seen == [False] and gc.isenabled() and not result.plan.empty


def test_a_spark_task_function_runs_its_body_with_the_collector_paused() -> None:
    seen: list[tuple[str, bool]] = []

    def body(tag: str, batches: Iterator[int]) -> Iterator[int]:
        for b in batches:
            seen.append((tag, gc.isenabled()))
            yield b * 2

    run = paused_task(body, "t")
    assert list(run(iter([1, 2, 3]))) == [2, 4, 6]
    assert seen == [("t", False)] * 3 and gc.isenabled()
