"""The one gateway to the Kubernetes API: custom resources, Secrets, ConfigMaps, Pods, Leases, Events.

Every Kubernetes call of the operator and the CLI goes through ``KubeGateway`` (an import-linter
contract forbids the ``kubernetes`` package everywhere else), as ``kafka/gateway.py`` is for Kafka:

- objects travel as plain JSON dicts (camelCase, as the API serves them): reads ask for the raw
  response (``_preload_content=False``) and parse it once, so a 900 KiB ConfigMap chunk is not turned
  into client model objects; writes send dicts;
- a missing object reads as ``None`` (deletes and status patches of a missing object return False);
- every other failure is a ``KubeError`` carrying the HTTP status and the API's reason, bounded and
  never the request body (a Secret's value cannot leak through it); a 409 is a ``KubeConflict``, which
  the record store turns into its compare-and-swap conflict and the elector into a lost race;
- Events go to the sink the process installs (kopf's poster in the operator; the CLI posts none).

Limits leaned on: request bodies <= 3 MiB and objects <= 1 MiB (the store keeps chunks at 900 KiB of
gzip); list calls are paged (``limit``/``continue``) where the result can be large.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from ..model.errors import PlacementError
from . import key_files

EventSink = Callable[[Mapping[str, Any], str, str, str], None]  # (object, type, reason, message)
Obj = dict[str, Any]


class KubeError(PlacementError):
    """A Kubernetes API call failed (``status``: the HTTP status, None when the apiserver was not reached)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class KubeConflict(KubeError):
    """409: the object exists already (create) or changed since it was read (replace)."""


def _no_events(obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
    return None


def load_config(kubeconfig: str | None = None) -> client.ApiClient:
    """An ApiClient: ``kubeconfig`` if given, else the pod's service account, else KUBECONFIG/~/.kube. A
    kubeconfig's inline keys and certificates go to this process's own directory (key_files.py), never
    to a temp file a crash would leave behind."""
    if kubeconfig:
        own = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=own, temp_file_path=str(key_files.process_dir())
        )
        return client.ApiClient(configuration=own)
    load_default_config()
    return client.ApiClient()


def load_default_config() -> None:
    """Load the client's default configuration (the pod's service account, else KUBECONFIG/~/.kube), its
    inline keys in this process's own directory. The client keeps the files it wrote by their content, so
    a later load of the same kubeconfig (kopf's login, handlers/register.py) uses the same files."""
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        keys = str(key_files.process_dir())  # (its own error names the directory)
        try:
            config.load_kube_config(temp_file_path=keys)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as e:
            raise KubeError(f"no Kubernetes configuration: not in a pod and no kubeconfig ({e})") from None


