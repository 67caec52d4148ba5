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
bash tests/rig/k8s/build.sh >/dev/null
if [[ "${KEEP_RIG:-0}" != 1 ]]; then
  trap '$PY tests/rig/k8s_rig.py down >/dev/null 2>&1 || true; $PY tests/rig/kafka_rig.py down --name main >/dev/null 2>&1 || true' EXIT
fi
# a clean slate each run: a cluster and an apiserver left by an earlier KEEP_RIG=1 run are replaced
$PY tests/rig/k8s_rig.py down >/dev/null 2>&1 || true
$PY tests/rig/kafka_rig.py down --name main >/dev/null 2>&1 || true
$PY tests/rig/kafka_rig.py up --name main
$PY tests/rig/k8s_rig.py up
exec $PY scripts/demo.py
