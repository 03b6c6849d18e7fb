#!/usr/bin/env bash
# Settings shared by the kind e2e scripts (sourced by each). Override with the environment:
#   HOST_CLUSTER, MEMBER_CLUSTER   kind cluster names (clusterlet-host, clusterlet-member)
#   KIND, KUBECTL, DOCKER          the tools (kind, kubectl, docker on PATH)
#   KIND_NODE_IMAGE                kindest/node image for both clusters (kind's default when empty)
# The variables are for the scripts that source this file:
# shellcheck disable=SC2034
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Kubeconfigs, the image name and the generated overlay; removed by down.sh.
WORK="$ROOT/e2e/kind/.work"
HOST_CLUSTER="${HOST_CLUSTER:-clusterlet-host}"
MEMBER_CLUSTER="${MEMBER_CLUSTER:-clusterlet-member}"
KIND="${KIND:-kind}"
KUBECTL="${KUBECTL:-kubectl}"
DOCKER="${DOCKER:-docker}"
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-}"

# Admin access to each cluster, from this machine.
HOST_KUBECONFIG="$WORK/host.kubeconfig"
MEMBER_ADMIN_KUBECONFIG="$WORK/member-admin.kubeconfig"
# clusterlet's member identity (manifests/member), with the member's address as pods of the host reach it.
MEMBER_KUBECONFIG="$WORK/member.kubeconfig"
# The image tag load.sh built and loaded, for deploy.sh.
IMAGE_FILE="$WORK/image"

log() { printf '[e2e/kind] %s\n' "$*" >&2; }
need() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || { log "$tool is required on PATH"; exit 1; }
  done
}
host_kubectl() { "$KUBECTL" --kubeconfig "$HOST_KUBECONFIG" "$@"; }
member_kubectl() { "$KUBECTL" --kubeconfig "$MEMBER_ADMIN_KUBECONFIG" "$@"; }
