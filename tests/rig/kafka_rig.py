#!/usr/bin/env python3
"""Real Apache Kafka test rig: N KRaft combined broker+controller JVMs on 127.0.0.1.

    kafka_rig.py up     --name main     # 3 nodes x 2 log dirs (JBOD), racks /dc1/r1,/dc1/r2,/dc2/r1,
                                        # with the broker plugin's replica selector (follower fetching)
    kafka_rig.py up     --name legacy   # 2 nodes x 2 log dirs, metadata.version 4.2-IV1 (pre-KIP-1066)
    kafka_rig.py up     --name secure   # 2 nodes x 2 log dirs, SASL_SSL (SCRAM-SHA-512) + mutual TLS, ACLs
    kafka_rig.py up     --name tiered   # 2 nodes x 1 log dir, tiered storage (KIP-405) on Kafka's own
                                        # LocalTieredStorage (a shared dir): started by its test only
    kafka_rig.py up     --name disk     # 2 nodes x 2 log dirs, node 2's second dir a 64 MiB tmpfs of its
                                        # own (it really fills; root): started by its test only
    kafka_rig.py up     --name zk --zookeeper --kafka-version 3.9.2 --base-port 17092
                                        # ZooKeeper mode (Kafka 3.9 and older): a ZooKeeper server of the
                                        # release's own jars, brokers with broker.id and zookeeper.connect
    kafka_rig.py status --name main
    kafka_rig.py stop-node  --name main --node 3   # SIGTERM one node's JVM (data kept)
    kafka_rig.py start-node --name main --node 3   # start it again (same config and data)
    kafka_rig.py start-node --name main --node 3 --empty-data   # ... on empty data dirs (a new volume)
    kafka_rig.py down   --name main

The jars come from tests/rig/kafka/fetch.sh (cache outside the repo). Each node runs
`java -cp libs/* kafka.Kafka server.properties` with a 768 MB heap (KP_KAFKA_HEAP); the main cluster also
has the broker plugin's jar (scripts/build-broker-plugin.sh, cached outside the repo) on its classpath and
its `replica.selector.class` set (MultiLevelRackAwareReplicaSelector). Storage is formatted
with the storage tool (random cluster id; Kafka 3.9 and newer: a dynamic quorum via --initial-controllers,
3.7 and 3.8: a static one, controller.quorum.voters). Any release from 3.7 runs
(`--kafka-version`, or `--libs DIR`: the version is read from its kafka_2.13 jar); settings an older
release does not know are left out of its server.properties. `--zookeeper` (releases before 4.0, any
from 2.x on: the compatibility tests bring a pre-KIP-455 broker up this way) starts a ZooKeeper server
(ZooKeeperServerMain, its data dir and config in the cluster's dir, clientPort the controller base port,
its JVM marked like the brokers', so `down` stops it, after them) and brokers without KRaft: no
process.roles, no storage format, `broker.id` and `zookeeper.connect`; fetch.sh keeps the ZooKeeper of a
release before 2.4 in `<version>/zookeeper` beside `libs` (see fetch.sh). Data and logs live in
`.rig/kafka-<name>/`; connection details are merged into `.rig/rig.json` under `kafka` (main),
`kafkaLegacy` (legacy) or `kafka-<name>` (others, e.g. `kafka-secure`), preserving every other key (e.g.
`k8s`). The secure profile (or `--secure`) has no plaintext listener: certificates, SCRAM users,
StandardAuthorizer and the operator's ACLs come from tests/rig/kafka_security.py, and its rig.json entry
has a `security` section (bootstraps per listener, PEM paths, users, ACLs, client properties files).

`up` fails fast (exit 2, one clear message) when a port is taken, java or the jars are missing; on any
failure it stops every JVM it started and removes its state. `down` stops the JVMs (SIGTERM, then
SIGKILL), checks the ports are free and removes the state. Exit codes: 0 ok, 1 failure, 2 bad input.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `tests.rig` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig import jvm_cds, kafka_security, small_disk
from tests.rig.cache import cache_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_DIR = Path(__file__).resolve().parent / "kafka"
DEFAULT_KAFKA_VERSION = "4.4.0"
# the tiered cluster's release: Kafka's LocalTieredStorage ships only in the kafka-storage *test* jar, which
# Maven Central serves for 4.3.1 but not 4.3.2 or 4.4.0
TIERED_KAFKA_VERSION = "4.3.1"
HOST = "127.0.0.1"
FORMAT_TIMEOUT_S = 120.0
MARKER = "kafka.placement.rig"  # -Dkafka.placement.rig=<node dir>: identifies the JVMs this rig started
# Every default port is shifted by KP_RIG_PORT_OFFSET (default 0): two checkouts on one machine can each
# run their own rig (e.g. KP_RIG_PORT_OFFSET=1000 in the second one).
PORT_OFFSET = int(os.environ.get("KP_RIG_PORT_OFFSET", "0"))


def shifted(port: int) -> int:
    """A profile's default port moved by PORT_OFFSET (0, "pick free ports", stays 0)."""
    return port + PORT_OFFSET if port else 0


# the listener pods reach (`--pod-address`, the node rig's bridge address): broker port + this
POD_PORT_SHIFT = 1000
HEAP = os.environ.get("KP_KAFKA_HEAP", "768m")  # thousands of partitions per broker need more than 320m
JVM_OPTS = (
    f"-Xmx{HEAP}",
    "-Xms128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:MaxMetaspaceSize=160m",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)
# The broker plugin (broker-plugin/): the main cluster's brokers choose consumers' replicas with it.
BROKER_PLUGIN_BUILD = REPO_ROOT / "scripts" / "build-broker-plugin.sh"
REPLICA_SELECTOR = "io.kafkaplacement.broker.MultiLevelRackAwareReplicaSelector"


