#!/usr/bin/env bash
# Fetch the node's container runtime pieces from Debian's packages (apt's signed indexes), unpacked
# into the cache, never installed on the machine: containerd (+ ctr, shim), runc, the CNI plugins
# (bridge, host-local, loopback, portmap) and iptables (nft backend) + conntrack for kube-proxy; and
# mmdebstrap, which tests/rig/image_rig.py runs to build the stand-in base image.
#   KP_CACHE (default ~/.cache/kafka-placement). Output: $KP_CACHE/node/debs/<key>/root, where <key>
#   hashes the package list and their candidate versions. Idempotent (root/.complete); the last line
#   on stdout is the root directory.
set -euo pipefail

KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
PACKAGES=(containerd runc containernetworking-plugins iptables libnftnl11 libnetfilter-conntrack3
  libnfnetlink0 libip4tc2 libip6tc2 libxtables12 libmnl0 conntrack mmdebstrap)

die() { echo "node debs: $*" >&2; exit 1; }
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: the node's runtime comes from Debian packages (Debian 12 'bookworm')"
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found"

versions=""
for p in "${PACKAGES[@]}"; do
  v=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
  [ -n "$v" ] && [ "$v" != "(none)" ] || die "no candidate version of Debian package '$p' (run apt-get update?)"
  versions+="$p=$v "
done
key=$(printf '%s' "$versions" | sha256sum | cut -c1-16)
DEST="$KP_CACHE/node/debs/$key"
ROOT="$DEST/root"
if [ -f "$ROOT/.complete" ]; then
  echo "node debs: cached ($versions)" >&2
  echo "$ROOT"
  exit 0
fi
rm -rf "$DEST"; mkdir -p "$DEST/pkgs" "$ROOT"
cd "$DEST/pkgs"
# apt-get download verifies each .deb against the signed package index
# shellcheck disable=SC2086
apt-get download -q $versions >"$DEST/download.log" 2>&1 || die "apt-get download failed: $(tail -3 "$DEST/download.log")"
for deb in ./*.deb; do dpkg-deb -x "$deb" "$ROOT"; done
for tool in usr/bin/containerd usr/bin/ctr usr/bin/containerd-shim-runc-v2 usr/sbin/runc usr/lib/cni/bridge \
  usr/lib/cni/host-local usr/lib/cni/loopback usr/lib/cni/portmap usr/sbin/xtables-nft-multi usr/sbin/conntrack usr/bin/mmdebstrap usr/bin/mmtarfilter; do
  [ -x "$ROOT/$tool" ] || die "$tool missing after unpacking"
done
echo "$versions" > "$ROOT/VERSIONS"
rm -rf "$DEST/pkgs"
touch "$ROOT/.complete"
echo "node debs: unpacked $versions" >&2
echo "$ROOT"
