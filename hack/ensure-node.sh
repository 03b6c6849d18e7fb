#!/usr/bin/env bash
# Prints a directory holding node >= 24 (and its npm) on the last line of stdout.
# Uses the node on PATH when it is new enough; otherwise installs the `node` package
# (Node 24, binary included) from the npm registry into a cache outside the repo.
set -euo pipefail
NODE_MAJOR="${NODE_MAJOR:-24}"
CACHE="${CLUSTERLET_CACHE:-$HOME/.cache/clusterlet}"
if command -v node >/dev/null 2>&1; then
  have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$have" -ge "$NODE_MAJOR" ]; then dirname "$(command -v node)"; exit 0; fi
fi
dir="$CACHE/node-$NODE_MAJOR"
if [ ! -x "$dir/node_modules/node/bin/node" ]; then
  command -v npm >/dev/null || { echo "[ensure-node] need npm on PATH to fetch Node $NODE_MAJOR" >&2; exit 1; }
  echo "[ensure-node] installing Node $NODE_MAJOR from the npm registry into $dir" >&2
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error "node@$NODE_MAJOR" >&2
fi
bin="$dir/node_modules/node/bin"
"$bin/node" --version >/dev/null
echo "$bin"