class RigError(Exception):
    """A failure with a message for the user; exit_code 2 = bad input/precondition, 1 = other."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class Profile:
    """Defaults of a named cluster."""

    nodes: int
    dirs: int
    racks: tuple[str, ...]
    base_port: int
    controller_base_port: int
    release_version: str | None  # None: the storage tool's default (latest production)
    mtls_base_port: int = 0  # > 0: secured (SASL_SSL on base_port, mutual TLS here); see kafka_security.py
    replica_selector: bool = False  # the broker plugin on the classpath, replica.selector.class set
    tiered: bool = False  # remote log storage on, LocalTieredStorage (the kafka-storage test jar)
    small_dir_mib: int = 0  # > 0: the last node's last log dir on a tmpfs of this size (small_disk.py)
    kafka_version: str | None = None  # its release when none is asked (None: DEFAULT_KAFKA_VERSION)
    zookeeper: bool = False  # ZooKeeper mode (releases before 4.0): a ZooKeeper server, no KRaft


PROFILES: dict[str, Profile] = {
    "main": Profile(3, 2, ("/dc1/r1", "/dc1/r2", "/dc2/r1"), 29092, 29192, None, replica_selector=True),
    "legacy": Profile(2, 2, ("/dc1/r1", "/dc2/r1"), 29392, 29492, "4.2-IV1"),
    "secure": Profile(2, 2, ("/dc1/r1", "/dc2/r1"), 29592, 29692, None, 29792),
    "tiered": Profile(
        2, 1, ("/dc1/r1", "/dc2/r1"), 28292, 28392, None, tiered=True, kafka_version=TIERED_KAFKA_VERSION
    ),
    "disk": Profile(2, 2, ("/dc1/r1", "/dc2/r1"), 28492, 28592, None, small_dir_mib=64),
}
# Kafka's test remote storage manager: a directory shared by the brokers stands for the object store.
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
GENERIC = Profile(3, 2, ("/dc1/r1", "/dc1/r2", "/dc2/r1"), 0, 0, None)


@dataclass(frozen=True)
class Node:
    """One combined broker+controller."""

    id: int
    port: int
    controller_port: int
    rack: str
    home: Path
    dirs: int
    mtls_port: int = 0  # the mutual-TLS listener of a secured cluster (0: plaintext cluster)

    @property
    def ports(self) -> tuple[tuple[int, str], ...]:
        """(port, listener) of every listener of the node."""
        out = [(self.port, "broker" if not self.mtls_port else "SASL_SSL")]
        if self.controller_port:  # none in ZooKeeper mode
            out.append((self.controller_port, "controller"))
        if self.mtls_port:
            out.append((self.mtls_port, "MTLS"))
        return tuple(out)

    @property
    def log_dirs(self) -> list[Path]:
        return [self.home / f"data-{d}" for d in range(self.dirs)]

    @property
    def meta_dir(self) -> Path:
        return self.home / "meta"

    @property
    def config(self) -> Path:
        return self.home / "server.properties"


@dataclass(frozen=True)
class Cluster:
    """Everything `up` needs to start one named cluster."""

    name: str
    nodes: tuple[Node, ...]
    dirs: int
    release_version: str | None
    kafka_version: str
    libs: Path
    rig_dir: Path
    secure: bool = False
    security: dict[str, Any] | None = None  # of a secure cluster: PEM paths and users (kafka_security.py)
    pod_address: str = ""  # a plaintext listener on this address (the node rig's bridge) for pods
    plugin_jars: tuple[Path, ...] = ()  # on the brokers' classpath after Kafka's jars
    replica_selector: str = ""  # replica.selector.class ("": Kafka's default, the leader)
    tiered: bool = False  # remote log storage (KIP-405) on LocalTieredStorage in remote_dir
    small_dir_mib: int = 0  # > 0: ``small_dir`` is a tmpfs of this size
    zookeeper_port: int = 0  # > 0: ZooKeeper mode, its server's clientPort (no KRaft controllers)

    @property
    def zookeeper(self) -> bool:
        return self.zookeeper_port > 0

    @property
    def zookeeper_home(self) -> Path:
        """The ZooKeeper server's dir: its config, data dir and log (its JVM's marker)."""
        return self.data_dir / "zookeeper"

    @property
    def zookeeper_libs(self) -> Path:
        """The ZooKeeper server's classpath: fetch.sh's ``zookeeper`` dir beside ``libs`` when it made one
        (a release before 2.4, whose brokers run a newer ZooKeeper client), else Kafka's own jars."""
        own = self.libs.parent / "zookeeper"
        return own if own.is_dir() else self.libs

    @property
    def quorum(self) -> str:
        """How the cluster is coordinated: ``zookeeper``, or the KRaft quorum's ``dynamic`` / ``static``."""
        return "zookeeper" if self.zookeeper else ("dynamic" if self.dynamic_quorum else "static")

    @property
    def dynamic_quorum(self) -> bool:
        """KIP-853's dynamic controller quorum (Kafka 3.9+); older releases have static voters only."""
        return not self.zookeeper and version_key(self.kafka_version) >= DYNAMIC_QUORUM_SINCE

    @property
    def small_dir(self) -> Path:
        """The last node's last log dir (a small filesystem of its own when ``small_dir_mib``)."""
        return self.nodes[-1].log_dirs[-1]

    @property
    def remote_dir(self) -> Path:
        return self.data_dir / "remote"

    @property
    def pod_bootstrap(self) -> str:
        return ",".join(f"{self.pod_address}:{n.port + POD_PORT_SHIFT}" for n in self.nodes)

    @property
    def pki_dir(self) -> Path:
        return self.data_dir / "pki"

    @property
    def mtls_bootstrap(self) -> str:
        return ",".join(f"{HOST}:{n.mtls_port}" for n in self.nodes)

    def admin_conf(self) -> dict[str, Any]:
        """librdkafka settings of the rig's own (super user) connections, beyond bootstrap.servers."""
        return kafka_security.admin_client_conf(self.security) if self.security else {}

    @property
    def data_dir(self) -> Path:
        return self.rig_dir / f"kafka-{self.name}"

    @property
    def key(self) -> str:
        return rig_key(self.name)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{n.port}" for n in self.nodes)


def rig_key(name: str) -> str:
    """The key of a cluster in rig.json."""
    return {"main": "kafka", "legacy": "kafkaLegacy"}.get(name, f"kafka-{name}")


def default_rig_dir() -> Path:
    return Path(os.environ.get("KP_RIG_DIR", str(REPO_ROOT / ".rig")))


def rig_parser(
    prog: str, doc: str | None, stop_timeout: bool = True
) -> tuple[argparse.ArgumentParser, Any, argparse.ArgumentParser]:
    """A rig script's parser: (the parser, its subcommands, the options every subcommand shares:
    --rig-dir and, for scripts that stop processes, --stop-timeout)."""
    p = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0] if doc else "")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--rig-dir",
        default=str(default_rig_dir()),
        help="rig state dir holding rig.json (default: $KP_RIG_DIR or <repo>/.rig)",
    )
    if stop_timeout:
        common.add_argument(
            "--stop-timeout",
            type=float,
            default=20.0,
            help="seconds between SIGTERM and SIGKILL (default 20)",
        )
    return p, sub, common


# Kafka 3.9 (KIP-853) formats a dynamic quorum (--initial-controllers, controller.quorum.bootstrap.servers);
# 3.7 and 3.8 know only static voters (controller.quorum.voters)
DYNAMIC_QUORUM_SINCE = (3, 9)
OLDEST_KAFKA = (3, 7)  # the oldest release the rig runs in KRaft (tests/compat/smoke.py checks each since)
ZOOKEEPER_UNTIL = (4, 0)  # the first release without ZooKeeper mode (KIP-833)
# server.properties settings of KRaft only, left out in ZooKeeper mode
KRAFT_ONLY = ("metadata.max.idle.interval.ms",)
# server.properties settings newer than some release the rig runs: (major, minor) of the first that knows it
SETTING_SINCE = {
    "share.coordinator.state.topic.replication.factor": (4, 0),
    "share.coordinator.state.topic.min.isr": (4, 0),
}


def version_key(version: str) -> tuple[int, int]:
    """(major, minor) of a Kafka version like 4.3.1 or 3.9.0-rc1; (0, 0) when it is not one."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def kafka_version_of(libs: Path) -> str | None:
    """The Kafka version of the jars in ``libs``, read from its kafka_2.13-<version>.jar (kafka_2.12 for a
    release before 2.4, which has no Scala 2.13 build; None: none, or more than one)."""
    found = {
        re.sub(r"^kafka_2\.1[0-9]-", "", j.name).removesuffix(".jar")
        for j in libs.glob("kafka_2.1[0-9]-*.jar")
        if not j.name.endswith(("-test.jar", "-sources.jar", "-javadoc.jar"))
    }
    return found.pop() if len(found) == 1 else None


def kafka_jar(libs: Path, version: str) -> Path | None:
    """The broker's jar of ``version`` in ``libs`` (Scala 2.13, or 2.12 before Kafka 2.4); None: absent."""
    return next((j for j in sorted(libs.glob(f"kafka_2.1[0-9]-{version}.jar"), reverse=True)), None)


