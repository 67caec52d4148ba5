"""Deleting a LogDirCordon or a BrokerDecommission: the cluster's reconcile (or its own deletion) removes
the cordons, the intent's delete handler only waits for that (handlers/intent_common.py
``wait_uncordoned``, reconcile/reconciler.py ``release``), from plain values: a fake Kubernetes and Kafka.
The rig tests (tests/e2e/test_operator.py) show the same against Kafka."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import kopf
import pytest

from kafka_placement.execution.record_doc import Limits, Phase
from kafka_placement.handlers import intent_common
from kafka_placement.kafka.gateway import (
    KafkaOperationError,
    KafkaUnavailableError,
    KafkaUnsupportedError,
)
from kafka_placement.kafka.liveness import ClusterBrokers
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.snapshot import Broker, ClusterSnapshot, LogDir
from kafka_placement.reconcile import cordons, inputs, reconciler
from kafka_placement.reconcile.decide import cordon_sync
from kafka_placement.reconcile.reconciler import Reconciler
from kafka_placement.reconcile.record_store import configmap_name

GONE = "2026-11-27T19:00:00Z"


def resource(kind: str, name: str, spec: dict[str, Any], deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kafka", "uid": f"u-{name}"}
    if deleting:
        meta["deletionTimestamp"] = GONE
    return {"kind": kind, "metadata": meta, "spec": {"clusterRef": {"name": "c"}, **spec}}


CLUSTER = {
    "kind": "KafkaCluster",
    "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c", "deletionTimestamp": GONE},
    "spec": {"bootstrapServers": "k:9092"},
}
PLURALS = {"LogDirCordon": "logdircordons", "BrokerDecommission": "brokerdecommissions"}


class FakeKube:
    """The KubeGateway calls of a cluster's deletion: its intents, its (absent) record, Events."""

    def __init__(self, *intents: dict[str, Any], cluster: Mapping[str, Any] | None = CLUSTER) -> None:
        self.intents = intents
        self.cluster = cluster
        self.events: list[tuple[str, str, str]] = []

    def list_custom(self, group: str, version: str, ns: str, plural: str) -> list[dict[str, Any]]:
        return [dict(b) for b in self.intents if PLURALS.get(b["kind"]) == plural]

    def get_custom(self, group: str, version: str, ns: str, plural: str, name: str) -> Any:
        return self.cluster

    def read_config_map(self, ns: str, name: str) -> None:
        return None

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        self.events.append((etype, reason, message))

    def patch_custom_status(self, *_: Any) -> None:
        return None


class FakeGateway:
    """Kafka >= 4.3 whose brokers 1 and 3 have dirs /a and /b, all cordoned; records the cordon calls."""

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.calls: list[tuple[int, list[str], bool]] = []

    def __enter__(self) -> FakeGateway:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def supports_cordon(self) -> bool:
        if self.down:
            raise KafkaUnavailableError("no broker answered")
        return True

    def set_cordon(self, broker: int, dirs: list[str], cordoned: bool) -> None:
        self.calls.append((broker, list(dirs), cordoned))


VIEW = ClusterSnapshot(
    tuple(Broker(b, None, (LogDir("/a", cordoned=True), LogDir("/b", cordoned=True))) for b in (1, 3)), ()
)


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> FakeGateway:
    gw = FakeGateway()
    monkeypatch.setattr(reconciler, "FencedGateway", lambda settings, fence: gw)
    monkeypatch.setattr(cordons, "cordon_view", lambda _: VIEW)
    return gw


def test_the_clusters_deletion_removes_the_cordons_of_the_intents_deleted_with_it(kafka: FakeGateway) -> None:
    """A GitOps prune deletes intents and their cluster together: no reconcile runs any more, so the
    cluster's deletion removes what the deleted intents declared and no remaining intent declares."""
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    retire = resource("BrokerDecommission", "retire", {"brokers": [3, 2]}, deleting=True)
    kept = resource("LogDirCordon", "kept", {"broker": 3, "logDirs": ["/b"]})
    kube = FakeKube(drain, retire, kept)
    rec = Reconciler(cast(KubeGateway, kube))
    assert rec.release(CLUSTER) is None
    assert kafka.calls == [(1, ["/a"], False), (3, ["/a"], False)]  # 3 /b still declared; 2 is not alive
    assert rec.uncordoned("kafka", "c", "u-drain") and rec.uncordoned("kafka", "c", "u-retire")
    assert not rec.uncordoned("kafka", "c", "u-kept")
    assert [e[2] for e in kube.events] == [
        "uncordoned /a on broker 1: only deleted resources declared them",
        "uncordoned /a on broker 3: only deleted resources declared them",
        "broker 2 is not alive: the cordons deleted resources declared on it stay, skipped",
    ]
    kafka.calls.clear()
    assert rec.release(CLUSTER) is None and kafka.calls == []  # done: not asked again


