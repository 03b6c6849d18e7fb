#!/usr/bin/env bash
# Compares two builds of clusterlet in one run: `bench/ab.sh BASE_REV [ROUNDS]` builds BASE_REV (the last landed
# commit, say) in a temporary worktree, then runs this checkout's bench at
# N=1,000 (one direct and one offloaded run per round) against each build in turn, alternating which goes first,
# ROUNDS times (default 2). Both builds run under the same bench code (CLUSTERLET_CLI), so only clusterlet differs.
# The results go to bench/results/ab-<base>-<head>-<round>-<build>.{json,md}; a summary table to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/ab.sh BASE_REV [ROUNDS] (BASE_REV: the build to compare this checkout with)}
rounds=${2:-2}
sizes=${AB_SIZES:-1000}
base=$(git rev-parse --short "$base")
head=$(git rev-parse --short HEAD)
dirty=$(git status --porcelain --untracked-files=no | head -c1)
[ -n "$dirty" ] && head="$head+"
wt=$(mktemp -d /tmp/clusterlet-ab-XXXXXX)
cleanup() { git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"; }
trap cleanup EXIT
git worktree add -q --detach "$wt" "$base"
echo "[ab] building $base in $wt" >&2
( cd "$wt" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && npm run -s build >/dev/null )
echo "[ab] building $head" >&2
npm run -s build >/dev/null
out=bench/results
run() { # round build cli
  local file="$out/ab-$base-$head-$1-$2.json"
  echo "[ab] round $1: $2" >&2
  CLUSTERLET_CLI="$3" node bench/run.ts --sizes "$sizes" --pairs 1 --members 0 --nodes-members 0 --out "$file" >/dev/null
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$r" base "$wt/dist/cli.js"; run "$r" head "$PWD/dist/cli.js"
  else run "$r" head "$PWD/dist/cli.js"; run "$r" base "$wt/dist/cli.js"; fi
done
node bench/ab-summary.ts "$out" "ab-$base-$head-"
