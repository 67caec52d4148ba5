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
from .cluster_status import ClusterStatus
from .crd_parts import (
    CATEGORIES,
    GROUP,
    HEADER,
    PLURALS,
    VERSION,
    Schema,
    obj_schema,
    printer_column,
    str_schema,
)
from .intent_kinds import spec_schema
from .intent_status import IntentStatus


def _intent_columns() -> list[Schema]:
    return [
        printer_column(
            "Cluster",
            "string",
            ".spec.clusterRef.name",
            "The KafkaCluster this intent applies to.",
            priority=1,
        ),
        printer_column("Phase", "string", ".status.phase", "Lifecycle phase."),
        printer_column("Plan", "string", ".status.plan.id", "Current plan id."),
        printer_column(
            "Progress", "string", ".status.progress.summary", "Partitions moved / partitions to move."
        ),
        printer_column("Moves", "integer", ".status.plan.moves", "Partition moves in the plan."),
        printer_column("Age", "date", ".metadata.creationTimestamp", "Time since creation."),
    ]


def _kafka_cluster_spec() -> Schema:
    return ClusterSpec.schema()  # declared with its parser (model/cluster_spec.py)


# ---- assembly -----------------------------------------------------------------------------------------


def _crd(
    kind: str,
    short: str,
    description: str,
    spec: Schema,
    status: Schema,
    columns: list[Schema],
) -> dict[str, Any]:
    schema = obj_schema(
        description,
        {
            "apiVersion": str_schema("Versioned schema of this object: kafkaplacement.io/v1alpha1."),
            "kind": str_schema(f"Kind of this object: {kind}."),
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
        printer_column("Bootstrap", "string", ".spec.bootstrapServers", "Bootstrap servers.", priority=1),
        printer_column("Phase", "string", ".status.phase", "Connection state."),
        printer_column(
            "Reassignments", "integer", ".status.reassignmentsInFlight", "Partition reassignments in flight."
        ),
        printer_column("Age", "date", ".metadata.creationTimestamp", "Time since creation."),
    ]
    return [
        _crd(
            "KafkaCluster",
            "kpc",
            "A Kafka cluster the operator manages placement for: connection and defaults.",
            _kafka_cluster_spec(),
            ClusterStatus.schema(),
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
