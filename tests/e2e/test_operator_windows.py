"""End to end: maintenance windows (``KafkaCluster.spec.execution.windows``) on the main rig, the operator as
a process, real clock, real Kafka.

A decommission of broker 3 (8 partitions of about 4 MB on it, at most 2 moves in flight, 150 kB/s) is approved
while the only window is hours away: the execution is recorded but submits nothing, its intent says
``WaitingForWindow`` with the next opening. The window is moved to now: moves start. It is moved away
again while moves are in flight: those finish, throttled to ``outsideWindowBytesPerSecond`` (100 kB/s, set
on their brokers in Kafka), no new one is submitted (the submission count stays put over several ticks).
The windows removed (and the throttle raised), the cap is lifted and the execution completes: every partition
off broker 3, each submitted once, no throttle left (the cluster guard). While it waits for the first window
its ``status.progress.eta`` is the plan's estimate counted inside the window (hours away); once it
completes, ``status.lastExecution`` shows the time waited apart and the ratio compares only the time it ran.

Cost: about 85-150 s (the moves themselves, throttled).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from tests.e2e.conftest import KafkaRig, Operator, get
from tests.e2e.test_operator import apply, execution_record, fill
from tests.integration.conftest import wait_for

from kafka_placement.model.units import binary_bytes

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(420)]


def hhmm(hours_from_now: float) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(hours=hours_from_now)).strftime("%H:%M")


def windows(kubectl: Any, ns: str, name: str, value: list[dict[str, Any]] | None) -> None:
    patch = {"spec": {"execution": {"windows": value}}}
    kubectl("-n", ns, "patch", "kafkacluster", name, "--type=merge", "-p", json.dumps(patch))


CAP = 100_000  # outsideWindowBytesPerSecond


def follower_rates(rig: KafkaRig) -> dict[int, str]:
    """Each broker's follower.replication.throttled.rate, where one is set."""
    admin = AdminClient({"bootstrap.servers": rig.bootstrap_servers})
    out = {}
    for node in rig.nodes:
        resource = ConfigResource(ResourceType.BROKER, str(node.id))
        entry = (
            admin.describe_configs([resource])[resource].result(30).get("follower.replication.throttled.rate")
        )
        if entry is not None and entry.value:
            out[node.id] = entry.value
    return out


def retire_3(kubectl: Any, ns: str, cluster: str) -> None:
    """A BrokerDecommission ``retire-3`` of broker 3 on ``cluster`` (Automatic: executed once planned)."""
    apply(
        kubectl,
        ns,
        "apiVersion: kafkaplacement.io/v1alpha1\nkind: BrokerDecommission\nmetadata: {name: retire-3}\n"
        f"spec: {{clusterRef: {{name: {cluster}}}, brokers: [3]}}\n",
    )


def progressing(kubectl: Any, ns: str) -> tuple[str | None, str, str]:
    status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
    cond = [c for c in status.get("conditions") or () if c.get("type") == "Progressing"]
    return status.get("phase"), (cond[0].get("reason") if cond else ""), status.get("message") or ""


