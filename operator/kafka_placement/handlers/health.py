"""The operator's HTTP endpoint: Prometheus metrics, and the probes the Deployment uses, on one port.

``/healthz`` (liveness) answers 200 while the process's role loop keeps beating: the standby loop that
waits for the Lease, or a task on kopf's event loop once this process drives. A wedged event loop or a
dead elector thread stops the beat; after ``stale_after`` seconds the answer is 503 and the kubelet
restarts the pod. Kafka or the apiserver being unreachable does not stop the beat (a restart would not
help; status conditions report it).

``/readyz`` (readiness) answers 200 once the process has a role: a standby waiting for the Lease, or
the leader (or an unelected operator) whose kopf startup has run. A standby is ready on purpose: with
``maxUnavailable: 0`` a rollout waits for the new pod's readiness while the old pod still holds the Lease.

Every other path serves the metrics (``/metrics``), as prometheus_client's own server does.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

import kopf
from prometheus_client.exposition import MetricsHandler

STALE_AFTER = 60.0  # seconds without a beat before /healthz fails
BEAT_EVERY = 5.0


class Health:
    """What the probes read: the role and the last beat (monotonic clock)."""

    def __init__(self, stale_after: float = STALE_AFTER) -> None:
        self.stale_after = stale_after
        self.role = "starting"
        self._last_beat = time.monotonic()  # the grace before the first beat: start-up itself
        self._lock = threading.Lock()

    def beat(self, role: str | None = None) -> None:
        with self._lock:
            self._last_beat = time.monotonic()
            if role is not None:
                self.role = role

    def live(self) -> tuple[bool, dict[str, Any]]:
        with self._lock:
            age = time.monotonic() - self._last_beat
            role = self.role
        ok = age < self.stale_after
        return ok, {"status": "ok" if ok else "stalled", "role": role, "lastBeatSecondsAgo": round(age, 1)}

    def ready(self) -> tuple[bool, dict[str, Any]]:
        live, body = self.live()
        ok = live and body["role"] != "starting"
        return ok, {**body, "status": "ready" if ok else ("starting" if live else body["status"])}


HEALTH = Health()


class _Handler(MetricsHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        probe = {"/healthz": HEALTH.live, "/readyz": HEALTH.ready}.get(path)
        if probe is None:
            super().do_GET()
            return
        ok, body = probe()
        data = json.dumps(body).encode()
        self.send_response(200 if ok else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: not logged
        return


def serve(port: int, address: str) -> ThreadingHTTPServer:
    """Start the endpoint in a daemon thread; returns the server (``server_address`` has the port)."""
    server = ThreadingHTTPServer((address, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="http-endpoint", daemon=True).start()
    return server


async def _beat_forever(role: str) -> None:
    while True:
        HEALTH.beat(role)
        await asyncio.sleep(BEAT_EVERY)


_tasks: set[asyncio.Task[None]] = set()


@kopf.on.startup()
async def started(**_: object) -> None:
    """kopf is up on this event loop: the process drives from now on and beats from this loop."""
    from ..reconcile import leader

    role = "operator" if isinstance(leader.current(), leader.Unelected) else "leader"
    task = asyncio.get_running_loop().create_task(_beat_forever(role))
    _tasks.add(task)  # a reference, so the task is not collected
    task.add_done_callback(_tasks.discard)


@kopf.on.cleanup()
async def stopping(**_: object) -> None:
    """kopf is stopping: end the beat now. kopf waits up to 5 s for every task still running on its loop
    before it cancels them, so a beat left running held every shutdown (a rollout, a lost Lease, a
    SIGTERM) 5 s longer, the Lease's release included."""
    for task in list(_tasks):
        task.cancel()