def test_the_cluster_is_not_contacted_when_no_deleted_intent_declares_a_cordon(kafka: FakeGateway) -> None:
    policy = resource("PlacementPolicy", "p", {}, deleting=True)
    kept = resource("LogDirCordon", "kept", {"broker": 3, "logDirs": ["/b"]})
    kafka.down = True  # would raise if asked
    assert Reconciler(cast(KubeGateway, FakeKube(policy, kept))).release(CLUSTER) is None


def test_kafka_unreachable_keeps_the_deleted_intents_until_it_answers(kafka: FakeGateway) -> None:
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    rec = Reconciler(cast(KubeGateway, FakeKube(drain)))
    kafka.down = True
    assert rec.release(CLUSTER) == (
        "removing the cordons of LogDirCordon/drain before the cluster goes: no broker answered"
    )
    assert not rec.uncordoned("kafka", "c", "u-drain")
    kafka.down = False
    assert rec.release(CLUSTER) is None and rec.uncordoned("kafka", "c", "u-drain")


def test_a_released_resource_is_forgotten_once_it_is_gone() -> None:
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    rec = Reconciler(cast(KubeGateway, FakeKube()))
    assert rec._leaving("kafka", "c", [drain]) == [drain]
    rec.released(CLUSTER, cordon_sync([], [drain]), None)
    assert rec.uncordoned("kafka", "c", "u-drain") and rec._leaving("kafka", "c", [drain]) == []
    assert rec._leaving("kafka", "c", []) == [] and not rec.uncordoned("kafka", "c", "u-drain")


class Looking:
    """A gateway that records what a reconcile reads (``contacted``): the lane's look and the liveness look
    are answered (``alive``: the live brokers; None: the look fails); a full reconcile's first read fails
    (Kafka unreachable)."""

    contacted: ClassVar[list[str]]
    alive: ClassVar[tuple[int, ...] | None] = ()

    def __init__(self, settings: Any, fence: Any) -> None:
        pass

    def __enter__(self) -> Looking:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def partition_counts(self) -> dict[str, int]:
        self.contacted.append("look")
        return {}

    def cluster_brokers(self) -> ClusterBrokers:
        self.contacted.append("live")
        if self.alive is None:
            raise KafkaOperationError("describe cluster: timed out")
        return ClusterBrokers("id", self.alive)

    def check_authorized(self, *_: Any, **__: Any) -> None:
        self.contacted.append("full")
        raise KafkaUnavailableError("no broker answered")


@pytest.fixture
def looking(monkeypatch: pytest.MonkeyPatch) -> type[Looking]:
    """``Looking`` as the reconciler's gateway, with a record of its own."""

    class Fresh(Looking):
        contacted: ClassVar[list[str]] = []

    monkeypatch.setattr(reconciler, "FencedGateway", Fresh)
    return Fresh


def test_a_resource_being_deleted_makes_the_next_reconcile_read_kafka(looking: type[Looking]) -> None:
    """An idle cluster's reconcile reads no more of Kafka than the new-partition lane's look (its topics'
    partition counts) while nothing of ours changed (quiet); a resource being deleted whose cordons are
    not removed yet makes it a full one, whose sync removes them."""
    live = {**CLUSTER, "metadata": {k: v for k, v in CLUSTER["metadata"].items() if k != "deletionTimestamp"}}
    kept = resource("LogDirCordon", "kept", {"broker": 3, "logDirs": ["/b"]})
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    for leaving, reads in (([], ["look"]), ([drain], ["full"])):
        rec = Reconciler(cast(KubeGateway, FakeKube(kept, *leaving)))
        settled = inputs.Settled(inputs.fingerprint(live, [kept], None), rec.clock(), frozenset())
        rec.memory(("kafka", "c")).settled = settled
        looking.contacted.clear()
        rec.reconcile(live)
        assert looking.contacted == reads, leaving
    assert not rec.uncordoned("kafka", "c", "u-drain")  # Kafka did not answer: the handler waits


