"""ConfigMapStore (reconcile/record_store.py) against the real kube-apiserver of the rig: a 1M-partition
plan as a blob spread over several ConfigMaps, the progress document's compare-and-swap between two writers,
damaged and half-written blobs, prune and delete. Nothing is mocked.

Needs the `k8s` section of .rig/rig.json (`make rig-up`). One namespace for the module, emptied and
deleted afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kafka_placement.execution.store import RecordConflict
from kafka_placement.kube.gateway import KubeGateway
from kafka_placement.model.errors import BadInputError, PlacementError
from kafka_placement.reconcile.record_store import CHUNK, ConfigMapStore, configmap_name

pytestmark = pytest.mark.k8s

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def core(k8s_api: Any) -> client.CoreV1Api:
    return client.CoreV1Api(k8s_api)


@pytest.fixture(scope="module")
def ns(core: client.CoreV1Api) -> Iterator[str]:
    name = f"t-record-store-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_collection_namespaced_config_map(name)
    core.delete_namespace(name)


@pytest.fixture(scope="module")
def owner(k8s_api: Any, core: client.CoreV1Api, ns: str) -> dict[str, Any]:
    """A real KafkaCluster when the chart's CRDs are installed (test_chart.py installs them), else a
    ConfigMap: any object with a uid can own the store's ConfigMaps."""
    try:
        client.ApiextensionsV1Api(k8s_api).read_custom_resource_definition("kafkaclusters.kafkaplacement.io")
    except ApiException as e:
        if e.status != 404:
            raise
        cm = core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
        )
        assert cm.metadata is not None
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owner", "uid": cm.metadata.uid},
        }
    body = {
        "apiVersion": "kafkaplacement.io/v1alpha1",
        "kind": "KafkaCluster",
        "metadata": {"name": "prod"},
        "spec": {"bootstrapServers": "kafka-0.kafka:9092"},
    }
    obj: Any = client.CustomObjectsApi(k8s_api).create_namespaced_custom_object(
        "kafkaplacement.io", "v1alpha1", ns, "kafkaclusters", body
    )
    return dict(obj)


def chunks(core: client.CoreV1Api, ns: str, cluster: str, blob: str | None = None) -> list[Any]:
    """The blob ConfigMaps of `cluster` (of one blob), as the apiserver returns them, by chunk index."""
    sel = f"kafkaplacement.io/cluster={cluster},kafkaplacement.io/blob" + (f"={blob}" if blob else "")
    items = core.list_namespaced_config_map(ns, label_selector=sel).items
    return sorted(items, key=lambda cm: (cm.metadata.labels["kafkaplacement.io/blob"], cm.metadata.name))


def chunk_bytes(cm: Any) -> bytes:
    return base64.b64decode(cm.binary_data["chunk"])


def plan_of_1m_partitions() -> bytes:
    """360k moves of a 1M-partition cluster (the ~36% a full rebalance moves) as plan JSON, values varied
    enough that gzip keeps several MiB of them (written as text: 3x faster than json.dumps of dicts)."""
    r = random.Random(20240611).getrandbits
    dirs = ['"any"', '"any"', '"any"', '"/var/lib/kafka/data-1"']
    moves = []
    for _ in range(360_000):
        b = r(8) + 1
        x, y = (b + 1 + r(5)) % 300 + 1, (b + 40 + r(6)) % 300 + 1
        moves.append(
            f'{{"topic": "t-{r(14)}", "partition": {r(7)}, "replicas": [{b}, {x}, {y}], '
            f'"log_dirs": [{dirs[r(2)]}, {dirs[r(2)]}, {dirs[r(2)]}]}}'
        )
    return ('{"version": 1, "partitions": [' + ", ".join(moves) + "]}").encode()


@dataclass(frozen=True)
class StoredPlan:
    store: ConfigMapStore
    name: str
    data: bytes
    put_s: float


@pytest.fixture(scope="module")
def stored_plan(core: client.CoreV1Api, ns: str, owner: dict[str, Any]) -> StoredPlan:
    data = plan_of_1m_partitions()
    store = ConfigMapStore(KubeGateway(core.api_client), ns, "big", owner)
    name = f"plan-{hashlib.sha256(data).hexdigest()[:16]}"
    start = time.monotonic()
    store.put_blob(name, data)
    return StoredPlan(store, name, data, time.monotonic() - start)


