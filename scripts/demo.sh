#!/usr/bin/env bash
# The main job (README: `make demo`): a real local Kafka (KRaft, 3 nodes, JBOD, racks /dc1/r1, /dc1/r2,
# /dc2/r1) and a real kube-apiserver; the operator runs against both, the example resources are applied
# with kubectl, and `kubectl get` shows plan -> approval -> progress -> Completed while Kafka moves data.
# Everything is installed by the Makefile and these scripts; the rig is torn down at the end unless
# KEEP_RIG=1.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
bash scripts/check-tools.sh java mvn go
bash tests/rig/kafka/fetch.sh >/dev/null
bash scripts/build-broker-plugin.sh >/dev/null
bash tests/rig/k8s/build.sh >/dev/null
# Teardown on every exit (success, failure, Ctrl-C, kill): the rig goes down, then tests/rig/leftovers.py
# checks that nothing the demo started (Kafka JVMs, etcd, kube-apiserver, the operator) is still alive.
# The demo driver must run as a child of this shell, never via `exec`: `exec` would replace the shell and
# this EXIT trap would never run.
teardown() {
  local status=$?
  trap - EXIT INT TERM HUP
  $PY tests/rig/k8s_rig.py down >/dev/null 2>&1 || true
  $PY tests/rig/kafka_rig.py down --name main >/dev/null 2>&1 || true
  if ! $PY tests/rig/leftovers.py; then
    echo "demo: processes of the rig are still running (listed above)" >&2
    [[ $status == 0 ]] && status=1
  fi
  exit "$status"
}
if [[ "${KEEP_RIG:-0}" != 1 ]]; then
  trap teardown EXIT
  trap 'exit 130' INT   # a signal ends the script through `exit`, so the EXIT trap runs
  trap 'exit 143' TERM
  trap 'exit 129' HUP
fi
# a clean slate each run: a cluster and an apiserver left by an earlier KEEP_RIG=1 run are replaced
$PY tests/rig/k8s_rig.py down >/dev/null 2>&1 || true
$PY tests/rig/kafka_rig.py down --name main >/dev/null 2>&1 || true
$PY tests/rig/kafka_rig.py up --name main
$PY tests/rig/k8s_rig.py up
$PY scripts/demo.py   # not `exec`: the teardown above must run when it ends