@pytest.mark.parametrize(
    ("healing", "alive", "reads"),
    [
        (False, (1, 2), []),  # no broker-failure healing: Kafka is not read between resyncs
        (True, (1, 2, 3), ["live"]),  # the brokers of the last full read: quiet
        (True, (1, 2), ["live", "full"]),  # broker 3 died: read whole in this reconcile, not at resync
        (True, (1, 2, 3, 4), ["live", "full"]),  # a broker joined or returned: the same
        (True, None, ["live", "full"]),  # the look failed: the full read says what is wrong
    ],
)
def test_a_quiet_reconcile_of_a_healing_cluster_sees_a_death_at_once(
    looking: type[Looking], healing: bool, alive: tuple[int, ...] | None, reads: list[str]
) -> None:
    """A cluster that heals dead brokers looks at liveness on each quiet reconcile (one DescribeCluster,
    whatever its size): a change ends the quiet period, so a failure's afterSeconds count from about the
    failure instead of up to a resync period later. Other clusters read nothing more than before."""
    spec: dict[str, Any] = {"bootstrapServers": "k:9092"}
    if healing:
        spec["selfHealing"] = {"brokerFailure": {"enabled": True}}
    live = {
        "kind": "KafkaCluster",
        "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c"},
        "spec": spec,
    }
    looking.alive = alive
    rec = Reconciler(cast(KubeGateway, FakeKube(cluster=live)))
    where = ("kafka", "c")
    rec.memory(where).settled = inputs.Settled(
        inputs.fingerprint(live, [], None), rec.clock(), frozenset({1, 2, 3})
    )
    rec.reconcile(live)
    assert looking.contacted == reads
    assert (rec.memory(where).settled is not None) == ("full" not in reads)  # a full read decides afresh


@pytest.fixture
def handler_of(monkeypatch: pytest.MonkeyPatch) -> Any:
    def handler(kube: FakeKube) -> Reconciler:
        rec = Reconciler(cast(KubeGateway, kube))
        monkeypatch.setattr(intent_common, "runtime", lambda: SimpleNamespace(reconciler=rec))
        return rec

    return handler


def test_the_delete_handler_waits_for_the_reconcile_that_uncordons(handler_of: Any) -> None:
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    unreachable = {
        **CLUSTER,
        "status": {"conditions": [{"type": "Ready", "status": "False", "message": "no broker answered"}]},
    }
    rec = handler_of(FakeKube(drain, cluster=unreachable))
    with pytest.raises(kopf.TemporaryError, match="remove the cordons this resource declared: no broker"):
        intent_common.wait_uncordoned("LogDirCordon", drain)
    rec.released(CLUSTER, cordon_sync([], [drain]), None)
    intent_common.wait_uncordoned("LogDirCordon", drain)  # the reconcile did it: the resource may go


def test_the_delete_handler_lets_go_at_once_when_nothing_is_to_uncordon(handler_of: Any) -> None:
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    handler_of(FakeKube(drain, cluster=None))  # its KafkaCluster does not exist: nothing can be reached
    intent_common.wait_uncordoned("LogDirCordon", drain)
    handler_of(FakeKube())
    intent_common.wait_uncordoned("LogDirCordon", resource("LogDirCordon", "bad", {"broker": 1}))  # invalid
    intent_common.wait_uncordoned("PlacementPolicy", resource("PlacementPolicy", "p", {}))


UNSUPPORTED = "the Kafka cluster at k:9092 is not supported: it runs Kafka 2.3, which lacks ..."


class Unsupported(Looking):
    """Brokers without an API the operator needs: the gateway refuses at its first read."""

    def check_authorized(self, *_: Any, **__: Any) -> None:
        self.contacted.append("full")
        raise KafkaUnsupportedError(UNSUPPORTED)

    def supports_cordon(self) -> bool:
        self.contacted.append("cordon")
        raise KafkaUnsupportedError(UNSUPPORTED)


