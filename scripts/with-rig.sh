#!/usr/bin/env bash
# Run a command with the real rig up (Kafka main + legacy + secure clusters, kube-apiserver), always tearing the
# rig down afterwards, also on failure or interrupt. Exit status is the command's.
set -uo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory rig-down >/dev/null 2>&1 || true
# after the rig is down, tests/rig/leftovers.py fails the run if any process of this rig is still alive
teardown() {
  local status=$?
  trap - EXIT INT TERM
  make --no-print-directory rig-down
  if ! .venv/bin/python tests/rig/leftovers.py; then
    echo "with-rig: processes of the rig are still running (listed above)" >&2
    [[ $status == 0 ]] && status=1
  fi
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
make --no-print-directory rig-up || { echo "with-rig: rig-up failed; see the messages above" >&2; exit 1; }
"$@"
