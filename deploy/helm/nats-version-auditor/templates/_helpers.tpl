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

{{- define "nats-version-auditor.validate" -}}
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
