"""The plan where its approver can read it, before anything moves: ConfigMap
``kafka-placement-<cluster>-plan`` (docs/operations.md, "Reviewing a plan").

When the cluster's plan is made (and again only when its id changes), the reconcile writes one ConfigMap,
owned by the KafkaCluster (so it goes with it), holding what ``kafka-placement report`` shows, from the
same pure code (``planning/report.py``): ``summary.json`` (the plan's summary, less the batches' order of
every partition), ``brokers.json`` (per broker: bytes, replicas and leaders before/after, bytes copied in
and out, bytes moved between its dirs), ``dirs.json`` (the dirs of the brokers that change),
``topics.json`` (moves by topic), ``moves.json`` (the largest moves), ``batches.json`` (bytes per batch,
ordered with the executor's ``maxMovesPerBroker``), ``estimate.json`` (how long the execution takes by
the executor's copy model, execution/copy_model.py, and when it would end if started when the plan was
made; ``status.plan.estimate`` is read from it), ``report.html`` (the self-contained page) and
``planBlob``: the name of the blob holding the whole plan (``plan-<id>``, gzip in chunks of at most 900
KiB, the execution record's own blob: the execution reads the plan the approver saw). Every list is
capped (``report.MAX_*``), so the ConfigMap stays far below the 1 MiB object limit at any cluster size;
should the page still be too large, it is stored gzipped (``binaryData["report.html.gz"]``) and ``data``
says so.

The intents' ``status.plan.review`` names the ConfigMap and the brokers whose load changes most, so
``kubectl describe`` shows them beside the plan id to approve.

The ConfigMap also carries ``keptPlan`` (``KeptPlanRecord``): what the rule that keeps a plan awaiting
approval (planning/plan_keeping.py) needs besides the plan itself, so that an operator that becomes the
leader (after a restart or a failover) keeps the plan shown instead of planning again from rates that
drifted a little, which would ask for approval again. It is written with the plan, rewritten alone when
the same plan is made from other loads, and left out when larger than ``MAX_KEPT_BYTES`` (an Advise
policy's advice may be large): a new leader then plans afresh. The review's size check counts it.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..execution.executor import Limits
from ..execution.record import plan_blob_name
from ..kube.gateway import KubeConflict, KubeGateway
from ..model.crd_parts import API_VERSION
from ..model.intent_status import PlanEstimate, Review
from ..model.plan import Plan
from ..model.units import binary_bytes
from ..planning.loads import rate_text
from ..planning.plan_keeping import KeptPlan, TrafficLoads
from ..planning.plan_summary import PlanSummary, StatusSummary
from ..planning.report import BrokerRow, Report
from ..planning.report_html import render
from ..planning.summary_parts import TrafficRow
from .record_store import CLUSTER, MANAGED_BY, cluster_label, configmap_name

PLAN_ID = "kafkaplacement.io/plan-id"
MAX_DATA_BYTES = 900 * 1024  # the ConfigMap's text: below the 1 MiB object limit with room for metadata
KEPT_PLAN = "keptPlan"  # the data key of the KeptPlanRecord
# a larger record is not written (the plan is then not kept across leaders): 2,000 brokers' loads take
# about 130 KB; with the rest of the review (about 330 KB at 1,000 brokers) far below MAX_DATA_BYTES
MAX_KEPT_BYTES = 256 * 1024
CHANGING = 5  # brokers named in status.plan.review.brokersChanging
MAX_BATCHES = 500  # entries of batches.json (more batches are summed in groups)


def name_of(cluster: str) -> str:
    return configmap_name(cluster, "plan")


def brokers_changing(report: Report, n: int = CHANGING) -> str:
    """The ``n`` brokers whose load the plan changes most: bytes gained or lost, and bytes moved between
    their own dirs, e.g. ``broker 3 +2.0 MiB (1.0 MiB -> 3.0 MiB), broker 1 5.0 MiB between its dirs`` (binary
    units, as every text for people: ``model.units``)."""

    def change(r: BrokerRow) -> int:
        return abs(r.bytes[1] - r.bytes[0]) + r.dir_bytes

    def text(r: BrokerRow) -> str:
        delta = r.bytes[1] - r.bytes[0]
        parts = []
        if delta:
            sign = "+" if delta > 0 else "-"
            parts.append(
                f"{sign}{binary_bytes(abs(delta))} ({binary_bytes(r.bytes[0])} -> {binary_bytes(r.bytes[1])})"
            )
        if r.dir_bytes:
            parts.append(f"{binary_bytes(r.dir_bytes)} between its dirs")
        return f"broker {r.broker} " + ", ".join(parts)

    shown = sorted((r for r in report.brokers if change(r)), key=lambda r: (-change(r), r.broker))[:n]
    return "; ".join(text(r) for r in shown)


def traffic_changing(report: Report, n: int = CHANGING) -> str:
    """With measured rates (the summary's ``traffic``), the ``n`` brokers whose network in and out the
    plan changes most, e.g. ``broker 1 in 1.2 MB/s -> 0.6 MB/s, out 2.4 MB/s -> 1.2 MB/s``; empty
    without rates or when the plan changes no broker's traffic."""
    traffic = report.summary.traffic
    if traffic is None or not traffic.partitions_with_rate:
        return ""

    def change(t: TrafficRow) -> float:
        return float(sum(abs(after - before) for before, after in (t.network_in, t.network_out)))

    rows = [t for t in traffic.brokers if change(t) >= 1]
    shown = sorted(rows, key=lambda t: (-change(t), t.id))[:n]
    return "; ".join(
        f"broker {t.id} in {rate_text(t.network_in[0])} -> {rate_text(t.network_in[1])}, "
        f"out {rate_text(t.network_out[0])} -> {rate_text(t.network_out[1])}"
        for t in shown
    )


def review_status(data: Mapping[str, str], name: str) -> Review:
    """``status.plan.review`` from the review ConfigMap's ``data``: its name, the brokers whose load
    changes most and, with rates, those whose traffic does."""
    return Review(
        config_map=name,
        brokers_changing=data.get("brokersChanging", ""),
        traffic_changing=data.get("trafficChanging") or None,
    )


def _int_or_none(value: object) -> int | None:
    """A number of ``estimate.json`` as an integer (None: absent, as a release before it wrote none)."""
    return None if value is None or isinstance(value, bool) else round(float(value))  # type: ignore[arg-type]


def estimate_status(data: Mapping[str, str]) -> PlanEstimate | None:
    """``status.plan.estimate`` from the review ConfigMap's ``estimate.json`` (None: none, or one this
    release cannot read)."""
    try:
        doc = json.loads(data.get("estimate.json") or "null")
        if not isinstance(doc, dict) or "exact" not in doc:
            return None
        return PlanEstimate(
            seconds=int(doc["seconds"]),
            finish_at=doc.get("finishAt"),
            bytes_per_second=int(doc["bytesPerSecond"]),
            throttled=bool(doc["throttled"]),
            exact=bool(doc["exact"]),
            bound_seconds=_int_or_none(doc.get("boundSeconds")),
            microseconds_per_move=_int_or_none(doc.get("microsecondsPerMove")),
            per_move_measured=measured if isinstance(measured := doc.get("perMoveMeasured"), bool) else None,
        )
    except (ValueError, TypeError, KeyError):
        return None


def _bounded(summary: PlanSummary) -> dict[str, Any]:
    """The summary without what grows with the plan: the batches' order of every partition (their count
    stays; ``batches.json`` has their bytes)."""
    return replace(summary, batches=replace(summary.batches, order=None)).to_json()


def _batches(sizes: tuple[int, ...], per_broker: int) -> dict[str, Any]:
    """Bytes per batch; beyond ``MAX_BATCHES`` batches, summed in groups (``groupedBy``) so the list stays
    bounded however large the plan."""
    per = max(1, -(-len(sizes) // MAX_BATCHES))
    grouped = [sum(sizes[i : i + per]) for i in range(0, len(sizes), per)]
    return {
        "maxMovesPerBroker": per_broker,
        "batches": len(sizes),
        "groupedBy": per,
        "bytesPerBatch": grouped,
    }


class KeptPlanRecord(BaseModel):
    """What keeps plan ``plan_id`` across a leader change (data key ``keptPlan``, typed and versioned):
    the kept plan's inputs key, tolerance and loads (plan_keeping.KeptPlan) and the part of its summary
    the status reads (status.status_summary). The plan itself is the blob ``planBlob`` names."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    plan_id: str = Field(pattern=r"^[0-9a-f]{6,64}$")
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    tolerance: float = Field(ge=0)
    loads: dict[str, list[float]]  # plan_keeping.TrafficLoads.to_json: per broker in, out before and after
    summary: dict[str, Any]  # StatusSummary.to_json

    @staticmethod
    def of(kept: KeptPlan) -> KeptPlanRecord:
        return KeptPlanRecord(
            plan_id=kept.plan.plan_id,
            key=kept.key,
            tolerance=kept.tolerance,
            loads=kept.loads.to_json(),
            summary=StatusSummary.of(kept.summary).to_json(),
        )

    def text(self) -> str | None:
        """The record as the ConfigMap holds it; None when larger than ``MAX_KEPT_BYTES``."""
        out = self.model_dump_json()
        return out if len(out.encode()) <= MAX_KEPT_BYTES else None

    def kept(self, plan: Plan, review: Review) -> KeptPlan:
        """The kept plan, ``plan`` being the one the record names, its summary with ``review``."""
        if plan.plan_id != self.plan_id:
            raise ValueError(f"the record keeps plan {self.plan_id}, not {plan.plan_id}")
        summary = replace(StatusSummary.from_json(self.summary), review=review)
        return KeptPlan(plan, summary, self.key, TrafficLoads.from_json(self.loads), self.tolerance)


def kept_text(kept: KeptPlan | None) -> str | None:
    """``data["keptPlan"]`` for ``kept`` (None: no key, nothing kept or too large)."""
    return KeptPlanRecord.of(kept).text() if kept is not None else None


def read_kept(
    kube: KubeGateway, namespace: str, cluster: Mapping[str, Any]
) -> tuple[KeptPlanRecord, Review] | str | None:
    """The kept plan's record in the cluster's review ConfigMap, with the ``status.plan.review`` it shows;
    None when there is none to keep (no ConfigMap, no ``keptPlan``), else why it cannot be used (a
    ConfigMap another KafkaCluster owns, plan ids that disagree, a record that does not parse)."""
    meta = cluster["metadata"]
    name = name_of(meta["name"])
    cm = kube.read_config_map(namespace, name)
    data = (cm or {}).get("data") or {}
    if cm is None or KEPT_PLAN not in data:
        return None
    owners = {o.get("uid") for o in cm["metadata"].get("ownerReferences") or []}
    if meta.get("uid") not in owners:
        return f"ConfigMap {namespace}/{name} is not owned by this KafkaCluster"
    try:
        record = KeptPlanRecord.model_validate_json(data[KEPT_PLAN])
    except ValidationError as e:
        return f"ConfigMap {namespace}/{name}: {KEPT_PLAN} is not a kept plan record: {str(e)[:300]}"
    shown = {(cm["metadata"].get("annotations") or {}).get(PLAN_ID), data.get("planId")}
    if shown != {record.plan_id} or data.get("planBlob") != plan_blob_name(record.plan_id):
        shows = ", ".join(sorted(map(str, shown)))
        return f"ConfigMap {namespace}/{name}: {KEPT_PLAN} is for plan {record.plan_id}, it shows {shows}"
    return record, review_status(data, name)


def review_data(
    report: Report, limits: Limits, kept: str | None = None, estimate: Mapping[str, Any] | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The ConfigMap's ``data`` and ``binaryData`` for ``report`` (pure), with ``kept`` as ``keptPlan``
    and ``estimate`` (``estimate_json``; None: no ``estimate.json``)."""

    def dump(value: Any) -> str:
        return json.dumps(value, indent=1, sort_keys=True)

    data = {
        "planId": report.plan_id,
        "brokersChanging": brokers_changing(report),
        "trafficChanging": traffic_changing(report),
        "planBlob": plan_blob_name(report.plan_id),
        "summary.json": dump(_bounded(report.summary)),
        "brokers.json": dump(
            {
                "shown": report.brokers_count.shown,
                "total": report.brokers_count.total,
                "brokers": [
                    {
                        "broker": r.broker,
                        "rack": r.rack,
                        "bytes": list(r.bytes),
                        "replicas": list(r.replicas),
                        "leaders": list(r.leaders),
                        "bytesIn": r.bytes_in,
                        "bytesOut": r.bytes_out,
                        "dirBytes": r.dir_bytes,
                    }
                    for r in report.brokers
                ],
            }
        ),
        "dirs.json": dump(
            [
                {
                    "broker": d.broker,
                    "path": d.path,
                    "bytes": list(d.bytes),
                    "usableBytes": d.usable_bytes,
                    "cordoned": d.cordoned,
                }
                for d in report.dirs
            ]
        ),
        "topics.json": dump(
            {
                "total": report.topics_count.total,
                "topics": [
                    {
                        "topic": t.topic,
                        "partitions": t.partitions,
                        "replicaMoves": t.replica_moves,
                        "bytes": t.bytes,
                    }
                    for t in report.topics
                ],
            }
        ),
        "moves.json": dump(
            {
                "total": report.moves_count.total,
                "largest": [
                    {
                        "partition": m.partition,
                        "sizeBytes": m.size_bytes,
                        "from": list(m.replicas[0]),
                        "to": list(m.replicas[1]),
                        "bytes": m.bytes,
                    }
                    for m in report.moves
                ],
            }
        ),
        "batches.json": dump(_batches(report.batch_bytes, limits.max_moves_per_broker)),
    }
    if estimate is not None:
        data["estimate.json"] = dump(dict(estimate))
    if kept is not None:
        data[KEPT_PLAN] = kept
    html = render(report, estimate)
    size = sum(len(k) + len(v.encode()) for k, v in data.items())
    if size + len(html.encode()) <= MAX_DATA_BYTES:
        return {**data, "report.html": html}, {}
    packed = base64.b64encode(gzip.compress(html.encode(), mtime=0)).decode("ascii")
    note = "report.html is too large for the ConfigMap's text: binaryData report.html.gz holds it gzipped"
    return {**data, "report.html.txt": note}, {"report.html.gz": packed}


def publish(
    kube: KubeGateway,
    namespace: str,
    cluster: Mapping[str, Any],
    plan_id: str,
    make_report: Callable[[], Report],
    limits: Limits,
    fence: Callable[[], None],
    kept: str | None = None,
    *,
    make_estimate: Callable[[], Mapping[str, Any]],
) -> tuple[Review, PlanEstimate | None]:
    """Write the review ConfigMap of plan ``plan_id`` (its report made by ``make_report``, its
    ``estimate.json`` by ``make_estimate``) unless it already shows that plan (then only its
    ``keptPlan``, when ``kept`` differs); returns ``status.plan.review`` (the ConfigMap's name and the
    brokers whose load changes most) and ``status.plan.estimate``. Every write passes ``fence`` (the
    leader's) first."""
    meta = cluster["metadata"]
    name = name_of(meta["name"])
    old = kube.read_config_map(namespace, name)
    if old is not None and (old["metadata"].get("annotations") or {}).get(PLAN_ID) == plan_id:
        shown = old.get("data") or {}
        if shown.get(KEPT_PLAN) != kept:  # the same plan, made from other loads (or no longer kept)
            fence()
            kube.patch_config_map(namespace, name, {"data": {KEPT_PLAN: kept}})
        return review_status(shown, name), estimate_status(shown)
    report = make_report()
    data, binary = review_data(report, limits, kept, make_estimate())
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {MANAGED_BY[0]: MANAGED_BY[1], CLUSTER: cluster_label(meta["name"])},
            "annotations": {PLAN_ID: report.plan_id},
            "ownerReferences": [
                {
                    "apiVersion": cluster.get("apiVersion", API_VERSION),
                    "kind": "KafkaCluster",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                }
            ],
        },
        "data": data,
    }
    if binary:
        body["binaryData"] = binary
    fence()
    if old is None:
        try:
            kube.create_config_map(namespace, body)
        except KubeConflict:
            old = kube.read_config_map(namespace, name)
    if old is not None:
        body["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
        kube.replace_config_map(namespace, body)
    return review_status(data, name), estimate_status(data)
