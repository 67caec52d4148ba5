"""The one source of the CustomResourceDefinitions (docs/architecture.md).

Structural OpenAPI v3 schemas (apiextensions.k8s.io/v1) of the four kinds of group
``kafkaplacement.io``, built as plain dicts so ``crds/`` and the chart's ``crds/`` are generated from
here (``kafka-placement crds``) and a unit test fails on drift. Every kind's spec is declared once with
its parser: the intent kinds' in ``model/intent_kinds.py``, the KafkaCluster's in
``model/cluster_spec.py``; so is the intents' status, with the model the operator writes and reads
(``model/intent_status.py``). Every field has a description so
``kubectl explain`` documents the API.
"""

from __future__ import annotations

from typing import Any

import yaml

from .cluster_spec import ClusterSpec
from .crd_parts import (
    CATEGORIES,
    CLUSTER_CONDITION_TYPES,
    CLUSTER_PHASES,
    GROUP,
    HEADER,
    NEW_PARTITION_PHASES,
    PLURALS,
    VERSION,
    Schema,
    _arr,
    _bool,
    _col,
    _int,
    _obj,
    _str,
)
from .intent_kinds import spec_schema
from .intent_status import IntentStatus, conditions_schema
from .self_healing import status_schema


def _intent_columns() -> list[Schema]:
    return [
        _col(
            "Cluster",
            "string",
            ".spec.clusterRef.name",
            "The KafkaCluster this intent applies to.",
            priority=1,
        ),
        _col("Phase", "string", ".status.phase", "Lifecycle phase."),
        _col("Plan", "string", ".status.plan.id", "Current plan id."),
        _col("Progress", "string", ".status.progress.summary", "Partitions moved / partitions to move."),
        _col("Moves", "integer", ".status.plan.moves", "Partition moves in the plan."),
        _col("Age", "date", ".metadata.creationTimestamp", "Time since creation."),
    ]


def _kafka_cluster_spec() -> Schema:
    return ClusterSpec.schema()  # declared with its parser (model/cluster_spec.py)


def _traffic_status() -> Schema:
    broker = _obj(
        "One broker's traffic (sums over its replicas whose partition has a known rate).",
        {
            "id": _int("Broker id.", 0),
            "bytesInPerSec": _int(
                "Bytes per second written to the broker's replicas, leaders and followers.", 0, int64=True
            ),
            "leaderBytesInPerSec": _int(
                "Bytes per second produced to the partitions the broker leads.", 0, int64=True
            ),
            "networkOutBytesPerSec": _int(
                "Bytes per second fetched from the broker: over the partitions it leads, bytes in x "
                "(followers + read fan-out).",
                0,
                int64=True,
            ),
            "diskBytes": _int("Bytes of the broker's replicas (the largest replica's size).", 0, int64=True),
            "replicasMeasured": _int("The broker's replicas with a known rate.", 0, int64=True),
            "capacity": _obj(
                "The broker's capacity per spec.capacity (known fields only).",
                {
                    "networkIn": _int("Network in, bytes per second.", 1, int64=True),
                    "networkOut": _int("Network out, bytes per second.", 1, int64=True),
                    "disk": _int("Disk, bytes.", 1, int64=True),
                },
            ),
            "utilisation": _obj(
                "Load / capacity per resource with a known capacity (1.0 = full).",
                {
                    "networkIn": {"type": "number", "description": "bytesInPerSec / capacity.networkIn."},
                    "networkOut": {
                        "type": "number",
                        "description": "networkOutBytesPerSec / capacity.networkOut.",
                    },
                    "disk": {"type": "number", "description": "diskBytes / capacity.disk."},
                },
            ),
        },
    )
    return _obj(
        "Traffic sampled per spec.traffic: per-broker totals of the partitions' weighted bytes in.",
        {
            "sampledAt": _str("When the last look was taken (RFC 3339)."),
            "windowSeconds": _int("The window of the weighted rates.", 1),
            "looks": _int("Looks taken so far (kept across operator restarts).", 0, int64=True),
            "partitionsMeasured": _int("Partitions with a known rate.", 0, int64=True),
            "groupsRead": _int(
                "Consumer groups whose committed offsets the last look read: only groups the principal "
                "may DESCRIBE; read fan-out counts no other.",
                0,
                int64=True,
            ),
            "brokers": _arr("Per broker, at most 2000.", broker, maxItems=2000),
            "brokersOmitted": _int("Brokers beyond the 2000 listed.", 0),
            "capacityError": _str(
                "Why no capacity is shown: spec.capacity names a broker the cluster does not have."
            ),
            "samplesSkipped": _obj(
                "Samples skipped so far (kept across restarts), by reason; none gives a rate.",
                {
                    "failedRead": _int("A look that failed for a partition.", 0, int64=True),
                    "recreated": _int(
                        "The log went backwards or the topic id changed (deleted and created again): "
                        "its history dropped.",
                        0,
                        int64=True,
                    ),
                    "clockBack": _int("A look not after the last one (a clock set back).", 0, int64=True),
                    "tooClose": _int("A look too close to the last one.", 0, int64=True),
                    "groupBack": _int(
                        "A consumer group's committed offset went backwards (a reset, not reading).",
                        0,
                        int64=True,
                    ),
                },
            ),
            "networkCapacityGoal": _str(
                "Whether plans keep every broker under maxShare of its declared network capacity: "
                "'on: ...' or 'off: <why>' (no spec.capacity, no network capacity, no measured rate)."
            ),
        },
    )