def test_an_unsupported_cluster_is_told_once_and_its_intents_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The KafkaCluster goes Unsupported with a Warning Event when it becomes so (not at every reconcile),
    its intents Failed with reason KafkaUnsupported, and nothing but the first read is asked of Kafka."""

    class Fresh(Unsupported):
        contacted: ClassVar[list[str]] = []

    monkeypatch.setattr(reconciler, "FencedGateway", Fresh)
    live = {**CLUSTER, "metadata": {k: v for k, v in CLUSTER["metadata"].items() if k != "deletionTimestamp"}}
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]})

    class Kube(FakeKube):
        def patch_custom_status(self, *args: Any) -> None:
            drain["status"] = dict(args[-1])  # the intent's status, as the next reconcile reads it

    kube = Kube(drain, cluster=live)
    status = Reconciler(cast(KubeGateway, kube)).reconcile(live)
    assert status["phase"] == "Unsupported" and Fresh.contacted == ["full"]
    assert ("Warning", "KafkaUnsupported", UNSUPPORTED) in kube.events
    assert [e[1] for e in kube.events].count("KafkaUnsupported") == 2  # the cluster's and the intent's
    assert drain["status"]["phase"] == "Failed" and not drain["status"].get("plan")
    kube.events.clear()
    told = {**live, "status": status}
    assert Reconciler(cast(KubeGateway, kube)).reconcile(told)["phase"] == "Unsupported"
    assert kube.events == []  # said once


def test_an_unsupported_cluster_and_its_cordoning_intents_go_at_once(
    monkeypatch: pytest.MonkeyPatch, handler_of: Any
) -> None:
    """Nothing was ever cordoned on brokers the operator refuses: deleting a LogDirCordon of such a cluster,
    or the cluster with it, does not wait for a reconcile that cannot succeed."""
    monkeypatch.setattr(reconciler, "FencedGateway", Unsupported)
    Unsupported.contacted = []
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    told = {**CLUSTER, "status": {"phase": "Unsupported"}}
    handler_of(FakeKube(drain, cluster=told))
    intent_common.wait_uncordoned("LogDirCordon", drain)
    assert Reconciler(cast(KubeGateway, FakeKube(drain))).release(CLUSTER) is None


def test_a_released_cluster_leaves_no_kept_plan_or_settled_state_in_memory(kafka: FakeGateway) -> None:
    """A namesake created later starts afresh: the deleted cluster's kept plan (planning/plan_keeping.py)
    and its settled fingerprint go with it."""
    rec = Reconciler(cast(KubeGateway, FakeKube()))
    where = (CLUSTER["metadata"]["namespace"], CLUSTER["metadata"]["name"])
    rec.memory(where).kept = cast(Any, "a kept plan")
    rec.memory(where).settled = inputs.Settled("fingerprint", 0.0, frozenset())
    assert rec.release(CLUSTER) is None
    assert not rec.remembers(where)


BAD_WINDOW = {"windows": [{"start": "01:00", "end": "02:00", "timeZone": "Europe/Pariss"}]}  # no such zone


def test_an_invalid_window_does_not_hold_the_deletion_of_a_cordon(
    kafka: FakeGateway, handler_of: Any
) -> None:
    """A field the CRD's schema cannot check (an unknown IANA zone) makes the spec invalid: the cluster's
    reconcile plans nothing (phase Invalid), yet it removes the cordons of a LogDirCordon being deleted (it
    needs only the connection), so the delete handler lets the resource go."""
    live = {
        "kind": "KafkaCluster",
        "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c"},
        "spec": {"bootstrapServers": "k:9092", "execution": BAD_WINDOW},
    }
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    kept = resource("LogDirCordon", "kept", {"broker": 3, "logDirs": ["/b"]})
    kube = FakeKube(drain, kept, cluster=live)
    rec = handler_of(kube)
    status = rec.reconcile(live)
    assert status["phase"] == "Invalid"
    assert kafka.calls == [(1, ["/a"], False)]  # /b on broker 3 is still declared: kept
    intent_common.wait_uncordoned("LogDirCordon", drain)  # the resource may go
    assert ("Normal", "Uncordoned", "uncordoned /a on broker 1: only deleted resources declared them") in (
        kube.events
    )


def test_an_invalid_window_does_not_hold_the_clusters_deletion(kafka: FakeGateway) -> None:
    """Deleting the cluster itself: the cordons of the intents deleted with it are removed all the same."""
    bad = {**CLUSTER, "spec": {**CLUSTER["spec"], "execution": BAD_WINDOW}}
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    rec = Reconciler(cast(KubeGateway, FakeKube(drain, cluster=bad)))
    assert rec.release(bad) is None
    assert kafka.calls == [(1, ["/a"], False)] and rec.uncordoned("kafka", "c", "u-drain")


def test_invalid_connection_fields_hold_the_deletion_as_an_unreachable_kafka_does(kafka: FakeGateway) -> None:
    """Without valid connection fields nothing can be reached: the deletion is retried, saying why, as while
    Kafka does not answer (the cluster's handler gives up after RELEASE_TIMEOUT_S with a Warning Event)."""
    bad = {**CLUSTER, "spec": {"bootstrapServers": "k:9092", "sasl": {"mechanism": "GSSAPI"}}}
    drain = resource("LogDirCordon", "drain", {"broker": 1, "logDirs": ["/a"]}, deleting=True)
    rec = Reconciler(cast(KubeGateway, FakeKube(drain, cluster=bad)))
    left = rec.release(bad)
    assert left is not None
    assert left.startswith("cannot reach Kafka to remove the cordons of LogDirCordon/drain")
    assert "spec.sasl" in left and kafka.calls == [] and not rec.uncordoned("kafka", "c", "u-drain")


def executing(monkeypatch: pytest.MonkeyPatch, cancel_requested: bool) -> list[Limits]:
    """An execution record in flight with its throttles set (the lane has none): the limits of each tick
    (a tick cancels it whole, its throttles removed)."""
    throttles = SimpleNamespace(empty=False)
    doc = SimpleNamespace(
        plan_id="p1", cancel_requested=cancel_requested, throttles=throttles, limits=Limits(throttle=1234)
    )
    record = SimpleNamespace(phase=Phase.MOVING, doc=doc, save=lambda: None)
    ticks: list[Limits] = []

    def tick(gw: Any, ex: Any, limits: Limits) -> None:
        ticks.append(limits)
        ex.phase, throttles.empty = Phase.CANCELLED, True

    def load(store: Any) -> Any:
        mine = store.name == configmap_name("c", "execution")  # not the lane's
        return record if mine and record.phase != Phase.CANCELLED else None

    monkeypatch.setattr(reconciler.Execution, "load", load)
    monkeypatch.setattr(reconciler.executor, "tick", tick)
    return ticks


def test_an_invalid_window_does_not_hold_the_cancel_of_the_clusters_execution(
    kafka: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster's deletion cancels its execution (throttles removed) with the connection alone; the
    limits are the record's own when the spec's do not parse."""
    ticks = executing(monkeypatch, cancel_requested=False)
    bad = {**CLUSTER, "spec": {**CLUSTER["spec"], "execution": BAD_WINDOW}}
    assert Reconciler(cast(KubeGateway, FakeKube(cluster=bad))).release(bad) is None
    assert [t.throttle for t in ticks] == [1234]


@pytest.mark.parametrize("cancel_requested", [True, False])
def test_an_invalid_spec_still_carries_out_a_requested_cancel(
    kafka: FakeGateway, monkeypatch: pytest.MonkeyPatch, cancel_requested: bool
) -> None:
    """A resource taking part in the execution was deleted (its cancel requested): the reconcile of a
    cluster whose spec is invalid carries the cancel out all the same (throttles removed). An execution
    nobody asked to cancel is left as it is: the spec's author may fix a typo."""
    ticks = executing(monkeypatch, cancel_requested)
    live = {
        "kind": "KafkaCluster",
        "metadata": {"name": "c", "namespace": "kafka", "uid": "u-c"},
        "spec": {"bootstrapServers": "k:9092", "execution": BAD_WINDOW},
    }
    status = Reconciler(cast(KubeGateway, FakeKube(cluster=live))).reconcile(live)
    assert status["phase"] == "Invalid"
    assert [t.throttle for t in ticks] == ([1234] if cancel_requested else [])
