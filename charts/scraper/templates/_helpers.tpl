{{/* Names and labels shared by every object. */}}
{{- define "scraper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "scraper.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "scraper.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scraper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "scraper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "scraper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "scraper.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "scraper.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Settings that cannot be expressed in values.schema.json. */}}
{{- define "scraper.validate" -}}
{{- if and .Values.ebpf.enabled (ne .Values.mode "daemonset") -}}
{{- fail "ebpf.enabled needs mode: daemonset (the sampler profiles the processes of its own node)" -}}
{{- end -}}
{{- if and (not .Values.config.content) (not .Values.backend.url) (not .Values.store.enabled) -}}
{{- fail "the generated config needs somewhere to send profiles: set backend.url, store.enabled, or both" -}}
{{- end -}}
{{- if and .Values.backend.basicAuth.existingSecret (not .Values.backend.url) (not .Values.config.content) -}}
{{- fail "backend.basicAuth.existingSecret is set but backend.url is empty" -}}
{{- end -}}
{{- end -}}
