#!/usr/bin/env bash
# Builds container image archives without a Docker engine or an image registry (buildah, daemonless):
#   pause.tar       localhost/clusterlet-test/pause:3.10    static pause (hack/images/pause.c, gcc -static)
#   busybox.tar     localhost/clusterlet-test/busybox:1.36  Debian's busybox-static, its applets linked into /bin
#   clusterlet.tar  docker.io/library/clusterlet:$IMAGE_TAG the repo's Dockerfile (buildah bud), FROM a local
#                   node:24-slim equivalent (localhost/clusterlet-node-base:24, assembled here)
# The test images have names of our own (test/harness/images.ts): loaded into a docker or kind elsewhere, they
# shadow no official image.
# They are docker-archive files: `ctr -n k8s.io images import`, `docker load` and `kind load image-archive` take them.
# Prints the directory holding them on the last line of stdout; everything else goes to stderr.
#
# Usage: hack/build-images.sh [pause] [busybox] [clusterlet]      (no argument: all three)
# Env:   IMAGE_TAG (dev)  CLUSTERLET_CACHE (~/.cache/clusterlet)  IMAGES_DIR ($CLUSTERLET_CACHE/images)
#        BUILDAH_STORAGE_DRIVER (overlay when the kernel mounts one, else vfs)  NPM_VERSION (11, npm in the base)
#        IMAGE_NPM_CACHE (the host's npm cache, mounted into the RUN steps; "none": none)  IMAGE_CHECK (1: run each
#        new image once)
# Needs: buildah; gcc with static glibc (libc6-dev) for pause; busybox-static; npm (Node 24 comes from the npm
# registry as hack/ensure-node.sh installs it). The npm registry, proxy and CA bundle of the RUN steps come from
# this machine's npm config (npm config list), nothing of them from the repo.
# Cached: pause, busybox and the base image are rebuilt only when their inputs (files and recipe) change; the
# clusterlet image is built with --layers, and its archive rewritten only when the image ID changes.
# shellcheck disable=SC2016 # the single-quoted scripts of node -e and sh -c
set -euo pipefail

log() { echo "[build-images] $*" >&2; }
die() { log "error: $*"; exit 1; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CLUSTERLET_CACHE:-$HOME/.cache/clusterlet}
OUT=${IMAGES_DIR:-$CACHE/images}
IMAGE_TAG=${IMAGE_TAG:-dev}
NPM_VERSION=${NPM_VERSION:-11}
IMAGE_CHECK=${IMAGE_CHECK:-1}
NODE_MAJOR=24
PAUSE_REF=localhost/clusterlet-test/pause:3.10
BUSYBOX_REF=localhost/clusterlet-test/busybox:1.36
CLUSTERLET_REF=docker.io/library/clusterlet:$IMAGE_TAG
BASE_REF=localhost/clusterlet-node-base:$NODE_MAJOR
PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

want_pause=0 want_busybox=0 want_clusterlet=0
[ $# -gt 0 ] || set -- pause busybox clusterlet
for a; do
  case $a in
    pause) want_pause=1 ;; busybox) want_busybox=1 ;; clusterlet) want_clusterlet=1 ;;
    -h|--help) sed -n '2,/^# shellcheck/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown image '$a' (pause, busybox, clusterlet)" ;;
  esac
done

command -v buildah >/dev/null || die "buildah is needed (apt-get install buildah)"
BUSYBOX_BIN=$(command -v busybox || true)
if [ $((want_busybox + want_clusterlet)) -gt 0 ]; then
  [ -n "$BUSYBOX_BIN" ] || die "busybox is needed (apt-get install busybox-static)"
  BUSYBOX_BIN=$(readlink -f "$BUSYBOX_BIN")
  file_ldd=$(ldd "$BUSYBOX_BIN" 2>&1 || true)
  case $file_ldd in *"not a dynamic executable"*|*"statically linked"*) ;;
    *) die "$BUSYBOX_BIN is dynamically linked; the images need busybox-static" ;; esac
fi

BROOT=$CACHE/buildah
mkdir -p "$BROOT" "$OUT"
# One build at a time per cache (buildah's storage takes concurrent users, the archives and stamps do not).
if command -v flock >/dev/null; then exec 9>"$BROOT/.lock"; flock 9; fi