def _kafka_cluster_status() -> Schema:
    log_dir = _obj(
        "One log dir of the broker.",
        {
            "path": _str("Absolute path of the log dir."),
            "usedBytes": _int("Bytes used by partition replicas.", 0, int64=True),
            "totalBytes": _int("Size of the volume.", 0, int64=True),
            "usableBytes": _int("Free bytes on the volume.", 0, int64=True),
            "cordoned": _bool("Whether the dir is cordoned (KIP-1066 or by a LogDirCordon)."),
            "online": _bool("Whether the dir is online."),
        },
    )
    broker = _obj(
        "One broker of the cluster.",
        {
            "id": _int("Broker id.", 0),
            "rack": _str("Rack string (may be hierarchical, e.g. /dc1/r2)."),
            "logDirs": _arr("The broker's log dirs.", log_dir),
        },
    )
    return _obj(
        "Observed state of the cluster, written by the operator.",
        {
            "phase": _str("Connection state.", enum=list(CLUSTER_PHASES)),
            "brokers": _arr("Brokers, racks and log dirs with usage and cordon state.", broker),
            "reassignmentsInFlight": _int("Partition reassignments in progress in Kafka.", 0),
            "newPartitions": _obj(
                "The new-partition lane: partitions created since the cluster was last read, placed per "
                "the intents within seconds, also while an execution runs (its last plan and its state).",
                {
                    "phase": _str(
                        "Watching, AwaitingApproval, Paused, Executing, Completed, Failed or Blocked.",
                        enum=list(NEW_PARTITION_PHASES),
                    ),
                    "planId": _str(
                        "The lane plan's id; with approval Manual, copy it to spec.approvedPlan.",
                        maxLength=128,
                    ),
                    "partitions": _int("Partitions the lane plan moves.", 0, int64=True),
                    "message": _str("What the lane did or waits for.", maxLength=1000),
                },
            ),
            "traffic": _traffic_status(),
            **status_schema(),
            "conditions": conditions_schema(CLUSTER_CONDITION_TYPES),
            "observedGeneration": _int("The metadata.generation the status describes.", 0, int64=True),
        },
    )


# ---- assembly -----------------------------------------------------------------------------------------


def _crd(
    kind: str,
    short: str,
    description: str,
    spec: Schema,
    status: Schema,
    columns: list[Schema],
) -> dict[str, Any]:
    schema = _obj(
        description,
        {
            "apiVersion": _str("Versioned schema of this object: kafkaplacement.io/v1alpha1."),
            "kind": _str(f"Kind of this object: {kind}."),
            # The apiserver forbids anything but `type` here (the object metadata is implicit).
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        ["spec"],
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURALS[kind]}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "kafka-placement-operator"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": PLURALS[kind],
                "singular": kind.lower(),
                "shortNames": [short],
                "categories": list(CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def crd_documents() -> list[dict[str, Any]]:
    """The four CRDs, in a fixed order."""
    cluster_columns = [
        _col("Bootstrap", "string", ".spec.bootstrapServers", "Bootstrap servers.", priority=1),
        _col("Phase", "string", ".status.phase", "Connection state."),
        _col(
            "Reassignments", "integer", ".status.reassignmentsInFlight", "Partition reassignments in flight."
        ),
        _col("Age", "date", ".metadata.creationTimestamp", "Time since creation."),
    ]
    return [
        _crd(
            "KafkaCluster",
            "kpc",
            "A Kafka cluster the operator manages placement for: connection and defaults.",
            _kafka_cluster_spec(),
            _kafka_cluster_status(),
            cluster_columns,
        ),
        _crd(
            "LogDirCordon",
            "ldc",
            "Cordon log dirs of a broker (no new replicas), optionally draining them.",
            spec_schema("LogDirCordon"),
            IntentStatus.schema(),
            _intent_columns(),
        ),
        _crd(
            "BrokerDecommission",
            "bdc",
            "Move every replica off the listed brokers.",
            spec_schema("BrokerDecommission"),
            IntentStatus.schema(),
            _intent_columns(),
        ),
        _crd(
            "PlacementPolicy",
            "kpp",
            "Placement rules (rack spread, replication factor, balance) for selected topics.",
            spec_schema("PlacementPolicy"),
            IntentStatus.schema(),
            _intent_columns(),
        ),
    ]


def crd_filename(doc: dict[str, Any]) -> str:
    """controller-gen's convention: ``<group>_<plural>.yaml``."""
    names = doc["spec"]["names"]
    return f"{doc['spec']['group']}_{names['plural']}.yaml"


class _NoAliases(yaml.SafeDumper):
    """A schema part used in two places is written out twice, never as a YAML anchor and alias (which
    some tools reading CRDs do not expand)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_crd(doc: dict[str, Any]) -> str:
    """Deterministic YAML of one CRD (insertion order kept) with the generated-file header."""
    body = yaml.dump(
        doc, Dumper=_NoAliases, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True
    )
    return HEADER + "---\n" + body


def rendered_crds() -> dict[str, str]:
    """File name -> YAML text of every CRD."""
    return {crd_filename(d): render_crd(d) for d in crd_documents()}


__all__ = ["GROUP", "HEADER", "VERSION", "crd_documents", "crd_filename", "render_crd", "rendered_crds"]
