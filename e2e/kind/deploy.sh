#!/usr/bin/env bash
# Installs clusterlet in the host kind cluster as a platform engineer would: the member kubeconfig Secret,
# then manifests/host (through a generated overlay that sets the image load.sh loaded), and waits for the
# rollout.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need "$KUBECTL"
[[ -f "$MEMBER_KUBECONFIG" ]] || { log "no $MEMBER_KUBECONFIG: run up.sh first"; exit 1; }
image="${IMAGE:-}"
if [[ -z "$image" ]]; then
  [[ -f "$IMAGE_FILE" ]] || { log "no image: run load.sh first (or set IMAGE)"; exit 1; }
  image="$(cat "$IMAGE_FILE")"
fi

log "creating the member kubeconfig Secret in $HOST_CLUSTER"
host_kubectl create namespace clusterlet --dry-run=client -o yaml | host_kubectl apply -f -
host_kubectl -n clusterlet create secret generic clusterlet-member-kubeconfig \
  --from-file=kubeconfig="$MEMBER_KUBECONFIG" --dry-run=client -o yaml | host_kubectl apply -f -

# Kustomize wants bases as relative paths: the overlay lives under $WORK, four levels below the root.
overlay="$WORK/overlay"
mkdir -p "$overlay"
cat > "$overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../../../manifests/host
images:
- name: clusterlet
  newName: ${image%:*}
  newTag: ${image##*:}
YAML
log "applying manifests/host with image $image"
host_kubectl apply -k "$overlay"
if ! host_kubectl -n clusterlet rollout status deployment/clusterlet --timeout=180s; then
  host_kubectl -n clusterlet describe pods -l app.kubernetes.io/name=clusterlet || true
  host_kubectl -n clusterlet logs deployment/clusterlet --tail=100 || true
  exit 1
fi
log "clusterlet is running in $HOST_CLUSTER"
