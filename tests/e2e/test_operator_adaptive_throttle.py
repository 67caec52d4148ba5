"""End to end: the adaptive throttle (``KafkaCluster.spec.throttle``, mode Adaptive) on the main rig, the
operator as a process, its traffic sampler looking every 5 s (window 5 s), real Kafka.

Brokers can take 600 kB/s in and out (``spec.capacity``, ``maxShare`` 0.8: 480 kB/s for Kafka's own use),
the throttle is kept within [30 kB/s, 300 kB/s]; min above max, a maximum that disagrees with
throttleBytesPerSecond and Adaptive without a minimum are refused by the apiserver with the CRD's messages
(a Static one is accepted). A decommission of broker 3 moves 8 partitions of about 8 MB onto
brokers 1 and 2, at most 2 at once (over 100 s at the maximum): with no client traffic their follower rate
is the maximum, 300 kB/s, in Kafka. Then a producer writes 400 kB/s to a partition on each of brokers 1
and 2: once the sampler has seen it, their follower rate is lowered (first within a sampling period of the
look that showed it, then down to 480 - 400 = 80 kB/s as the weighted rate catches up);
``status.progress.throttles`` and ``kafka_placement_broker_throttle_bytes_per_second`` say so. The producer
stops: the rate goes back up to the maximum (exactly: a rate reaching a bound is set even when it moves by
less than 10%). The intent is deleted (a cancel: the moves in flight are reverted), no throttle is left on
any broker and no rate series on the metrics endpoint. (That a broker's rates change at most once per
sampling period is the pure decision's, tested in tests/unit/execution/test_adaptive.py.)

Cost: about 45-90 s.
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from tests.e2e.conftest import KafkaRig, Operator, free_port, get, metric_samples
from tests.e2e.test_operator import apply, execution_record, fill, throttles_left
from tests.e2e.test_operator_windows import follower_rates, retire_3
from tests.integration.conftest import wait_for
from tests.integration.test_traffic import PacedProducer

pytestmark = [pytest.mark.kafka, pytest.mark.k8s, pytest.mark.timeout(360)]

CAPACITY = 600_000  # network in and out, bytes/s; x maxShare 0.8 = 480 kB/s
LOW, HIGH = 30_000, 300_000
HOT = 400_000  # the producer's rate into each of brokers 1 and 2
PERIOD = 5  # spec.traffic.periodSeconds (and windowSeconds)


def rates_shown(kubectl: Any, ns: str) -> dict[int, dict[str, int]]:
    status = get(kubectl, ns, "brokerdecommission", "retire-3").get("status") or {}
    return {r["broker"]: r for r in (status.get("progress") or {}).get("throttles") or ()}


def bytes_in(kubectl: Any, ns: str, name: str) -> dict[int, int]:
    traffic = (get(kubectl, ns, "kafkacluster", name).get("status") or {}).get("traffic") or {}
    return {b["id"]: b.get("bytesInPerSec", 0) for b in traffic.get("brokers") or ()}


def test_the_throttle_yields_to_client_traffic_and_comes_back_when_it_stops(
    operator: Operator,
    kubectl: Any,
    k8s_namespace: str,
    kafka_rig: KafkaRig,
    kafka_admin: Any,
    new_topic: Any,
) -> None:
    ns, name = k8s_namespace, "adaptive"
    operator.kill(signal.SIGTERM)  # again with its metrics served
    operator.metrics_port = free_port()
    operator.start()
    data = new_topic([[1 + i % 3, 1 + (i + 1) % 3] for i in range(12)])
    hot = new_topic([[1], [2]])
    fill(kafka_rig, data, 12 * 800, size=10_000)  # a move takes about 27 s at the most, 45 s yielding
    head = f"apiVersion: kafkaplacement.io/v1alpha1\nkind: KafkaCluster\nmetadata: {{name: {name}}}\n"
    for bad, says in (  # refused by the apiserver (the CRD's CEL rules), nothing created
        (
            f"spec: {{bootstrapServers: 'k:9092', throttle: {{mode: Adaptive, minBytesPerSecond: {HIGH}, "
            f"maxBytesPerSecond: {LOW}}}}}\n",
            "minBytesPerSecond must be <= maxBytesPerSecond",
        ),
        (
            f"spec: {{bootstrapServers: 'k:9092', throttleBytesPerSecond: {LOW}, "
            f"throttle: {{mode: Adaptive, minBytesPerSecond: {LOW}, maxBytesPerSecond: {HIGH}}}}}\n",
            "throttle.maxBytesPerSecond and throttleBytesPerSecond disagree",
        ),
        (
            f"spec: {{bootstrapServers: 'k:9092', throttleBytesPerSecond: {HIGH}, "
            "throttle: {mode: Adaptive}}\n",
            "minBytesPerSecond is required with mode Adaptive",
        ),
    ):
        out = kubectl("-n", ns, "apply", "--dry-run=server", "-f", "-", input=head + bad, check=False)
        assert out.returncode != 0 and says in out.stderr, out.stderr
    static = f"spec: {{bootstrapServers: 'k:9092', throttle: {{mode: Static, maxBytesPerSecond: {HIGH}}}}}\n"
    kubectl("-n", ns, "apply", "--dry-run=server", "-f", "-", input=head + static)  # accepted
    apply(
        kubectl,
        ns,
        head + f"spec:\n  bootstrapServers: '{kafka_rig.bootstrap_servers}'\n"
        f"  throttle: {{mode: Adaptive, minBytesPerSecond: {LOW}, maxBytesPerSecond: {HIGH}}}\n"
        f"  traffic: {{enabled: true, periodSeconds: {PERIOD}, windowSeconds: {PERIOD}}}\n"
        f"  capacity: {{default: {{networkInBytesPerSec: {CAPACITY}, networkOutBytesPerSec: {CAPACITY}}}}}\n"
        f"  limits: {{maxMovesInFlight: 2}}\n",
    )
    retire_3(kubectl, ns, name)

    def record() -> dict[str, Any]:
        return execution_record(kubectl, ns, name)

    wait_for("moves in flight", lambda: bool(record().get("inFlight")), timeout=120)
    # quiet: every receiving broker at the maximum, in Kafka and in the intent's status
    wait_for("the maximum set", lambda: str(HIGH) in follower_rates(kafka_rig).values(), timeout=30)
    wait_for("the rates shown", lambda: bool(rates_shown(kubectl, ns)), timeout=30)
    shown = rates_shown(kubectl, ns)
    assert all(r.get("followerBytesPerSecond") == HIGH for r in shown.values()), shown

    paced = PacedProducer(kafka_rig.bootstrap_servers, {(hot, 0): HOT, (hot, 1): HOT})
    try:
        wait_for(
            "the traffic seen",
            lambda: min(bytes_in(kubectl, ns, name).get(b, 0) for b in (1, 2)) > 0.7 * HOT,
            timeout=60,
        )
        t_seen = time.monotonic()

        def lowered() -> bool:
            rates = follower_rates(kafka_rig)
            return any(b in rates and int(rates[b]) < 0.9 * HIGH for b in (1, 2))

        wait_for("a receiving broker's throttle lowered", lowered, timeout=60)
        print(f"adaptive e2e: throttle lowered {time.monotonic() - t_seen:.1f} s after the look showed it")
        room = 0.8 * CAPACITY - 0.7 * HOT  # 480 kB/s less what the sampler measures (over 70% of HOT)

        def down() -> bool:
            rates = follower_rates(kafka_rig)
            return all(b in rates and int(rates[b]) <= room for b in (1, 2))

        wait_for("both receiving brokers' throttles down to the clients' room", down, timeout=60)
        rates = {b: int(v) for b, v in follower_rates(kafka_rig).items()}
        print(f"adaptive e2e: follower rates in Kafka with the producer on: {rates}")
        low = [1, 2]
        decided = {(s["broker"], s["config"]): s["value"] for s in record()["adaptive"]["sides"]}
        for b in low:  # never under the minimum; what Kafka has is what the record says was decided
            assert rates[b] >= LOW, rates
            assert decided[(b, "follower.replication.throttled.rate")] == rates[b], (decided, rates)
        cluster = f"{ns}/{name}"

        def gauged() -> dict[str, float]:
            samples = metric_samples(operator, "kafka_placement_broker_throttle_bytes_per_second")
            return {
                s.labels["broker"]: s.value
                for s in samples
                if s.labels["cluster"] == cluster and s.labels["side"] == "follower"
            }

        wait_for(
            "the lowered rates in the metric", lambda: all(gauged().get(str(b), HIGH) <= room for b in low)
        )
        wait_for(
            "the lowered rates shown",
            lambda: all(
                rates_shown(kubectl, ns).get(b, {}).get("followerBytesPerSecond", HIGH) <= room for b in low
            ),
            timeout=30,
        )
        assert record().get("inFlight"), "the moves ended before the traffic stopped: nothing to raise"
    finally:
        paced.close()
    assert not paced.failed, paced.failed[:3]

    def raised() -> bool:
        rates = follower_rates(kafka_rig)
        return all(b in rates and int(rates[b]) >= HIGH for b in low)

    def why() -> str:
        doc = record()
        return (
            f"Kafka {follower_rates(kafka_rig)}; traffic {bytes_in(kubectl, ns, name)}; record phase "
            f"{doc.get('phase')}, in flight {sorted(doc.get('inFlight') or {})}, "
            f"adaptive {doc.get('adaptive')}"
            f"\n{operator.tail()}"
        )

    wait_for("the throttle raised back to the maximum", raised, timeout=60, why=why)
    doc = record()["adaptive"]
    assert doc["changes"] >= 2, doc  # lowered, raised
    print(f"adaptive e2e: raised back: {follower_rates(kafka_rig)}, {doc['changes']} changes")
    kubectl("-n", ns, "delete", "brokerdecommission", "retire-3", "--wait=false")
    wait_for(
        "the execution ended",
        lambda: (
            record().get("phase") in ("Cancelled", "Completed")
            and not record().get("throttles", {}).get("brokers")
        ),
        timeout=180,
    )
    wait_for("no throttle left", lambda: not throttles_left(kafka_admin, kafka_rig), timeout=30)
    wait_for("no rate series left", lambda: not gauged(), timeout=30)
