#!/usr/bin/env bash
# Runs the e2e suite (e2e/e2e.test.ts) against the kind clusters. Extra settings pass through the
# environment (E2E_EXPECT_LOGS, E2E_IMAGE, E2E_TIMEOUT_SCALE; see e2e/e2e.test.ts). On failure it prints
# clusterlet's log.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need "$KUBECTL"
[[ -f "$HOST_KUBECONFIG" && -f "$MEMBER_ADMIN_KUBECONFIG" ]] || { log "no kubeconfigs in $WORK: run up.sh first"; exit 1; }

cd "$ROOT"
node_bin="$(bash hack/ensure-node.sh | tail -n 1)"
export PATH="$node_bin:$PATH"
[[ -d node_modules ]] || npm ci --no-audit --no-fund --loglevel=error

export E2E_HOST_KUBECONFIG="$HOST_KUBECONFIG"
export E2E_MEMBER_KUBECONFIG="$MEMBER_ADMIN_KUBECONFIG"
export E2E_NODE="${E2E_NODE:-clusterlet-member}"
export E2E_KUBECTL="$KUBECTL"
status=0
node --test --test-reporter=spec e2e/e2e.test.ts || status=$?
if [[ $status -ne 0 ]]; then
  log "e2e failed; clusterlet's log:"
  host_kubectl -n clusterlet logs deployment/clusterlet --tail=200 || true
fi
exit "$status"
