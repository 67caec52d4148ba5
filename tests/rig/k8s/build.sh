#!/usr/bin/env bash
# Build the real Kubernetes control-plane binaries used by the test rig, from the Go module proxy:
#   kube-apiserver and kubectl (k8s.io/kubernetes, staging modules replaced by their published v0.x),
#   the node's kubelet, kube-proxy, kube-scheduler and kube-controller-manager (same version),
#   etcd (go.etcd.io/etcd/server/v3), helm (helm.sh/helm/v3) and BuildKit's buildkitd + buildctl
#   (github.com/moby/buildkit: builds the operator image from the Dockerfile for the node).
# Binaries are cached outside the repo: $KP_CACHE/k8s/<k8s version>/bin. Idempotent: a complete
# cache is reused. Build time and peak memory are written to build-stats.txt beside the binaries.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.8}"
HELM_VERSION="${HELM_VERSION:-v3.21.4}"
BUILDKIT_VERSION="${BUILDKIT_VERSION:-v0.34.2}"
KP_CACHE="${KP_CACHE:-$HOME/.cache/kafka-placement}"
OUT="$KP_CACHE/k8s/$K8S_VERSION"
BIN="$OUT/bin"

die() { echo "k8s-rig build: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go is not installed (need go >= 1.26 on PATH; see README 'Requirements')"

K8S_CMDS=(kube-apiserver kubectl kubelet kube-proxy kube-scheduler kube-controller-manager)
complete=1
for b in "${K8S_CMDS[@]}" etcd helm buildkitd buildctl; do [ -x "$BIN/$b" ] || complete=0; done
if [ "$complete" = 1 ]; then
  echo "k8s-rig build: cached binaries in $BIN"
  exit 0
fi
mkdir -p "$BIN"
export GOPATH="${GOPATH:-$KP_CACHE/go}"
export GOMODCACHE="${GOMODCACHE:-$KP_CACHE/go/pkg/mod}"
export GOCACHE="${GOCACHE:-$KP_CACHE/go/build-cache}"
export GOFLAGS="${GOFLAGS:--mod=mod}"
export GOTOOLCHAIN=local

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
staging_ver="v0.${K8S_VERSION#v1.}"
start=$(date +%s)

work="$OUT/module"
rm -rf "$work"; mkdir -p "$work"
cd "$work"
cat > go.mod <<MOD
module kprig/k8sbuild

go 1.26.0
MOD
# The staging modules (k8s.io/api, k8s.io/apimachinery, ...) are replaced in k8s.io/kubernetes' own
# go.mod by ./staging paths; point each at its published version instead.
modfile=$(mktemp)
curl -fsS --retry 3 "https://proxy.golang.org/k8s.io/kubernetes/@v/$K8S_VERSION.mod" -o "$modfile" \
  || go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null \
  || die "cannot fetch k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
staging=$(grep -E '=> \./staging/src/' "$modfile" | awk '{print $1}' | sort -u)
[ -n "$staging" ] || die "no staging modules found in k8s.io/kubernetes@$K8S_VERSION go.mod"
for m in $staging; do echo "replace $m => $m $staging_ver" >> go.mod; done
rm -f "$modfile"
echo "k8s-rig build: $(echo "$staging" | wc -l) staging modules replaced by $staging_ver"

ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
go get $(printf 'k8s.io/kubernetes/cmd/%s@'"$K8S_VERSION"' ' "${K8S_CMDS[@]}")
timefile="$OUT/time.txt"
# timed NAME CMD...: run CMD, recording wall time and peak memory when GNU time is installed.
timed() {
  local name="$1"; shift
  if [ -x /usr/bin/time ]; then /usr/bin/time -v -o "$timefile.$name" "$@"; else "$@"; fi
}
for cmd in "${K8S_CMDS[@]}"; do
  [ -x "$BIN/$cmd" ] && continue
  timed "$cmd" go build -p 2 -trimpath -ldflags "$ld" -o "$BIN/$cmd" "k8s.io/kubernetes/cmd/$cmd" \
    || die "$cmd build failed"
done

# etcd's server module carries replace directives, so `go install pkg@version` refuses it: build it
# from a throwaway module as a dependency instead (its replaces are then ignored, as intended).
etcdwork="$OUT/etcd-module"
[ -x "$BIN/etcd" ] || ( rm -rf "$etcdwork" && mkdir -p "$etcdwork" && cd "$etcdwork" && printf 'module kprig/etcdbuild\n\ngo 1.26.0\n' > go.mod \
  && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" \
  && timed etcd go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3 ) \
  || die "etcd build failed"
[ -x "$BIN/helm" ] || GOBIN="$BIN" timed helm go install -trimpath \
  -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" \
  || die "helm build failed"
# BuildKit's go.mod carries exclude directives, so (like etcd) it is built from a throwaway module
bkld="-s -w -X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION"
bkwork="$OUT/buildkit-module"
{ [ -x "$BIN/buildkitd" ] && [ -x "$BIN/buildctl" ]; } || ( rm -rf "$bkwork" && mkdir -p "$bkwork" && cd "$bkwork" \
  && printf 'module kprig/buildkitbuild\n\ngo 1.26.0\n' > go.mod && go get "github.com/moby/buildkit@$BUILDKIT_VERSION" \
  && timed buildkitd go build -trimpath -ldflags "$bkld" -o "$BIN/buildkitd" github.com/moby/buildkit/cmd/buildkitd \
  && timed buildctl go build -trimpath -ldflags "$bkld" -o "$BIN/buildctl" github.com/moby/buildkit/cmd/buildctl ) \
  || die "buildkit build failed"

end=$(date +%s)
{
  echo "k8s $K8S_VERSION etcd $ETCD_VERSION helm $HELM_VERSION buildkit $BUILDKIT_VERSION built $(date -u +%FT%TZ) on $(nproc) cores"
  echo "total wall seconds: $((end - start))"
  for f in "$timefile".*; do
    [ -f "$f" ] && echo "$(basename "$f"): $(grep -E 'Elapsed|Maximum resident' "$f" | tr -s ' ' | tr '\n' ';')"
  done
} > "$OUT/build-stats.txt"
cat "$OUT/build-stats.txt"
"$BIN/kube-apiserver" --version
