{{/* Name of the chart, or nameOverride. */}}
{{- define "nats-version-auditor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: fullnameOverride, or <release>-<name> unless the release name holds the name. */}}
{{- define "nats-version-auditor.fullname" -}}
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

{{- define "nats-version-auditor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nats-version-auditor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nats-version-auditor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end }}

{{/* Labels of every object, without the component (exporter, or alerting for the rules). */}}
{{- define "nats-version-auditor.commonLabels" -}}
helm.sh/chart: {{ include "nats-version-auditor.chart" . }}
app.kubernetes.io/name: {{ include "nats-version-auditor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: nats-version-auditor
{{- end }}

{{- define "nats-version-auditor.labels" -}}
{{ include "nats-version-auditor.commonLabels" . }}
app.kubernetes.io/component: exporter
{{- end }}

{{- define "nats-version-auditor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nats-version-auditor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "nats-version-auditor.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/* "true" when a monitoring object is on: its own enabled, or monitoring.enabled when that is null. */}}
{{- define "nats-version-auditor.on" -}}
{{- $own := index . 0 }}
{{- if kindIs "invalid" $own }}{{ if (index . 1).monitoring.enabled }}true{{ end }}{{ else if $own }}true{{ end }}
{{- end }}

{{/* monitoring.labels, then the object's own labels. */}}
{{- define "nats-version-auditor.monitoringLabels" -}}
{{- $labels := merge (dict) (index . 0 | default dict) ((index . 1).monitoring.labels | default dict) }}
{{- with $labels }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/* Where the context JSON is mounted: natscli reads $XDG_CONFIG_HOME/nats/context/<name>.json. */}}
{{- define "nats-version-auditor.configHome" -}}
/etc/nats-version-auditor/config
{{- end }}

{{/* The host of the first of nats.url's comma-separated URLs (nats.go adds nats:// to one without a scheme). */}}
{{- define "nats-version-auditor.natsHost" -}}
{{- $u := splitList "," .Values.nats.url | first | trim }}
{{- if not (contains "://" $u) }}{{ $u = printf "nats://%s" $u }}{{ end }}
{{- (urlParse $u).hostname }}
{{- end }}

{{/*
The NATS system the auditor watches, exported as the label nats_system (--metrics.system), by
which the alerts, the inhibition and the dashboard tell apart systems watched from one namespace:
nats.system, else <namespace>/<service> of a nats.url naming <service>.<namespace>.svc[...] or
<service>.<namespace> (the official chart's Service is named after its release), else the host.
*/}}
{{- define "nats-version-auditor.system" -}}
{{- if .Values.nats.system }}
{{- .Values.nats.system }}
{{- else if .Values.nats.url }}
{{- $host := include "nats-version-auditor.natsHost" . }}
{{- $parts := splitList "." $host }}
{{- if and (ge (len $parts) 2) (or (eq (len $parts) 2) (eq (index $parts 2) "svc")) (not (regexMatch "^[0-9]+$" (index $parts 1))) }}
{{- printf "%s/%s" (index $parts 1) (index $parts 0) }}
{{- else }}
{{- $host }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nats-version-auditor.validate" -}}
{{- if not (or .Values.nats.url .Values.nats.context.name) }}
{{- fail (printf "nats.url is required: the URL of the NATS system to audit, naming its namespace, e.g. --set nats.url=nats://nats.nats.svc:4222 (a bare nats://nats:4222 would resolve in this release's namespace, %s); or set nats.context.name to take it from a natscli context" .Release.Namespace) }}
{{- end }}
{{- if .Values.nats.url }}
{{- $host := include "nats-version-auditor.natsHost" . }}
{{- if not $host }}
{{- fail (printf "nats.url %q: no host in it; want e.g. nats://nats.nats.svc:4222" .Values.nats.url) }}
{{- end }}
{{- if and (not (contains "." $host)) (not (contains ":" $host)) (ne $host "localhost") }}
{{- fail (printf "nats.url %q: the host %q resolves in this release's namespace (%s), not the NATS namespace; name it: nats://%s.<nats namespace>.svc:4222" .Values.nats.url $host .Release.Namespace $host) }}
{{- end }}
{{- end }}
{{- if not (include "nats-version-auditor.system" .) }}
{{- fail "nats.system is required when nats.url is empty (the URL comes from the context): the name of the NATS system, exported as the label nats_system, e.g. <nats namespace>/<nats release>" }}
{{- end }}
{{- with .Values.nats.context }}
{{- if .name }}
{{- if and .existingSecret .existingConfigMap }}
{{- fail "nats.context: set existingSecret or existingConfigMap, not both" }}
{{- end }}
{{- if not (or .existingSecret .existingConfigMap) }}
{{- fail "nats.context.name is set: set nats.context.existingSecret or nats.context.existingConfigMap to the Secret or ConfigMap holding the context JSON" }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.nats.tls.existingSecret (ne (empty .Values.nats.tls.cert) (empty .Values.nats.tls.key)) }}
{{- fail "nats.tls: set both cert and key for a client certificate, or neither" }}
{{- end }}
{{- end }}
