#!/usr/bin/env bash
# Writes a kubeconfig for clusterlet's member identity (the ServiceAccount of manifests/member), to give to
# clusterlet in the host cluster. Run it with admin access to the MEMBER after `kubectl apply -k manifests/member`.
#
#   manifests/member/mint-kubeconfig.sh --context eu-1-admin --server https://10.0.0.12:6443 --output eu-1.kubeconfig
#
# Options:
#   --kubeconfig FILE   kubeconfig with admin access to the member (default: $KUBECONFIG or ~/.kube/config)
#   --context NAME      context of that kubeconfig (default: its current context)
#   --server URL        the member API server as the HOST cluster reaches it (default: the one in that
#                       context; give it whenever the host sees the member at another address, as with kind)
#   --name NAME         cluster/context name written in the kubeconfig (default: member)
#   --namespace NS      namespace of the ServiceAccount (default: clusterlet)
#   --service-account SA  (default: clusterlet)
#   --secret NAME       the kubernetes.io/service-account-token Secret to read (default: clusterlet-token,
#                       from manifests/member/token-secret.yaml): a long-lived token, revoked by deleting it
#   --duration D        instead, mint a bound token with the TokenRequest API (`kubectl create token`) that
#                       expires after D (e.g. 8760h; the member may cap it); re-run before it expires
#   --ca-file FILE      CA bundle that verifies the member API server (default: the member's kube-root-ca.crt,
#                       what its own pods use)
#   --output FILE       where to write it (default: stdout), mode 0600
set -euo pipefail

kubeconfig="" context="" server="" name="member" namespace="clusterlet" sa="clusterlet"
secret="clusterlet-token" duration="" output="" ca_file=""

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "mint-kubeconfig.sh: $*" >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --kubeconfig) kubeconfig="${2:?}"; shift 2 ;;
    --context) context="${2:?}"; shift 2 ;;
    --server) server="${2:?}"; shift 2 ;;
    --name) name="${2:?}"; shift 2 ;;
    --namespace) namespace="${2:?}"; shift 2 ;;
    --service-account) sa="${2:?}"; shift 2 ;;
    --secret) secret="${2:?}"; shift 2 ;;
    --duration) duration="${2:?}"; shift 2 ;;
    --output) output="${2:?}"; shift 2 ;;
    --ca-file) ca_file="${2:?}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

kc=(kubectl)
[[ -n "$kubeconfig" ]] && kc+=(--kubeconfig "$kubeconfig")
[[ -n "$context" ]] && kc+=(--context "$context")

if [[ -z "$server" ]]; then
  server="$("${kc[@]}" config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  [[ -n "$server" ]] || die "could not read the API server URL from the kubeconfig; pass --server"
fi

"${kc[@]}" -n "$namespace" get serviceaccount "$sa" >/dev/null \
  || die "ServiceAccount $namespace/$sa not found: apply manifests/member to this cluster first"

if [[ -n "$duration" ]]; then
  token="$("${kc[@]}" -n "$namespace" create token "$sa" --duration "$duration")"
else
  # The token controller fills the Secret in a moment after it is created.
  token=""
  for _ in $(seq 1 60); do
    token="$("${kc[@]}" -n "$namespace" get secret "$secret" -o jsonpath='{.data.token}' 2>/dev/null || true)"
    [[ -n "$token" ]] && break
    sleep 1
  done
  [[ -n "$token" ]] || die "Secret $namespace/$secret has no token after 60 s: is it of type kubernetes.io/service-account-token for $sa?"
  token="$(printf '%s' "$token" | base64 -d)"
fi

if [[ -n "$ca_file" ]]; then
  ca_data="$(base64 < "$ca_file" | tr -d '\n')"
else
  ca="$("${kc[@]}" -n "$namespace" get configmap kube-root-ca.crt -o jsonpath='{.data.ca\.crt}')"
  [[ -n "$ca" ]] || die "no kube-root-ca.crt in namespace $namespace; pass --ca-file"
  ca_data="$(printf '%s\n' "$ca" | base64 | tr -d '\n')"
fi

kubeconfig_text="apiVersion: v1
kind: Config
clusters:
- name: ${name}
  cluster:
    server: ${server}
    certificate-authority-data: ${ca_data}
users:
- name: ${name}-clusterlet
  user:
    token: ${token}
contexts:
- name: ${name}
  context:
    cluster: ${name}
    user: ${name}-clusterlet
current-context: ${name}
"

if [[ -n "$output" ]]; then
  (umask 077 && printf '%s' "$kubeconfig_text" > "$output")
  echo "wrote $output (ServiceAccount $namespace/$sa, server $server)" >&2
else
  printf '%s' "$kubeconfig_text"
fi
