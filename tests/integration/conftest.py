"""Shared fixtures of the integration tests: the real rigs' connection details from `.rig/rig.json`.

`make rig-up` starts the rigs and writes `.rig/rig.json` (KP_RIG_DIR overrides `.rig`). Nothing here
mocks Kafka or Kubernetes: a missing rig fails the test with the command that starts it.

Sections: 1. rig.json  2. Kafka (keys `kafka`, `kafkaLegacy`; tests/rig/kafka_rig.py)
          3. Kubernetes (key `k8s`; tests/rig/k8s_rig.py) — appended below by its owner.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# ============================================================================ 1. rig.json


def rig_json_path() -> Path:
    return Path(os.environ.get("KP_RIG_DIR", str(REPO_ROOT / ".rig"))) / "rig.json"


@pytest.fixture(scope="session")
def rig_json() -> dict[str, Any]:
    """The whole rig.json; fails (not skips) when the rig is not up."""
    path = rig_json_path()
    if not path.exists():
        pytest.fail(f"{path} not found: the real rig is not up; run `make rig-up`", pytrace=False)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def rig_entry(rig_json: dict[str, Any], key: str) -> dict[str, Any]:
    entry = rig_json.get(key)
    if not isinstance(entry, dict):
        pytest.fail(f"{rig_json_path()} has no '{key}' section; run `make rig-up`", pytrace=False)
    return entry


@pytest.fixture(scope="session")
def spark_entry(rig_json: dict[str, Any]) -> dict[str, Any]:
    """The Spark standalone cluster's section (key `spark`; tests/rig/spark_rig.py)."""
    return dict(rig_entry(rig_json, "spark"))


def spark_driver_env(entry: dict[str, Any]) -> dict[str, str]:
    """The environment of a driver on this machine for the rig's standalone cluster: none of this
    environment's Spark settings but the tests' JVM options (tests/conftest.py), the workers' Python, and
    an address the loopback workers reach."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    if "SPARK_SUBMIT_OPTS" in os.environ:
        env["SPARK_SUBMIT_OPTS"] = os.environ["SPARK_SUBMIT_OPTS"]
    return {**env, "PYSPARK_PYTHON": entry["workerPython"], "SPARK_LOCAL_IP": "127.0.0.1"}


# ============================================================================ 2. Kafka

KAFKA_TIMEOUT_S = 60.0  # every wait on Kafka in the tests is bounded by this


@dataclass(frozen=True)
class KafkaNode:
    """One combined broker+controller of the rig."""

    id: int
    host: str
    port: int
    controller_port: int
    rack: str
    log_dirs: tuple[str, ...]
    pid: int


@dataclass(frozen=True)
class KafkaRig:
    """A running rig cluster as written by tests/rig/kafka_rig.py into rig.json."""

    name: str
    bootstrap_servers: str
    version: str
    release_version: str
    data_dir: str
    nodes: tuple[KafkaNode, ...]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KafkaRig:
        return cls(
            name=str(d["name"]),
            bootstrap_servers=str(d["bootstrapServers"]),
            version=str(d["version"]),
            release_version=str(d["releaseVersion"]),
            data_dir=str(d["dataDir"]),
            nodes=tuple(
                KafkaNode(
                    id=int(n["id"]),
                    host=str(n["host"]),
                    port=int(n["port"]),
                    controller_port=int(n["controllerPort"]),
                    rack=str(n["rack"]),
                    log_dirs=tuple(str(p) for p in n["logDirs"]),
                    pid=int(n["pid"]),
                )
                for n in d["nodes"]
            ),
        )

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.id == node_id)


@pytest.fixture(scope="session")
def kafka_rig(rig_json: dict[str, Any]) -> KafkaRig:
    """The main cluster (Kafka 4.3.x, latest metadata.version): 3 nodes x 2 log dirs."""
    return KafkaRig.from_json(rig_entry(rig_json, "kafka"))


@pytest.fixture(scope="session")
def kafka_legacy_rig(rig_json: dict[str, Any]) -> KafkaRig:
    """The legacy cluster (metadata.version before 4.3-IV0: no cordoned.log.dirs): 2 nodes x 2 log dirs."""
    return KafkaRig.from_json(rig_entry(rig_json, "kafkaLegacy"))


def clients(kind: type) -> set[int]:
    """The ids of the live objects of ``kind`` (e.g. confluent-kafka's AdminClient) the garbage collector
    tracks: a client a test saw before and after is a client nothing freed."""
    return {id(o) for o in gc.get_objects() if isinstance(o, kind)}


@contextlib.contextmanager
def cyclic_gc_off(kind: type) -> Iterator[set[int]]:
    """The block runs with the cyclic garbage collector off, as an operator's reconciles run between its
    rare full collections (only reference counting frees objects); yields ``clients(kind)`` on entry,
    after a full collection of what earlier tests left to it."""
    gc.collect()
    before = clients(kind)
    gc.disable()
    try:
        yield before
    finally:
        gc.enable()


class SilentBroker:
    """A "broker" on loopback that accepts connections, reads and never answers (a hung Kafka): clients
    wait on their timeouts. ``opened`` holds when each connection came, ``closed`` when the client closed
    it (by connection number); a context manager (closing it stops accepting)."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._server.getsockname()[1]}"
        self.opened: list[float] = []
        self.closed: dict[int, float] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    def open_now(self) -> list[int]:
        """The connections the clients hold open."""
        return [n for n in range(len(self.opened)) if n not in self.closed]

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn = self._server.accept()[0]
                self.opened.append(time.monotonic())
                threading.Thread(target=self._drain, args=(conn, len(self.opened) - 1), daemon=True).start()

    def _drain(self, conn: socket.socket, n: int) -> None:
        with conn, contextlib.suppress(OSError):
            while conn.recv(65536):
                pass
        self.closed[n] = time.monotonic()

    def __enter__(self) -> SilentBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()


def confluent_admin(rig: KafkaRig) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {"bootstrap.servers": rig.bootstrap_servers, "socket.connection.setup.timeout.ms": 5000}
    )


