#!/usr/bin/env bash
# Builds the local control-plane binaries from Go modules into a cache outside the repo,
# keyed by version, so every clone on this machine reuses them:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
#   kubelet, kube-proxy (the harness's real nodes)                   (k8s.io/kubernetes)
#   etcd                                                             (go.etcd.io/etcd/server/v3)
#   kwok                                                             (sigs.k8s.io/kwok)
# Prints the bin directory on the last line of stdout. Progress goes to stderr.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
CACHE="${CLUSTERLET_CACHE:-$HOME/.cache/clusterlet}"
BIN="$CACHE/k8s-$K8S_VERSION-kwok-$KWOK_VERSION/bin"
WORK="$CACHE/build/k8s-$K8S_VERSION"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd kwok)

log() { printf '[build-k8s] %s\n' "$*" >&2; }

all_present() { for b in "${BINARIES[@]}"; do [ -x "$BIN/$b" ] || return 1; done; }
if all_present; then echo "$BIN"; exit 0; fi

command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
mkdir -p "$BIN" "$WORK"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" GOTOOLCHAIN=local

log "first run: building Kubernetes $K8S_VERSION, etcd and KWOK $KWOK_VERSION from Go modules (10-30 min on 2 cores, once per machine)"
cd "$WORK"
if [ ! -f go.mod ]; then
  go mod init clusterlet.local/k8s-build >/dev/null 2>&1
fi
log "downloading k8s.io/kubernetes@$K8S_VERSION go.mod"
gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
[ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
staging="v0.${K8S_VERSION#v1.}"

# Every staging module the release replaces with ./staging/src/... gets its published v0.X.Y instead.
{
  echo "module clusterlet.local/k8s-build"
  echo
  grep -E '^go [0-9]' "$gomod"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" | awk -v v="$staging" '{print "\t" $1 " => " $1 " " v}'
  echo ")"
} > go.mod
log "wrapper go.mod replaces $(grep -c '=> k8s.io' go.mod) staging modules with $staging"

etcd_version=$(grep -E '^\s*go\.etcd\.io/etcd/server/v3 ' "$gomod" | awk '{print $2}')
log "resolving modules (etcd server $etcd_version)"
go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
       "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
       "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" \
       "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION" \
       "k8s.io/kubernetes/cmd/kubelet@$K8S_VERSION" \
       "k8s.io/kubernetes/cmd/kube-proxy@$K8S_VERSION" \
       "go.etcd.io/etcd/server/v3@$etcd_version" >&2

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ld=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
done
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
  [ -x "$BIN/$b" ] && continue
  log "building $b"
  go build -trimpath -ldflags "-s -w $ld" -o "$BIN/$b.tmp" "k8s.io/kubernetes/cmd/$b"
  mv "$BIN/$b.tmp" "$BIN/$b"
done
if [ ! -x "$BIN/etcd" ]; then
  log "building etcd $etcd_version"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$BIN/etcd.tmp" "$BIN/etcd"
fi
if [ ! -x "$BIN/kwok" ]; then
  log "building kwok $KWOK_VERSION"
  GOBIN="$WORK/gobin" GOFLAGS= go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$WORK/gobin/kwok" "$BIN/kwok"
fi
all_present || { log "some binaries are missing in $BIN"; exit 1; }
log "done: $BIN"
echo "$BIN"
