#!/usr/bin/env bash
# Build the GitOps health checkers the tests run our resources through, from the Go module proxy:
#   kstatus   - sigs.k8s.io/cli-utils' kstatus Compute (what Flux's health checks and kpt use)
#   luahealth - github.com/yuin/gopher-lua running an Argo CD health script, as Argo CD does
# Cached outside the repo: $KP_CACHE/gitops/<hash of this directory>/{kstatus,luahealth}; prints that
# directory. Idempotent: a complete cache is reused.
set -euo pipefail
cd "$(dirname "$0")"
KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
command -v go >/dev/null 2>&1 || { echo "gitops build: Go is not installed (need go >= 1.26)" >&2; exit 1; }
hash=$(cat go.mod go.sum kstatus/main.go luahealth/main.go | sha256sum | cut -c1-16)
out="$KP_CACHE/gitops/$hash"
if [ -x "$out/kstatus" ] && [ -x "$out/luahealth" ]; then
  echo "$out"
  exit 0
fi
export GOPATH="${GOPATH:-$KP_CACHE/go}"
export GOMODCACHE="${GOMODCACHE:-$KP_CACHE/go/pkg/mod}"
export GOCACHE="${GOCACHE:-$KP_CACHE/go/build-cache}"
export GOFLAGS="-mod=readonly" GOTOOLCHAIN=local
mkdir -p "$out.tmp"
go build -trimpath -o "$out.tmp/" ./kstatus ./luahealth >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