def kafka_python_admin(rig: KafkaRig) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=rig.bootstrap_servers, request_timeout_ms=15000, client_id="kp-integration"
    )


@pytest.fixture
def kafka_admin(kafka_rig: KafkaRig) -> Any:
    """confluent-kafka AdminClient on the main cluster, one per test like ``kafka_py_admin``: a client
    that lived through a broker's restart by an earlier test once timed out a broker's describe_configs."""
    return confluent_admin(kafka_rig)


@pytest.fixture
def kafka_py_admin(kafka_rig: KafkaRig) -> Iterator[Any]:
    """kafka-python KafkaAdminClient on the main cluster, one per test: kafka-python drops a broker that was
    down from its metadata and does not learn it again, so a session-wide client fails with
    UnknownBrokerIdError after a test restarted a broker."""
    admin = kafka_python_admin(kafka_rig)
    yield admin
    admin.close()


def wait_for(
    what: str,
    check: Callable[[], Any],
    timeout: float = KAFKA_TIMEOUT_S,
    every: float = 0.3,
    why: Callable[[], str] | None = None,
) -> Any:
    """Poll `check` until it returns something truthy; past `timeout` fail with `what`, the last result and
    what `why` tells (logs, pods, events)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
            if last:
                return last
        except Exception as e:  # Kafka answers "not yet" with errors too; keep polling until the deadline
            last = e
        if time.monotonic() > deadline:
            told = f"\n{why()}" if why else ""
            pytest.fail(
                f"timed out after {timeout:.0f}s waiting for {what}; last: {last!r}{told}", pytrace=False
            )
        time.sleep(every)


def flowing(sent: Sequence[object], errors: Sequence[object], records: int = 50) -> None:
    """Wait until a test's producer thread has had ``records`` acknowledged (``sent``; ``errors``: its
    failed deliveries, shown on a timeout): traffic flows before its moves start."""
    wait_for(
        f"{records} records acknowledged",
        lambda: len(sent) >= records,
        timeout=60,
        every=0.05,
        why=lambda: f"{len(sent)} acknowledged, errors: {list(errors[:3])}",
    )


Record = tuple[int, bytes | None, bytes | None]  # offset, key, value


def read_to_end(servers: str, topic: str, partitions: int, timeout: float = 180.0) -> dict[int, list[Record]]:
    """Every record of ``topic`` per partition, read from the beginning up to the end offsets it has when
    called (not "until a quiet moment": a loaded machine's first fetch may take longer than any quiet
    period); past ``timeout`` it fails naming how far each partition got."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        read: dict[int, list[Record]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any((read[p][-1][0] + 1 if read[p] else 0) < ends[p] for p in range(partitions)):
            assert time.monotonic() < deadline, f"read {[len(v) for v in read.values()]} of ends {ends}"
            for msg in consumer.consume(num_messages=1000, timeout=1):
                assert msg.error() is None, msg.error()
                part, offset = msg.partition(), msg.offset()
                assert part is not None and offset is not None, msg  # (a record, not an event)
                read[part].append((offset, msg.key(), msg.value()))
        return read
    finally:
        consumer.close()


