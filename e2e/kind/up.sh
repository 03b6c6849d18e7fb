#!/usr/bin/env bash
# Creates the two kind clusters (host and member), applies clusterlet's member identity (manifests/member)
# to the member and mints its kubeconfig with the member's address on the kind network, which pods of the
# host cluster reach. Idempotent: existing clusters are reused.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need "$KIND" "$KUBECTL" "$DOCKER"
mkdir -p "$WORK"

create() {
  local name="$1"
  if "$KIND" get clusters 2>/dev/null | grep -qx "$name"; then
    log "cluster $name exists; reusing it"
    return
  fi
  log "creating kind cluster $name"
  local args=(create cluster --name "$name" --wait 180s)
  [[ -n "$KIND_NODE_IMAGE" ]] && args+=(--image "$KIND_NODE_IMAGE")
  "$KIND" "${args[@]}"
}
create "$HOST_CLUSTER"
create "$MEMBER_CLUSTER"

"$KIND" get kubeconfig --name "$HOST_CLUSTER" > "$HOST_KUBECONFIG"
"$KIND" get kubeconfig --name "$MEMBER_CLUSTER" > "$MEMBER_ADMIN_KUBECONFIG"
chmod 600 "$HOST_KUBECONFIG" "$MEMBER_ADMIN_KUBECONFIG"

log "applying clusterlet's member identity (manifests/member) to $MEMBER_CLUSTER"
member_kubectl apply -k "$ROOT/manifests/member"

# `kind get kubeconfig` points at a port on this machine, which pods of the host cannot use. Both clusters'
# nodes are containers on the same docker network, so the member control-plane container's IP works from
# the host's pods, and the API server's certificate names it (kubeadm puts the advertise address in it).
# (`kind get kubeconfig --internal` gives the container's name instead, which kind's DNS also resolves.)
control_plane="$MEMBER_CLUSTER-control-plane"
network="${KIND_EXPERIMENTAL_DOCKER_NETWORK:-kind}"
ip="$("$DOCKER" inspect -f "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}" "$control_plane")"
[[ -n "$ip" ]] || { log "no IP address for container $control_plane"; exit 1; }
server="https://$ip:6443"
log "minting the member kubeconfig for $server"
"$ROOT/manifests/member/mint-kubeconfig.sh" --kubeconfig "$MEMBER_ADMIN_KUBECONFIG" --server "$server" \
  --name member --output "$MEMBER_KUBECONFIG"

log "clusters up: host $HOST_KUBECONFIG, member $MEMBER_ADMIN_KUBECONFIG"