def test_a_1m_partition_plan_spans_configmaps_and_reads_back(
    stored_plan: StoredPlan, core: client.CoreV1Api, ns: str, owner: dict[str, Any]
) -> None:
    store, name, data = stored_plan.store, stored_plan.name, stored_plan.data
    cms = chunks(core, ns, "big", name)
    sizes = [len(chunk_bytes(cm)) for cm in cms]
    print(f"\nplan {len(data) / MiB:.1f} MiB -> {len(cms)} ConfigMaps of {sizes} bytes gzip", end=", ")
    print(f"put {stored_plan.put_s:.1f}s", end=", ")
    assert sum(sizes) >= 3 * MiB and len(cms) >= 4
    assert [cm.metadata.name for cm in cms] == [
        f"kafka-placement-big-blob-{name}-{i}" for i in range(len(cms))
    ]
    for cm in cms:
        assert len(chunk_bytes(cm)) <= CHUNK < MiB  # the data, as stored: well under the 1 MiB cap
        assert len(json.dumps(cm.metadata.to_dict(), default=str)) < 2048  # and little beside it
        ann = cm.metadata.annotations
        assert ann["kafkaplacement.io/chunks"] == str(len(cms))
        assert ann["kafkaplacement.io/sha256"] == hashlib.sha256(data).hexdigest()
        assert cm.metadata.labels["app.kubernetes.io/managed-by"] == "kafka-placement-operator"
        (ref,) = cm.metadata.owner_references
        assert (ref.uid, ref.kind, ref.controller) == (owner["metadata"]["uid"], owner["kind"], True)

    start = time.monotonic()
    assert store.get_blob(name) == data
    assert (
        ConfigMapStore(KubeGateway(core.api_client), ns, "big", owner).get_blob(name) == data
    )  # a restarted operator
    print(f"get {time.monotonic() - start:.1f}s (twice)")

    before = {cm.metadata.name: cm.metadata.resource_version for cm in cms}
    store.put_blob(name, data)  # idempotent: nothing written
    assert {cm.metadata.name: cm.metadata.resource_version for cm in chunks(core, ns, "big", name)} == before
    assert store.get_blob("plan-absent") is None


def test_progress_saves_stay_small_beside_a_big_blob(
    stored_plan: StoredPlan, core: client.CoreV1Api, ns: str, owner: dict[str, Any]
) -> None:
    store = ConfigMapStore(
        KubeGateway(core.api_client), ns, "big", owner
    )  # the cluster whose plan blob is the 1M-partition one
    assert store.load() is None
    assert store.where == f"ConfigMap {ns}/kafka-placement-big-execution"
    sizes = []
    for step in range(21):
        doc = store.load()
        record: dict[str, Any] = (
            json.loads(doc) if doc else {"plan": stored_plan.name, "phase": "Running", "batches": []}
        )
        assert step == 0 or record["step"] == step - 1
        record["step"] = step
        record["batches"].append({"moves": [[f"t-{step}", p] for p in range(50)], "done": step % 2 == 0})
        record["batches"] = record["batches"][-5:]  # the record keeps a window, the plan is in the blob
        store.save(json.dumps(record).encode())
        cm = core.read_namespaced_config_map(configmap_name("big"), ns)
        assert cm.binary_data is not None and set(cm.binary_data) == {"record.json.gz"}
        sizes.append(len(base64.b64decode(cm.binary_data["record.json.gz"])))
    assert json.loads(store.load() or b"")["step"] == 20
    print(f"\nprogress document: {min(sizes)}..{max(sizes)} bytes gzip per save")
    assert max(sizes) < 4096  # bytes per save: the record, not the 4+ MiB plan beside it