@pytest.fixture(scope="session")
def kafka_wait() -> Callable[..., Any]:
    """`wait_for(what, check, timeout=60)` as a fixture: bounded polling for the tests."""
    return wait_for


def broker_addresses(brokers: KafkaRig | str | Iterable[str]) -> list[str]:
    """Every broker's ``host:port``: of a rig, of a bootstrap list that names every broker (the rigs'
    ``bootstrapServers`` do), or given one by one."""
    nodes = getattr(brokers, "nodes", None)  # a KafkaRig: by its shape, as pytest may load this module
    if nodes is not None:  # twice (as a conftest and as tests.integration.conftest), each with its class
        return [f"{n.host}:{n.port}" for n in nodes]
    if isinstance(brokers, str):
        return [b.strip() for b in brokers.split(",") if b.strip()]
    return list(cast(Iterable[str], brokers))


def wait_topic_everywhere(
    brokers: KafkaRig | str | Iterable[str],
    name: str,
    partitions: int,
    conf: dict[str, Any] | None = None,
    timeout: float = KAFKA_TIMEOUT_S,
) -> None:
    """Until every broker's metadata cache has topic ``name`` with its ``partitions`` partitions, each with a
    leader. A created topic (or added partitions) reaches the brokers through the metadata log, moments
    after the controller answered: until then a broker answers UNKNOWN_TOPIC_OR_PART. ``brokers``: every
    broker (see ``broker_addresses``); ``conf``: the client settings besides ``bootstrap.servers``
    (security)."""
    from confluent_kafka.admin import AdminClient

    for address in broker_addresses(brokers):

        def known(address: str = address) -> bool:
            # A fresh client knows only its bootstrap broker, so its one request is answered by that
            # broker; a reused client would ask whichever broker it likes once it has learned them all.
            one = AdminClient({**(conf or {}), "bootstrap.servers": address})
            md = one.list_topics(topic=name, timeout=5).topics.get(name)
            return (
                md is not None
                and md.error is None
                and len(md.partitions) == partitions
                and all(p.leader >= 0 for p in md.partitions.values())
            )

        wait_for(f"topic {name} with {partitions} partitions led on broker {address}", known, timeout)


def create_topics_everywhere(
    admin: Any,
    topics: list[Any],
    brokers: KafkaRig | str | Iterable[str],
    conf: dict[str, Any] | None = None,
    timeout: float = KAFKA_TIMEOUT_S,
) -> list[str]:
    """The one way the tests create topics: ``admin.create_topics(topics)`` (confluent-kafka ``NewTopic``s),
    then ``wait_topic_everywhere`` for each; returns their names."""
    futures = admin.create_topics(topics, request_timeout=30)
    for future in futures.values():
        future.result(timeout=timeout)
    for topic in topics:
        wait_topic_everywhere(brokers, topic.topic, topic.num_partitions, conf, timeout)
    return [t.topic for t in topics]


TopicFactory = Callable[..., str]


