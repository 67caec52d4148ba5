#!/usr/bin/env bash
# Run a command with the real rig up (Kafka main + legacy clusters, kube-apiserver), always tearing the
# rig down afterwards, also on failure or interrupt. Exit status is the command's.
set -uo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory rig-down >/dev/null 2>&1 || true
trap 'make --no-print-directory rig-down' EXIT INT TERM
make --no-print-directory rig-up || { echo "with-rig: rig-up failed; see the messages above" >&2; exit 1; }
"$@"
