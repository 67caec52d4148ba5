#!/usr/bin/env python3
"""A real Kubernetes node for the rig: containerd + runc, a CNI bridge network, kubelet, kube-proxy,
kube-scheduler and kube-controller-manager, beside tests/rig/k8s_rig.py's etcd and kube-apiserver.

    node_rig.py net-up    # the node's bridge (kpbr<n>, 10.250.<n>.1/24) only: Kafka and the apiserver
                          # bind an address on it before the node's daemons start
    node_rig.py up        # the daemons; waits until the node is Ready
    node_rig.py load-image ARCHIVE   # import an image archive (docker save format) into containerd
    node_rig.py status
    node_rig.py down      # every container, the daemons, kube-proxy's rules, mounts
    node_rig.py net-down  # the bridge (after Kafka and the apiserver are down)

Binaries: kubelet, kube-proxy, kube-scheduler, kube-controller-manager from tests/rig/k8s/build.sh (same
version as the apiserver); containerd, runc, the CNI plugins and iptables from Debian packages,
unpacked into the cache by tests/rig/node/fetch-debs.sh. No registry is reachable: the pod sandbox
image (`pause`, compiled from the Kubernetes module's own build/pause/linux/pause.c) and every other
image are imported from archives.

Pods get addresses on the bridge (10.250.<n>.0/24, gateway = the host's address on it); they reach the
host's Kafka listener and the apiserver on that gateway address directly, and Services through
kube-proxy (iptables, nft backend). Nothing is masqueraded or forwarded off the machine. n is
KP_RIG_PORT_OFFSET / 1000. Only one node rig can run per machine (kube-proxy owns the host's
KUBE-* chains): `up` refuses when another rig's kubelet or kube-proxy runs.

State and logs live in `.rig/node/`; connection details are merged into `.rig/rig.json` under `node`.
Exit codes: 0 ok, 1 failure, 2 bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.cache import cache_dir
from tests.rig.k8s_rig import read_entry as read_k8s_entry
from tests.rig.kafka_rig import (
    PORT_OFFSET,
    RigError,
    alive,
    process_args,
    reap,
    rig_entry,
    rig_json_locked,
    rig_parser,
    run_command,
    stop_pids,
)
from tests.rig.probes import bridge_alias

KEY = "node"
NODE_NAME = "kp-node"
INDEX = PORT_OFFSET // 1000
BRIDGE = f"kpbr{INDEX}"
SUBNET = f"10.250.{INDEX}.0/24"
ADDRESS = f"10.250.{INDEX}.1"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
KUBELET_PORT = 10250 + PORT_OFFSET
KUBELET_HEALTHZ_PORT = 10248 + PORT_OFFSET
PROXY_HEALTHZ_PORT = 10256 + PORT_OFFSET
PROXY_METRICS_PORT = 10249 + PORT_OFFSET
SCHEDULER_PORT = 10259 + PORT_OFFSET
CONTROLLER_MANAGER_PORT = 10257 + PORT_OFFSET
DAEMONS = ("containerd", "kube-scheduler", "kube-controller-manager", "kubelet", "kube-proxy")
BRIDGE_NF = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")


@dataclass(frozen=True)
class Node:
    """Paths of one node rig."""

    rig_dir: Path
    k8s_bin: Path
    debs: Path

    @property
    def state(self) -> Path:
        return self.rig_dir / "node"

    def log(self, daemon: str) -> Path:
        return self.state / f"{daemon}.log"

    @property
    def socket(self) -> Path:
        return self.state / "containerd" / "containerd.sock"

    @property
    def tools(self) -> Path:
        """PATH entries for the daemons: iptables wrappers first, then the unpacked Debian binaries."""
        return self.state / "bin"

    def env(self) -> dict[str, str]:
        path = f"{self.tools}:{self.debs}/usr/bin:{self.debs}/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
        return {"PATH": path, "HOME": str(self.state), "LANG": "C"}


# ---------------------------------------------------------------------------------------- helpers


def sh(cmd: Sequence[str], what: str, env: dict[str, str] | None = None, timeout: float = 60.0) -> str:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise RigError(f"node rig: {what} timed out after {timeout:.0f}s") from e
    except FileNotFoundError as e:
        raise RigError(f"node rig: {what}: {e}", 2) from e
    if proc.returncode != 0:
        raise RigError(f"node rig: {what} failed (exit {proc.returncode}): {proc.stderr.strip()[-600:]}")
    return proc.stdout


def node_pids(state: Path) -> dict[int, str]:
    """Live daemons and container shims of this node rig: an argument (or the shim's -address) under
    its state dir. pid files are not trusted on their own."""
    found: dict[int, str] = {}
    needle = f"{state}/".encode()
    for pid, args in process_args():
        name = Path(args[0].decode(errors="replace")).name if args and args[0] else ""
        if any(needle in a for a in args[1:]) and alive(pid):
            found[pid] = name
    return found


def foreign_node() -> list[str]:
    """kubelet / kube-proxy processes of another node rig (another state dir) on this machine."""
    return [
        f"pid {pid}: {b' '.join(args[:3]).decode(errors='replace')}"
        for pid, args in process_args()
        if args and Path(args[0].decode(errors="replace")).name in ("kubelet", "kube-proxy")
    ]


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


# ---------------------------------------------------------------------------------------- network


def net_up(rig_dir: Path) -> None:
    """The bridge with the host's address on it (idempotent). Pods attach to it through CNI."""
    if not link_exists(BRIDGE):
        sh(["ip", "link", "add", BRIDGE, "type", "bridge"], f"create bridge {BRIDGE}")
    # the alias names the owning rig dir: tests/rig/leftovers.py tells this rig's bridge from another's
    sh(["ip", "link", "set", BRIDGE, "alias", bridge_alias(rig_dir)], f"name {BRIDGE}'s owner")
    addrs = sh(["ip", "-o", "-4", "addr", "show", "dev", BRIDGE], "read bridge address")
    if f" {ADDRESS}/" not in addrs:
        sh(["ip", "addr", "add", f"{ADDRESS}/24", "dev", BRIDGE], f"address {ADDRESS} on {BRIDGE}")
    sh(["ip", "link", "set", BRIDGE, "up"], f"bring {BRIDGE} up")


def net_down() -> None:
    if link_exists(BRIDGE):
        sh(["ip", "link", "delete", BRIDGE], f"delete bridge {BRIDGE}")


# ---------------------------------------------------------------------------------------- config


def write_tools(node: Node) -> None:
    """iptables/ip6tables(-save/-restore) wrappers running the unpacked nft-backend binary."""
    node.tools.mkdir(parents=True, exist_ok=True)
    lib = f"{node.debs}/usr/lib/x86_64-linux-gnu"
    for tool in (
        "iptables",
        "iptables-save",
        "iptables-restore",
        "ip6tables",
        "ip6tables-save",
        "ip6tables-restore",
    ):
        path = node.tools / tool
        path.write_text(
            "#!/bin/sh\n"
            f'LD_LIBRARY_PATH="{lib}" XTABLES_LIBDIR="{lib}/xtables" '
            f'exec "{node.debs}/usr/sbin/xtables-nft-multi" {tool} "$@"\n'
        )
        path.chmod(0o755)


def containerd_config(node: Node) -> str:
    c = node.state / "containerd"
    return f"""version = 2
root = "{c}/root"
state = "{c}/state"
[grpc]
  address = "{node.socket}"
[ttrpc]
  address = "{node.socket}.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  enable_unprivileged_ports = true
  # root in this VM lacks CAP_SYS_RESOURCE: the sandbox's oom_score_adj -998 would make runc's init
  # fail ("failed to update /proc/self/oom_score_adj: Permission denied"); clamp it to containerd's own
  restrict_oom_score_adj = true
  # pods' network namespaces under the state dir, not /var/run/netns, so `down` finds them
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{node.debs}/usr/sbin/runc"
        Root = "{c}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{node.debs}/usr/lib/cni"
    conf_dir = "{node.state}/cni"
[plugins."io.containerd.internal.v1.opt"]
  path = "{c}/opt"
"""


def cni_config(node: Node) -> str:
    return json.dumps(
        {
            "cniVersion": "0.4.0",
            "name": "kp-rig",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(node.state / "cni-ipam"),
                        "ranges": [
                            [{"subnet": SUBNET, "gateway": ADDRESS, "rangeStart": f"10.250.{INDEX}.10"}]
                        ],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


def kubelet_config(node: Node, k8s: dict[str, Any]) -> str:
    return f"""apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {ADDRESS}
port: {KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {KUBELET_HEALTHZ_PORT}
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: true}}
  x509: {{clientCAFile: {k8s["caFile"]}}}
authorization: {{mode: Webhook}}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://{node.socket}
imageServiceEndpoint: unix://{node.socket}
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
staticPodPath: ""
podLogsDir: {node.state / "pod-logs"}
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
maxPods: 50
podPidsLimit: -1
"""


def daemon_cmds(node: Node, k8s: dict[str, Any]) -> dict[str, list[str]]:
    # a copy under the state dir: every daemon then has an argument there, which is how `down` finds it
    kube = str(node.state / "kubeconfig")
    pki = Path(k8s["stateDir"]) / "pki"
    b = node.k8s_bin
    return {
        "containerd": [
            f"{node.debs}/usr/bin/containerd",
            f"--config={node.state / 'containerd.toml'}",
        ],
        "kube-scheduler": [
            str(b / "kube-scheduler"),
            f"--kubeconfig={kube}",
            f"--authentication-kubeconfig={kube}",
            f"--authorization-kubeconfig={kube}",
            "--bind-address=127.0.0.1",
            f"--secure-port={SCHEDULER_PORT}",
            f"--cert-dir={node.state / 'scheduler-certs'}",
            "--leader-elect=false",
            "--v=1",
        ],
        "kube-controller-manager": [
            str(b / "kube-controller-manager"),
            f"--kubeconfig={kube}",
            f"--authentication-kubeconfig={kube}",
            f"--authorization-kubeconfig={kube}",
            "--bind-address=127.0.0.1",
            f"--secure-port={CONTROLLER_MANAGER_PORT}",
            f"--cert-dir={node.state / 'controller-manager-certs'}",
            "--leader-elect=false",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            "--use-service-account-credentials=false",
            "--v=1",
        ],
        "kubelet": [
            str(b / "kubelet"),
            f"--config={node.state / 'kubelet.yaml'}",
            f"--kubeconfig={kube}",
            f"--root-dir={node.state / 'kubelet'}",
            f"--cert-dir={node.state / 'kubelet' / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={ADDRESS}",
            "--v=1",
        ],
        "kube-proxy": [
            str(b / "kube-proxy"),
            f"--kubeconfig={kube}",
            f"--hostname-override={NODE_NAME}",
            "--proxy-mode=iptables",
            f"--cluster-cidr={SUBNET}",
            f"--healthz-bind-address=127.0.0.1:{PROXY_HEALTHZ_PORT}",
            f"--metrics-bind-address=127.0.0.1:{PROXY_METRICS_PORT}",
            "--config-sync-period=1h",
            f"--hostname-override={NODE_NAME}",
            "--v=1",
        ],
    }


# ---------------------------------------------------------------------------------------- up


def start(node: Node, daemon: str, cmd: list[str]) -> subprocess.Popen[bytes]:
    with open(node.log(daemon), "ab") as out:
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=node.state,
            env=node.env(),
            start_new_session=True,
        )


def log_tail(path: Path, lines: int = 8) -> str:
    if not path.exists():
        return ""
    text = path.read_text(errors="replace").strip().splitlines()
    relevant = [x for x in text if x[:1] in ("E", "F") or "level=error" in x or "level=fatal" in x]
    return f"  --- {path}:\n    " + "\n    ".join((relevant or text)[-lines:])


def kubectl(k8s: dict[str, Any], *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [k8s["kubectl"], f"--kubeconfig={k8s['kubeconfig']}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ctr(node: Node, *args: str, timeout: float = 300.0) -> str:
    return sh(
        [f"{node.debs}/usr/bin/ctr", f"--address={node.socket}", "--namespace=k8s.io", *args],
        "ctr " + " ".join(args[:2]),
        env=node.env(),
        timeout=timeout,
    )


def pause_archive(node: Node, version: str) -> Path:
    """The sandbox image, cached by the pause source's content: pause.c from the Kubernetes module,
    compiled statically with the system's gcc, packed by tests/rig/node/image.py."""
    import hashlib

    from tests.rig.node.image import pack

    gomod = Path(os.environ.get("GOMODCACHE", str(cache_dir() / "go" / "pkg" / "mod")))
    src = gomod / f"k8s.io/kubernetes@{version}" / "build" / "pause" / "linux" / "pause.c"
    if not src.exists():
        raise RigError(f"node rig: {src} not found: run `bash tests/rig/k8s/build.sh` first", 2)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:16]
    out_dir = cache_dir() / "node" / "images"
    archive = out_dir / f"pause-{digest}.tar"
    if archive.exists():
        return archive
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RigError(
            "node rig: gcc not found (needed once to compile the pause container; apt-get install gcc)", 2
        )
    rootfs = out_dir / f"pause-{digest}.rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    rootfs.mkdir(parents=True)
    sh([gcc, "-Os", "-static", "-DVERSION=kp-rig", "-o", str(rootfs / "pause"), str(src)], "compile pause.c")
    tmp = archive.with_suffix(".tmp")
    pack(rootfs, PAUSE_IMAGE, tmp, entrypoint=["/pause"], user="65535:65535")
    os.replace(tmp, archive)
    shutil.rmtree(rootfs)
    return archive


def wait_for(
    what: str, node: Node, procs: dict[str, subprocess.Popen[bytes]], check: Any, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        for daemon, proc in procs.items():
            code = proc.poll()
            if code is not None:
                raise RigError(
                    f"node rig: {daemon} exited with {code} while waiting for {what}:\n"
                    + log_tail(node.log(daemon))
                )
        done, last = check()
        if done:
            return
        if time.monotonic() > deadline:
            logs = "\n".join(log_tail(node.log(d), 5) for d in procs)
            raise RigError(
                f"node rig: timed out after {timeout:.0f}s waiting for {what} (last: {last})\n{logs}"
            )
        time.sleep(0.5)


def _terminated(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def fetch_debs() -> Path:
    """Root of the unpacked Debian packages (tests/rig/node/fetch-debs.sh: cached, fetched if missing)."""
    out = sh(
        ["bash", str(Path(__file__).parent / "node" / "fetch-debs.sh")], "fetch Debian packages", timeout=600
    )
    return Path(out.strip().splitlines()[-1])


def build_node(args: argparse.Namespace) -> tuple[Node, dict[str, Any]]:
    rig_dir = Path(args.rig_dir).resolve()
    k8s = read_k8s_entry(rig_dir)
    if k8s is None:
        raise RigError("node rig: the k8s rig is not up (`python tests/rig/k8s_rig.py up` first)", 2)
    debs = Path(args.debs) if args.debs else fetch_debs()
    node = Node(rig_dir=rig_dir, k8s_bin=Path(k8s["binDir"]), debs=debs)
    missing = [
        d
        for d in ("kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager")
        if not os.access(node.k8s_bin / d, os.X_OK)
    ]
    if missing:
        raise RigError(
            f"node rig: {', '.join(missing)} not in {node.k8s_bin}: run `bash tests/rig/k8s/build.sh`", 2
        )
    return node, k8s


def cmd_net_up(args: argparse.Namespace) -> int:
    net_up(Path(args.rig_dir))
    print(f"node rig: bridge {BRIDGE} with {ADDRESS}/24", file=sys.stderr)
    print(ADDRESS)  # alone on stdout: `export KP_NODE_ADDRESS=$(node_rig.py net-up)`
    return 0


def cmd_net_down(args: argparse.Namespace) -> int:
    net_down()
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    node, k8s = build_node(args)
    existing = read_entry(node.rig_dir)
    if existing and all(alive(int(p)) for p in existing.get("pids", {}).values()):
        print(f"node rig already up: node {NODE_NAME} at {ADDRESS}")
        return 0
    if existing or node.state.exists() or node_pids(node.state):
        print(f"node rig: removing stale state in {node.state}", file=sys.stderr)
        teardown(node, args.stop_timeout)
    # a Node object left by an earlier run still says Ready until its heartbeat times out
    kubectl(k8s, "delete", "node", NODE_NAME, "--ignore-not-found", "--wait=false")
    others = foreign_node()
    if others:
        raise RigError(
            "node rig: another node's kubelet/kube-proxy runs on this machine (one node rig per machine):\n  "
            + "\n  ".join(others),
            2,
        )
    started = time.monotonic()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    signal.signal(signal.SIGTERM, _terminated)
    try:
        net_up(node.rig_dir)
        node.state.mkdir(parents=True)
        for sub in ("containerd", "cni", "kubelet"):
            (node.state / sub).mkdir()
        write_tools(node)
        (node.state / "containerd.toml").write_text(containerd_config(node))
        (node.state / "cni" / "10-kp-rig.conflist").write_text(cni_config(node))
        (node.state / "kubelet.yaml").write_text(kubelet_config(node, k8s))
        shutil.copyfile(k8s["kubeconfig"], node.state / "kubeconfig")
        (node.state / "kubeconfig").chmod(0o600)
        bridge_nf_before = BRIDGE_NF.read_text().strip() if BRIDGE_NF.exists() else None
        if bridge_nf_before is not None and bridge_nf_before != "1":
            BRIDGE_NF.write_text("1\n")  # Service traffic between pods on one bridge must pass iptables
        with rig_json_locked(
            node.rig_dir
        ) as data:  # recorded first: `down` restores it even after a failed up
            data[KEY] = {"stateDir": str(node.state), "bridgeNfCallIptables": bridge_nf_before, "pids": {}}
        cmds = daemon_cmds(node, k8s)
        pause = pause_archive(node, k8s["version"])
        procs["containerd"] = start(node, "containerd", cmds["containerd"])
        wait_for("containerd's socket", node, procs, lambda: (node.socket.exists(), "no socket"), 30)
        ctr(node, "images", "import", str(pause))
        for daemon in ("kube-scheduler", "kube-controller-manager", "kubelet", "kube-proxy"):
            procs[daemon] = start(node, daemon, cmds[daemon])

        def ready() -> tuple[bool, str]:
            out = kubectl(
                k8s,
                "get",
                "node",
                NODE_NAME,
                "-o",
                "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
            )
            return out.stdout.strip() == "True", (out.stdout + out.stderr).strip()[
                -200:
            ] or "no Ready condition"

        wait_for(f"node {NODE_NAME} Ready", node, procs, ready, args.timeout)
        with rig_json_locked(node.rig_dir) as data:
            data[KEY] = {
                **data.get(KEY, {}),
                "name": NODE_NAME,
                "address": ADDRESS,
                "bridge": BRIDGE,
                "subnet": SUBNET,
                "containerdSocket": str(node.socket),
                "ctr": f"{node.debs}/usr/bin/ctr",
                "pids": {d: p.pid for d, p in procs.items()},
                "logs": {d: str(node.log(d)) for d in procs},
                "startSeconds": round(time.monotonic() - started, 1),
            }
    except BaseException:
        print("node rig: up failed; stopping what was started", file=sys.stderr)
        teardown(node, 10)
        raise
    print(
        f"node rig up in {time.monotonic() - started:.1f}s: node {NODE_NAME} Ready at {ADDRESS} "
        f"(bridge {BRIDGE})"
    )
    return 0


def cmd_load_image(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_entry(rig_dir)
    if not entry or "containerdSocket" not in entry:
        raise RigError("node rig: not up", 2)
    archive = Path(args.archive)
    if not archive.is_file():
        raise RigError(f"node rig: {archive} is not a file", 2)
    out = sh(
        [
            entry["ctr"],
            f"--address={entry['containerdSocket']}",
            "--namespace=k8s.io",
            "images",
            "import",
            str(archive),
        ],
        "ctr images import",
        timeout=600,
    )
    print(out.strip())
    return 0


# ---------------------------------------------------------------------------------------- down


def read_entry(rig_dir: Path) -> dict[str, Any] | None:
    return rig_entry(rig_dir, KEY)


def kill_containers(node: Node) -> None:
    """Every container runc runs for this node (SIGKILL, then delete), so nothing outlives the rig."""
    runc_root = node.state / "containerd" / "runc"
    if not runc_root.exists():
        return
    runc = f"{node.debs}/usr/sbin/runc"
    for ns_root in runc_root.iterdir():
        with contextlib.suppress(RigError, json.JSONDecodeError):
            listed = (
                json.loads(sh([runc, f"--root={ns_root}", "list", "--format=json"], "runc list") or "[]")
                or []
            )
            for c in listed:
                with contextlib.suppress(RigError):
                    sh([runc, f"--root={ns_root}", "kill", "--all", c["id"], "KILL"], "runc kill")
            time.sleep(0.5)
            for c in listed:
                with contextlib.suppress(RigError):
                    sh([runc, f"--root={ns_root}", "delete", "--force", c["id"]], "runc delete")


def remove_kube_chains(node: Node) -> None:
    """The KUBE-* chains kube-proxy's cleanup leaves (the kubelet's KUBE-FIREWALL, canaries, hints),
    with the rules that jump to them, in every table of iptables and ip6tables."""
    env = node.env()
    for family in ("iptables", "ip6tables"):
        tool = node.tools / family
        if not tool.exists():
            continue
        try:
            saved = subprocess.run([str(tool) + "-save"], env=env, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        table = ""
        jumps: list[tuple[str, list[str]]] = []
        chains: list[tuple[str, str]] = []
        for line in saved.stdout.splitlines():
            if line.startswith("*"):
                table = line[1:]
            elif line.startswith(":KUBE-"):
                chains.append((table, line[1:].split()[0]))
            elif line.startswith("-A ") and " -j KUBE-" in line and not line.split()[1].startswith("KUBE-"):
                jumps.append((table, shlex.split(line)[1:]))
        for tbl, rule in jumps:
            subprocess.run([str(tool), "-t", tbl, "-D", *rule], env=env, capture_output=True, timeout=30)
        for tbl, chain in chains:
            subprocess.run([str(tool), "-t", tbl, "-F", chain], env=env, capture_output=True, timeout=30)
        for tbl, chain in chains:
            subprocess.run([str(tool), "-t", tbl, "-X", chain], env=env, capture_output=True, timeout=30)


def unmount_under(path: Path) -> None:
    """Unmount whatever containerd and the kubelet mounted under the state dir (deepest first)."""
    prefix = f"{path}/"
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for target in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True)


def teardown(node: Node, timeout: float) -> list[str]:
    entry = read_entry(node.rig_dir) or {}
    problems: list[str] = []
    pids = node_pids(node.state)
    order = ("kube-proxy", "kubelet", "kube-controller-manager", "kube-scheduler")
    for daemon in order:
        stop_pids([p for p, n in pids.items() if n == daemon], timeout)
    kill_containers(node)
    # the shims (containerd-shim-runc-v2 -address <state>/...) and containerd itself
    stop_pids(sorted(node_pids(node.state)), timeout)
    reap()
    if (node.tools / "iptables").exists():
        # kube-proxy's chains: its own cleanup mode
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [str(node.k8s_bin / "kube-proxy"), "--cleanup", "--proxy-mode=iptables"],
                env=node.env(),
                capture_output=True,
                timeout=60,
            )
    remove_kube_chains(node)
    unmount_under(node.state)
    # libcni caches each attachment's result in the fixed /var/lib/cni/results until its DEL, which a
    # killed pod never gets
    for cached in Path("/var/lib/cni/results").glob("kp-rig-*"):
        with contextlib.suppress(OSError):
            cached.unlink()
    # the kubelet links every container's log from the fixed /var/log/containers into podLogsDir
    with contextlib.suppress(OSError):
        for link in Path("/var/log/containers").iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(f"{node.state}/"):
                    link.unlink()
    left = node_pids(node.state)
    if left:
        problems.append(f"processes still running: {sorted(left)}")
    before = entry.get("bridgeNfCallIptables")
    if before is not None and BRIDGE_NF.exists():
        with contextlib.suppress(OSError):
            BRIDGE_NF.write_text(f"{before}\n")
    shutil.rmtree(node.state, ignore_errors=True)
    if node.state.exists():
        problems.append(f"could not remove {node.state}")
    with rig_json_locked(node.rig_dir) as data:
        data.pop(KEY, None)
    return problems


def cmd_down(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_k8s_entry(rig_dir) or {}
    debs_root = None
    if (rig_dir / "node" / "bin" / "iptables").exists():
        text = (rig_dir / "node" / "bin" / "iptables").read_text()
        debs_root = Path(text.split('exec "', 1)[1].split("/usr/sbin/", 1)[0])
    node = Node(
        rig_dir=rig_dir,
        k8s_bin=Path(entry.get("binDir", "/nonexistent")),
        debs=debs_root or Path("/nonexistent"),
    )
    had = read_entry(rig_dir) is not None or node.state.exists() or link_exists(BRIDGE)
    problems = teardown(node, args.stop_timeout)
    if problems:
        raise RigError("node rig: " + "; ".join(problems))
    print("node rig " + ("down" if had else "was not up"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    rig_dir = Path(args.rig_dir).resolve()
    entry = read_entry(rig_dir)
    if entry is None or "name" not in entry:
        print("node rig: not up" + (f" (bridge {BRIDGE} exists)" if link_exists(BRIDGE) else ""))
        return 1
    pids = {d: alive(int(p)) for d, p in entry.get("pids", {}).items()}
    up = all(pids.values())
    print(
        f"node rig: {'up' if up else 'DEGRADED'}  node {entry['name']} at {entry['address']} "
        f"(bridge {entry['bridge']})"
    )
    for d, ok in pids.items():
        print(f"  {d} pid {entry['pids'][d]} {'alive' if ok else 'DEAD'}")
    return 0 if up else 1


# ---------------------------------------------------------------------------------------- CLI


def parser() -> argparse.ArgumentParser:
    p, sub, common = rig_parser("node_rig.py", __doc__)
    net = sub.add_parser("net-up", parents=[common], help="create the node's bridge only")
    net.set_defaults(func=cmd_net_up)
    netd = sub.add_parser("net-down", parents=[common], help="delete the node's bridge")
    netd.set_defaults(func=cmd_net_down)
    up = sub.add_parser("up", parents=[common], help="start the node's daemons, wait until Ready")
    up.add_argument("--debs", help="root of the unpacked Debian packages (default: fetch-debs.sh's cache)")
    up.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for Ready (180)")
    up.set_defaults(func=cmd_up)
    load = sub.add_parser("load-image", parents=[common], help="import an image archive into the node")
    load.add_argument("archive")
    load.set_defaults(func=cmd_load_image)
    down = sub.add_parser(
        "down", parents=[common], help="stop the node and remove its state (not the bridge)"
    )
    down.set_defaults(func=cmd_down)
    st = sub.add_parser("status", parents=[common], help="show the node; exit 1 unless it is up")
    st.set_defaults(func=cmd_status)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parser(), argv, "node rig")


if __name__ == "__main__":
    sys.exit(main())
