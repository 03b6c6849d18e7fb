#!/usr/bin/env bash
# What the harness's real nodes (test/harness/realnode.ts) and the image build (hack/build-images.sh) need from the
# machine: root, and Debian's containerd, runc, CNI plugins, busybox-static, buildah, iptables and conntrack,
# installed with apt when missing. The real nodes run containerd of their own: the system containerd service that
# Debian's package enables and starts is not started while installing (a policy-rc.d for the install, unless the
# machine has one), and is disabled afterwards (and stopped, where systemd runs), so the install leaves no service behind.
set -euo pipefail
log() { printf '[realnode-deps] %s\n' "$*" >&2; }
if [ "$(id -u)" != 0 ]; then
  log "real nodes need root (network namespaces, cgroups, mounts): run make e2e-local as root"
  exit 1
fi
# Before anything is installed: real nodes need cgroup v1 or the hybrid layout (test/harness/realnode.ts, cgroupSupport).
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
  log "this machine has cgroup v2 alone (the unified hierarchy at /sys/fs/cgroup); real nodes need cgroup v1: make e2e-local"
  log "runs on a machine with cgroup v1 or the hybrid layout (boot with systemd.unified_cgroup_hierarchy=0), or on kind (make e2e)"
  exit 1
fi
need=()
command -v containerd >/dev/null || need+=(containerd)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
[ -x /bin/busybox ] && /bin/busybox --list | grep -qx httpd || need+=(busybox-static)
command -v buildah >/dev/null || need+=(buildah)
command -v iptables >/dev/null || need+=(iptables)
command -v conntrack >/dev/null || need+=(conntrack)
command -v gcc >/dev/null || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || { log "missing ${need[*]} and no apt-get to install them"; exit 1; }
  # No service the packages bring starts during the install (invoke-rc.d and deb-systemd-invoke ask policy-rc.d).
  # REALNODE_DEPS_POLICY_RC_D: another path for it, for the unit tests.
  policy=${REALNODE_DEPS_POLICY_RC_D:-/usr/sbin/policy-rc.d}
  if [ ! -e "$policy" ]; then
    # Removed however the script ends, interrupted or terminated too: left behind, it would keep services from
    # starting on every later install. (A SIGKILL leaves it: the log line says where it is.) A signal to the script
    # alone is acted on once the apt-get it waits for ends, so that install ends under the policy.
    trap 'rm -f "$policy"' EXIT
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
    printf '#!/bin/sh\n# hack/ensure-realnode-deps.sh: no service starts while it installs packages.\nexit 101\n' >"$policy"
    chmod 0755 "$policy"
    log "installing ${need[*]} (no service starts meanwhile: $policy, removed when this script ends)"
  else
    log "installing ${need[*]} (the machine's $policy decides which services start)"
  fi
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
  if [[ " ${need[*]} " == *" containerd "* ]] && command -v systemctl >/dev/null; then
    log "disabling the containerd service Debian's package enabled (the real nodes run their own containerd)"
    # --now where systemd runs; elsewhere (a container) disable still removes the link that would start it at boot.
    if [ -d /run/systemd/system ]; then systemctl disable --now containerd.service >&2 || true
    else systemctl disable containerd.service >&2 || true; fi
  fi
fi
