"""Demo driver (called by scripts/demo.sh once the rigs are up): the operator reconciling a real cluster.

1. fill a few topics on the real Kafka and show brokers, racks, dirs, usage and cordon state;
2. show the CLI refusing an infeasible request (exit 3) with its reason;
3. start `kafka-placement operator`, apply the CRDs and the example resources with kubectl;
4. watch `kubectl get kafkaplacement`: the joint plan waits for approval, is approved declaratively
   (spec.approvedPlan), executes with progress, and completes; then show the cluster again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CLI = str(BIN / "kafka-placement")
WORK = ROOT / ".rig" / "demo"
NS = "kafka-placement-demo"
# the conventional path examples/log-dir-cordon.yaml names (users edit it; the demo rewrites it)
EXAMPLE_LOG_DIR = "/var/lib/kafka/data-0"


def sh(*argv: str, show: bool = True, check: bool = False, **kw: Any) -> subprocess.CompletedProcess[str]:
    if show:
        print("$ " + " ".join(Path(argv[0]).name if i == 0 else a for i, a in enumerate(argv)), flush=True)
    return subprocess.run(argv, check=check, text=True, **kw)


def table(snapshot: Path) -> None:
    snap = json.loads(snapshot.read_text())
    used: dict[tuple[int, str], int] = {}
    for p in snap["partitions"]:
        for b, d in zip(p["replicas"], p["logDirs"], strict=True):
            used[(b, d)] = used.get((b, d), 0) + p["sizeBytes"]
    print(f"\n{'broker':>6}  {'rack':<8} {'log dir':<58} {'MB':>7} {'replicas':>8} {'cordoned':>8}")
    for b in snap["brokers"]:
        for d in b["logDirs"]:
            n = sum(
                1
                for p in snap["partitions"]
                for x, y in zip(p["replicas"], p["logDirs"], strict=True)
                if x == b["id"] and y == d["path"]
            )
            mb = used.get((b["id"], d["path"]), 0) / 1e6
            print(f"{b['id']:>6}  {b['rack']:<8} {d['path']:<58} {mb:>7.2f} {n:>8} {d['cordoned']!s:>8}")
    print(f"{len(snap['partitions'])} partitions in {len({p['topic'] for p in snap['partitions']})} topics\n")


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # run the `finally` that stops the operator, then demo.sh's teardown


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    rig = json.loads((ROOT / ".rig" / "rig.json").read_text())
    kafka, k8s = rig["kafka"], rig["k8s"]
    bootstrap = kafka["bootstrapServers"]
    kubectl = [k8s["kubectl"], "--kubeconfig", k8s["kubeconfig"]]
    WORK.mkdir(parents=True, exist_ok=True)

    print(f"\n== 1. the live cluster at {bootstrap}\n")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {
        "orders": [[1, 3], [3, 2], [2, 1], [3, 1], [1, 2], [2, 3]],
        "payments": [[3, 1], [1, 3], [2, 3]],
    }
    existing = admin.list_topics(timeout=15).topics
    new = [NewTopic(t, len(a), replica_assignment=a) for t, a in topics.items() if t not in existing]
    for f in admin.create_topics(new).values() if new else []:
        f.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for t in topics:
        for i in range(15000):
            producer.produce(t, key=str(i).encode(), value=b"x" * 300)
            if i % 5000 == 0:
                producer.poll(0)
    producer.flush(60)
    before = WORK / "before.json"
    sh(CLI, "snapshot", "--bootstrap-server", bootstrap, "-o", str(before), check=True)
    table(before)

    print("== 2. an infeasible request is refused with its reason (exit 3); nothing is planned\n")
    bad = WORK / "rf4.yaml"
    bad.write_text("kind: PlacementPolicy\nspec: {topics: {include: [orders]}, replicationFactor: 4}\n")
    code = sh(
        CLI, "plan", "--snapshot", str(before), "--intents", str(bad), "-o", str(WORK / "rf4.json")
    ).returncode
    print(f"  exit code {code}\n")

    print("== 3. the operator, the CRDs and the example resources (kubectl apply)\n")
    sh(*kubectl, "apply", "-f", str(ROOT / "crds"), check=True, capture_output=True)
    crds = [f"crd/{c}.kafkaplacement.io" for c in ("kafkaclusters", "logdircordons", "brokerdecommissions")]
    crds.append("crd/placementpolicies.kafkaplacement.io")
    for _ in range(150):  # kubectl fails at once on a CRD with no condition yet ("accessor error"): again
        waited = sh(*kubectl, "wait", "--for", "condition=established", *crds, "--timeout=60s", show=False,
                    capture_output=True)  # fmt: skip
        if waited.returncode == 0 or "accessor error" not in waited.stderr:
            break
        time.sleep(0.2)
    if waited.returncode != 0:
        sys.exit(f"the CRDs are not established: {waited.stderr}")
    sh(*kubectl, "create", "namespace", NS, capture_output=True)
    log = (WORK / "operator.log").open("w")
    env = {**os.environ, "KUBECONFIG": k8s["kubeconfig"]}
    operator = subprocess.Popen(
        [CLI, "operator", "--namespace", NS, "--interval", "2", "--metrics-port", "0"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        drained = kafka["nodes"][0]["logDirs"][0]
        if EXAMPLE_LOG_DIR not in (ROOT / "examples" / "log-dir-cordon.yaml").read_text():
            raise SystemExit(f"examples/log-dir-cordon.yaml does not name {EXAMPLE_LOG_DIR}; update the demo")
        for name in ("kafka-cluster", "broker-decommission", "log-dir-cordon", "placement-policy"):
            text = (ROOT / "examples" / f"{name}.yaml").read_text()
            text = text.replace(EXAMPLE_LOG_DIR, drained)  # the example's placeholder -> this rig's dir
            text = text.replace("127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094", bootstrap)
            sh(*kubectl, "-n", NS, "apply", "-f", "-", input=text, check=True)
        print("\n== 4. watching (kubectl get kafkaplacement): plan, approval, progress\n")
        approved = watch(kubectl, until="Completed", approve=True)
        print(
            f"\n  approved plan {approved} by setting spec.approvedPlan on the LogDirCordon (GitOps-friendly)"
        )
        sh(*kubectl, "-n", NS, "get", "kafkaplacement", "-o", "wide")
        sh(*kubectl, "-n", NS, "get", "events", "--sort-by=.lastTimestamp")
        after = WORK / "after.json"
        print("\n== 5. the cluster afterwards: broker 3 empty, broker 1's first dir drained and cordoned\n")
        sh(CLI, "snapshot", "--bootstrap-server", bootstrap, "-o", str(after), check=True)
        table(after)
        policy = json.loads(
            sh(
                *kubectl,
                "-n",
                NS,
                "get",
                "placementpolicy",
                "rack-spread",
                "-o",
                "json",
                show=False,
                capture_output=True,
                check=True,
            ).stdout
        )
        print(f"PlacementPolicy rack-spread (mode Advise): {policy['status'].get('message', '')}")
    finally:
        os.killpg(operator.pid, signal.SIGTERM)
        try:
            operator.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(operator.pid, signal.SIGKILL)
            operator.wait(10)
    print(
        "\nDone. `KEEP_RIG=1 make demo` keeps Kafka and the kube-apiserver running "
        "(KUBECONFIG=.rig/kubeconfig)."
    )


def watch(kubectl: list[str], until: str, approve: bool, timeout: float = 600) -> str:
    """Print `kubectl get kafkaplacement` whenever a phase, plan or progress changes; approve once."""
    deadline, last, approved = time.monotonic() + timeout, "", ""
    while time.monotonic() < deadline:
        out = sh(
            *kubectl, "-n", NS, "get", "kafkaplacement", "--no-headers", show=False, capture_output=True
        ).stdout
        rows = [line.split() for line in out.splitlines() if line.strip()]
        intents = [r for r in rows if not r[0].startswith("kafkacluster")]
        shown = "\n".join(" ".join(r[:-1]) for r in rows)  # without AGE
        if shown != last:
            print(time.strftime("%H:%M:%S"), "\n" + out.rstrip(), flush=True)
            last = shown
        cordon = json.loads(
            sh(
                *kubectl,
                "-n",
                NS,
                "get",
                "logdircordon",
                "broker-1-data-0",
                "-o",
                "json",
                show=False,
                capture_output=True,
            ).stdout
            or "{}"
        )
        status = cordon.get("status") or {}
        if approve and not approved and status.get("phase") == "AwaitingApproval":
            approved = status["plan"]["id"]
            print(f"  {status['message']}")
            sh(
                *kubectl,
                "-n",
                NS,
                "patch",
                "logdircordon",
                "broker-1-data-0",
                "--type=merge",
                "-p",
                json.dumps({"spec": {"approvedPlan": approved}}),
                check=True,
            )
        phases = {r[1] for r in intents if len(r) > 1}
        if approved and phases and phases <= {until}:
            return approved
        if "Failed" in phases:
            raise SystemExit(f"a resource failed:\n{out}\nsee {WORK / 'operator.log'}")
        time.sleep(2)
    raise SystemExit(f"timed out waiting for {until}; see {WORK / 'operator.log'}")


if __name__ == "__main__":
    main()
