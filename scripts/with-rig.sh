#!/usr/bin/env bash
# Run a command with the real rig up, always tearing the rig down afterwards, also on failure or interrupt.
# Exit status is the command's. $RIGS picks the rigs (default all; scripts/rig.sh), $KP_RIG_DIR and
# $KP_RIG_PORT_OFFSET where they live; the rig's binaries must be built (`make rig-build`).
# After the rig is down, tests/rig/leftovers.py fails the run if any process of this rig is still alive.
set -uo pipefail
cd "$(dirname "$0")/.."
read -r -a rigs <<<"${RIGS:-main legacy secure k8s node spark}"
bash scripts/rig.sh down "${rigs[@]}" >/dev/null 2>&1 || true
teardown() {
  local status=$?
  trap - EXIT INT TERM
  bash scripts/rig.sh down "${rigs[@]}"
  local only=()
  [[ " ${rigs[*]} " == *" node "* ]] || only=(--without-node)
  if ! .venv/bin/python tests/rig/leftovers.py "${only[@]}"; then
    echo "with-rig: processes of the rig are still running (listed above)" >&2
    [[ $status == 0 ]] && status=1
  fi
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
bash scripts/rig.sh up "${rigs[@]}" || { echo "with-rig: rig-up failed; see the messages above" >&2; exit 1; }
# the command runs in the background so that a signal reaches this shell at once (bash runs a trap only
# after its foreground child ends): the command is stopped (TERM: a background job ignores INT), then the
# rig torn down
"$@" &
child=$!
trap 'kill -TERM $child 2>/dev/null; wait $child; exit 130' INT
trap 'kill -TERM $child 2>/dev/null; wait $child; exit 143' TERM
wait $child
