"""What the rig left behind: its processes still alive and the TCP ports they (or anyone) still listen on.

``leftovers(rig_dir)`` lists every live process that belongs to the rig under ``rig_dir``: Kafka JVMs
carrying its marker, etcd, kube-apiserver and buildkitd with an argument under it (found by
``tests/rig/probes.py``, independent of the rig scripts' own bookkeeping), the node rig's daemons, shims
and containers (an argument under its state dir, or a ``kubepods`` cgroup), and ``kafka-placement``
processes (the demo's operator) whose command line or KUBECONFIG points into it, each with the loopback
ports it listens on; ``main`` also fails on the node rig's bridge (its alias names the rig dir).
``busy_ports(ports)`` says which of the rig's well-known ports are still listened to by any process.
``make demo`` and ``make test`` run this module after tearing the rig down:

    python tests/rig/leftovers.py [--rig-dir DIR] [--ports]   # exit 1 and a list if anything is left

``--ports`` also fails on the rig's well-known ports still in use; leave it off when another checkout's
rig may be running on this machine (ports are shared, processes are told apart by their rig dir).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.rig` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.probes import node_processes, rig_bridges, rig_jvms, rig_processes

REPO_ROOT = Path(__file__).resolve().parents[2]
# the rig's fixed ports (kafka_rig.py profiles main/legacy/secure/tiered, k8s_rig.py, spark_rig.py): brokers,
# controllers, mutual-TLS listeners, etcd, apiserver, Spark master and workers; shifted by
# KP_RIG_PORT_OFFSET as the rig scripts shift them, so each checkout checks its own rig's ports
_DEFAULT_PORTS = (
    *range(29092, 29095),
    *range(29192, 29195),
    *range(29392, 29394),
    *range(29492, 29494),
    *range(29592, 29594),
    *range(29692, 29694),
    *range(29792, 29794),
    *range(29892, 29897),  # the five-node cluster of tests/e2e/test_operator_correlated_failure.py
    *range(29992, 29997),
    *range(28292, 28294),  # the tiered-storage cluster of tests/integration/test_tiered_storage.py
    *range(28392, 28394),
    23790,
    23800,
    26443,
    *range(27077, 27085),
)
RIG_PORTS = tuple(p + int(os.environ.get("KP_RIG_PORT_OFFSET", "0")) for p in _DEFAULT_PORTS)
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


@dataclass(frozen=True, slots=True)
class Leftover:
    """A live process of the rig and the TCP ports it listens on."""

    pid: int
    command: str
    ports: tuple[int, ...]

    def __str__(self) -> str:
        ports = f" listening on {', '.join(map(str, self.ports))}" if self.ports else ""
        return f"pid {self.pid}{ports}: {self.command}"


def listening_sockets() -> dict[int, int]:
    """Socket inode -> port of every listening TCP socket (IPv4 and IPv6) on this machine."""
    found: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                found[int(fields[9])] = int(fields[1].rsplit(":", 1)[1], 16)
    return found


def ports_of(pid: int, sockets: dict[int, int]) -> tuple[int, ...]:
    """The ports process ``pid`` listens on (from its open file descriptors)."""
    ports: set[int] = set()
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return ()
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inode = int(target[8:-1])
            if inode in sockets:
                ports.add(sockets[inode])
    return tuple(sorted(ports))


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (a.decode(errors="replace").split("=", 1) for a in raw.split(b"\0") if b"=" in a)
    return {k: v for k, v in pairs}


def operator_processes(rig_dir: Path) -> list[int]:
    """pids of ``kafka-placement`` processes whose arguments or KUBECONFIG point into ``rig_dir``."""
    needle = str(rig_dir)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        args = _cmdline(int(proc.name))
        if not any(Path(a).name == "kafka-placement" for a in args[:2]):
            continue
        kubeconfig = _environ(int(proc.name)).get("KUBECONFIG", "")
        if any(a.endswith(needle) or needle + "/" in a for a in args) or kubeconfig.startswith(needle + "/"):
            found.append(int(proc.name))
    return found


def leftovers(rig_dir: Path, *, node: bool = True) -> list[Leftover]:
    """Every live process of the rig under ``rig_dir`` (see the module docstring), sorted by pid; with
    ``node`` False the rig ran no node, so the machine's pods (another rig's node) are not its own."""
    rig_dir = rig_dir.resolve()
    pids = set(rig_jvms(rig_dir)) | set(rig_processes(rig_dir)) | set(operator_processes(rig_dir))
    if node:
        pids |= set(node_processes(rig_dir))
    sockets = listening_sockets()
    out = []
    for pid in sorted(pids):
        args = _cmdline(pid)
        if args:  # gone in the meantime otherwise
            command = " ".join(args)
            out.append(
                Leftover(
                    pid, command if len(command) <= 200 else command[:197] + "...", ports_of(pid, sockets)
                )
            )
    return out


def busy_ports(ports: tuple[int, ...] = RIG_PORTS) -> list[int]:
    """Those of ``ports`` some process still listens on."""
    listening = set(listening_sockets().values())
    return sorted(p for p in ports if p in listening)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rig-dir", type=Path, default=Path(os.environ.get("KP_RIG_DIR", REPO_ROOT / ".rig")))
    ap.add_argument("--ports", action="store_true", help="also fail on the rig's ports still in use")
    ap.add_argument(
        "--without-node",
        action="store_true",
        help="the rig ran no node rig: the machine's pods belong to another rig's node (scripts/test.sh)",
    )
    args = ap.parse_args(argv)
    left = leftovers(args.rig_dir, node=not args.without_node)
    ports = busy_ports() if args.ports else []
    bridges = rig_bridges(args.rig_dir)
    for bridge in bridges:
        print(f"leftover: the node rig's bridge {bridge} (tests/rig/node_rig.py net-down)", file=sys.stderr)
    for item in left:
        print(f"leftover: {item}", file=sys.stderr)
    if ports:
        print(f"leftover: rig ports still listening: {', '.join(map(str, ports))}", file=sys.stderr)
    if left or ports or bridges:
        return 1
    print(f"no leftovers of the rig under {args.rig_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
