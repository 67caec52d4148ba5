"""Which rig-backed tests run on which rig: `make test` (scripts/test.sh) runs the lanes side by side,
each with a rig of its own (its own state dir and ports), so the suite's waits on Kafka and Kubernetes
overlap. A test file belongs to exactly one lane (tests/unit/rig/test_lanes.py checks it): ``node`` has the
tests that need the machine's one node (pods, the image, Helm) or its controller-manager (the garbage
collector deleting what a deleted resource owned) and a few of the operator's end-to-end tests that even
out the lanes, ``kafka`` the gateway, executor, security and Spark standalone tests (and one operator
end-to-end test, to even out the lanes), ``operator`` the rest
of the operator's end-to-end tests on the main cluster, ``compat`` the Kafka releases users run (a cluster
of each brought up in turn by the tests themselves; only the k8s rig is the lane's), the operator's tests
on a five-node cluster of their own, the other tests that bring up clusters of their own (tiered storage,
a small disk, a packet filter) and those that need the k8s rig alone or no rig.

    python tests/rig/lanes.py names            # the lanes, one per line
    python tests/rig/lanes.py env LANE         # RIGS, KP_RIG_DIR, KP_RIG_PORT_OFFSET as shell words
    python tests/rig/lanes.py paths LANE       # the lane's test files

Lane ``node`` keeps the default rig dir and ports (what `make rig-up` starts); ``kafka`` is shifted by
+2000 (not 1000: the node lane's Kafka listens for pods on its broker ports + 1000), ``operator`` by
-3000 and ``compat`` by -6000 (its releases' clusters listen on 19092-19194, tests/compat/smoke.py), so
that no rig port falls in Linux's ephemeral range (32768+), where any client's socket may hold it. All
are shifted further by ``$KP_RIG_PORT_OFFSET`` when it is set.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RIG_BACKED = (
    "tests/integration",
    "tests/e2e",
    "tests/compat",
)  # every test file under these runs in one lane


@dataclass(frozen=True)
class Lane:
    """A pytest process and the rig it runs against."""

    name: str
    rigs: tuple[str, ...]  # scripts/rig.sh's names
    rig_dir: str  # relative to the repo
    port_offset: int
    paths: tuple[str, ...]


LANES = (
    Lane(
        name="node",
        rigs=("main", "k8s", "node"),
        rig_dir=".rig",
        port_offset=0,
        paths=(
            "tests/integration/test_chart.py",
            "tests/integration/test_k8s_rig.py",
            "tests/integration/test_node.py",
            "tests/integration/test_spark_k8s.py",
            "tests/e2e/test_helm_node.py",
            "tests/e2e/test_operator_cluster_deletion.py",
            "tests/e2e/test_operator_spark_k8s.py",
            "tests/e2e/test_spark_pods.py",
            # operator end-to-end tests on the main cluster, here to even out the lanes: the node's own
            # tests end minutes before the others (a warm run on 2026-11-29 before these four moved here:
            # lanes node 9.6, kafka 12.6, operator 15.2 min)
            "tests/e2e/test_operator_idle.py",
            "tests/e2e/test_operator_log_dir_failure.py",
            "tests/e2e/test_operator_heal_waits.py",  # heals that wait: three kills, about 3 min
            "tests/e2e/test_operator_traffic.py",
            "tests/e2e/test_operator_preemption.py",  # two pre-emptions: about 150 s (moved from operator,
            # the long pole at 30 min on 2026-12-02: lanes node 21, kafka 24.7, operator 30.1 min)
            "tests/integration/test_executor_scale.py",  # thousands of moves: about 100 s (moved from kafka,
            # the long pole on 2026-12-03: lanes node 25.7, kafka 28.9, operator 26.8 min)
        ),
    ),
    Lane(
        name="kafka",
        rigs=("main", "legacy", "secure", "k8s", "spark"),
        rig_dir=".rig-kafka",
        port_offset=2000,
        paths=(
            "tests/integration/test_cordoned_broker_plan.py",  # Kafka 4.4 refuses a wholly cordoned broker
            "tests/integration/test_dead_broker.py",
            "tests/integration/test_executor.py",
            "tests/integration/test_executor_broker_down.py",
            "tests/integration/test_executor_safety.py",
            # one throttled heal-shaped move: about 80 s (back from operator, the long pole on 2026-12-06 once
            # kafka gave three files away: lanes node 21.4, kafka 18.4, operator 22.2, compat 20.9 min)
            "tests/integration/test_executor_rate_hold.py",
            "tests/integration/test_executor_waves.py",  # a finished wave refilled at once: about 7 s
            "tests/integration/test_gateway.py",
            "tests/integration/test_kafka_rig.py",
            "tests/integration/test_kept_plan_leader.py",
            "tests/integration/test_leader_lease.py",
            "tests/integration/test_reactive_cordon.py",
            "tests/integration/test_replica_selector.py",
            "tests/integration/test_security.py",
            "tests/integration/test_traffic.py",
            "tests/integration/test_spark_analysis.py",
            "tests/integration/test_spark_engine.py",
            "tests/integration/test_spark_failures.py",
            "tests/integration/test_spark_smoke.py",
            "tests/integration/test_spark_standalone.py",
            "tests/e2e/test_operator_legacy_decommission.py",
            "tests/e2e/test_operator_legacy_new_partitions.py",
            "tests/e2e/test_operator_security.py",
            # maintenance windows on the main cluster: about 75 s (from operator, the long pole on 2026-12-06
            # once compat took node's k8s tests: lanes node 21.5, kafka 19.4, operator 22.0, compat 18.5)
            "tests/e2e/test_operator_windows.py",
        ),
    ),
    Lane(
        name="operator",
        rigs=("main", "k8s"),
        rig_dir=".rig-operator",
        port_offset=-3000,
        paths=(
            "tests/e2e/test_operator.py",
            "tests/e2e/test_operator_leader.py",
            "tests/e2e/test_operator_new_partitions.py",
            "tests/e2e/test_operator_owned_configs.py",
            "tests/e2e/test_operator_orphaned_throttles.py",
            "tests/e2e/test_operator_policies.py",
            "tests/e2e/test_operator_rf_change.py",
            "tests/e2e/test_operator_self_healing.py",
            "tests/e2e/test_operator_adaptive_throttle.py",  # a throttle yielding to a producer: about 70 s
            # last: the most load-sensitive test (thousands of partitions moved under a producer) runs
            # when the other lanes are ending
            "tests/e2e/test_operator_scale.py",
        ),
    ),
    Lane(
        name="compat",
        rigs=("k8s",),
        rig_dir=".rig-compat",
        port_offset=-6000,
        paths=(
            "tests/compat/test_unsupported_kafka.py",  # one Kafka 2.3.1 broker: about 30 s
            "tests/compat/test_kafka_versions.py",  # eight releases in turn: about a minute each (alone)
            # an operator's end-to-end tests on a five-node cluster of their own (the k8s rig is the lane's):
            # about 2.5 min, here to even out the lanes (2026-12-05: lanes node 20.4, kafka 22.6, operator
            # 24.1, compat 7.9 min with them in operator)
            "tests/e2e/test_operator_correlated_failure.py",
            # tests on clusters of their own, moved from kafka, the long pole, 2026-12-06 (CI 32.0 min:
            # lanes node 24.0, kafka 26.8, operator 23.0, compat 13.4; the cores were 40% idle once compat
            # ended and 75% in kafka's last 3 minutes): about 5 min there
            "tests/integration/test_tiered_storage.py",  # a 2-node tiered-storage cluster: about 40 s
            "tests/integration/test_disk_watch.py",  # a 2-node cluster with a 64 MiB tmpfs dir
            "tests/e2e/test_operator_disk_pressure.py",  # the same cluster and an operator: about a minute
            "tests/e2e/test_operator_false_death.py",  # a 3-node cluster and a packet filter rule: ~75 s
            # the k8s rig alone or no rig, moved from node, the long pole on 2026-12-06 (lanes node 24.1,
            # kafka 22.4, operator 23.7, compat 21.3 min): about 40 s here alone
            "tests/integration/test_record_store.py",
            "tests/integration/test_cluster_status_size.py",
            "tests/integration/test_memory_refusal.py",  # a plan under a 100 MiB cgroup
            "tests/integration/test_gitops_health.py",  # kstatus and Argo CD's Lua on each kind
            "tests/e2e/test_operator_key_files.py",  # two operators on the apiserver alone: about 20 s
            # the k8s rig alone or no rig, moved from kafka, the long pole on 2026-12-06 (lanes node 26.6,
            # kafka 28.8, operator 25.3, compat 25.3 min with their rigs' start): about 50 s here
            "tests/e2e/test_operator_shutdown.py",  # the k8s rig and a silent "broker": about 10 s
            "tests/integration/test_report_browser.py",  # no rig: headless Chromium, about 40 s
        ),
    ),
)


def lane(name: str) -> Lane:
    for candidate in LANES:
        if candidate.name == name:
            return candidate
    raise SystemExit(f"lanes: no lane '{name}' (one of: {', '.join(x.name for x in LANES)})")


def rig_backed_files(root: Path = REPO_ROOT) -> list[str]:
    """Every rig-backed test file of the checkout, as the lanes name them."""
    return sorted(
        str(p.relative_to(root)) for d in RIG_BACKED for p in (root / d).glob("test_*.py") if p.is_file()
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("names", "env", "paths"))
    ap.add_argument("lane", nargs="?")
    args = ap.parse_args(argv)
    if args.what == "names":
        print("\n".join(x.name for x in LANES))
        return 0
    if args.lane is None:
        ap.error(f"{args.what} needs a lane")
    chosen = lane(args.lane)
    if args.what == "env":
        rig_dir = REPO_ROOT / chosen.rig_dir
        offset = chosen.port_offset + int(os.environ.get("KP_RIG_PORT_OFFSET", "0"))
        words = {"RIGS": " ".join(chosen.rigs), "KP_RIG_DIR": str(rig_dir), "KP_RIG_PORT_OFFSET": offset}
        print(" ".join(f"{k}={shlex.quote(str(v))}" for k, v in words.items()))
    else:
        print("\n".join(chosen.paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