def test_no_move_is_submitted_outside_the_windows_and_moves_in_flight_finish(
    operator: Operator, kubectl: Any, k8s_namespace: str, kafka_rig: KafkaRig, new_topic: Any
) -> None:
    ns, name = k8s_namespace, "windowed"
    topic = new_topic([[1 + i % 3, 1 + (i + 1) % 3] for i in range(12)])
    # 4 MB a partition at 150 kB/s: a window that is open for a moment lets a few moves start, not all, and
    # the operator, loaded, still sees them in flight when it closes. At 300 kB/s, in two whole runs of the
    # suite out of three on 2026-12-06, the moves in flight had ended each of the three times before the
    # operator saw the window close (why they were that quick was not found: the operator's log went with
    # the run); at half the rate they last twice as long
    fill(kafka_rig, topic, 12 * 400, size=10_000)
    later = [{"start": hhmm(3), "end": hhmm(4)}]  # every day, hours away (UTC)
    apply(
        kubectl,
        ns,
        f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
        f"spec:\n  bootstrapServers: '{kafka_rig.bootstrap_servers}'\n  throttleBytesPerSecond: 150000\n"
        f"  limits: {{maxMovesInFlight: 2}}\n"
        f"  execution: {{windows: {json.dumps(later)}, outsideWindowBytesPerSecond: {CAP}}}\n",
    )
    retire_3(kubectl, ns, name)

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, name)

    def submitted() -> int:
        return int(record().get("counters", {}).get("submissions", 0))

    wait_for("WaitingForWindow", lambda: progressing(kubectl, ns)[1] == "WaitingForWindow", timeout=120)
    waiting_since = time.time()
    phase, _, message = progressing(kubectl, ns)
    assert phase == "Executing" and "next one opens at" in message, message
    ticks = record().get("counters", {}).get("ticks", 0)
    wait_for("a few ticks", lambda: record().get("counters", {}).get("ticks", 0) >= ticks + 3, timeout=60)
    assert submitted() == 0 and not record().get("inFlight")  # recorded, nothing sent
    # nothing moves yet: the ETA is the plan's estimate counted inside the window, hours away
    eta = (
        (get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {})
        .get("progress", {})
        .get("eta")
    )
    assert eta is not None, "no status.progress.eta while waiting for the first window"
    until = dt.datetime.fromisoformat(eta.replace("Z", "+00:00")) - dt.datetime.now(dt.UTC)
    assert dt.timedelta(hours=2.9) < until < dt.timedelta(hours=4), eta

    def capped() -> int:  # how often the operator capped moves in flight (its log: window_cap.py)
        return len(re.findall(rf"\b[1-9]\d* moves in flight capped at {CAP} B/s", operator.log.read_text()))

    first_wait = 0.0  # how long it surely waited for the first window (status.lastExecution.waitedSeconds)
    for _ in range(3):  # a move may end before the operator sees the window close: then open and close again
        before = capped()
        first_wait = first_wait or time.time() - waiting_since
        windows(kubectl, ns, name, [{"start": hhmm(-1), "end": hhmm(1)}])  # open now
        # closed again as soon as the record has moves in flight: every reconcile the test waited for before
        # closing (the status's, written a reconcile after the record) was time a move could end in, on a
        # loaded machine three times running (2026-12-06)
        wait_for("moves in flight", lambda: bool(record().get("inFlight")), timeout=60)
        windows(kubectl, ns, name, later)
        # (the cap was lifted when the window opened, before these moves were submitted: this is a new one)
        wait_for("the cap recorded", lambda: record().get("windowCap") == CAP, timeout=60)
        if capped() > before:
            break
    else:
        pytest.fail(
            "three times the moves in flight ended before the window closed: nothing was capped\n"
            f"{operator.tail(120)}"
        )
    wait_for(
        "WaitingForWindow again, the moves in flight throttled",
        lambda: (
            progressing(kubectl, ns)[1] == "WaitingForWindow"
            and f"throttled to {binary_bytes(CAP)}/s per broker" in progressing(kubectl, ns)[2]
        ),
        timeout=60,
    )
    # capped once while closed (the record says so; Kafka has the rate until a window opens or the end)
    rates = follower_rates(kafka_rig)
    assert str(CAP) in rates.values(), rates
    frozen = submitted()
    wait_for("the moves in flight finished", lambda: not record().get("inFlight"), timeout=180)
    ticks = record().get("counters", {}).get("ticks", 0)
    wait_for("a few ticks", lambda: record().get("counters", {}).get("ticks", 0) >= ticks + 3, timeout=60)
    total = int(record()["partitions"])  # the partitions with a replica on broker 3
    assert submitted() == frozen < total, (frozen, record().get("counters"))  # none sent while closed
    assert record().get("phase") not in ("Completed", "Failed", "Cancelled")

    # no windows: always; and a higher throttle for the moves left (the next batches are sized and throttled
    # with the spec's throttle of their tick: the six moves left took about 130 s at 150 kB/s)
    fast = {"spec": {"throttleBytesPerSecond": 1_000_000, "execution": {"windows": None}}}
    kubectl("-n", ns, "patch", "kafkacluster", name, "--type=merge", "-p", json.dumps(fast))
    wait_for("the cap lifted", lambda: record().get("windowCap") is None, timeout=60)
    started = time.monotonic()
    wait_for("Completed", lambda: progressing(kubectl, ns)[0] == "Completed", timeout=300)
    counters = record()["counters"]
    assert counters["submissions"] == total and counters["resubmitted"] == 0, counters
    # the estimate against the time it ran: the windows' waits are shown apart, not in the ratio
    ended = get(kubectl, ns, "brokerdecommission", "retire-3")["status"]["lastExecution"]
    span = (_time(ended["finishedAt"]) - _time(ended["startedAt"])).total_seconds()
    assert ended["waitedSeconds"] >= first_wait - 5, (ended, first_wait)
    # (startedAt and finishedAt are whole seconds, cut: their span is within 1 s of the wall time; actual and
    # waited are each rounded: their sum is within 1 s of it too)
    assert abs(ended["actualSeconds"] + ended["waitedSeconds"] - span) < 2, (ended, span)
    assert ended["errorRatio"] == f"{ended['actualSeconds'] / ended['estimatedSeconds']:.2f}", ended
    print(f"windows e2e: lastExecution {ended}")
    print(f"windows e2e: completed {time.monotonic() - started:.0f} s after the windows were removed")


def _time(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
