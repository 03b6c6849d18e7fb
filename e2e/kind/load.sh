#!/usr/bin/env bash
# Builds the image (Dockerfile at the repository root) and loads it into the host kind cluster, under a tag
# of its own so that deploy.sh rolls out exactly this build. IMAGE overrides the name:tag.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need "$KIND" "$DOCKER"
mkdir -p "$WORK"

image="${IMAGE:-clusterlet:e2e-$(date +%Y%m%d%H%M%S)}"
log "building $image"
"$DOCKER" build -t "$image" "$ROOT"
log "loading $image into $HOST_CLUSTER"
"$KIND" load docker-image "$image" --name "$HOST_CLUSTER"
printf '%s\n' "$image" > "$IMAGE_FILE"
