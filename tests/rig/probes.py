"""Probes the rig's own tests use to check the rig from outside: free loopback ports, leftover processes.

Deliberately independent of kafka_rig.py's and k8s_rig.py's own process detection, so a bug there
cannot hide an orphan from the tests that look for one.
"""

from __future__ import annotations

import socket
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now (the kernel's ephemeral picks)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _cmdlines() -> list[tuple[int, list[bytes]]]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                out.append((int(proc.name), (proc / "cmdline").read_bytes().split(b"\0")))
            except OSError:
                continue
    return out


def rig_jvms(rig_dir: Path) -> list[int]:
    """pids of JVMs carrying the Kafka rig's marker for a cluster under `rig_dir`."""
    marker = f"-Dkafka.placement.rig={rig_dir}".encode()
    return [pid for pid, args in _cmdlines() if any(_names(a, marker, prefix=True) for a in args)]


def _names(arg: bytes, path: bytes, *, prefix: bool = False) -> bool:
    """``arg`` holds ``path`` itself or a path under it (``.rig`` is not ``.rig-kafka``, another lane's
    rig dir of `make test`); with ``prefix`` only at its start."""
    if prefix:
        return arg == path or arg.startswith(path + b"/")
    return arg.endswith(path) or path + b"/" in arg


def rig_processes(
    rig_dir: Path, names: tuple[str, ...] = ("etcd", "kube-apiserver", "buildkitd")
) -> list[int]:
    """pids of etcd/kube-apiserver processes, and of buildkitd (tests/rig/image_rig.py), with an argument
    under `rig_dir` (only those called one of `names`)."""
    needle = str(rig_dir).encode()
    return [
        pid
        for pid, args in _cmdlines()
        if args
        and Path(args[0].decode(errors="replace")).name in names
        and any(_names(a, needle) for a in args[1:])
    ]


def node_processes(rig_dir: Path) -> list[int]:
    """pids of the node rig's daemons and container shims (an argument under `rig_dir`/node) and of
    every process in a `kubepods` cgroup (the node's containers; one node rig per machine)."""
    needle = f"{rig_dir}/node/".encode()
    found = [pid for pid, args in _cmdlines() if any(needle in a for a in args[1:])]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if "/kubepods" in (proc / "cgroup").read_text():
                    found.append(int(proc.name))
            except OSError:
                continue
    return sorted(set(found))


def bridge_alias(rig_dir: Path) -> str:
    """The alias tests/rig/node_rig.py gives its bridge: names the rig dir that owns it (IFALIASZ: 255)."""
    return f"kafka-placement rig {Path(rig_dir).resolve()}"[:255]


def rig_bridges(rig_dir: Path) -> list[str]:
    """Network links whose alias says the rig under `rig_dir` created them (another checkout's are not)."""
    want = bridge_alias(rig_dir)
    found = []
    for link in sorted(Path("/sys/class/net").iterdir()):
        try:
            if (link / "ifalias").read_text().strip() == want:
                found.append(link.name)
        except OSError:
            continue
    return found
