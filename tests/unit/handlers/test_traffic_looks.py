"""The traffic sampler's looks over time (reconcile/traffic_sampler.py, handlers/traffic_daemon.py), with an
in-memory ConfigMap store and a scripted gateway: one gateway per cluster reused across looks (closed on
a settings change, a failed look, after GATEWAY_LOOKS, and by ``forget``), the state saved at most every
SAVE_FRACTION of the window and reloaded after a restart, nothing done for a cluster that does not
sample, and the daemon's filter and sleep. A gateway's topic ids read once, again when offsets go back
(kafka/gateway.py ``traffic_look``)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pytest
from tests.unit.builders import snapshot

from kafka_placement.handlers import traffic_daemon as handler
from kafka_placement.kafka import traffic_reads as reads
from kafka_placement.kafka.connection import ConnectionSettings
from kafka_placement.kafka.gateway import KafkaGateway, KafkaUnavailableError
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.traffic_looks import PartitionLook, TrafficLook
from kafka_placement.reconcile import traffic_sampler as ts
from kafka_placement.reconcile.leader import Unelected
from kafka_placement.reconcile.record_store import DOC_KEY

NS = "kafka"


def _matches(labels: Mapping[str, str], selector: str) -> bool:
    """Label selectors as the store writes them: ``k=v``, ``k``, ``!k``, ``k notin (a,b)``."""
    for term in selector.replace(", ", ",").split(","):
        if " notin (" in term:
            key, values = term.split(" notin (")
            if labels.get(key) in values.rstrip(")").split(","):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key) != value:
                return False
        elif term and term not in labels:
            return False
    return True


class MemoryKube:
    """ConfigMaps in memory, with resourceVersions; and the status patches."""

    def __init__(self) -> None:
        self.cms: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.writes: list[str] = []
        self.statuses: list[tuple[str, dict[str, Any]]] = []

    def _stored(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.rv)
        self.cms[body["metadata"]["name"]] = body
        self.writes.append(body["metadata"]["name"])
        return copy.deepcopy(body)

    def read_config_map(self, ns: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.cms.get(name))

    def create_config_map(self, ns: str, body: dict[str, Any]) -> dict[str, Any]:
        assert body["metadata"]["name"] not in self.cms
        return self._stored(body)

    def replace_config_map(self, ns: str, body: dict[str, Any]) -> dict[str, Any] | None:
        old = self.cms.get(body["metadata"]["name"])
        if old is None or body["metadata"].get("resourceVersion") not in (
            None,
            old["metadata"]["resourceVersion"],
        ):
            return None
        return self._stored(body)

    def delete_config_map(self, ns: str, name: str) -> bool:
        return self.cms.pop(name, None) is not None

    def config_map_names(self, ns: str, selector: str) -> Iterator[tuple[str, str]]:
        for name, cm in list(self.cms.items()):
            if _matches(cm["metadata"].get("labels") or {}, selector):
                yield ns, name

    def patch_custom_status(
        self, group: str, version: str, ns: str, plural: str, name: str, status: dict[str, Any]
    ) -> bool:
        self.statuses.append((name, status))
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


SNAP = snapshot({1: None, 2: None}, [("t", 0, [1, 2], [0, 0], 0)])


class ScriptedGateway:
    """A gateway whose looks see partition t-0 grow by 1000 bytes (10 offsets) a second of ``clock``."""

    made: list[ScriptedGateway] = []
    clock: Clock
    fail = False

    def __init__(self, settings: Any, fence: Any) -> None:
        self.settings, self.closed, self.looks = settings, False, 0
        ScriptedGateway.made.append(self)

    def traffic_look(self) -> tuple[Any, TrafficLook]:
        assert not self.closed
        if ScriptedGateway.fail:
            raise KafkaUnavailableError("k:9092 unreachable")
        self.looks += 1
        t = self.clock.now
        offsets = int(t * 10)
        return SNAP, TrafficLook(t, {("t", 0): PartitionLook(0, offsets, offsets * 100, "id-t")})

    def close(self) -> None:
        self.closed = True


def cluster(
    enabled: bool = True, window: int = 20, period: int = 5, servers: str = "k:9092"
) -> dict[str, Any]:
    return {
        "apiVersion": "kafkaplacement.io/v1alpha1",
        "kind": "KafkaCluster",
        "metadata": {"namespace": NS, "name": "c", "uid": "u1"},
        "spec": {
            "bootstrapServers": servers,
            "traffic": {"enabled": enabled, "windowSeconds": window, "periodSeconds": period},
        },
    }


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> tuple[MemoryKube, Clock, Any]:
    kube, clock = MemoryKube(), Clock()
    ScriptedGateway.made, ScriptedGateway.clock, ScriptedGateway.fail = [], clock, False
    monkeypatch.setattr(ts, "FencedGateway", ScriptedGateway)

    def sampler() -> ts.TrafficSampler:
        return ts.TrafficSampler(
            cast(KubeGateway, kube), Unelected("me"), lambda spec, ns: spec.bootstrap_servers, wall=clock
        )

    return kube, clock, sampler


def _progress(kube: MemoryKube) -> dict[str, Any]:
    cm = kube.cms["kafka-placement-c-traffic"]
    doc: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(cm["binaryData"][DOC_KEY])))
    return doc


def test_one_gateway_serves_a_clusters_looks_until_its_settings_change_or_it_served_enough(rig: Any) -> None:
    _kube, clock, make = rig
    sampler = make()
    for _ in range(ts.GATEWAY_LOOKS):
        sampler.tick(cluster())
        clock.now += 5
    assert len(ScriptedGateway.made) == 1 and ScriptedGateway.made[0].looks == ts.GATEWAY_LOOKS
    sampler.tick(cluster())  # the gateway served its looks: a fresh one (access and ids checked again)
    clock.now += 5
    first, second = ScriptedGateway.made
    assert first.closed and not second.closed
    sampler.tick(cluster(servers="other:9092"))  # connection settings changed: a new gateway
    clock.now += 5
    assert second.closed and ScriptedGateway.made[-1].settings == "other:9092"
    ScriptedGateway.fail = True
    assert sampler.tick(cluster(servers="other:9092")) is None  # a failed look closes its gateway
    assert ScriptedGateway.made[-1].closed
    ScriptedGateway.fail = False
    clock.now += 5
    sampler.tick(cluster())
    sampler.forget(NS, "c")  # deleted, sampling off, leadership lost
    assert all(g.closed for g in ScriptedGateway.made)


def test_a_look_not_due_takes_no_look_and_the_wait_is_until_it_is_due(rig: Any) -> None:
    _kube, clock, make = rig
    sampler = make()
    assert sampler.wait_s(cluster(), 5.0) == 5.0  # no look yet: check again soon
    sampler.tick(cluster(period=60, window=300))
    clock.now += 20
    assert sampler.tick(cluster(period=60, window=300)) is None
    assert ScriptedGateway.made[0].looks == 1
    assert sampler.wait_s(cluster(period=60, window=300), 5.0) == 5.0  # capped: leadership, spec
    assert sampler.wait_s(cluster(period=60, window=300), 100.0) == pytest.approx(40.0)


def test_the_state_is_saved_once_the_looks_advanced_half_a_window_and_a_restart_goes_on_from_it(
    rig: Any,
) -> None:
    kube, clock, make = rig
    sampler = make()
    saved_looks = []
    for _ in range(7):  # looks at 0, 5, ..., 30 s with a 20 s window: saved at 0, 10, 20, 30 s
        before = len(kube.writes)
        status = sampler.tick(cluster())
        if "kafka-placement-c-traffic" in kube.writes[before:]:
            saved_looks.append(status["looks"] if status else None)
        clock.now += 5
    assert saved_looks == [1, 3, 5, 7]
    assert set(_progress(kube)) == {"version", "looks", "at", "blob"}  # no window: the spec has it
    assert sum(1 for n in kube.cms if "-blob-traffic-" in n) == 1  # older blobs pruned

    sampler.tick(cluster())  # look 8 at 35 s: not saved, lost by the restart below
    assert _progress(kube)["looks"] == 7
    clock.now += 5
    restarted = make()
    status = restarted.tick(cluster())  # 40 s: the interval runs from the saved look at 30 s
    assert status is not None and status["looks"] == 8
    assert status["brokers"][0]["bytesInPerSec"] == 1000  # the rate goes on: no look needed first


def test_save_due_is_the_first_look_then_half_a_window_and_a_clock_set_back() -> None:
    assert ts.save_due(0.0, 100.0, 300)
    assert not ts.save_due(100.0, 249.0, 300)
    assert ts.save_due(100.0, 250.0, 300)
    assert ts.save_due(100.0, 50.0, 300)


def test_a_cluster_that_does_not_sample_costs_no_gateway_and_clears_its_status(rig: Any) -> None:
    kube, _clock, make = rig
    sampler = make()
    assert sampler.tick(cluster(enabled=False)) is None
    shown = {**cluster(enabled=False), "status": {"traffic": {"looks": 3}}}
    assert sampler.tick(shown) == {}
    assert ScriptedGateway.made == [] and kube.writes == []


def test_the_daemon_exists_only_for_a_sampling_cluster_or_a_status_to_clear() -> None:
    k = {"bootstrapServers": "k:9092"}
    assert handler.wanted({**k, "traffic": {"enabled": True}}, {})
    assert not handler.wanted({**k, "traffic": {"enabled": False}}, {})
    assert not handler.wanted(k, {})
    assert handler.wanted(k, {"traffic": {"looks": 1}})
    # an invalid spec samples nothing (the reconcile reports it), but a status to clear is still cleared
    assert not handler.wanted({**k, "traffic": {"enabled": True, "periodSeconds": -1}}, {})
    assert handler.wanted({"traffic": {"enabled": True}}, {"traffic": {"looks": 1}})


def test_a_gateway_reads_topic_ids_once_and_again_for_a_topic_whose_offsets_went_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    described: list[list[str]] = []
    ends = {("t", 0): (0, 50), ("u", 0): (0, 10)}
    ids = {"t": "t-1", "u": "u-1"}

    def topic_ids(admin: Any, call: Any, topics: Any, timeout: float) -> dict[str, str]:
        described.append(list(topics))
        return {t: ids[t] for t in topics}

    monkeypatch.setattr(reads, "topic_ids", topic_ids)
    monkeypatch.setattr(reads, "list_offsets", lambda admin, call, parts, timeout: dict(ends))
    monkeypatch.setattr(reads, "committed_offsets", lambda admin, call, timeout: {})
    snap = snapshot({1: None}, [("t", 0, [1], [0], 0), ("u", 0, [1], [0], 0)], dirs=1)
    gateway = KafkaGateway(ConnectionSettings("k:9092"))
    monkeypatch.setattr(gateway, "snapshot", lambda: snap)

    _, first = gateway.traffic_look()
    _, second = gateway.traffic_look()
    assert described == [["t", "u"]]  # once per gateway, not per look
    assert second.partitions[("u", 0)].topic_id == "u-1"
    ends[("t", 0)], ids["t"] = (0, 5), "t-2"  # t deleted and created again
    _, third = gateway.traffic_look()
    assert described[1:] == [["t"]]
    assert third.partitions[("t", 0)].topic_id == "t-2" and third.partitions[("u", 0)].topic_id == "u-1"
    assert first.partitions[("t", 0)].topic_id == "t-1"


def test_rates_for_planning_come_from_the_state_in_memory_and_only_while_sampling(rig: Any) -> None:
    kube, clock, make = rig
    sampler = make()
    assert sampler.rates(cluster()) is None  # no state in this process yet
    sampler.tick(cluster())
    first = sampler.rates(cluster())
    assert first is not None and first[("t", 0)].bytes_in_per_sec is None  # one look: no rate yet
    clock.now += 5
    sampler.tick(cluster())
    writes = len(kube.writes)
    made = len(ScriptedGateway.made)
    rates = sampler.rates(cluster())
    assert rates is not None and rates[("t", 0)].bytes_in_per_sec == pytest.approx(1000)
    assert len(kube.writes) == writes and len(ScriptedGateway.made) == made  # no Kubernetes or Kafka use
    assert ScriptedGateway.made[-1].looks == 2
    assert sampler.rates(cluster(enabled=False)) is None  # sampling turned off: the reconcile plans without
    other = cluster()
    other["metadata"]["uid"] = "u2"  # recreated under the same name: not its state
    assert sampler.rates(other) is None
