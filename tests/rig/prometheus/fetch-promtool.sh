#!/usr/bin/env bash
# Fetch promtool (Prometheus's rule checker) from Debian's `prometheus` package (apt's signed indexes),
# unpacked into the cache, never installed on the machine (installing the package would also start a
# Prometheus server). tests/integration/test_chart.py checks the chart's PrometheusRule with it.
#   KP_CACHE (default ~/.cache/kafka-placement). Output: $KP_CACHE/prometheus/<version>/usr/bin/promtool.
#   Idempotent; the last line on stdout is promtool's path.
set -euo pipefail

KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
die() { echo "promtool: $*" >&2; exit 1; }
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: promtool comes from Debian's prometheus package"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found"

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
v=$(candidate)
if [ -z "$v" ] || [ "$v" = "(none)" ]; then  # a fresh machine's package lists may be empty: read them once
  apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
  v=$(candidate)
fi
[ -n "$v" ] && [ "$v" != "(none)" ] || die "no candidate version of Debian package 'prometheus'"
DEST="$KP_CACHE/prometheus/$v"
TOOL="$DEST/unpacked/usr/bin/promtool"
if [ -x "$TOOL" ] && [ -f "$DEST/unpacked/.complete" ]; then
  echo "promtool: cached (prometheus=$v)" >&2
  echo "$TOOL"
  exit 0
fi
rm -rf "$DEST"; mkdir -p "$DEST/pkgs" "$DEST/unpacked"
cd "$DEST/pkgs"
apt-get download -q "prometheus=$v" >"$DEST/download.log" 2>&1 || die "apt-get download failed: $(tail -3 "$DEST/download.log")"
dpkg-deb -x ./prometheus_*.deb "$DEST/unpacked"
[ -x "$TOOL" ] || die "usr/bin/promtool missing after unpacking"
"$TOOL" --version >/dev/null 2>&1 || die "$TOOL does not run"
rm -rf "$DEST/pkgs"
touch "$DEST/unpacked/.complete"
echo "promtool: unpacked prometheus=$v" >&2
echo "$TOOL"
