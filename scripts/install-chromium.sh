#!/usr/bin/env bash
# Headless Chromium from Debian's packages, for the report's browser test (tests/integration/
# test_report_browser.py). Idempotent: a no-op when `chromium` is already on PATH; otherwise
# `apt-get update` then `apt-get install chromium` (root, or sudo when there). Prints the binary's path.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing: chromium (install Chromium from your distribution's packages)" >&2
    exit 1
  fi
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "missing: chromium (as root: apt-get install chromium)" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "install-chromium: apt-get install chromium (once)" >&2
  "${sudo[@]}" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v chromium