# overlay when this kernel (and this user) can mount one; a storage root keeps the driver it was created with.
if [ -n "${BUILDAH_STORAGE_DRIVER:-}" ]; then DRIVER=$BUILDAH_STORAGE_DRIVER
elif [ -d "$BROOT/root/overlay" ]; then DRIVER=overlay
elif [ -d "$BROOT/root/vfs" ]; then DRIVER=vfs
else
  DRIVER=vfs
  if [ "$(id -u)" = 0 ]; then
    p=$(mktemp -d); mkdir "$p/l" "$p/u" "$p/w" "$p/m"
    if mount -t overlay overlay -o "lowerdir=$p/l,upperdir=$p/u,workdir=$p/w" "$p/m" 2>/dev/null; then
      umount "$p/m"; DRIVER=overlay
    fi
    rm -rf "$p"
  fi
fi
bh() { buildah --root "$BROOT/root" --runroot "$BROOT/runroot" --storage-driver "$DRIVER" "$@"; }
export BUILDAH_ISOLATION=chroot
# Every image used here is built here: no pull, so no registries; a machine without a policy gets a permissive one.
POLICY=()
if [ ! -e /etc/containers/policy.json ] && [ ! -e "$HOME/.config/containers/policy.json" ]; then
  echo '{"default":[{"type":"insecureAcceptAnything"}]}' >"$BROOT/policy.json"
  POLICY=(--signature-policy "$BROOT/policy.json")
fi