def test_two_writers_compare_and_swap(core: client.CoreV1Api, ns: str, owner: dict[str, Any]) -> None:
    a, b = (
        ConfigMapStore(KubeGateway(core.api_client), ns, "cas", owner),
        ConfigMapStore(KubeGateway(core.api_client), ns, "cas", owner),
    )

    def stored() -> bytes | None:
        return ConfigMapStore(KubeGateway(core.api_client), ns, "cas", owner).load()

    # concurrent creates: both saw nothing, exactly one create wins
    assert a.load() is None and b.load() is None
    barrier, results = threading.Barrier(2), {}

    def create(store: ConfigMapStore, doc: bytes) -> None:
        barrier.wait()
        try:
            store.save(doc)
            results[doc] = "saved"
        except RecordConflict as e:
            results[doc] = str(e)

    threads = [threading.Thread(target=create, args=(s, d)) for s, d in ((a, b"A0"), (b, b"B0"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results.values())[-1] == "saved", results
    (winner,) = [d for d, r in results.items() if r == "saved"]
    (loser,) = [r for r in results.values() if r != "saved"]
    assert f"ConfigMap {ns}/kafka-placement-cas-execution" in loser
    assert stored() == winner

    # both load the same revision; A saves first; B's save must not overwrite it
    assert a.load() == winner and b.load() == winner
    a.save(b"A1")
    with pytest.raises(RecordConflict, match="kafka-placement-cas-execution"):
        b.save(b"B1")
    assert stored() == b"A1"  # no lost update
    assert b.load() == b"A1"
    b.save(b"B2")  # after a reload B may write
    assert stored() == b"B2"
    with pytest.raises(RecordConflict):
        a.save(b"A3")  # now A is the stale one
    assert stored() == b"B2"

    # a record deleted under a writer is a conflict too; after a reload it is created again
    core.delete_namespaced_config_map(configmap_name("cas"), ns)
    with pytest.raises(RecordConflict):
        b.save(b"B3")
    assert b.load() is None
    b.save(b"B4")
    assert stored() == b"B4"


def test_damaged_and_half_written_blobs(core: client.CoreV1Api, ns: str, owner: dict[str, Any]) -> None:
    rng = random.Random(5)
    one, two = rng.randbytes(2 * MiB), rng.randbytes(2 * MiB)  # incompressible: 3 chunks each
    store = ConfigMapStore(KubeGateway(core.api_client), ns, "dmg", owner)

    # a put cut short (chunk 0 is written last) reads as absent; the next put completes it
    store.put_blob("cut", one)
    core.delete_namespaced_config_map("kafka-placement-dmg-blob-cut-0", ns)
    assert store.get_blob("cut") is None
    rvs = {cm.metadata.name: cm.metadata.resource_version for cm in chunks(core, ns, "dmg", "cut")}
    assert len(rvs) == 2
    store.put_blob("cut", one)
    after = {cm.metadata.name: cm.metadata.resource_version for cm in chunks(core, ns, "dmg", "cut")}
    assert {k: v for k, v in after.items() if k in rvs} == rvs  # the chunks already there were kept
    assert store.get_blob("cut") == one
    # debris of a cut put of other content under the same name is overwritten
    core.delete_namespaced_config_map("kafka-placement-dmg-blob-cut-0", ns)
    store.put_blob("cut", two)
    assert store.get_blob("cut") == two
    with pytest.raises(PlacementError, match="exists with other content"):
        store.put_blob("cut", one)  # a complete blob is immutable

    # truncated: chunk 0 says 3 chunks, one is gone -> BadInputError naming the missing ConfigMap
    store.put_blob("trunc", one)
    core.delete_namespaced_config_map("kafka-placement-dmg-blob-trunc-1", ns)
    with pytest.raises(BadInputError, match=f"ConfigMap {ns}/kafka-placement-dmg-blob-trunc-1: .*truncated"):
        store.get_blob("trunc")

    # tampered: one byte of chunk 2 changed -> BadInputError naming that ConfigMap
    store.put_blob("tamper", one)
    cm = core.read_namespaced_config_map("kafka-placement-dmg-blob-tamper-2", ns)
    raw = bytearray(chunk_bytes(cm))
    raw[len(raw) // 2] ^= 0xFF
    assert cm.binary_data is not None
    cm.binary_data["chunk"] = base64.b64encode(bytes(raw)).decode()
    core.replace_namespaced_config_map("kafka-placement-dmg-blob-tamper-2", ns, cm)
    with pytest.raises(BadInputError, match=f"ConfigMap {ns}/kafka-placement-dmg-blob-tamper-2: .*sha256"):
        store.get_blob("tamper")

    # a progress document too big for one ConfigMap is refused before anything is written
    with pytest.raises(PlacementError, match="over the 921600-byte limit"):
        store.save(rng.randbytes(MiB))
    assert store.load() is None


def test_prune_delete_and_owner(core: client.CoreV1Api, ns: str, owner: dict[str, Any]) -> None:
    store, other = (
        ConfigMapStore(KubeGateway(core.api_client), ns, "prn", owner),
        ConfigMapStore(KubeGateway(core.api_client), ns, "prn-other", owner),
    )
    big = random.Random(9).randbytes(MiB)  # 2 chunks
    for name, data in (("plan-a", b"a" * 100), ("plan-b", big), ("baseline-c", b"c")):
        store.put_blob(name, data)
    other.put_blob("plan-b", b"other cluster")
    store.save(b'{"plan": "plan-a"}')

    store.prune_blobs({"plan-a", "plan-never-stored"})
    assert {cm.metadata.labels["kafkaplacement.io/blob"] for cm in chunks(core, ns, "prn")} == {"plan-a"}
    assert store.get_blob("plan-a") == b"a" * 100 and store.get_blob("plan-b") is None
    assert other.get_blob("plan-b") == b"other cluster"  # another cluster's blob of the same name is kept

    names = [configmap_name("prn"), *(cm.metadata.name for cm in chunks(core, ns, "prn"))]
    for n in names:
        meta = core.read_namespaced_config_map(n, ns).metadata
        assert meta is not None and meta.labels is not None and meta.owner_references is not None
        assert meta.labels["kafkaplacement.io/cluster"] == "prn"
        assert [(r.uid, r.controller) for r in meta.owner_references] == [(owner["metadata"]["uid"], True)]

    store.delete()
    sel = "kafkaplacement.io/cluster=prn"
    assert core.list_namespaced_config_map(ns, label_selector=sel).items == []
    assert store.load() is None and store.get_blob("plan-a") is None
    assert other.get_blob("plan-b") == b"other cluster"
    store.delete()  # nothing left: still fine

    with pytest.raises(PlacementError, match="DNS subdomain of at most 163"):
        ConfigMapStore(KubeGateway(core.api_client), ns, "x" * 164, owner)
    with pytest.raises(ValueError, match="invalid blob name"):
        store.put_blob("Not/A/Name", b"")


def test_an_execution_record_of_a_1m_partition_plan_is_saved_loaded_and_updated(
    core: client.CoreV1Api, ns: str, owner: dict[str, Any]
) -> None:
    """The whole record, not only the store: Execution.create stores the plan as a blob, the baseline as
    another, and the progress document stays small; a second writer's update is refused, not lost."""
    from kafka_placement.execution.record import Execution, Original
    from kafka_placement.execution.record_doc import Limits, Submission
    from kafka_placement.model.plan import PartitionTarget, Plan

    r = random.Random(7).getrandbits
    plan = Plan.of(
        [
            PartitionTarget(f"t-{i // 1000}", i % 1000, (b, b % 300 + 1, (b + 40) % 300 + 1), ("any",) * 3)
            for i in range(360_000)
            for b in (r(8) + 1,)
        ]
    )
    store = ConfigMapStore(KubeGateway(core.api_client), ns, "exec-1m", owner)
    limits = Limits(max_moves_per_broker=250, max_moves=1250, max_bytes_per_broker=None, throttle=None)
    ex = Execution.create(store, plan, limits=limits, cluster_id="c1")
    ex.save()
    # each move adds its third replica (the baseline had broker 1000+ there): 1000 bytes to copy per move
    baseline = [
        Original((*t.replicas[:2], 1000 + i % 7), (None,) * 3, 1000) for i, t in enumerate(plan.partitions)
    ]
    ex.set_baseline(baseline, {})
    for i in range(1000):
        ex.submit(i, Submission.CONFIRMED, 1.0)
        ex.count_submission(i)
    ex.save()
    doc_cm = core.read_namespaced_config_map(configmap_name("exec-1m"), ns)
    doc_bytes = len(base64.b64decode(doc_cm.binary_data["record.json.gz"]))
    assert doc_bytes < 64 * 1024, doc_bytes  # 1,000 in flight of ~360k: the plan is not in the document

    first = Execution.load(ConfigMapStore(KubeGateway(core.api_client), ns, "exec-1m", owner))
    second = Execution.load(ConfigMapStore(KubeGateway(core.api_client), ns, "exec-1m", owner))
    assert first is not None and second is not None
    assert first.plan.plan.plan_id == plan.plan_id and len(first.active()) == 1000
    for i in range(500):
        first.finish(i)
    first.save()
    second.doc.cancel_requested = True
    with pytest.raises(RecordConflict):
        second.save()
    again = Execution.load(ConfigMapStore(KubeGateway(core.api_client), ns, "exec-1m", owner))
    assert again is not None and again.doc.done_count == 500 and not again.doc.cancel_requested
    assert again.doc.counters.submissions == 1000 and again.doc.done_bytes == 500 * 1000
