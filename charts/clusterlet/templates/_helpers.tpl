{{/* The chart's name, and the full name every object of a release is named after (clusterlet for a release named
clusterlet, so the objects are named as in manifests/host). */}}
{{- define "clusterlet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "clusterlet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "clusterlet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "clusterlet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "clusterlet.labels" -}}
{{ include "clusterlet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "clusterlet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "clusterlet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: the existing ServiceAccount to run as (serviceAccount.create is false)" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Where a member's kubeconfig is mounted (members[].secret). */}}
{{- define "clusterlet.memberKubeconfigDir" -}}/etc/clusterlet-members{{- end }}

{{/*
clusterlet.yaml, the provider config (docs/configuration.md, "Several members"): each member as given, its `secret` turned into
the `kubeconfig` path where the Deployment mounts it, its `kubeconfigSecret` namespace defaulting to the
release's. Checks what the schema cannot: one kubeconfig source per member, distinct member names.
*/}}
{{- define "clusterlet.providerConfig" -}}
{{- if and (not .Values.members) (not .Values.clusterProfiles.enabled) }}
{{- fail "members: give at least one member, or enable clusterProfiles" }}
{{- end }}
{{- $members := list }}
{{- $names := dict }}
{{- range $i, $m := .Values.members }}
{{- if hasKey $names $m.name }}
{{- fail (printf "members[%d].name: duplicate member %q" $i $m.name) }}
{{- end }}
{{- $_ := set $names $m.name true }}
{{- if eq (len (pick $m "secret" "kubeconfigSecret")) 1 | not }}
{{- fail (printf "members[%d] (%s): give exactly one of secret (mounted) or kubeconfigSecret (read from the host API)" $i $m.name) }}
{{- end }}
{{- $entry := omit $m "secret" "kubeconfigSecret" }}
{{- if $m.secret }}
{{- $_ := set $entry "kubeconfig" (printf "%s/%s.kubeconfig" (include "clusterlet.memberKubeconfigDir" $) $m.name) }}
{{- else }}
{{- $_ := set $entry "kubeconfigSecret" (dict "namespace" (default $.Release.Namespace $m.kubeconfigSecret.namespace) "name" $m.kubeconfigSecret.name "key" (default "kubeconfig" $m.kubeconfigSecret.key)) }}
{{- end }}
{{- $members = append $members $entry }}
{{- end }}
{{- $cfg := dict "members" $members }}
{{- with .Values.hostName }}{{ $_ := set $cfg "hostName" . }}{{ end }}
{{- if not (kindIs "invalid" .Values.podSyncWorkers) }}{{ $_ := set $cfg "podSyncWorkers" .Values.podSyncWorkers }}{{ end }}
{{- with .Values.exportNamespaces }}{{ $_ := set $cfg "exportNamespaces" . }}{{ end }}
{{- if .Values.reflectHostEndpoints }}{{ $_ := set $cfg "reflectHostEndpoints" true }}{{ end }}
{{- toYaml $cfg }}
{{- end }}

{{/* Non-empty when a member's kubeconfig is mounted from a Secret (members[].secret). */}}
{{- define "clusterlet.mountedMembers" -}}
{{- range .Values.members }}{{ if .secret }}{{ .name }} {{ end }}{{ end }}
{{- end }}

{{/* The namespace of the ClusterProfiles (clusterProfiles.namespace, else the release's). */}}
{{- define "clusterlet.clusterProfileNamespace" -}}
{{- .Values.clusterProfiles.namespace | default .Release.Namespace }}
{{- end }}