TMP=$(mktemp -d "$BROOT/tmp.XXXXXX")
CTRS=()
JOBS=()
cleanup() {
  local c j
  for j in "${JOBS[@]}"; do kill "${j#*:}" 2>/dev/null || true; done
  for c in "${CTRS[@]}"; do bh rm "$c" >/dev/null 2>&1 || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

sha() { sha256sum | cut -c1-64; }
# The key of an image: its recipe (the function's text) and its input files.
key_of() { local fn=$1; shift; { declare -f "$fn"; for f; do sha256sum <"$f"; done; } | sha; }
# A working container of image $2, named after $1, in $c (removed on exit).
newctr() { c=$(bh from "${POLICY[@]}" --pull=never --quiet --name "clusterlet-images-$1-$$" "$2"); CTRS+=("$c"); }
rootfs_tar() { tar --numeric-owner --owner=0 --group=0 --sort=name -C "$1" -cf "$2" .; }
# Archive of image $1 as docker-archive $OUT/$2 (written aside, then moved in).
archive() {
  rm -f "$OUT/$2.tmp"
  bh push "${POLICY[@]}" --quiet "$1" "docker-archive:$OUT/$2.tmp:$1" >&2
  mv -f "$OUT/$2.tmp" "$OUT/$2"
}
fresh() { [ -s "$OUT/$1" ] && [ "$(cat "$OUT/$1.key" 2>/dev/null)" = "$2" ] && bh inspect --type image "$3" >/dev/null 2>&1; }
# Commits container $c as image $1 (history: $2) and removes the image $1 named before, now nameless.
commit() {
  local old new
  old=$(bh images --quiet --no-trunc "$1" 2>/dev/null | head -n 1 || true)
  bh config --created-by "$2" "$c"
  new=$(bh commit --quiet --rm --format docker "$c" "$1")
  if [ -n "$old" ] && [ "$old" != "$new" ] && [ "${old#sha256:}" != "${new#sha256:}" ]; then bh rmi "$old" >/dev/null 2>&1 || true; fi
}
# Runs function $1 in the background, its messages in $TMP/$1.log; join $1 waits for it, and shows them.
start() { "$1" >"$TMP/$1.log" 2>&1 & JOBS+=("$1:$!"); }
join() {
  local i rc=0
  for i in "${!JOBS[@]}"; do
    if [ "${JOBS[$i]%%:*}" = "$1" ]; then
      wait "${JOBS[$i]#*:}" || rc=$?; unset "JOBS[$i]"; cat "$TMP/$1.log" >&2; return $rc
    fi
  done
}
seconds() { echo "$((SECONDS - $1))s"; }

# Builds image $2 into $1.tar with recipe_$1, unless the archive is fresh for key $3; with IMAGE_CHECK=1, runs
# check_$1 on a container of the new image first. recipe_$1 and check_$1 share this function's container, $c.
build_cached() {
  local name=$1 ref=$2 key c t=$SECONDS
  # The name is part of the key: an archive of the same image under another name is built again.
  key=$(echo "$3 $ref" | sha)
  if fresh "$name.tar" "$key" "$ref"; then log "$name.tar: up to date"; return; fi
  log "$name: building $ref"
  mkdir -p "$TMP/$name"
  "recipe_$name"
  if [ "$IMAGE_CHECK" = 1 ]; then
    newctr "$name-check" "$ref"
    "check_$name"
  fi
  archive "$ref" "$name.tar"
  echo "$key" >"$OUT/$name.tar.key"
  log "$name.tar: done in $(seconds "$t")"
}

# --- pause -------------------------------------------------------------------------------------------------------
recipe_pause() {
  gcc -static -Os -s -Wall -Wextra -o "$TMP/pause/pause" "$REPO/hack/images/pause.c" >&2
  newctr pause scratch
  bh copy --quiet --chmod 0755 "$c" "$TMP/pause/pause" /pause >&2
  bh config --entrypoint '["/pause"]' --user 65535:65535 --workingdir / "$c"
  commit "$PAUSE_REF" "hack/build-images.sh: /pause, gcc -static hack/images/pause.c"
}
build_pause() {
  command -v gcc >/dev/null || die "gcc is needed for pause (apt-get install gcc libc6-dev)"
  build_cached pause "$PAUSE_REF" "$({ gcc --version | head -n 1; key_of recipe_pause "$REPO/hack/images/pause.c"; } | sha)"
}
check_pause() { bh run "$c" -- /pause -v >&2; }

# --- busybox -----------------------------------------------------------------------------------------------------
recipe_busybox() {
  local r=$TMP/busybox/rootfs
  mkdir -p "$r"/{bin,etc,root,home,tmp,var/www,usr/sbin,usr/bin,sbin}
  chmod 1777 "$r/tmp"; chmod 0700 "$r/root"
  cp "$BUSYBOX_BIN" "$r/bin/busybox"; chmod 0755 "$r/bin/busybox"
  # What `busybox --install -s /bin` makes inside the image, made here: no RUN step (its /etc/hosts, resolv.conf
  # and hostname mount points would stay in the layer).
  for a in $("$BUSYBOX_BIN" --list); do [ -e "$r/bin/$a" ] || ln -s /bin/busybox "$r/bin/$a"; done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/bin/false' \
    'bin:x:2:2:bin:/bin:/bin/false' 'sys:x:3:3:sys:/dev:/bin/false' 'www-data:x:33:33:www-data:/var/www:/bin/false' \
    'nobody:x:65534:65534:nobody:/home:/bin/false' >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'bin:x:2:' 'sys:x:3:' 'www-data:x:33:' 'nogroup:x:65534:' >"$r/etc/group"
  printf '%s\n' 'hosts: files dns' 'passwd: files' 'group: files' >"$r/etc/nsswitch.conf"
  rootfs_tar "$r" "$TMP/busybox/rootfs.tar"
  newctr busybox scratch
  bh add --quiet "$c" "$TMP/busybox/rootfs.tar" / >&2
  bh config --cmd '["sh"]' --env "PATH=$PATH_ENV" --workingdir / "$c"
  commit "$BUSYBOX_REF" "hack/build-images.sh: /bin/busybox ($BUSYBOX_BIN), busybox --install -s /bin"
}
build_busybox() { build_cached busybox "$BUSYBOX_REF" "$(key_of recipe_busybox "$BUSYBOX_BIN")"; }
check_busybox() {
  bh run "$c" -- sh -c 'for a in sh cat sleep echo nc httpd wget; do command -v $a >/dev/null || exit 1; done' >&2 \
    || die "busybox image lacks an applet"
}

# --- the node:24-slim equivalent ---------------------------------------------------------------------------------
# Node 24 and npm from the npm registry; from this (Debian) machine the shared libraries node needs (ldd), dash as
# /bin/sh, busybox's applets for the rest of a userland (coreutils' commands, without overwriting sh), os-release;
# passwd/group with root, node (1000, as node's images) and nonroot (65532). No ca-certificates, as in node:24-slim:
# Node trusts its own bundled roots.
NODE_DIR=$CACHE/node-$NODE_MAJOR
NODE_EXE=$NODE_DIR/node_modules/node/bin/node
NPM_TGZ=$CACHE/image-inputs/npm-$NPM_VERSION.tgz
# Downloads (in the background, while pause and busybox build): Node (as hack/ensure-node.sh installs it, into the
# same directory) and npm's package.
fetch_node_inputs() {
  local pid=
  if [ ! -s "$NPM_TGZ" ]; then
    log "fetching npm@$NPM_VERSION from the npm registry"
    mkdir -p "$CACHE/image-inputs" "$TMP/npm-pack"
    (cd "$TMP/npm-pack" && f=$(npm pack --silent "npm@$NPM_VERSION" | tail -n 1) && mv "$f" "$NPM_TGZ") & pid=$!
  fi
  if [ ! -x "$NODE_EXE" ]; then
    log "installing Node $NODE_MAJOR from the npm registry into $NODE_DIR"
    mkdir -p "$NODE_DIR"
    npm install --prefix "$NODE_DIR" --no-save --no-audit --no-fund --loglevel=error "node@$NODE_MAJOR" >&2
  fi
  [ -z "$pid" ] || wait "$pid"
}
ensure_node_inputs() {
  if [ ! -x "$NODE_EXE" ] || [ ! -s "$NPM_TGZ" ]; then die "Node $NODE_MAJOR or npm's package is missing (download failed)"; fi
  NODE_VERSION=$("$NODE_EXE" --version)
  case $NODE_VERSION in "v$NODE_MAJOR".*) ;; *) die "$NODE_EXE is $NODE_VERSION, not Node $NODE_MAJOR" ;; esac
  SH_BIN=$(readlink -f "$(command -v dash || echo "$BUSYBOX_BIN")")
  # Every shared object node and sh load, as this machine resolves them.
  BASE_LIBS=$( { ldd "$NODE_EXE"; ldd "$SH_BIN" 2>/dev/null || true; } | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | sort -u)
}
recipe_base() {
  local r=$TMP/base/rootfs lib d
  mkdir -p "$r"/{usr/bin,usr/sbin,usr/lib,usr/lib64,usr/local/bin,usr/local/lib/node_modules,usr/local/etc} \
    "$r"/{etc,root,home/node,home/nonroot,tmp,var/tmp,run,dev,proc,sys}
  ln -s usr/bin "$r/bin"; ln -s usr/sbin "$r/sbin"; ln -s usr/lib "$r/lib"; ln -s usr/lib64 "$r/lib64"
  chmod 1777 "$r/tmp" "$r/var/tmp"; chmod 0700 "$r/root"
  for lib in $BASE_LIBS; do
    d=$r$(dirname "$lib"); mkdir -p "$d"; cp -L "$lib" "$d/"
  done
  cp "$SH_BIN" "$r/usr/bin/$(basename "$SH_BIN")"
  [ -e "$r/usr/bin/sh" ] || ln -s "$(basename "$SH_BIN")" "$r/usr/bin/sh"
  cp "$BUSYBOX_BIN" "$r/usr/bin/busybox"
  cp "$NODE_EXE" "$r/usr/local/bin/node"
  tar -xzf "$NPM_TGZ" -C "$r/usr/local/lib/node_modules" --no-same-owner
  mv "$r/usr/local/lib/node_modules/package" "$r/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  for f in /usr/lib/os-release /etc/debian_version; do [ -f "$f" ] && cp -L "$f" "$r$f"; done
  [ -f "$r/usr/lib/os-release" ] && ln -s ../usr/lib/os-release "$r/etc/os-release"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin' \
    'bin:x:2:2:bin:/bin:/usr/sbin/nologin' 'sys:x:3:3:sys:/dev:/usr/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' 'node:x:1000:1000::/home/node:/bin/sh' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >"$r/etc/passwd"
  printf '%s\n' 'root:x:0:' 'daemon:x:1:' 'bin:x:2:' 'sys:x:3:' 'nogroup:x:65534:' 'node:x:1000:' \
    'nonroot:x:65532:' >"$r/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files dns' >"$r/etc/nsswitch.conf"
  # What `busybox --install -s` makes (each applet at its usual place), but for the commands already there (sh).
  for a in $("$BUSYBOX_BIN" --list-full | grep -vx linuxrc); do [ -e "$r/$a" ] || [ -L "$r/$a" ] || ln -s /usr/bin/busybox "$r/$a"; done
  # root owns everything but the home directories of node and nonroot.
  tar --numeric-owner --owner=0 --group=0 --sort=name --exclude=./home/node --exclude=./home/nonroot \
    -C "$r" -cf "$TMP/base/rootfs.tar" .
  tar --numeric-owner --owner=1000 --group=1000 -C "$r" -rf "$TMP/base/rootfs.tar" ./home/node
  tar --numeric-owner --owner=65532 --group=65532 -C "$r" -rf "$TMP/base/rootfs.tar" ./home/nonroot
  newctr base scratch
  bh add --quiet "$c" "$TMP/base/rootfs.tar" / >&2
  bh config --env "PATH=$PATH_ENV" --env "NODE_VERSION=${NODE_VERSION#v}" --cmd '["node"]' --workingdir / "$c"
  commit "$BASE_REF" "hack/build-images.sh: Node $NODE_VERSION, npm, libraries, dash, busybox (node:24-slim equivalent)"
}
build_base() {
  ensure_node_inputs
  local key c t=$SECONDS
  # shellcheck disable=SC2086
  key=$(key_of recipe_base "$NODE_EXE" "$NPM_TGZ" "$SH_BIN" "$BUSYBOX_BIN" $BASE_LIBS)
  if [ "$(cat "$BROOT/node-base.key" 2>/dev/null)" = "$key" ] && bh inspect --type image "$BASE_REF" >/dev/null 2>&1; then
    log "$BASE_REF: up to date"; return
  fi
  log "building $BASE_REF: Node $NODE_VERSION, npm@$NPM_VERSION, $(wc -w <<<"$BASE_LIBS") libraries"
  mkdir -p "$TMP/base"
  recipe_base
  newctr base-check "$BASE_REF"
  bh run "$c" -- sh -c 'node --version && npm --version && env true' >&2 || die "$BASE_REF does not run node and npm"
  echo "$key" >"$BROOT/node-base.key"
  # What was built on the base before (the --layers cache of the clusterlet image) cannot be used again.
  bh rmi --prune >/dev/null 2>&1 || true
  log "$BASE_REF: done in $(seconds "$t")"
}

