#!/usr/bin/env bash
# Bring the rig up or down: `rig.sh up [RIG...]`, `rig.sh down [RIG...]` (default: every rig).
# RIG is one of main legacy secure k8s node spark. The rig lives under $KP_RIG_DIR (default .rig) with its
# ports shifted by $KP_RIG_PORT_OFFSET, so `make test` runs two rigs side by side (scripts/test.sh).
# `up` starts them in dependency order (the node's bridge first: Kafka main and the apiserver listen on it
# too) and stops at the first failure; `down` stops them in reverse order, each whether or not it is up.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ALL=(main legacy secure k8s node spark)
action=${1:?usage: rig.sh up|down [main legacy secure k8s node spark]}
shift
want=("$@")
[[ ${#want[@]} == 0 ]] && want=("${ALL[@]}")
for rig in "${want[@]}"; do
  [[ " ${ALL[*]} " == *" $rig "* ]] || { echo "rig.sh: unknown rig '$rig' (one of: ${ALL[*]})" >&2; exit 2; }
done
has() { [[ " ${want[*]} " == *" $1 "* ]]; }

case $action in
  up)
    set -e
    if has node; then
      KP_NODE_ADDRESS=$($PY tests/rig/node_rig.py net-up)
      export KP_NODE_ADDRESS
    fi
    for name in main legacy secure; do
      if has "$name"; then $PY tests/rig/kafka_rig.py up --name "$name"; fi
    done
    if has k8s; then $PY tests/rig/k8s_rig.py up; fi
    if has node; then $PY tests/rig/node_rig.py up; fi
    if has spark; then $PY tests/rig/spark_rig.py up; fi
    ;;
  down)
    [[ -x $PY ]] || exit 0
    status=0
    if has node; then $PY tests/rig/image_rig.py down || status=1; fi
    if has spark; then $PY tests/rig/spark_rig.py down || status=1; fi
    if has node; then $PY tests/rig/node_rig.py down || status=1; fi
    if has k8s; then $PY tests/rig/k8s_rig.py down || status=1; fi
    # five: tests/e2e/test_operator_correlated_failure.py's; tiered: tests/integration/test_tiered_storage.py's
    for name in secure legacy main five tiered; do
      if [[ $name == five || $name == tiered ]] && ! has main; then continue; fi
      if [[ $name == five || $name == tiered ]] || has "$name"; then $PY tests/rig/kafka_rig.py down --name "$name" || status=1; fi
    done
    if has node; then $PY tests/rig/node_rig.py net-down || status=1; fi
    exit $status
    ;;
  *)
    echo "rig.sh: unknown action '$action' (up or down)" >&2
    exit 2
    ;;
esac
