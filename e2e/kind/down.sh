#!/usr/bin/env bash
# Deletes both kind clusters and the work directory (kubeconfigs, overlay). Safe to run twice.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need "$KIND"
for name in "$HOST_CLUSTER" "$MEMBER_CLUSTER"; do
  if "$KIND" get clusters 2>/dev/null | grep -qx "$name"; then
    log "deleting kind cluster $name"
    "$KIND" delete cluster --name "$name"
  fi
done
rm -rf "$WORK"