# --- clusterlet --------------------------------------------------------------------------------------------------
# The RUN steps' npm config, from this machine's: registry (and scoped ones), proxies, strict-ssl, the CA bundle
# (npm's cafile, plus NODE_EXTRA_CA_CERTS), and its cache (prefer-offline), mounted at /run/clusterlet-build and
# read as the global npmrc of the base image (/usr/local/etc/npmrc). Nothing of it is in the image: the runtime
# stage copies only dist/ and package.json from the build stage.
npm_build_config() {
  local d=$TMP/npm ca cache
  mkdir -p "$d"
  npm config list --json 2>/dev/null | NPM_CACHE_OPT="${IMAGE_NPM_CACHE:-}" node -e '
    const c = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const env = process.env, out = [];
    const put = (k, v) => { if (v !== null && v !== undefined && v !== "" && !(Array.isArray(v) && !v.join(""))) out.push(`${k}=${v}`); };
    put("registry", c.registry);
    for (const k of Object.keys(c)) if (/^@[^:]+:registry$/.test(k)) put(k, c[k]);
    put("proxy", c.proxy ?? env.HTTP_PROXY ?? env.http_proxy);
    put("https-proxy", c["https-proxy"] ?? env.HTTPS_PROXY ?? env.https_proxy ?? env.HTTP_PROXY ?? env.http_proxy);
    put("noproxy", [].concat(c.noproxy ?? []).join(",") || env.NO_PROXY || env.no_proxy);
    if (c["strict-ssl"] === false) put("strict-ssl", false);
    put("update-notifier", false);
    console.log(out.join("\n"));
    console.error("CAFILE=" + (c.cafile ?? ""));
    console.error("CACHE=" + (env.NPM_CACHE_OPT || c.cache || ""));
  ' >"$d/npmrc" 2>"$d/paths" || die "could not read this machine's npm config (npm config list --json)"
  ca=$(sed -n 's/^CAFILE=//p' "$d/paths"); cache=$(sed -n 's/^CACHE=//p' "$d/paths")
  NPM_MOUNTS=(-v "$d:/run/clusterlet-build:ro")
  local extra=${NODE_EXTRA_CA_CERTS:-}
  [ "$extra" != "$ca" ] || extra=
  if [ -n "$ca" ] || [ -n "$extra" ]; then
    { if [ -n "$ca" ]; then cat "$ca"; else node -p 'require("tls").rootCertificates.join("\n")'; fi
      [ -z "$extra" ] || cat "$extra"; } >"$d/ca.crt"
    echo "cafile=/run/clusterlet-build/ca.crt" >>"$d/npmrc"
  fi
  NPM_CACHE_DIR=
  if [ -n "$cache" ] && [ "$cache" != none ]; then
    mkdir -p "$cache"; NPM_CACHE_DIR=$cache
    NPM_MOUNTS+=(-v "$cache:/run/clusterlet-npm-cache")
    printf '%s\n' "cache=/run/clusterlet-npm-cache" "prefer-offline=true" >>"$d/npmrc"
  fi
  NPM_MOUNTS+=(-v "$d/npmrc:/usr/local/etc/npmrc:ro")
  local what
  what=$(grep -E '^(registry|https-proxy|proxy)=' "$d/npmrc" | tr '\n' ' ')
  [ ! -s "$d/ca.crt" ] || what+="CAs from ${ca:-the roots of Node}${extra:+ + $extra} "
  [ -z "$NPM_CACHE_DIR" ] || what+="cache $NPM_CACHE_DIR"
  log "npm in the build: $what"
}
build_clusterlet() {
  join fetch_node_inputs || die "could not fetch Node $NODE_MAJOR or npm from the npm registry"
  build_base
  local iid c old t=$SECONDS
  old=$(bh images --quiet --no-trunc "$CLUSTERLET_REF" 2>/dev/null | head -n 1 || true)
  log "clusterlet: buildah bud $CLUSTERLET_REF (FROM $BASE_REF, --layers)"
  bh bud "${POLICY[@]}" --layers --isolation chroot --network host --pull=never --format docker \
    --build-arg "NODE_IMAGE=$BASE_REF" "${NPM_MOUNTS[@]}" --iidfile "$TMP/iid" \
    -f "$REPO/Dockerfile" -t "$CLUSTERLET_REF" "$REPO" >&2
  iid=$(cat "$TMP/iid")
  # The image the tag named before, now nameless (its layers stay in the --layers cache).
  if [ -n "$old" ] && [ "${old#sha256:}" != "${iid#sha256:}" ]; then bh rmi "$old" >/dev/null 2>&1 || true; fi
  if [ -s "$OUT/clusterlet.tar" ] && [ "$(cat "$OUT/clusterlet.tar.key" 2>/dev/null)" = "$iid $CLUSTERLET_REF" ]; then
    log "clusterlet.tar: up to date ($iid)"; return
  fi
  if [ "$IMAGE_CHECK" = 1 ]; then
    newctr clusterlet-check "$CLUSTERLET_REF"
    bh run "$c" -- node dist/cli.js --help >/dev/null || die "$CLUSTERLET_REF: node dist/cli.js --help failed"
  fi
  archive "$CLUSTERLET_REF" clusterlet.tar
  echo "$iid $CLUSTERLET_REF" >"$OUT/clusterlet.tar.key"
  log "clusterlet.tar: done in $(seconds "$t") ($iid)"
}

log "storage: $BROOT ($DRIVER)"
if [ $want_clusterlet = 1 ]; then
  command -v npm >/dev/null || die "npm is needed on PATH (for Node $NODE_MAJOR, npm and the build's npm config)"
  npm_build_config
  start fetch_node_inputs
fi
[ $want_pause = 0 ] || build_pause
[ $want_busybox = 0 ] || build_busybox
[ $want_clusterlet = 0 ] || build_clusterlet
ls -l "$OUT"/*.tar >&2 2>/dev/null || true
echo "$OUT"
