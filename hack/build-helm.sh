#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v4, pinned) into a cache outside the repo, keyed by version, as
# hack/build-k8s.sh does for the control-plane binaries: every clone on this machine reuses it. The chart tests
# (test/unit/chart.test.ts, test/integration/chart.test.ts) lint, render and install charts/clusterlet with it.
# Prints the helm binary's path on the last line of stdout. Progress goes to stderr.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v4.3.1}"
CACHE="${CLUSTERLET_CACHE:-$HOME/.cache/clusterlet}"
BIN="$CACHE/helm-$HELM_VERSION/bin"

log() { printf '[build-helm] %s\n' "$*" >&2; }

if [ -x "$BIN/helm" ]; then echo "$BIN/helm"; exit 0; fi

command -v go >/dev/null || { log "go is not on PATH"; exit 1; }
mkdir -p "$BIN"
log "first run: building helm $HELM_VERSION from its Go module (a few minutes on 2 cores, once per machine)"
# As helm's own Makefile stamps a release build (`helm version` then names it, and charts' kubeVersion checks work).
ld="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
GOBIN="$CACHE/helm-$HELM_VERSION/gobin" CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS= \
  go install -trimpath -ldflags "$ld" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
mv "$CACHE/helm-$HELM_VERSION/gobin/helm" "$BIN/helm"
rmdir "$CACHE/helm-$HELM_VERSION/gobin"
log "done: $BIN/helm"
echo "$BIN/helm"