def default_libs(version: str) -> Path:
    return cache_dir() / "kafka" / version / "libs"


def tiered_storage_jar(libs: Path, version: str) -> Path:
    """The kafka-storage test jar (LocalTieredStorage) fetch.sh keeps beside ``libs``."""
    return libs.parent / "tiered" / f"kafka-storage-{version}-test.jar"


def broker_plugin_jar() -> Path:
    """Where scripts/build-broker-plugin.sh caches the jar of the current broker-plugin/ sources."""
    try:
        out = subprocess.run(
            ["bash", str(BROKER_PLUGIN_BUILD), "--path"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise RigError(f"kafka rig: cannot locate the broker plugin's jar: {e}") from e
    return Path(out.stdout.strip().splitlines()[-1])


def check_plugins(jars: Sequence[Path]) -> None:
    missing = [str(j) for j in jars if not j.is_file()]
    if any(j.name.endswith("-test.jar") for j in jars if not j.is_file()):
        raise RigError(
            f"kafka rig: Kafka's tiered storage test jar is missing ({', '.join(missing)}): run "
            "`bash tests/rig/kafka/fetch.sh --tiered` (or `make rig-build`)",
            2,
        )
    if missing:
        raise RigError(
            f"kafka rig: the broker plugin's jar is not built ({', '.join(missing)} is missing): run "
            "`bash scripts/build-broker-plugin.sh` (or `make rig-build`)",
            2,
        )


def kafka_uuid() -> str:
    """A random Kafka Uuid string (url-safe base64 of 16 bytes, no padding, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


# ---------------------------------------------------------------------------------------- rig.json


@contextlib.contextmanager
def rig_json_locked(rig_dir: Path) -> Iterator[dict[str, Any]]:
    """Read-modify-write .rig/rig.json under an exclusive lock (.rig/rig.json.lock); keeps other keys."""
    rig_dir.mkdir(parents=True, exist_ok=True)
    path = rig_dir / "rig.json"
    with open(rig_dir / "rig.json.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        yield data
        if data:
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            os.replace(tmp, path)
        elif path.exists():
            path.unlink()


def rig_entry(rig_dir: Path, key: str) -> dict[str, Any] | None:
    """Key ``key`` of ``<rig_dir>/rig.json`` (None when the file or the key is absent)."""
    path = rig_dir / "rig.json"
    if not path.exists():
        return None
    entry = json.loads(path.read_text()).get(key)
    return entry if isinstance(entry, dict) else None


def read_entry(rig_dir: Path, name: str) -> dict[str, Any] | None:
    return rig_entry(rig_dir, rig_key(name))


# ---------------------------------------------------------------------------------------- processes


def marker_of(node_home: Path) -> str:
    return f"-D{MARKER}={node_home}"


def process_args() -> Iterator[tuple[int, list[bytes]]]:
    """(pid, command line split at NUL) of every process this user can read."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                yield int(proc.name), (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue


def rig_pids(data_dir: Path) -> dict[int, str]:
    """Every live JVM started under ``data_dir`` (found by its -D marker), pid -> marker value."""
    found: dict[int, str] = {}
    prefix = f"-D{MARKER}={data_dir}/".encode()
    for pid, args in process_args():
        for arg in args:
            if arg.startswith(prefix):
                found[pid] = arg.decode().split("=", 1)[1]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child that exited) is not alive
        return "Z" not in (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False


def stop_pids(pids: Sequence[int], timeout: float) -> list[int]:
    """SIGTERM, wait up to `timeout`, then SIGKILL; returns the pids that needed SIGKILL."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        reap()
        time.sleep(0.2)
    killed = [p for p in pids if alive(p)]
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        reap()
        time.sleep(0.1)
    reap()
    return killed


def reap() -> None:
    """Collect exited children of this process (JVMs started by a failed `up`)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


# ---------------------------------------------------------------------------------------- ports


def port_free(port: int) -> bool:
    """True if 127.0.0.1:port can be bound the way the JVM binds it (SO_REUSEADDR, as Java does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def busy_ports(ports: Sequence[int], wait: float = 10.0) -> list[int]:
    """The ports still bound after waiting up to ``wait`` seconds for them to be freed."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not all(port_free(p) for p in ports):
        time.sleep(0.2)
    return [p for p in ports if not port_free(p)]


def port_open(port: int, timeout: float = 0.5, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_ports(cluster: Cluster) -> None:
    taken = []
    for n in cluster.nodes:
        for port, what in n.ports:
            if not port_free(port):
                taken.append(f"{HOST}:{port} (node {n.id} {what} listener)")
    if cluster.zookeeper and not port_free(cluster.zookeeper_port):
        taken.append(f"{HOST}:{cluster.zookeeper_port} (the ZooKeeper server)")
    if taken:
        raise RigError(
            f"kafka rig '{cluster.name}': port already in use: {', '.join(taken)}. "
            f"Stop whatever listens there (`{Path(sys.argv[0]).name} status --name {cluster.name}`; "
            "`ss -ltnp`) or choose other ports with --base-port/--controller-base-port.",
            2,
        )


# ---------------------------------------------------------------------------------------- up


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise RigError(
            "kafka rig: java not found (set JAVA_HOME or put Java 17+ on PATH; "
            "Debian: apt-get install openjdk-17-jre-headless)",
            2,
        )
    return java


def check_libs(libs: Path, version: str, zookeeper: bool = False) -> None:
    if kafka_jar(libs, version) is None or not (libs / ".complete").exists():
        raise RigError(
            f"kafka rig: Kafka {version} jars not found in {libs}: run "
            f"`KAFKA_VERSION={version} bash tests/rig/kafka/fetch.sh` (or `make rig-build`), "
            "or pass --libs DIR",
            2,
        )
    if zookeeper and version_key(version) >= ZOOKEEPER_UNTIL:
        raise RigError(
            f"kafka rig: Kafka {version} has no ZooKeeper mode (removed in "
            f"{'.'.join(map(str, ZOOKEEPER_UNTIL))}, KIP-833): --zookeeper needs 3.9 or older",
            2,
        )
    if not zookeeper and version_key(version) < OLDEST_KAFKA:
        raise RigError(
            f"kafka rig: Kafka {version} is older than the oldest release the rig runs "
            f"({'.'.join(map(str, OLDEST_KAFKA))}: KRaft with JBOD)",
            2,
        )


def server_properties(cluster: Cluster, node: Node) -> str:
    n = len(cluster.nodes)
    # Internal topics at RF 2 (of 3 nodes) so a broker can be decommissioned in tests, as on a real
    # cluster where RF < broker count; min.insync.replicas 1 keeps producers going during moves.
    rf = min(2, n)
    props: dict[str, Any] = {
        "process.roles": "broker,controller",
        "node.id": node.id,
        "listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{node.port},CONTROLLER://{HOST}:{node.controller_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "broker.rack": node.rack,
        "log.dirs": ",".join(str(d) for d in node.log_dirs),
        "metadata.log.dir": str(node.meta_dir),
        # quick-start friendly, small and deterministic for tests
        "num.partitions": 1,
        "default.replication.factor": rf,
        "min.insync.replicas": 1,
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 5,
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 5,
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        "log.segment.bytes": 1048576,
        "log.cleaner.threads": 1,
        "log.cleaner.dedupe.buffer.size": 8388608,
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.replica.fetchers": 1,
        "num.recovery.threads.per.data.dir": 1,
        "background.threads": 2,
        # the active controller appends a no-op record to an idle metadata log every 5 s, not 500 ms: an idle
        # 3-node cluster then spends about a quarter less CPU (docs/benchmarks.md, make test and set-up times)
        "metadata.max.idle.interval.ms": 5000,
    }
    if cluster.zookeeper:  # no KRaft: a broker registers in ZooKeeper under its broker.id
        for key in ("process.roles", "node.id", "controller.listener.names", "metadata.log.dir", *KRAFT_ONLY):
            props.pop(key, None)
        props["broker.id"] = node.id
        props["zookeeper.connect"] = f"{HOST}:{cluster.zookeeper_port}"
        props["zookeeper.connection.timeout.ms"] = 18000
        props["listeners"] = props["advertised.listeners"] = f"PLAINTEXT://{HOST}:{node.port}"
        props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT"
    elif cluster.dynamic_quorum:  # KIP-853: the controllers' endpoints are advertised too
        props["controller.quorum.bootstrap.servers"] = ",".join(
            f"{HOST}:{x.controller_port}" for x in cluster.nodes
        )
    else:  # static voters; before 3.9 a broker may not advertise a controller listener
        props["controller.quorum.voters"] = ",".join(
            f"{x.id}@{HOST}:{x.controller_port}" for x in cluster.nodes
        )
        props["advertised.listeners"] = f"PLAINTEXT://{HOST}:{node.port}"
    release = version_key(cluster.kafka_version)
    for key, since in SETTING_SINCE.items():
        if release < since:
            props.pop(key, None)
    if cluster.replica_selector:
        props["replica.selector.class"] = cluster.replica_selector
    if cluster.tiered:
        props.update(
            {
                "remote.log.storage.system.enable": "true",
                "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
                "rsm.config.dir": str(cluster.remote_dir),
                "remote.log.metadata.manager.listener.name": "PLAINTEXT",
                "rlmm.config.remote.log.metadata.topic.replication.factor": min(2, n),
                "rlmm.config.remote.log.metadata.topic.num.partitions": 1,
                # tier and delete locally within seconds, not minutes (defaults 30 s, 5 min and a first
                # retention check 30 s after start)
                "remote.log.manager.task.interval.ms": 500,
                "log.retention.check.interval.ms": 1000,
                "log.initial.task.delay.ms": 0,
            }
        )
    if cluster.small_dir_mib:  # retention frees room in the small dir within a second, not five minutes
        props["log.retention.check.interval.ms"] = 1000
    if cluster.pod_address and not cluster.security:
        pods = f"PODS://{cluster.pod_address}:{node.port + POD_PORT_SHIFT}"
        props["listeners"] = f"{props['listeners']},{pods}"
        props["advertised.listeners"] = f"{props['advertised.listeners']},{pods}"
        props["listener.security.protocol.map"] += ",PODS:PLAINTEXT"
    if cluster.security:
        props.update(
            kafka_security.server_props(cluster.security, node.port, node.mtls_port, node.controller_port)
        )
    lines = [f"# generated by tests/rig/kafka_rig.py for cluster '{cluster.name}', node {node.id}"]
    lines += [f"{k}={v}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def java_cmd(
    java: str, cluster: Cluster, node: Node, main: str, *args: str, libs: Path | None = None
) -> list[str]:
    """A JVM of the rig: ``main`` on Kafka's jars (or ``libs``), marked with ``node``'s dir, logging to its
    ``logs/server.log`` (log4j2; log4j 1 for a release before 2.4, which ships that). A broker or the
    storage tool on Kafka's jars maps the classes' archive of its JDK and classpath (jvm_cds.py); while
    there is none, the cluster's first broker writes one at its exit."""
    cds: list[str] = []
    if libs is None and main in ("kafka.Kafka", "kafka.tools.StorageTool"):
        train = main == "kafka.Kafka" and node.id == cluster.nodes[0].id
        cds = jvm_cds.options(java, [cluster.libs, *cluster.plugin_jars], node.home, train)
    return [
        java,
        *JVM_OPTS,
        *cds,
        marker_of(node.home),
        f"-Dkafka.logs.dir={node.home / 'logs'}",
        f"-Dlog4j2.configurationFile={KAFKA_DIR / 'log4j2.properties'}",
        f"-Dlog4j.configuration=file:{KAFKA_DIR / 'log4j.properties'}",
        "-cp",
        os.pathsep.join([f"{libs or cluster.libs}/*", *(str(j) for j in cluster.plugin_jars)]),
        main,
        *args,
    ]


ZOOKEEPER_HEAP = "128m"


def zookeeper_node(cluster: Cluster) -> Node:
    """The ZooKeeper server as a rig process (id 0): its dir carries its JVM's marker and its log."""
    return Node(0, cluster.zookeeper_port, 0, "", cluster.zookeeper_home, 0)


def zookeeper_config(cluster: Cluster) -> str:
    """zoo.cfg of a standalone ZooKeeper server on loopback (no admin server, no four-letter words)."""
    return "\n".join(
        [
            f"# generated by tests/rig/kafka_rig.py for cluster '{cluster.name}'",
            f"dataDir={cluster.zookeeper_home / 'data'}",
            f"clientPort={cluster.zookeeper_port}",
            f"clientPortAddress={HOST}",
            "tickTime=2000",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "",
        ]
    )


def start_zookeeper(java: str, cluster: Cluster, timeout: float) -> subprocess.Popen[bytes]:
    """Start the cluster's ZooKeeper server (ZooKeeperServerMain) and wait until it accepts connections."""
    zk = zookeeper_node(cluster)
    (zk.home / "data").mkdir(parents=True)
    (zk.home / "logs").mkdir()
    config = zk.home / "zoo.cfg"
    config.write_text(zookeeper_config(cluster))
    cmd = java_cmd(
        java, cluster, zk, "org.apache.zookeeper.server.ZooKeeperServerMain", str(config),
        libs=cluster.zookeeper_libs,
    )  # fmt: skip
    cmd[1:2] = [f"-Xmx{ZOOKEEPER_HEAP}"]  # JVM_OPTS[0] is the brokers' heap
    with open(zk.home / "stdout.log", "wb") as out:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=zk.home,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not port_open(cluster.zookeeper_port):
        code = proc.poll()
        if code is not None or time.monotonic() > deadline:
            why = f"exited with {code}" if code is not None else f"not listening after {timeout:g}s"
            raise RigError(f"kafka rig '{cluster.name}': ZooKeeper {why}:\n{log_tail(zk)}")
        time.sleep(0.2)
    return proc


def format_storage(java: str, cluster: Cluster, timeout: float) -> str:
    """Format every node's dirs (in parallel); returns the metadata version the tool used."""
    cluster_id = kafka_uuid()
    initial = ",".join(f"{n.id}@{HOST}:{n.controller_port}:{kafka_uuid()}" for n in cluster.nodes)
    procs: list[tuple[Node, subprocess.Popen[str]]] = []
    for node in cluster.nodes:
        args = ["format", "--config", str(node.config), f"--cluster-id={cluster_id}"]
        if cluster.dynamic_quorum:  # else the static voters of server.properties
            args.append(f"--initial-controllers={initial}")
        if cluster.release_version:
            args.append(f"--release-version={cluster.release_version}")
        if cluster.security:
            args += kafka_security.format_args(cluster.security["users"])
        cmd = java_cmd(java, cluster, node, "kafka.tools.StorageTool", *args)
        procs.append(
            (
                node,
                subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
                ),
            )
        )
    versions: set[str] = set()
    errors: list[str] = []
    for node, proc in procs:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            errors.append(f"node {node.id}: storage format timed out after {timeout:.0f}s")
            continue
        (node.home / "format.log").write_text(out)
        if proc.returncode != 0:
            tail = "\n    ".join(without_stack_frames(out)[-8:])
            errors.append(f"node {node.id}: storage format failed (exit {proc.returncode}):\n    {tail}")
        versions.update(re.findall(r"metadata\.version (\S+?)\.?$", out, re.MULTILINE))
    if errors:
        bad_input = any("release" in e.lower() or "metadata.version" in e for e in errors)
        raise RigError(f"kafka rig '{cluster.name}': " + "\n".join(errors), 2 if bad_input else 1)
    return versions.pop() if len(versions) == 1 else (cluster.release_version or "unknown")


def without_stack_frames(out: str) -> list[str]:
    """A Java tool's output lines without its stack frames (``\tat ...``, ``... 5 more``): the message."""
    return [x for x in out.strip().splitlines() if not re.match(r"\s+(at |\.\.\. \d+ more)", x)]


def log_tail(node: Node, lines: int = 12) -> str:
    out = []
    for f in (node.home / "stdout.log", node.home / "logs" / "server.log"):
        if f.exists():
            text = f.read_text(errors="replace").strip().splitlines()
            if not text:
                continue
            relevant = [x for x in text if " ERROR " in x or "Exception" in x or "FATAL" in x] or text
            out.append(f"  --- {f}:\n    " + "\n    ".join(relevant[-lines:]))
    return "\n".join(out)


def wait_ready(
    cluster: Cluster,
    procs: dict[int, subprocess.Popen[bytes]],
    timeout: float,
    expect: set[int] | None = None,
) -> None:
    """Wait until every broker in ``procs`` answers and sees the brokers ``expect`` (default: all of the
    cluster's) unfenced."""
    wanted = expect if expect is not None else {n.id for n in cluster.nodes}
    try:
        from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]
    except ImportError as e:
        raise RigError(f"kafka rig: confluent-kafka is not importable ({e}); run `make venv`", 2) from e
    deadline = time.monotonic() + timeout
    pending = set(procs)
    last_error = "no broker answered yet"
    while True:
        for node in cluster.nodes:
            if node.id not in procs:
                continue
            code = procs[node.id].poll()
            if code is not None:
                raise RigError(
                    f"kafka rig '{cluster.name}': node {node.id} exited with {code} while "
                    f"starting:\n{log_tail(node)}"
                )
        if time.monotonic() > deadline:
            logs = "\n".join(log_tail(n, 5) for n in cluster.nodes if n.id in pending)
            raise RigError(
                f"kafka rig '{cluster.name}': not ready after {timeout:g}s (last: {last_error})\n{logs}"
            )
        for node in cluster.nodes:
            if node.id in pending and port_open(node.port):
                admin = AdminClient(
                    {
                        "bootstrap.servers": f"{HOST}:{node.port}",
                        "socket.connection.setup.timeout.ms": 3000,
                        "log_level": 0,
                        **cluster.admin_conf(),
                    }
                )
                try:
                    # the metadata's brokers (KRaft: the unfenced ones), never librdkafka's DescribeCluster:
                    # it aborts the process on an answer listing no broker, a starting cluster's (issue
                    # 55; tests/unit/kafka/test_empty_metadata.py)
                    seen = admin.list_topics(timeout=5)
                    res = ConfigResource("broker", str(node.id))
                    admin.describe_configs([res], request_timeout=5)[res].result(timeout=8)
                    ids = {int(b) for b in seen.brokers}
                    if wanted <= ids:
                        pending.discard(node.id)
                    else:
                        last_error = f"node {node.id} sees brokers {sorted(ids)}, not all of {sorted(wanted)}"
                except Exception as e:  # not ready yet: retry until the deadline
                    last_error = f"node {node.id}: {e}"
        if not pending:
            return
        time.sleep(0.5)


def grant_acls(cluster: Cluster) -> None:
    """Grant the operator's principal exactly its ACLs (kafka_security.OPERATOR_ACLS), as the super user."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0, **cluster.admin_conf()})
    try:
        kafka_security.grant_operator_acls(admin)
    except Exception as e:
        raise RigError(f"kafka rig '{cluster.name}': creating the operator's ACLs failed: {e}") from e


def _terminated(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def build_cluster(args: argparse.Namespace) -> Cluster:
    profile = PROFILES.get(args.name, GENERIC)
    nodes = args.nodes if args.nodes is not None else profile.nodes
    dirs = args.dirs if args.dirs is not None else profile.dirs
    racks = tuple(r.strip() for r in args.racks.split(",")) if args.racks else profile.racks
    base = args.base_port if args.base_port is not None else shifted(profile.base_port)
    cbase = (
        args.controller_base_port
        if args.controller_base_port is not None
        else (shifted(profile.controller_base_port) if args.base_port is None else base + 100)
    )
    release = args.release_version if args.release_version is not None else profile.release_version
    zookeeper = bool(getattr(args, "zookeeper", False) or profile.zookeeper)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}", args.name):
        raise RigError(f"kafka rig: bad --name {args.name!r} (letters, digits, '.', '_', '-')", 2)
    if nodes < 1 or dirs < 1:
        raise RigError("kafka rig: --nodes and --dirs must be >= 1", 2)
    if base <= 0:
        raise RigError(f"kafka rig: cluster '{args.name}' has no default ports: pass --base-port", 2)
    if not racks or any(not r for r in racks):
        raise RigError(f"kafka rig: bad --racks {args.racks!r}", 2)
    secure = bool(args.secure or profile.mtls_base_port)
    mbase = 0
    if secure:
        mbase = (
            shifted(profile.mtls_base_port)
            if profile.mtls_base_port and args.base_port is None
            else base + 200
        )
    if zookeeper and (secure or release or profile.tiered or profile.small_dir_mib):
        raise RigError(
            "kafka rig: --zookeeper runs plaintext brokers only (no --secure, --release-version, tiered or "
            "small-disk profile)",
            2,
        )
    # ZooKeeper mode: no controller listeners; the ZooKeeper server's clientPort is the controller base
    ports = [base + i for i in range(nodes)]
    ports += [cbase] if zookeeper else [cbase + i for i in range(nodes)]
    ports += [mbase + i for i in range(nodes)] if secure else []
    if len(set(ports)) != len(ports) or min(ports) < 1024 or max(ports) > 65535:
        raise RigError(
            f"kafka rig: broker ports {base}+i, controller ports {cbase}+i"
            + (f" and mutual-TLS ports {mbase}+i" if secure else "")
            + " overlap or are out of range 1024-65535",
            2,
        )
    rig_dir = Path(args.rig_dir).resolve()
    data_dir = rig_dir / f"kafka-{args.name}"
    version = args.kafka_version or profile.kafka_version or DEFAULT_KAFKA_VERSION
    libs = Path(args.libs).resolve() if args.libs else default_libs(version)
    if args.libs:  # the jars given say which release they are
        version = kafka_version_of(libs) or version
    plugins = (broker_plugin_jar(),) if profile.replica_selector else ()
    tiered = (tiered_storage_jar(libs, version),) if profile.tiered else ()
    return Cluster(
        name=args.name,
        nodes=tuple(
            Node(
                i + 1,
                base + i,
                cbase + i,
                racks[i % len(racks)],
                data_dir / f"node-{i + 1}",
                dirs,
                mbase + i if secure else 0,
            )
            for i in range(nodes)
        )
        if not zookeeper
        else tuple(
            Node(i + 1, base + i, 0, racks[i % len(racks)], data_dir / f"node-{i + 1}", dirs)
            for i in range(nodes)
        ),
        dirs=dirs,
        release_version=release,
        kafka_version=version,
        libs=libs,
        rig_dir=rig_dir,
        secure=secure,
        pod_address="" if secure else args.pod_address,
        plugin_jars=plugins + tiered,
        replica_selector=REPLICA_SELECTOR if plugins else "",
        tiered=profile.tiered,
        small_dir_mib=profile.small_dir_mib,
        zookeeper_port=cbase if zookeeper else 0,
    )


def find_openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        raise RigError("kafka rig: openssl not found on PATH (Debian: apt-get install openssl)", 2)
    return found


def cmd_up(args: argparse.Namespace) -> int:
    cluster = build_cluster(args)
    existing = read_entry(cluster.rig_dir, cluster.name)
    if existing and cluster_alive(existing):
        print(f"kafka rig '{cluster.name}' already up: {existing['bootstrapServers']}")
        return 0
    if existing or cluster.data_dir.exists() or rig_pids(cluster.data_dir):
        print(f"kafka rig '{cluster.name}': removing stale state in {cluster.data_dir}", file=sys.stderr)
        teardown(cluster.rig_dir, cluster.name, args.stop_timeout, quiet=True)
    check_ports(cluster)
    java = find_java()
    check_libs(cluster.libs, cluster.kafka_version, cluster.zookeeper)
    check_plugins(cluster.plugin_jars)
    openssl = find_openssl() if cluster.secure else ""

    started = time.monotonic()
    procs: dict[int, subprocess.Popen[bytes]] = {}
    signal.signal(signal.SIGTERM, _terminated)  # a killed `up` still stops the JVMs it started
    try:
        if cluster.secure:
            cluster.data_dir.mkdir(parents=True)
            files = kafka_security.make_pki(openssl, cluster.pki_dir)
            cluster = replace(cluster, security={**files, "users": kafka_security.new_users()})
        for node in cluster.nodes:
            (node.home / "logs").mkdir(parents=True)
            node.meta_dir.mkdir()
            for d in node.log_dirs:
                d.mkdir()
            node.config.write_text(server_properties(cluster, node))
        if cluster.small_dir_mib:
            try:
                small_disk.mount(cluster.small_dir, cluster.small_dir_mib)
            except (OSError, subprocess.SubprocessError) as e:
                why = getattr(e, "stderr", None) or e
                raise RigError(
                    f"kafka rig '{cluster.name}': no small filesystem for its dir: {why}", 2
                ) from None
        zookeeper = start_zookeeper(java, cluster, FORMAT_TIMEOUT_S) if cluster.zookeeper else None
        # ZooKeeper-mode brokers format nothing: they write their meta.properties on first start
        metadata_version = format_storage(java, cluster, FORMAT_TIMEOUT_S) if not cluster.zookeeper else None
        for node in cluster.nodes:
            with open(node.home / "stdout.log", "wb") as out:
                procs[node.id] = subprocess.Popen(
                    java_cmd(java, cluster, node, "kafka.Kafka", str(node.config)),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=node.home,
                    start_new_session=True,
                )
        wait_ready(cluster, procs, args.timeout)
        if cluster.security:
            grant_acls(cluster)
        entry: dict[str, Any] = {
            "name": cluster.name,
            "bootstrapServers": cluster.bootstrap,
            **(
                {"podAddress": cluster.pod_address, "podBootstrapServers": cluster.pod_bootstrap}
                if cluster.pod_address
                else {}
            ),
            "version": cluster.kafka_version,
            "quorum": cluster.quorum,
            "releaseVersion": metadata_version,
            **(
                {
                    "zookeeper": {
                        "port": cluster.zookeeper_port,
                        "connect": f"{HOST}:{cluster.zookeeper_port}",
                        "pid": zookeeper.pid if zookeeper is not None else None,
                        "dataDir": str(cluster.zookeeper_home / "data"),
                        "libsDir": str(cluster.zookeeper_libs),
                    }
                }
                if cluster.zookeeper
                else {}
            ),
            "libsDir": str(cluster.libs),
            **(
                {
                    "pluginJars": [str(j) for j in cluster.plugin_jars],
                    "replicaSelector": cluster.replica_selector,
                    **({"tiered": True, "remoteDir": str(cluster.remote_dir)} if cluster.tiered else {}),
                }
                if cluster.plugin_jars
                else {}
            ),
            "dataDir": str(cluster.data_dir),
            **(
                {"smallDir": {"path": str(cluster.small_dir), "mib": cluster.small_dir_mib}}
                if cluster.small_dir_mib
                else {}
            ),
            "nodes": [
                {
                    "id": n.id,
                    "host": HOST,
                    "port": n.port,
                    "controllerPort": n.controller_port,
                    **({"mtlsPort": n.mtls_port} if n.mtls_port else {}),
                    "rack": n.rack,
                    "logDirs": [str(d) for d in n.log_dirs],
                    "metadataDir": str(n.meta_dir),
                    "pid": procs[n.id].pid,
                    "serverLog": str(n.home / "logs" / "server.log"),
                }
                for n in cluster.nodes
            ],
        }
        if cluster.security:
            entry["security"] = kafka_security.rig_json_section(
                cluster.pki_dir,
                {k: v for k, v in cluster.security.items() if k != "users"},
                cluster.security["users"],
                cluster.bootstrap,
                cluster.mtls_bootstrap,
            )
        with rig_json_locked(cluster.rig_dir) as data:
            data[cluster.key] = entry
    except BaseException:
        print(f"kafka rig '{cluster.name}': up failed; stopping what was started", file=sys.stderr)
        stop_pids(sorted(set(p.pid for p in procs.values()) | set(rig_pids(cluster.data_dir))), 10)
        small_disk.unmount_under(cluster.data_dir)
        shutil.rmtree(cluster.data_dir, ignore_errors=True)
        raise
    print(
        f"kafka rig '{cluster.name}' up in {time.monotonic() - started:.1f}s: Kafka {cluster.kafka_version}, "
        + (
            f"ZooKeeper mode (ZooKeeper {HOST}:{cluster.zookeeper_port}), "
            if cluster.zookeeper
            else f"metadata.version {metadata_version}, {cluster.quorum} quorum, "
        )
        + f"bootstrap {cluster.bootstrap} "
        f"(written to {cluster.rig_dir / 'rig.json'} key '{cluster.key}')"
    )
    return 0


# ---------------------------------------------------------------------------------------- down/status


def cluster_alive(entry: dict[str, Any]) -> bool:
    return all(alive(int(n["pid"])) and port_open(int(n["port"])) for n in entry.get("nodes", []))


def teardown(rig_dir: Path, name: str, timeout: float, quiet: bool = False) -> list[str]:
    """Stop every JVM of the cluster, check its ports are free, remove its state; returns problems."""
    data_dir = rig_dir / f"kafka-{name}"
    entry = read_entry(rig_dir, name)
    ours = rig_pids(data_dir)  # only JVMs carrying this cluster's marker, never a recycled pid
    # the brokers first, then a ZooKeeper server: a broker's controlled shutdown needs it
    coordinator = {p for p, home in ours.items() if home == str(data_dir / "zookeeper")}
    # a broker writing the classes' archive at its exit (jvm_cds.py) is stopped first, while its cluster
    # still answers its controlled shutdown, and given the time to write it even when the others are not
    trainees = sorted(p for p, home in ours.items() if p not in coordinator and jvm_cds.training(Path(home)))
    killed = stop_pids(trainees, max(timeout, jvm_cds.TRAINEE_STOP_S)) if trainees else []
    killed += stop_pids(sorted(set(ours) - coordinator - set(trainees)), timeout)
    killed += stop_pids(sorted(coordinator), timeout)
    for pid, home in ours.items():
        jvm_cds.settle(Path(home), clean=pid not in killed)
    problems = []
    if killed and not quiet:
        print(f"kafka rig '{name}': SIGKILLed {killed} after {timeout:.0f}s", file=sys.stderr)
    ports = [
        int(p)
        for n in (entry or {}).get("nodes", [])
        for p in (n["port"], n["controllerPort"], n.get("mtlsPort"))
        if p
    ] + ([int((entry or {})["zookeeper"]["port"])] if (entry or {}).get("zookeeper") else [])
    busy = busy_ports(ports)
    if busy:
        problems.append(f"ports still in use after stopping the JVMs: {busy}")
    left = rig_pids(data_dir)
    if left:
        problems.append(f"JVMs still running: {sorted(left)}")
    problems += [f"not unmounted: {m}" for m in small_disk.unmount_under(data_dir)]
    shutil.rmtree(data_dir, ignore_errors=True)
    with rig_json_locked(rig_dir) as data:
        data.pop(rig_key(name), None)
    return problems


def cmd_down(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    had = read_entry(rig_dir, args.name) is not None or (rig_dir / f"kafka-{args.name}").exists()
    problems = teardown(rig_dir, args.name, args.stop_timeout)
    if problems:
        raise RigError(f"kafka rig '{args.name}': " + "; ".join(problems))
    print(f"kafka rig '{args.name}' " + ("down" if had else "was not up"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_entry(rig_dir, args.name)
    if entry is None:
        orphans = rig_pids(rig_dir / f"kafka-{args.name}")
        print(f"kafka rig '{args.name}': not up" + (f" (orphan JVMs: {sorted(orphans)})" if orphans else ""))
        return 1
    nodes = [
        {**n, "alive": alive(int(n["pid"])), "listening": port_open(int(n["port"]))} for n in entry["nodes"]
    ]
    up = all(n["alive"] and n["listening"] for n in nodes)
    if args.json:
        print(json.dumps({**entry, "nodes": nodes, "up": up}, indent=2))
    else:
        print(
            f"kafka rig '{args.name}': {'up' if up else 'DEGRADED'}  Kafka {entry['version']}  "
            + (
                f"ZooKeeper {entry['zookeeper']['connect']}"
                if entry.get("zookeeper")
                else f"metadata.version {entry['releaseVersion']}"
            )
            + f"  bootstrap {entry['bootstrapServers']}"
        )
        for n in nodes:
            print(
                f"  node {n['id']} pid {n['pid']} {'alive' if n['alive'] else 'DEAD'} "
                f"{n['host']}:{n['port']} ({'listening' if n['listening'] else 'NOT listening'}) "
                f"rack {n['rack']} dirs {', '.join(n['logDirs'])}"
            )
    return 0 if up else 1


# ---------------------------------------------------------------------------------------- nodes


def cluster_of_entry(rig_dir: Path, name: str, entry: dict[str, Any]) -> Cluster:
    """The ``Cluster`` that ``up`` started, rebuilt from its rig.json entry."""
    data_dir = Path(str(entry["dataDir"]))
    return Cluster(
        name=name,
        nodes=tuple(
            Node(
                int(n["id"]),
                int(n["port"]),
                int(n["controllerPort"]),
                str(n["rack"]),
                data_dir / f"node-{int(n['id'])}",
                len(n["logDirs"]),
                int(n.get("mtlsPort") or 0),
            )
            for n in entry["nodes"]
        ),
        dirs=len(entry["nodes"][0]["logDirs"]) if entry["nodes"] else 0,
        release_version=str(entry.get("releaseVersion")) if entry.get("releaseVersion") else None,
        kafka_version=str(entry["version"]),
        libs=Path(str(entry["libsDir"])),
        rig_dir=rig_dir,
        secure="security" in entry,
        security=entry.get("security"),
        pod_address=str(entry.get("podAddress", "")),
        plugin_jars=tuple(Path(str(j)) for j in entry.get("pluginJars", [])),
        replica_selector=str(entry.get("replicaSelector", "")),
        tiered=bool(entry.get("tiered", False)),
        small_dir_mib=int((entry.get("smallDir") or {}).get("mib", 0)),
        zookeeper_port=int((entry.get("zookeeper") or {}).get("port", 0)),
    )


def node_of(args: argparse.Namespace) -> tuple[Cluster, Node]:
    """The cluster (from rig.json) and its node ``--node``; exit 2 when either is unknown."""
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_entry(rig_dir, args.name)
    if entry is None:
        raise RigError(f"kafka rig '{args.name}' is not up (no '{rig_key(args.name)}' in rig.json)", 2)
    cluster = cluster_of_entry(rig_dir, args.name, entry)
    node = next((n for n in cluster.nodes if n.id == args.node), None)
    if node is None:
        raise RigError(
            f"kafka rig '{args.name}' has no node {args.node} (nodes: "
            f"{', '.join(str(n.id) for n in cluster.nodes)})",
            2,
        )
    return cluster, node


def node_pids(cluster: Cluster, node: Node) -> list[int]:
    """Live JVMs carrying this node's marker (never a recycled pid)."""
    return sorted(p for p, home in rig_pids(cluster.data_dir).items() if home == str(node.home))


def set_node_pid(cluster: Cluster, node: Node, pid: int) -> None:
    with rig_json_locked(cluster.rig_dir) as data:
        entry = data.get(cluster.key)
        if isinstance(entry, dict):
            for n in entry.get("nodes", []):
                if int(n["id"]) == node.id:
                    n["pid"] = pid


def cmd_stop_node(args: argparse.Namespace) -> int:
    """SIGTERM one node's JVM (SIGKILL after --stop-timeout), wait until its ports are closed; its data
    and its rig.json entry stay (``start-node`` starts it again)."""
    cluster, node = node_of(args)
    pids = node_pids(cluster, node)
    if not pids:
        raise RigError(f"kafka rig '{cluster.name}': node {node.id} is already stopped", 2)
    started = time.monotonic()
    if args.kill:  # a crash: no controlled shutdown, no flush
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    killed = stop_pids(pids, args.stop_timeout)
    jvm_cds.settle(node.home, clean=not args.kill and not killed)
    if killed:
        print(f"kafka rig '{cluster.name}': SIGKILLed node {node.id} ({killed})", file=sys.stderr)
    deadline = time.monotonic() + 10
    ports = tuple(p for p, _ in node.ports)
    while time.monotonic() < deadline and not all(port_free(p) for p in ports):
        time.sleep(0.2)
    left = node_pids(cluster, node)
    busy = [p for p in ports if not port_free(p)]
    if left or busy:
        raise RigError(
            f"kafka rig '{cluster.name}': node {node.id} did not stop (JVMs {left}, ports in use {busy})"
        )
    print(
        f"kafka rig '{cluster.name}': node {node.id} stopped in {time.monotonic() - started:.1f}s "
        f"(pid {', '.join(map(str, pids))}; data kept in {node.home})"
    )
    return 0


def format_empty_data(java: str, cluster: Cluster, node: Node, timeout: float) -> None:
    """A stopped node's data dirs replaced by empty ones, as a pod that returns on a new volume (its
    metadata dir kept: a volume of its own): the dirs are emptied and formatted with the cluster's id, so
    each gets a meta.properties with a new directory id (Kafka refuses to start on a data dir without
    one; an operator's pod formats it the same way, ``kafka-storage format --ignore-formatted``)."""
    props = (node.meta_dir / "meta.properties").read_text()
    found = re.search(r"^cluster\.id=(\S+)$", props, re.MULTILINE)
    if found is None:
        raise RigError(f"kafka rig '{cluster.name}': node {node.id}: no cluster.id in {node.meta_dir}")
    for d in node.log_dirs:
        shutil.rmtree(d)
        d.mkdir()
    if cluster.zookeeper:  # a ZooKeeper-mode broker formats nothing: empty dirs are a new volume
        return
    args = ["format", "--config", str(node.config), f"--cluster-id={found.group(1)}", "--ignore-formatted"]
    if cluster.dynamic_quorum and re.search(r"^process\.roles=.*controller", node.config.read_text(), re.M):
        args.append("--no-initial-controllers")  # the metadata dir is formatted already: left as it is
    proc = subprocess.run(
        java_cmd(java, cluster, node, "kafka.tools.StorageTool", *args),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        tail = "\n    ".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise RigError(f"kafka rig '{cluster.name}': node {node.id}: formatting empty data dirs:\n    {tail}")


def cmd_start_node(args: argparse.Namespace) -> int:
    """Start one stopped node again with the JVM command of ``up`` (same config and data; with
    ``--empty-data`` on empty data dirs), wait until it answers and the cluster sees every broker that
    runs, record its new pid in rig.json."""
    cluster, node = node_of(args)
    pids = node_pids(cluster, node)
    if pids:
        raise RigError(
            f"kafka rig '{cluster.name}': node {node.id} is already running (pid "
            f"{', '.join(map(str, pids))})",
            2,
        )
    busy = [p for p, _ in node.ports if not port_free(p)]
    if busy:
        raise RigError(
            f"kafka rig '{cluster.name}': cannot start node {node.id}: port already in use: "
            f"{', '.join(f'{HOST}:{p}' for p in busy)}",
            2,
        )
    if not node.config.is_file():
        raise RigError(f"kafka rig '{cluster.name}': node {node.id} has no config {node.config}", 2)
    java = find_java()
    check_libs(cluster.libs, cluster.kafka_version, cluster.zookeeper)
    check_plugins(cluster.plugin_jars)
    if args.empty_data:
        format_empty_data(java, cluster, node, FORMAT_TIMEOUT_S)
    started = time.monotonic()
    proc: subprocess.Popen[bytes] | None = None
    signal.signal(signal.SIGTERM, _terminated)  # a killed `start-node` still stops the JVM it started
    try:
        with open(node.home / "stdout.log", "ab") as out:
            proc = subprocess.Popen(
                java_cmd(java, cluster, node, "kafka.Kafka", str(node.config)),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=node.home,
                start_new_session=True,
            )
        running = {n.id for n in cluster.nodes if n.id != node.id and node_pids(cluster, n)}
        wait_ready(cluster, {node.id: proc}, args.timeout, running | {node.id})  # not the nodes stopped
        set_node_pid(cluster, node, proc.pid)
    except BaseException:
        print(f"kafka rig '{cluster.name}': start-node {node.id} failed; stopping it", file=sys.stderr)
        if proc is not None:  # only the JVM started here: another `up` may own this node dir by now
            stop_pids([proc.pid], 10)
        raise
    print(
        f"kafka rig '{cluster.name}': node {node.id} started in {time.monotonic() - started:.1f}s "
        f"(pid {proc.pid}, {HOST}:{node.port})"
    )
    return 0


# ---------------------------------------------------------------------------------------- CLI


def parser() -> argparse.ArgumentParser:
    p, sub, common = rig_parser("kafka_rig.py", __doc__)
    common.add_argument("--name", default="main", help="cluster name: main (default), legacy, or any")
    up = sub.add_parser("up", parents=[common], help="format and start a cluster, wait until ready")
    up.add_argument("--nodes", type=int, help="combined broker+controller nodes (main 3, legacy 2)")
    up.add_argument("--dirs", type=int, help="log dirs per node (default 2)")
    up.add_argument(
        "--racks", help="comma list of racks, assigned round-robin (e.g. /dc1/r1,/dc1/r2,/dc2/r1)"
    )
    up.add_argument("--base-port", type=int, help="first broker port (main 29092, legacy 29392)")
    up.add_argument(
        "--pod-address",
        default=os.environ.get("KP_NODE_ADDRESS", ""),
        help="also listen (PLAINTEXT, broker port + 1000) on this address, the node rig's bridge, so "
        "pods reach the cluster; plaintext clusters only (default $KP_NODE_ADDRESS)",
    )
    up.add_argument(
        "--controller-base-port",
        type=int,
        help="first controller port (main 29192, legacy 29492; else base-port + 100)",
    )
    up.add_argument(
        "--release-version",
        help="metadata version to format with (legacy: 4.2-IV1; "
        "default: the storage tool's latest production version)",
    )
    up.add_argument(
        "--kafka-version",
        default=os.environ.get("KAFKA_VERSION") or None,
        help=f"Kafka jars version (default $KAFKA_VERSION, else the cluster's: {DEFAULT_KAFKA_VERSION}, the "
        f"tiered cluster {TIERED_KAFKA_VERSION})",
    )
    up.add_argument("--libs", help="directory of Kafka jars (default: fetch.sh's cache for the version)")
    up.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL (SCRAM-SHA-512) + mutual-TLS listeners, StandardAuthorizer and ACLs (profile "
        "secure always; mutual-TLS ports: secure 29792, else base-port + 200)",
    )
    up.add_argument(
        "--zookeeper",
        action="store_true",
        help="ZooKeeper mode (Kafka 3.9 and older): a ZooKeeper server on the controller base port, "
        "brokers with broker.id and zookeeper.connect, no KRaft",
    )
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for readiness (180)")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", parents=[common], help="stop a cluster and remove its state")
    down.set_defaults(func=cmd_down)
    st = sub.add_parser("status", parents=[common], help="show a cluster; exit 1 unless it is up")
    st.add_argument("--json", action="store_true", help="print the rig.json entry with liveness")
    st.set_defaults(func=cmd_status)
    stop = sub.add_parser(
        "stop-node", parents=[common], help="stop one node's JVM (SIGTERM), keep its data and config"
    )
    stop.add_argument("--node", type=int, required=True, help="node id (1..N)")
    stop.add_argument("--kill", action="store_true", help="SIGKILL at once (a crash), no SIGTERM first")
    stop.set_defaults(func=cmd_stop_node)
    start = sub.add_parser(
        "start-node", parents=[common], help="start a stopped node again (same config and data)"
    )
    start.add_argument("--node", type=int, required=True, help="node id (1..N)")
    start.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for it (120)")
    start.add_argument(
        "--empty-data", action="store_true", help="on empty, freshly formatted data dirs (a new volume)"
    )
    start.set_defaults(func=cmd_start_node)
    return p


def run_command(p: argparse.ArgumentParser, argv: Sequence[str] | None, label: str) -> int:
    """Parse and run a rig sub-command: RigError -> its exit code and one line, never a traceback."""
    args = p.parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except RigError as e:
        print(str(e), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # unexpected: one line, not a traceback
        print(f"{label}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parser(), argv, "kafka rig")


if __name__ == "__main__":
    sys.exit(main())
