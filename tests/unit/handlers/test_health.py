"""The operator's HTTP endpoint: /healthz fails once the role loop stops beating, /readyz only once a
role is known, and every other path still serves the Prometheus metrics."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_placement.handlers import health
from kafka_placement.reconcile import metrics  # noqa: F401  (registers the gauges)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, health.Health]]:
    state = health.Health(stale_after=0.5)
    monkeypatch.setattr(health, "HEALTH", state)
    server = health.serve(0, "127.0.0.1")
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def body(text: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def test_live_while_beating_ready_only_with_a_role(endpoint: tuple[str, health.Health]) -> None:
    url, state = endpoint
    status, text = get(f"{url}/healthz")
    assert status == 200 and body(text)["status"] == "ok"
    status, text = get(f"{url}/readyz")
    assert status == 503 and body(text) | {"lastBeatSecondsAgo": 0} == {
        "status": "starting",
        "role": "starting",
        "lastBeatSecondsAgo": 0,
    }
    state.beat("standby")
    status, text = get(f"{url}/readyz")
    assert status == 200 and body(text)["role"] == "standby"


def test_a_stalled_loop_fails_both_probes(endpoint: tuple[str, health.Health]) -> None:
    url, state = endpoint
    state.beat("leader")
    assert get(f"{url}/healthz")[0] == 200
    time.sleep(0.7)  # longer than stale_after: nothing beat
    status, text = get(f"{url}/healthz")
    assert status == 503 and body(text)["status"] == "stalled" and body(text)["lastBeatSecondsAgo"] >= 0.5
    assert get(f"{url}/readyz")[0] == 503
    state.beat()
    assert get(f"{url}/healthz")[0] == 200 and body(get(f"{url}/readyz")[1])["role"] == "leader"


def test_other_paths_serve_the_metrics(endpoint: tuple[str, health.Health]) -> None:
    url, _ = endpoint
    status, text = get(f"{url}/metrics")
    assert status == 200 and "kafka_placement_leader" in text


def test_the_beat_ends_when_kopf_stops() -> None:
    """kopf's cleanup ends the beat: a task left running would hold every shutdown 5 s (kopf's wait for
    the tasks still on its loop), the Lease's release included."""
    import asyncio

    async def run() -> tuple[bool, bool]:
        await health.started()
        (task,) = health._tasks
        await asyncio.sleep(0)
        running = not task.done()
        await health.stopping()
        await asyncio.sleep(0)
        return running, task.cancelled()

    assert asyncio.run(run()) == (True, True)
    assert not health._tasks
