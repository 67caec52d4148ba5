"""The operator's execution store: one cluster's record in ConfigMaps owned by its KafkaCluster.

The same store, with ``document="planning"``, keeps the cluster's spark-k8s planning run
(``kafka-placement-<cluster>-planning``, reconcile/planner.py ``SparkRun``): a small document, no blobs;
with ``document="lane"``, the execution record of the new-partition lane (reconcile/new_partitions.py,
``kafka-placement-<cluster>-lane``), whose blobs are named ``lane-<name>`` and labelled
``kafkaplacement.io/document: lane``, so neither record's pruning ever touches the other's blobs; with
``document="traffic"``, the traffic sampler's state (reconcile/traffic_sampler.py), its blobs named
``traffic-<name>`` and labelled ``kafkaplacement.io/document: traffic`` in the same way.
All Kubernetes calls go through ``kube.gateway.KubeGateway``.

``ConfigMapStore`` implements the bytes-level ``Store`` contract of ``execution/store.py``:

- the progress document is ``binaryData["record.json.gz"]`` of ``kafka-placement-<cluster>-execution``;
  ``save`` is a compare-and-swap on the ``resourceVersion`` that ``load`` read (a create if there was
  nothing): a 409 means another writer got there first, ``RecordConflict``, nothing written;
- a blob is gzipped and split over ``kafka-placement-<cluster>-blob-<name>-<i>`` (``binaryData["chunk"]``),
  each annotated with the chunk count and the sha256 of the blob and of the chunk. Chunk 0 is created
  last and deleted first, so it exists only when the blob is complete: a put or prune cut short leaves a
  blob that reads as absent. A chunk missing behind chunk 0, or bytes not matching their sha256, are
  damage from outside: ``get_blob`` raises ``BadInputError`` naming the ConfigMap (returning None would
  let ``put_blob``, which trusts chunk 0, skip the repair and hide the damage).

Fencing (reconcile/leader.py): ``save`` calls the ``fence`` it was given first (``NotLeader`` when this
process no longer holds the leader Lease) and names its ``writer`` in an annotation; a new leader calls
``claim_records`` before it drives, which bumps every progress document's ``resourceVersion``, so a
stale leader's save that passed its fence just before a pause still fails with ``RecordConflict``.

Every object is labelled (managed-by, cluster; chunks also blob and chunk index) and has a controller
ownerReference to the KafkaCluster, so it is garbage-collected with it. Limits leaned on:

==============================  =========  ===========================================================
limit                           value      how it is respected
==============================  =========  ===========================================================
ConfigMap data (apiserver)      1 MiB      <= 900 KiB of gzip per object (CHUNK): ~10% under the cap
etcd value (max-request-bytes)  1.5 MiB    900 KiB of data + well under 1 KiB of metadata
request body (apiserver)        3 MiB      900 KiB is 1.2 MB as base64 in JSON
object name (DNS subdomain)     253 chars  cluster names <= 163 chars, blob names <= 63
label value                     63 chars   a longer cluster name is labelled by its sha256
==============================  =========  ===========================================================
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from ..execution.store import BLOB_NAME, MAX_DOCUMENT_BYTES, RecordConflict, check_blob_name
from ..kube.gateway import KubeConflict, KubeGateway
from ..model.crd_parts import API_VERSION
from ..model.errors import BadInputError, PlacementError

CHUNK = 900 * 1024  # bytes of gzip per ConfigMap: below the 1 MiB limit with room for metadata
DOC_KEY = "record.json.gz"
MANAGED_BY = ("app.kubernetes.io/managed-by", "kafka-placement-operator")
CLUSTER = "kafkaplacement.io/cluster"
BLOB = "kafkaplacement.io/blob"
DOCUMENT = "kafkaplacement.io/document"  # on the lane's and traffic's blobs (the main record's have none)
INDEX = "kafkaplacement.io/chunk"
CHUNKS = "kafkaplacement.io/chunks"
SHA = "kafkaplacement.io/sha256"
CHUNK_SHA = "kafkaplacement.io/chunk-sha256"
WRITER = "kafkaplacement.io/writer"  # the operator process that last saved the progress document
LEADER = "kafkaplacement.io/leader"  # the leader that last claimed it (claim_records)
MAX_CLUSTER = 253 - len("kafka-placement--blob-") - 63 - len("-9999")  # = 163
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def configmap_name(cluster: str, document: str = "execution") -> str:
    return f"kafka-placement-{cluster}-{document}"


def cluster_label(cluster: str) -> str:
    """The value of the ``kafkaplacement.io/cluster`` label of the cluster's objects (a name longer than
    a label value may be is labelled by its sha256)."""
    return cluster if len(cluster) <= 63 else hashlib.sha256(cluster.encode()).hexdigest()[:63]


def _gunzip(gz: bytes, limit: int = 1 << 40) -> bytes:
    d = zlib.decompressobj(wbits=31)  # one gzip member, as gzip.compress writes it
    out = d.decompress(gz, limit + 1)
    if not d.eof or len(out) > limit:
        raise EOFError(f"over {limit} bytes uncompressed" if len(out) > limit else "truncated gzip stream")
    return out


class ConfigMapStore:
    """One cluster's execution record in ConfigMaps of ``namespace`` (see the module docstring)."""

    def __init__(
        self,
        kube: KubeGateway,
        namespace: str,
        cluster: str,
        owner: Mapping[str, Any],
        *,
        fence: Callable[[], None] = lambda: None,
        writer: str | None = None,
        document: Literal["execution", "planning", "lane", "traffic"] = "execution",
    ) -> None:
        if len(cluster) > MAX_CLUSTER or not DNS_SUBDOMAIN.match(cluster):
            raise PlacementError(
                f"KafkaCluster name {cluster[:80]!r} cannot name the operator's ConfigMaps: it must be a DNS "
                f"subdomain of at most {MAX_CLUSTER} characters"
            )
        self.kube, self.namespace, self.cluster = kube, namespace, cluster
        self.name = configmap_name(cluster, document)
        self.label = cluster_label(cluster)
        meta, version = owner.get("metadata") or {}, owner.get("apiVersion", API_VERSION)
        ref = {"apiVersion": version, "kind": owner.get("kind", "KafkaCluster"), "controller": True}
        ref |= {"name": meta.get("name", cluster), "uid": meta.get("uid")}
        self.owner_refs = [ref] if ref["uid"] else None
        self._rv: str | None = None  # resourceVersion of the progress document last read or written
        self.fence, self.writer = fence, writer
        self._tag = document if document in ("lane", "traffic") else None  # its blobs' document label
        # the blobs this store owns, as a label selector (the lane's and traffic's apart from the main's)
        self._blobs = f"{CLUSTER}={self.label},{BLOB}," + (
            f"{DOCUMENT}={self._tag}" if self._tag else f"!{DOCUMENT}"
        )

    @property
    def where(self) -> str:
        return self._where(self.name)

    def _where(self, name: str) -> str:
        return f"ConfigMap {self.namespace}/{name}"

    def _body(self, name: str, gz: bytes, blob: Mapping[str, str] = {}, **meta: Any) -> dict[str, Any]:
        labels = {MANAGED_BY[0]: MANAGED_BY[1], CLUSTER: self.label, **blob}
        metadata = {"name": name, "namespace": self.namespace, "labels": labels, **meta}
        if self.owner_refs:
            metadata["ownerReferences"] = self.owner_refs
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {k: v for k, v in metadata.items() if v is not None},
            "binaryData": {"chunk" if blob else DOC_KEY: base64.b64encode(gz).decode("ascii")},
        }

    def _read(self, name: str) -> dict[str, Any] | None:
        """ConfigMap ``name``; None if it does not exist"""
        return self.kube.read_config_map(self.namespace, name)

    # ---- the progress document ---------------------------------------------------------------------

    def load(self) -> bytes | None:
        cm = self._read(self.name)
        self._rv = cm["metadata"]["resourceVersion"] if cm is not None else None
        data = (cm.get("binaryData") or {}) if cm is not None else {}
        # before the blob store, the record was chunked over record.0000, record.0001, ...
        keys = [DOC_KEY] if DOC_KEY in data else sorted(k for k in data if k.startswith("record."))
        if not keys:
            return None
        try:
            return _gunzip(b"".join(base64.b64decode(data[k]) for k in keys), MAX_DOCUMENT_BYTES)
        except (ValueError, EOFError, zlib.error) as e:
            raise BadInputError(f"cannot read the execution record: {e}", self.where) from None

    def save(self, doc: bytes) -> None:
        gz = gzip.compress(doc, compresslevel=6, mtime=0)
        if len(gz) > CHUNK:
            raise PlacementError(
                f"{self.where}: the execution record is {len(gz)} bytes gzipped, over the {CHUNK}-byte "
                "limit of one ConfigMap; nothing was written"
            )
        ann = {WRITER: self.writer[:253]} if self.writer else None
        body = self._body(self.name, gz, resourceVersion=self._rv, annotations=ann)
        self.fence()  # last thing before the write: a process that lost the leader Lease stops here
        out: dict[str, Any] | None
        try:
            if self._rv is None:
                out = self.kube.create_config_map(self.namespace, body)
            else:
                out = self.kube.replace_config_map(self.namespace, body)  # None: deleted meanwhile
        except KubeConflict:
            out = None
        if out is None:
            raise RecordConflict(
                f"{self.where} was changed by another writer since it was read; nothing was written"
            )
        self._rv = out["metadata"]["resourceVersion"]

    def delete(self) -> None:
        """Remove the progress document and every blob of this cluster."""
        self.fence()
        self.kube.delete_config_map(self.namespace, self.name)
        self._delete_blobs(self._blobs)

    # ---- blobs -------------------------------------------------------------------------------------

    def _blob_cm(self, name: str, i: int) -> str:
        cm = f"kafka-placement-{self.cluster}-blob-{f'{self._tag}-' if self._tag else ''}{name}-{i}"
        if len(cm) > 253 or not DNS_SUBDOMAIN.match(cm):
            raise ValueError(f"blob name {name!r} does not make a valid ConfigMap name ({cm[:80]}...)")
        return cm

    def put_blob(self, name: str, data: bytes) -> None:
        self.fence()
        sha = hashlib.sha256(data).hexdigest()
        head = self._read(self._blob_cm(check_blob_name(name), 0))
        if head is not None:
            if (head["metadata"].get("annotations") or {}).get(SHA) == sha:
                return
            raise PlacementError(
                f"{self._where(head['metadata']['name'])}: blob {name} exists with other content"
            )
        gz = gzip.compress(data, compresslevel=6, mtime=0)
        parts = [gz[i : i + CHUNK] for i in range(0, len(gz), CHUNK)]
        for i in [*range(1, len(parts)), 0]:  # chunk 0 last: it marks the blob complete
            ann = {CHUNKS: str(len(parts)), SHA: sha, CHUNK_SHA: hashlib.sha256(parts[i]).hexdigest()}
            cm = self._blob_cm(name, i)
            labels = {BLOB: name, INDEX: str(i), **({DOCUMENT: self._tag} if self._tag else {})}
            body = self._body(cm, parts[i], labels, annotations=ann)
            try:
                self.kube.create_config_map(self.namespace, body)
            except KubeConflict:
                old = self._read(cm)
                if old is not None and old["metadata"].get("annotations") == ann:
                    continue  # the same chunk, from an earlier or concurrent put of this blob
                if i == 0:
                    raise PlacementError(
                        f"{self._where(cm)}: blob {name} exists with other content"
                    ) from None
                self.kube.replace_config_map(self.namespace, body)  # debris of a cut put

    def has_blob(self, name: str) -> bool:
        """Chunk 0 is written last (``put_blob``): present, the blob was stored whole. One read."""
        return self._read(self._blob_cm(check_blob_name(name), 0)) is not None

    def get_blob(self, name: str) -> bytes | None:
        head = self._read(self._blob_cm(check_blob_name(name), 0))
        if head is None:
            return None
        ann = head["metadata"].get("annotations") or {}
        where = self._where(head["metadata"]["name"])
        try:
            n = int(ann[CHUNKS])
        except (KeyError, ValueError):
            raise BadInputError(f"blob {name}: no valid {CHUNKS} annotation", where) from None
        parts = [self._chunk(head, name, ann)]
        for i in range(1, n):
            cm = self._read(self._blob_cm(name, i))
            if cm is None:
                where_i = self._where(self._blob_cm(name, i))
                raise BadInputError(f"blob {name} is truncated: chunk {i} of {n} is missing", where_i)
            parts.append(self._chunk(cm, name, ann))
        try:
            data = _gunzip(b"".join(parts))
        except (EOFError, zlib.error) as e:
            raise BadInputError(f"blob {name} is corrupt: {e}", where) from None
        if hashlib.sha256(data).hexdigest() != ann.get(SHA):
            raise BadInputError(f"blob {name} does not match its sha256", where)
        return data

    def _chunk(self, cm: Mapping[str, Any], name: str, head: Mapping[str, str]) -> bytes:
        where = self._where(cm["metadata"]["name"])
        ann, labels = cm["metadata"].get("annotations") or {}, cm["metadata"].get("labels") or {}
        if labels.get(CLUSTER) != self.label or labels.get(BLOB) != name:
            raise BadInputError(f"not a chunk of blob {name} of cluster {self.cluster}", where)
        if ann.get(SHA) != head.get(SHA) or ann.get(CHUNKS) != head.get(CHUNKS):
            raise BadInputError(f"a chunk of another version of blob {name}", where)
        try:
            raw = base64.b64decode((cm.get("binaryData") or {})["chunk"], validate=True)
        except (KeyError, ValueError):
            raise BadInputError(f"blob {name}: no valid 'chunk' data", where) from None
        if hashlib.sha256(raw).hexdigest() != ann.get(CHUNK_SHA):
            raise BadInputError(f"blob {name}: the chunk does not match its sha256", where)
        return raw

    def prune_blobs(self, keep: set[str]) -> None:
        self.fence()
        kept = sorted(k for k in keep if BLOB_NAME.match(k))  # no other name can exist
        selector = self._blobs
        self._delete_blobs(f"{selector},{BLOB} notin ({','.join(kept)})" if kept else selector)

    def _delete_blobs(self, selector: str) -> None:
        for sel in (f"{selector},{INDEX}=0", selector):  # chunk 0 first: a cut prune leaves "absent"
            for _, name in list(self.kube.config_map_names(self.namespace, sel)):
                self.kube.delete_config_map(self.namespace, name)


def claim_records(kube: KubeGateway, namespaces: Iterable[str] | None, leader: str) -> list[str]:
    """Bump the ``resourceVersion`` of every execution progress document in ``namespaces`` (None = all):
    a new leader does this before it drives, so any save prepared by an earlier leader fails with a
    conflict. Returns the ConfigMaps claimed (``namespace/name``)."""
    selector = f"{MANAGED_BY[0]}={MANAGED_BY[1]},{CLUSTER},!{BLOB}"
    found = [
        found
        for ns in ([None] if namespaces is None else list(namespaces))
        for found in kube.config_map_names(ns, selector, page=100)
    ]
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    claimed = []
    for ns, name in found:
        patch = {"metadata": {"annotations": {LEADER: f"{leader[:200]} {stamp}"}}}
        if kube.patch_config_map(ns, name, patch):  # False: deleted meanwhile, nothing to fence
            claimed.append(f"{ns}/{name}")
    return claimed
