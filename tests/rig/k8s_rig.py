#!/usr/bin/env python3
"""Real Kubernetes control-plane test rig: one etcd and one kube-apiserver on 127.0.0.1.

    k8s_rig.py up       # etcd :23790 (peer :23800), kube-apiserver https://127.0.0.1:26443
    k8s_rig.py status
    k8s_rig.py down

The binaries come from tests/rig/k8s/build.sh (cache outside the repo: $KP_CACHE/k8s/<version>/bin).
Certificates (a CA, the apiserver serving cert, the service-account key pair) are made with the
`openssl` CLI. There is no controller-manager and no scheduler: namespaces, CRDs and custom resources
work (CRDs are established by the apiserver itself); pods are never scheduled and deleted namespaces
stay Terminating. The client authenticates with a static bearer token (user admin, system:masters).

State and logs live in `.rig/k8s/`, the kubeconfig is `.rig/kubeconfig`; connection details are
merged into `.rig/rig.json` under `k8s`, preserving every other key (e.g. `kafka`), under the same
lock as tests/rig/kafka_rig.py.

`up` fails fast (exit 2, one clear message) when a port is taken, a binary or openssl is missing; on
any failure it stops every process it started and removes its state. `down` stops the processes
(SIGTERM, then SIGKILL), checks the ports are free and removes the state. Exit codes: 0 ok, 1 failure,
2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.cache import cache_dir
from tests.rig.kafka_rig import (
    HOST,
    PORT_OFFSET,
    RigError,
    alive,
    busy_ports,
    port_free,
    port_open,
    process_args,
    reap,
    rig_entry,
    rig_json_locked,
    rig_parser,
    run_command,
    stop_pids,
)

DEFAULT_K8S_VERSION = "v1.36.3"
KEY = "k8s"
ETCD_PORT = 23790 + PORT_OFFSET
ETCD_PEER_PORT = 23800 + PORT_OFFSET
APISERVER_PORT = 26443 + PORT_OFFSET
BINARIES = ("kube-apiserver", "kubectl", "etcd", "helm")
DAEMONS = ("etcd", "kube-apiserver")  # started in this order, stopped in reverse
SERVICE_CIDR = "10.96.0.0/16"
ISSUER = "https://kubernetes.default.svc"
CERT_DAYS = 30


@dataclass(frozen=True)
class Rig:
    """Everything `up` needs."""

    rig_dir: Path
    bin_dir: Path
    etcd_port: int
    etcd_peer_port: int
    port: int
    address: str = HOST  # the apiserver's bind and advertise address (the node's bridge address with a node)

    @property
    def with_node(self) -> bool:
        return self.address != HOST

    @property
    def state_dir(self) -> Path:
        return self.rig_dir / "k8s"

    @property
    def kubeconfig(self) -> Path:
        return self.rig_dir / "kubeconfig"

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.port}"

    def bin(self, name: str) -> Path:
        return self.bin_dir / name

    def log(self, daemon: str) -> Path:
        return self.state_dir / f"{daemon}.log"

    def pid_file(self, daemon: str) -> Path:
        return self.state_dir / f"{daemon}.pid"


def default_bin_dir(version: str) -> Path:
    """Where tests/rig/k8s/build.sh puts the binaries: $KP_CACHE/k8s/<version>/bin."""
    return cache_dir() / "k8s" / version / "bin"


def read_entry(rig_dir: Path) -> dict[str, Any] | None:
    return rig_entry(rig_dir, KEY)


# ---------------------------------------------------------------------------------------- processes


def rig_pids(state_dir: Path) -> dict[int, str]:
    """Every live etcd/kube-apiserver started for this rig, pid -> daemon name.

    Ours are recognised by the executable's name plus an argument under the rig's state dir (etcd's
    --data-dir, the apiserver's certificate paths), so a recycled pid or another rig's etcd is never
    taken for ours; pid files are not trusted on their own."""
    found: dict[int, str] = {}
    needle = f"{state_dir}/".encode()
    for pid, args in process_args():
        name = Path(args[0].decode(errors="replace")).name if args and args[0] else ""
        if name in DAEMONS and any(needle in a for a in args[1:]) and alive(pid):
            found[pid] = name
    return found


def log_tail(path: Path, lines: int = 10) -> str:
    if not path.exists():
        return ""
    text = path.read_text(errors="replace").strip().splitlines()
    relevant = [x for x in text if x[:1] in ("E", "F") or '"level":"error"' in x or "error" in x.lower()]
    return f"  --- {path}:\n    " + "\n    ".join((relevant or text)[-lines:])


def check_ports(rig: Rig) -> None:
    taken = [
        f"{HOST}:{port} ({what})"
        for port, what in (
            (rig.etcd_port, "etcd client"),
            (rig.etcd_peer_port, "etcd peer"),
            (rig.port, "kube-apiserver"),
        )
        if not port_free(port)
    ]
    if taken:
        raise RigError(
            f"k8s rig: port already in use: {', '.join(taken)}. Stop whatever listens there "
            f"(`{Path(sys.argv[0]).name} status`; `ss -ltnp`) or choose other ports with "
            "--etcd-port/--etcd-peer-port/--port.",
            2,
        )


def check_binaries(bin_dir: Path) -> None:
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        raise RigError(
            f"k8s rig: {', '.join(missing)} not found in {bin_dir}: run `bash tests/rig/k8s/build.sh` "
            "(or `make rig-build`), or pass --bin-dir DIR",
            2,
        )


def find_openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        raise RigError("k8s rig: openssl not found on PATH (Debian: apt-get install openssl)", 2)
    return found


# ---------------------------------------------------------------------------------------- certs


def run(cmd: Sequence[str], what: str, timeout: float = 60.0) -> str:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RigError(f"k8s rig: {what} timed out after {timeout:.0f}s") from e
    if proc.returncode != 0:
        raise RigError(f"k8s rig: {what} failed (exit {proc.returncode}): {proc.stderr.strip()[-600:]}")
    return proc.stdout


def make_certs(openssl: str, pki: Path, address: str = HOST) -> None:
    """CA, apiserver serving cert (127.0.0.1, the bind address, localhost, kubernetes.default.svc),
    service-account keys."""
    pki.mkdir(parents=True)
    ca_key, ca_crt = pki / "ca.key", pki / "ca.crt"
    run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", str(CERT_DAYS),
         "-keyout", str(ca_key), "-out", str(ca_crt), "-subj", "/CN=kafka-placement-rig-ca",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"], "openssl CA")  # fmt: skip
    key, csr, crt = pki / "apiserver.key", pki / "apiserver.csr", pki / "apiserver.crt"
    run([openssl, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
         "-subj", "/CN=kube-apiserver"], "openssl apiserver key")  # fmt: skip
    ext = pki / "apiserver.ext"
    ext.write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1"
        + (f",IP:{address}" if address != HOST else "")
        + "\n"
    )
    run([openssl, "x509", "-req", "-sha256", "-days", str(CERT_DAYS), "-in", str(csr), "-CA", str(ca_crt),
         "-CAkey", str(ca_key), "-CAcreateserial", "-extfile", str(ext), "-out", str(crt)],
        "openssl apiserver cert")  # fmt: skip
    # the apiserver's client certificate towards kubelets (logs, exec): group system:masters
    kkey, kcsr, kcrt = pki / "kubelet-client.key", pki / "kubelet-client.csr", pki / "kubelet-client.crt"
    run([openssl, "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(kkey), "-out", str(kcsr),
         "-subj", "/O=system:masters/CN=kube-apiserver-kubelet-client"],
        "openssl kubelet-client key")  # fmt: skip
    kext = pki / "kubelet-client.ext"
    kext.write_text(
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
    )
    run([openssl, "x509", "-req", "-sha256", "-days", str(CERT_DAYS), "-in", str(kcsr), "-CA", str(ca_crt),
         "-CAkey", str(ca_key), "-CAcreateserial", "-extfile", str(kext), "-out", str(kcrt)],
        "openssl kubelet-client cert")  # fmt: skip
    run([openssl, "genrsa", "-out", str(pki / "sa.key"), "2048"], "openssl service-account key")
    run([openssl, "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub")],
        "openssl service-account public key")  # fmt: skip
    for f in pki.iterdir():
        if f.suffix == ".key":
            f.chmod(0o600)


def kubeconfig_text(server: str, ca_path: Path, token: str) -> str:
    """The rig's kubeconfig. The CA by path, not inline: the Kubernetes client writes inline CA data to a
    temporary file that only its exit handler removes, so every operator a test kills left one in /tmp."""
    return (
        "# generated by tests/rig/k8s_rig.py\n"
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: kp-rig\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"    certificate-authority: {ca_path}\n"
        "users:\n"
        "- name: admin\n"
        "  user:\n"
        f"    token: {token}\n"
        "contexts:\n"
        "- name: kp-rig\n"
        "  context:\n"
        "    cluster: kp-rig\n"
        "    user: admin\n"
        "    namespace: default\n"
        "current-context: kp-rig\n"
    )


# ---------------------------------------------------------------------------------------- up


def etcd_cmd(rig: Rig) -> list[str]:
    peer = f"http://{HOST}:{rig.etcd_peer_port}"
    client = f"http://{HOST}:{rig.etcd_port}"
    return [
        str(rig.bin("etcd")),
        "--name=kp-rig",
        f"--data-dir={rig.state_dir / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=kp-rig={peer}",
        "--initial-cluster-state=new",
        f"--initial-cluster-token=kp-rig-{rig.etcd_port}",
        "--unsafe-no-fsync",
        "--quota-backend-bytes=268435456",
        "--snapshot-count=5000",
        "--auto-compaction-mode=periodic",
        "--auto-compaction-retention=5m",
        "--log-level=warn",
    ]


def apiserver_cmd(rig: Rig) -> list[str]:
    pki = rig.state_dir / "pki"
    return [
        str(rig.bin("kube-apiserver")),
        f"--etcd-servers=http://{HOST}:{rig.etcd_port}",
        f"--bind-address={rig.address}",
        f"--secure-port={rig.port}",
        f"--advertise-address={rig.address}",
        f"--cert-dir={pki}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--kubelet-client-certificate={pki / 'kubelet-client.crt'}",
        f"--kubelet-client-key={pki / 'kubelet-client.key'}",
        "--kubelet-preferred-address-types=InternalIP,Hostname",
        f"--token-auth-file={rig.state_dir / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-account-issuer={ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        *(
            []  # with a node: the `kubernetes` service points at the bridge address, service accounts exist
            if rig.with_node
            else [
                # the `kubernetes` service endpoints may not point at loopback: do not reconcile them
                "--endpoint-reconciler-type=none",
                # no controller-manager: nothing would create the `default` service account of a namespace
                "--disable-admission-plugins=ServiceAccount",
            ]
        ),
        "--profiling=false",
        "--v=1",
    ]


def start(rig: Rig, daemon: str, cmd: list[str]) -> subprocess.Popen[bytes]:
    with open(rig.log(daemon), "wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=rig.state_dir,
            start_new_session=True,
        )
    rig.pid_file(daemon).write_text(f"{proc.pid}\n")
    return proc


def https_get(url: str, ca: Path, token: str, timeout: float = 5.0) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return int(resp.status), resp.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return int(e.code), e.read().decode(errors="replace")


def wait_until(
    rig: Rig, what: str, procs: dict[str, subprocess.Popen[bytes]], check: Any, deadline: float
) -> None:
    """Poll `check()` -> (done, detail) until done; fail when a daemon exits or the deadline passes."""
    last = "no answer yet"
    while True:
        for daemon, proc in procs.items():
            code = proc.poll()
            if code is not None:
                raise RigError(
                    f"k8s rig: {daemon} exited with {code} while waiting for {what}:\n"
                    f"{log_tail(rig.log(daemon))}"
                )
        try:
            done, last = check()
            if done:
                return
        except (OSError, ValueError) as e:  # not listening / not serving yet
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() > deadline:
            logs = "\n".join(log_tail(rig.log(d), 6) for d in procs)
            raise RigError(f"k8s rig: timed out waiting for {what} (last: {last})\n{logs}")
        time.sleep(0.5)


def server_version(rig: Rig) -> str:
    out = run([str(rig.bin("kube-apiserver")), "--version"], "kube-apiserver --version", 30).strip()
    return out.split()[-1] if out else "unknown"


def _terminated(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def build_rig(args: argparse.Namespace) -> Rig:
    ports = (args.etcd_port, args.etcd_peer_port, args.port)
    if len(set(ports)) != 3 or min(ports) < 1024 or max(ports) > 65535:
        raise RigError(
            f"k8s rig: --etcd-port {args.etcd_port}, --etcd-peer-port {args.etcd_peer_port} and "
            f"--port {args.port} must differ and be in 1024-65535",
            2,
        )
    return Rig(
        rig_dir=Path(args.rig_dir).resolve(),
        bin_dir=Path(args.bin_dir).resolve() if args.bin_dir else default_bin_dir(args.k8s_version),
        etcd_port=args.etcd_port,
        etcd_peer_port=args.etcd_peer_port,
        port=args.port,
        address=args.node_address or HOST,
    )


def cmd_up(args: argparse.Namespace) -> int:
    rig = build_rig(args)
    existing = read_entry(rig.rig_dir)
    if existing and rig_alive(existing):
        print(f"k8s rig already up: {existing['server']} (kubeconfig {existing['kubeconfig']})")
        return 0
    if existing or rig.state_dir.exists() or rig_pids(rig.state_dir):
        print(f"k8s rig: removing stale state in {rig.state_dir}", file=sys.stderr)
        teardown(rig.rig_dir, args.stop_timeout, quiet=True)
    check_ports(rig)
    check_binaries(rig.bin_dir)
    openssl = find_openssl()

    started = time.monotonic()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    signal.signal(signal.SIGTERM, _terminated)  # a killed `up` still stops what it started
    try:
        rig.state_dir.mkdir(parents=True)
        (rig.state_dir / "etcd").mkdir(mode=0o700)
        make_certs(openssl, rig.state_dir / "pki", rig.address)
        token = secrets.token_hex(24)
        tokens = rig.state_dir / "tokens.csv"
        tokens.write_text(f'{token},admin,kp-rig-admin,"system:masters"\n')
        tokens.chmod(0o600)
        ca = rig.state_dir / "pki" / "ca.crt"
        deadline = time.monotonic() + args.timeout

        procs["etcd"] = start(rig, "etcd", etcd_cmd(rig))

        def etcd_healthy() -> tuple[bool, str]:
            url = f"http://{HOST}:{rig.etcd_port}/health"
            with urllib.request.urlopen(url, timeout=3) as resp:
                body = resp.read().decode()
            return json.loads(body).get("health") == "true", body

        wait_until(rig, "etcd health", procs, etcd_healthy, deadline)

        procs["kube-apiserver"] = start(rig, "kube-apiserver", apiserver_cmd(rig))

        def ready() -> tuple[bool, str]:
            code, body = https_get(f"{rig.server}/readyz", ca, token)
            return code == 200 and body.strip() == "ok", f"/readyz {code}: {body.strip()[-300:]}"

        def default_namespace() -> tuple[bool, str]:
            code, _ = https_get(f"{rig.server}/api/v1/namespaces/default", ca, token)
            return code == 200, f"GET namespace default {code}"

        wait_until(rig, "kube-apiserver /readyz", procs, ready, deadline)
        wait_until(rig, "the default namespace", procs, default_namespace, deadline)

        rig.kubeconfig.write_text(kubeconfig_text(rig.server, ca.resolve(), token))
        rig.kubeconfig.chmod(0o600)
        entry = {
            "kubeconfig": str(rig.kubeconfig),
            "server": rig.server,
            "token": token,
            "caFile": str(ca),
            "binDir": str(rig.bin_dir),
            "kubectl": str(rig.bin("kubectl")),
            "helm": str(rig.bin("helm")),
            "version": server_version(rig),
            "stateDir": str(rig.state_dir),
            "etcdEndpoint": f"http://{HOST}:{rig.etcd_port}",
            "ports": {"etcd": rig.etcd_port, "etcdPeer": rig.etcd_peer_port, "apiserver": rig.port},
            "address": rig.address,
            "pids": {"etcd": procs["etcd"].pid, "kubeApiserver": procs["kube-apiserver"].pid},
            "logs": {"etcd": str(rig.log("etcd")), "kubeApiserver": str(rig.log("kube-apiserver"))},
        }
        with rig_json_locked(rig.rig_dir) as data:
            data[KEY] = entry
    except BaseException:
        print("k8s rig: up failed; stopping what was started", file=sys.stderr)
        stop_all(rig.state_dir, [p.pid for p in procs.values()], 10)
        remove_state(rig.rig_dir)
        raise
    print(
        f"k8s rig up in {time.monotonic() - started:.1f}s: Kubernetes {entry['version']} at {rig.server} "
        f"(kubeconfig {rig.kubeconfig}; written to {rig.rig_dir / 'rig.json'} key '{KEY}')"
    )
    return 0


# ---------------------------------------------------------------------------------------- down/status


def stop_all(state_dir: Path, extra: Sequence[int], timeout: float) -> list[int]:
    """Stop the apiserver(s), then etcd (plus `extra`, our own children); returns SIGKILLed pids."""
    ours = rig_pids(state_dir)
    killed: list[int] = []
    for daemon in reversed(DAEMONS):
        pids = sorted(p for p, d in ours.items() if d == daemon)
        if pids:
            killed += stop_pids(pids, timeout)
    rest = sorted({p for p in extra if alive(p)} | set(rig_pids(state_dir)))
    if rest:
        killed += stop_pids(rest, timeout)
    reap()
    return killed


def remove_state(rig_dir: Path) -> None:
    shutil.rmtree(rig_dir / "k8s", ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        (rig_dir / "kubeconfig").unlink()


def rig_alive(entry: dict[str, Any]) -> bool:
    pids = entry.get("pids", {})
    ports = entry.get("ports", {})
    return (
        bool(pids)
        and all(alive(int(p)) for p in pids.values())
        and port_open(int(ports.get("apiserver", APISERVER_PORT)), host=str(entry.get("address", HOST)))
    )


def teardown(rig_dir: Path, timeout: float, quiet: bool = False) -> list[str]:
    """Stop every process of the rig, check its ports are free, remove its state; returns problems."""
    state_dir = rig_dir / "k8s"
    entry = read_entry(rig_dir)
    killed = stop_all(state_dir, [], timeout)
    problems = []
    if killed and not quiet:
        print(f"k8s rig: SIGKILLed {killed} after {timeout:.0f}s", file=sys.stderr)
    ports = [int(p) for p in (entry or {}).get("ports", {}).values()]
    busy = busy_ports(ports)
    if busy:
        problems.append(f"ports still in use after stopping etcd and kube-apiserver: {busy}")
    left = rig_pids(state_dir)
    if left:
        problems.append(f"processes still running: {sorted(left)}")
    remove_state(rig_dir)
    with rig_json_locked(rig_dir) as data:
        data.pop(KEY, None)
    return problems


def cmd_down(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    had = read_entry(rig_dir) is not None or (rig_dir / "k8s").exists()
    problems = teardown(rig_dir, args.stop_timeout)
    if problems:
        raise RigError("k8s rig: " + "; ".join(problems))
    print("k8s rig " + ("down" if had else "was not up"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_entry(rig_dir)
    if entry is None:
        orphans = rig_pids(rig_dir / "k8s")
        print("k8s rig: not up" + (f" (orphan processes: {sorted(orphans)})" if orphans else ""))
        return 1
    pids = {k: {"pid": int(v), "alive": alive(int(v))} for k, v in entry.get("pids", {}).items()}
    try:
        code, body = https_get(f"{entry['server']}/readyz", Path(entry["caFile"]), entry["token"], 5)
        readyz = body.strip() if code == 200 else f"HTTP {code}"
    except (OSError, ValueError) as e:
        readyz = f"{type(e).__name__}: {e}"
    up = all(p["alive"] for p in pids.values()) and readyz == "ok"
    if args.json:
        print(json.dumps({**entry, "alive": pids, "readyz": readyz, "up": up}, indent=2))
    else:
        print(
            f"k8s rig: {'up' if up else 'DEGRADED'}  Kubernetes {entry['version']}  {entry['server']}  "
            f"readyz {readyz}  kubeconfig {entry['kubeconfig']}"
        )
        for name, p in pids.items():
            print(f"  {name} pid {p['pid']} {'alive' if p['alive'] else 'DEAD'}")
    return 0 if up else 1


# ---------------------------------------------------------------------------------------- CLI


def parser() -> argparse.ArgumentParser:
    p, sub, common = rig_parser("k8s_rig.py", __doc__)
    up = sub.add_parser("up", parents=[common], help="start etcd + kube-apiserver, wait until ready")
    up.add_argument(
        "--k8s-version",
        default=os.environ.get("K8S_VERSION", DEFAULT_K8S_VERSION),
        help=f"Kubernetes version of the cached binaries (default $K8S_VERSION or {DEFAULT_K8S_VERSION})",
    )
    up.add_argument("--bin-dir", help="directory of the binaries (default: build.sh's cache for the version)")
    up.add_argument("--etcd-port", type=int, default=ETCD_PORT, help=f"etcd client port ({ETCD_PORT})")
    up.add_argument(
        "--etcd-peer-port", type=int, default=ETCD_PEER_PORT, help=f"etcd peer port ({ETCD_PEER_PORT})"
    )
    up.add_argument(
        "--port", type=int, default=APISERVER_PORT, help=f"kube-apiserver secure port ({APISERVER_PORT})"
    )
    up.add_argument(
        "--node-address",
        default=os.environ.get("KP_NODE_ADDRESS", ""),
        help="bind the apiserver to this address (the node rig's bridge address, so pods reach it) "
        "instead of 127.0.0.1; with it the service-account admission and endpoint reconciler are on "
        "(default $KP_NODE_ADDRESS)",
    )
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness (120)")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", parents=[common], help="stop the rig and remove its state")
    down.set_defaults(func=cmd_down)
    st = sub.add_parser("status", parents=[common], help="show the rig; exit 1 unless it is up")
    st.add_argument("--json", action="store_true", help="print the rig.json entry with liveness")
    st.set_defaults(func=cmd_status)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parser(), argv, "k8s rig")


if __name__ == "__main__":
    sys.exit(main())
