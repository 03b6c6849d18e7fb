#!/usr/bin/env bash
# The whole kind e2e flow: two clusters, the image, clusterlet installed from manifests/, the e2e suite,
# and the clusters deleted on exit (also on failure or Ctrl-C). KEEP_CLUSTERS=1 keeps them for a look
# (then `bash e2e/kind/down.sh`). Needs docker, kind, kubectl and Node.js >= 24 (or npm to fetch it).
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

cleanup() {
  local status=$?
  if [[ "${KEEP_CLUSTERS:-}" == "1" ]]; then
    echo "[e2e/kind] keeping the clusters (KEEP_CLUSTERS=1); remove them with: bash $dir/down.sh" >&2
  else
    bash "$dir/down.sh" || true
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bash "$dir/up.sh"
bash "$dir/load.sh"
bash "$dir/deploy.sh"
bash "$dir/test.sh"