@pytest.fixture
def new_topic(
    kafka_rig: KafkaRig, kafka_admin: Any, request: pytest.FixtureRequest
) -> Iterator[TopicFactory]:
    """Factory: new_topic([[1, 2], [2, 3]], config={...}) creates a topic with that replica assignment on
    the main cluster, waits until every broker knows it, returns its name; deletes it after the test.
    ``name_prefix`` replaces the name's default start (so a policy's glob can select it)."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    created: list[str] = []

    def make(
        assignment: list[list[int]], config: dict[str, str] | None = None, name_prefix: str | None = None
    ) -> str:
        start = name_prefix if name_prefix is not None else f"it-{request.node.name[:40].strip('_')}-"
        name = f"{start}{uuid.uuid4().hex[:8]}".replace("[", "-").replace("]", "")
        topic = NewTopic(
            name, num_partitions=len(assignment), replica_assignment=assignment, config=config or {}
        )
        kafka_admin.create_topics([topic], request_timeout=30)[name].result(timeout=KAFKA_TIMEOUT_S)
        created.append(name)
        wait_topic_everywhere(kafka_rig, name, len(assignment))
        return name

    yield make
    if created:
        futures = kafka_admin.delete_topics(created, request_timeout=30)
        for f in futures.values():
            f.result(timeout=KAFKA_TIMEOUT_S)


# ============================================================================ 3. Kubernetes

import subprocess  # noqa: E402  (section 3 is appended by its owner; sections 1-2 stay untouched)

K8S_TIMEOUT_S = 60.0  # every wait on the kube-apiserver in the tests is bounded by this

Kubectl = Callable[..., "subprocess.CompletedProcess[str]"]


def wait_established(kubectl: Kubectl, *crds: str, timeout_s: int = 60) -> None:
    """``kubectl wait --for condition=established`` on CRDs just applied (``crd/<name>``), asked again while
    kubectl meets a CRD the apiserver has not given a condition yet: it fails at once with ".status.conditions
    accessor error: <nil>" instead of waiting (a race seen in the compat lane)."""
    deadline = time.monotonic() + timeout_s
    while True:
        proc = kubectl(
            "wait", "--for", "condition=established", *crds, f"--timeout={timeout_s}s", check=False
        )
        if proc.returncode == 0:
            return
        if "accessor error" not in proc.stderr or time.monotonic() > deadline:
            pytest.fail(f"CRDs {crds} not established: {proc.stderr}{proc.stdout}", pytrace=False)
        time.sleep(0.2)


@pytest.fixture(scope="session")
def k8s_rig(rig_json: dict[str, Any]) -> dict[str, Any]:
    """The `k8s` entry of rig.json (tests/rig/k8s_rig.py): kubeconfig, server, token, kubectl, helm, ..."""
    return rig_entry(rig_json, "k8s")


@pytest.fixture(scope="session")
def kubectl(k8s_rig: dict[str, Any]) -> Kubectl:
    """kubectl("get", "ns", input=None, check=True, timeout=None): the rig's kubectl with its kubeconfig;
    returns the CompletedProcess (text). A failure with check=True shows the command and its stderr.
    Without ``timeout`` the process may run 60 s, or 30 s more than a ``--timeout=Ns`` among ``args``
    (so kubectl's own timeout, and its message, come first)."""

    def run(
        *args: str, input: str | None = None, check: bool = True, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        if timeout is None:
            own = [int(m[1]) for a in args if (m := re.fullmatch(r"--timeout=(\d+)s", a))]
            timeout = own[0] + 30.0 if own else K8S_TIMEOUT_S
        cmd = [str(k8s_rig["kubectl"]), "--kubeconfig", str(k8s_rig["kubeconfig"]), *args]
        proc = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(
                f"`kubectl {' '.join(args)}` exited {proc.returncode}:\n{proc.stderr}{proc.stdout}",
                pytrace=False,
            )
        return proc

    run.kubeconfig = str(k8s_rig["kubeconfig"])  # type: ignore[attr-defined]  # (e2e's get() reads it)
    return run


@pytest.fixture(scope="session")
def k8s_api(k8s_rig: dict[str, Any]) -> Iterator[Any]:
    """A kubernetes-client ApiClient on the rig (admin token, system:masters)."""
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(k8s_rig["kubeconfig"]))  # type: ignore[no-untyped-call]
    yield client
    client.close()


@pytest.fixture
def k8s_namespace(k8s_api: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (the node rig's controller-manager empties it;
    nothing waits for that)."""
    from kubernetes import client

    base = "".join(c if c.isalnum() else "-" for c in request.node.name.lower())[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(k8s_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)
