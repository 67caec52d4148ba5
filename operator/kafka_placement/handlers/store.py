"""Durable operator state: the execution record of a cluster in a ConfigMap owned by its KafkaCluster.

The record (plan, submissions, throttles it set; see execution/state.py) is gzip-compressed JSON,
base64-encoded into ``binaryData`` and split into chunks below the ConfigMap size limit, so a restarted
operator resumes exactly where it stopped. The ConfigMap is owned by the KafkaCluster (garbage-collected
with it).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

CHUNK = 512 * 1024


def configmap_name(cluster: str) -> str:
    return f"kafka-placement-{cluster}-execution"


def encode(record: Mapping[str, Any]) -> dict[str, str]:
    raw = base64.b64encode(gzip.compress(json.dumps(record).encode())).decode()
    return {
        f"record.{i:04d}": raw[i * CHUNK : (i + 1) * CHUNK] for i in range((len(raw) + CHUNK - 1) // CHUNK)
    }


def decode(data: Mapping[str, str]) -> dict[str, Any]:
    raw = "".join(data[k] for k in sorted(data) if k.startswith("record."))
    record: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(raw)))
    return record


class RecordStore:
    """Load/save/delete one cluster's execution record."""

    def __init__(self, api: client.CoreV1Api, namespace: str, cluster: str, owner: Mapping[str, Any]) -> None:
        self.api, self.namespace, self.name = api, namespace, configmap_name(cluster)
        meta = owner.get("metadata") or {}
        self.owner = {
            "apiVersion": owner.get("apiVersion", "kafkaplacement.io/v1alpha1"),
            "kind": owner.get("kind", "KafkaCluster"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "controller": True,
        }

    def load(self) -> dict[str, Any] | None:
        try:
            cm = self.api.read_namespaced_config_map(self.name, self.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        data = {k: v if isinstance(v, str) else v.decode() for k, v in (cm.binary_data or {}).items()}
        return decode(data) if data else None

    def save(self, record: Mapping[str, Any]) -> None:
        # binaryData values are base64 text: the chunks of the base64-encoded gzip go in as they are
        chunks: dict[str, bytes | str] = dict(encode(record))
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                labels={"app.kubernetes.io/managed-by": "kafka-placement-operator"},
                owner_references=[client.V1OwnerReference(**_snake(self.owner))]
                if self.owner["uid"]
                else None,
            ),
            binary_data=chunks,
        )
        try:
            self.api.replace_namespaced_config_map(self.name, self.namespace, body)
        except ApiException as e:
            if e.status != 404:
                raise
            self.api.create_namespaced_config_map(self.namespace, body)

    def delete(self) -> None:
        try:
            self.api.delete_namespaced_config_map(self.name, self.namespace)
        except ApiException as e:
            if e.status != 404:
                raise


def _snake(owner: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "api_version": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["name"],
        "uid": owner["uid"],
        "controller": owner["controller"],
    }