class KubeGateway:
    """Kubernetes API access for one process (see the module docstring)."""

    def __init__(
        self, api_client: client.ApiClient | None = None, event_sink: EventSink = _no_events
    ) -> None:
        self.api_client = api_client if api_client is not None else client.ApiClient()
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)
        self.coordination = client.CoordinationV1Api(self.api_client)
        self._event_sink = event_sink

    @classmethod
    def from_config(cls, kubeconfig: str | None = None, event_sink: EventSink = _no_events) -> KubeGateway:
        return cls(load_config(kubeconfig), event_sink)

    def with_own_pool(self) -> KubeGateway:
        """A gateway on a new connection pool with the same configuration (for another thread)."""
        return KubeGateway(client.ApiClient(self.api_client.configuration), self._event_sink)

    # ---- the plumbing --------------------------------------------------------------------------------

    @staticmethod
    def _call(what: str, fn: Callable[..., Any], *args: Any, missing_ok: bool = True, **kw: Any) -> Any:
        """``fn(*args, **kw)``; None when the object is missing (404, if ``missing_ok``); JSON parsed."""
        try:
            resp = fn(*args, _preload_content=False, **kw)
        except ApiException as e:
            if e.status == 404 and missing_ok:
                return None
            reason = str(e.reason or "error")[:200]
            kind = KubeConflict if e.status == 409 else KubeError
            raise kind(f"Kubernetes API: cannot {what}: {e.status} {reason}", e.status) from None
        except (OSError, ValueError) as e:  # connection refused, TLS, timeouts (urllib3's are OSErrors)
            raise KubeError(f"Kubernetes API: cannot {what}: {type(e).__name__}: {str(e)[:200]}") from None
        data = resp.data
        return json.loads(data) if data else {}

    # ---- custom resources ----------------------------------------------------------------------------

    def get_custom(self, group: str, version: str, ns: str, plural: str, name: str) -> Obj | None:
        got: Obj | None = self._call(
            f"get {plural}.{group} {ns}/{name}",
            self.custom.get_namespaced_custom_object,
            group,
            version,
            ns,
            plural,
            name,
        )
        return got

    def list_custom(self, group: str, version: str, ns: str, plural: str) -> list[Obj]:
        items: list[Obj] = []
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"limit": 500, **({"_continue": token} if token else {})}
            page = self._call(
                f"list {plural}.{group} in {ns}",
                self.custom.list_namespaced_custom_object,
                group,
                version,
                ns,
                plural,
                missing_ok=False,
                **kw,
            )
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    def create_custom(self, group: str, version: str, ns: str, plural: str, body: Obj) -> Obj:
        name = (body.get("metadata") or {}).get("name", "")
        created: Obj = self._call(
            f"create {plural}.{group} {ns}/{name}",
            self.custom.create_namespaced_custom_object,
            group,
            version,
            ns,
            plural,
            body,
            missing_ok=False,
        )
        return created

    def delete_custom(
        self,
        group: str,
        version: str,
        ns: str,
        plural: str,
        name: str,
        preconditions: Mapping[str, str] | None = None,
    ) -> bool:
        """Delete; False when it did not exist. ``preconditions`` (``uid``, ``resourceVersion``): the
        apiserver refuses (409, ``KubeConflict``) when the object is another one or changed since read."""
        options: dict[str, Any] = {}
        if preconditions:
            options["body"] = client.V1DeleteOptions(
                preconditions=client.V1Preconditions(
                    uid=preconditions.get("uid"), resource_version=preconditions.get("resourceVersion")
                )
            )
        return (
            self._call(
                f"delete {plural}.{group} {ns}/{name}",
                self.custom.delete_namespaced_custom_object,
                group,
                version,
                ns,
                plural,
                name,
                **options,
            )
            is not None
        )

    def patch_custom_status(
        self, group: str, version: str, ns: str, plural: str, name: str, status: Mapping[str, Any]
    ) -> bool:
        """Merge-patch the status subresource; False when the object is gone."""
        return (
            self._call(
                f"update the status of {plural}.{group} {ns}/{name}",
                self.custom.patch_namespaced_custom_object_status,
                group,
                version,
                ns,
                plural,
                name,
                {"status": dict(status)},
            )
            is not None
        )

    # ---- Secrets -------------------------------------------------------------------------------------

    def secret_data(self, ns: str, name: str) -> Mapping[str, str] | None:
        """The Secret's base64 ``data`` (None when the Secret does not exist)."""
        secret = self._call(f"read Secret {ns}/{name}", self.core.read_namespaced_secret, name, ns)
        return None if secret is None else dict(secret.get("data") or {})

    # ---- ConfigMaps ----------------------------------------------------------------------------------

    def read_config_map(self, ns: str, name: str) -> Obj | None:
        got: Obj | None = self._call(
            f"read ConfigMap {ns}/{name}", self.core.read_namespaced_config_map, name, ns
        )
        return got

    def create_config_map(self, ns: str, body: Obj) -> Obj:
        name = body["metadata"]["name"]
        made: Obj = self._call(
            f"create ConfigMap {ns}/{name}",
            self.core.create_namespaced_config_map,
            ns,
            body,
            missing_ok=False,
        )
        return made

    def replace_config_map(self, ns: str, body: Obj) -> Obj | None:
        """Replace (a CAS when ``body`` carries a resourceVersion); None when it no longer exists."""
        name = body["metadata"]["name"]
        out: Obj | None = self._call(
            f"replace ConfigMap {ns}/{name}", self.core.replace_namespaced_config_map, name, ns, body
        )
        return out

    def patch_config_map(self, ns: str, name: str, patch: Obj) -> bool:
        return (
            self._call(f"patch ConfigMap {ns}/{name}", self.core.patch_namespaced_config_map, name, ns, patch)
            is not None
        )

    def delete_config_map(self, ns: str, name: str) -> bool:
        return (
            self._call(f"delete ConfigMap {ns}/{name}", self.core.delete_namespaced_config_map, name, ns)
            is not None
        )

    def config_map_names(self, ns: str | None, selector: str, page: int = 8) -> Iterator[tuple[str, str]]:
        """(namespace, name) of the ConfigMaps matching ``selector`` in ``ns`` (None: every namespace),
        listed in pages of ``page`` objects (chunks are up to 1.2 MB of JSON each)."""
        token: str | None = None
        where = ns or "all namespaces"
        while True:
            kw: dict[str, Any] = {"label_selector": selector, "limit": page}
            if token:
                kw["_continue"] = token
            if ns is None:
                got = self._call(
                    f"list ConfigMaps in {where}",
                    self.core.list_config_map_for_all_namespaces,
                    missing_ok=False,
                    **kw,
                )
            else:
                got = self._call(
                    f"list ConfigMaps in {where}",
                    self.core.list_namespaced_config_map,
                    ns,
                    missing_ok=False,
                    **kw,
                )
            for cm in got.get("items") or []:
                meta = cm.get("metadata") or {}
                yield str(meta.get("namespace") or ns), str(meta["name"])
            token = (got.get("metadata") or {}).get("continue")
            if not token:
                return

    # ---- Pods (the spark-k8s engine's driver pod) ------------------------------------------------------

    def create_pod(self, ns: str, body: Obj) -> Obj:
        name = body["metadata"]["name"]
        made: Obj = self._call(
            f"create Pod {ns}/{name}", self.core.create_namespaced_pod, ns, body, missing_ok=False
        )
        return made

    def read_pod(self, ns: str, name: str) -> Obj | None:
        got: Obj | None = self._call(f"read Pod {ns}/{name}", self.core.read_namespaced_pod, name, ns)
        return got

    def delete_pod(self, ns: str, name: str) -> bool:
        """Delete with background propagation (what the pod owns, e.g. Spark's executors, goes too);
        False when it did not exist."""
        return (
            self._call(
                f"delete Pod {ns}/{name}",
                self.core.delete_namespaced_pod,
                name,
                ns,
                propagation_policy="Background",
            )
            is not None
        )

    # ---- Leases --------------------------------------------------------------------------------------

    def read_lease(self, ns: str, name: str, timeout: float) -> Obj | None:
        got: Obj | None = self._call(
            f"read Lease {ns}/{name}",
            self.coordination.read_namespaced_lease,
            name,
            ns,
            _request_timeout=timeout,
        )
        return got

    def write_lease(self, ns: str, body: Obj, timeout: float, create: bool) -> None:
        """Create the Lease, or replace it (a CAS on the body's resourceVersion): KubeConflict if lost."""
        name = body["metadata"]["name"]
        if create:
            self._call(
                f"create Lease {ns}/{name}",
                self.coordination.create_namespaced_lease,
                ns,
                body,
                missing_ok=False,
                _request_timeout=timeout,
            )
        else:
            self._call(
                f"replace Lease {ns}/{name}",
                self.coordination.replace_namespaced_lease,
                name,
                ns,
                body,
                missing_ok=False,
                _request_timeout=timeout,
            )

    # ---- Events --------------------------------------------------------------------------------------

    def event(self, obj: Mapping[str, Any], etype: str, reason: str, message: str) -> None:
        """An Event on ``obj`` (reason <= 128, message <= 1024 characters, as the API allows)."""
        self._event_sink(obj, etype, reason[:128], message[:1024])


__all__ = ["EventSink", "KubeConflict", "KubeError", "KubeGateway", "load_config"]
