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

{{/* True (non-empty) when the chart generates the config rather than taking the user's. */}}
{{- define "scraper.generatesConfig" -}}
{{- if not (or .Values.config.content .Values.config.existingConfigMap) }}true{{ end -}}
{{- end -}}

{{/* The ConfigMap the pod mounts: the chart's own, or config.existingConfigMap. */}}
{{- define "scraper.configMapName" -}}
{{- default (include "scraper.fullname" .) .Values.config.existingConfigMap -}}
{{- end -}}

{{/* The headless Service whose ready endpoints are the cluster's members. */}}
{{- define "scraper.clusterServiceName" -}}
{{- printf "%s-cluster" (include "scraper.fullname" . | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{/* The workload's replica count (left out of the workload when an autoscaler owns it).
A clustered statefulset without `replicas` keeps `shards` replicas, so that turning clustering
on for a sharded release keeps its pods instead of dropping to one. */}}
{{- define "scraper.replicas" -}}
{{- $replicas := .Values.replicas -}}
{{- if and (eq .Values.mode "statefulset") (not .Values.clustering.enabled) -}}
{{- .Values.shards -}}
{{- else if not (kindIs "invalid" $replicas) -}}
{{- $replicas -}}
{{- else if eq .Values.mode "statefulset" -}}
{{- .Values.shards -}}
{{- else -}}
1
{{- end -}}
{{- end -}}

{{/* "true" when the container runs as root: the chart makes it root with eBPF or a hostPath
store, and the values can make it root (or not) with runAsUser, the container's over the pod's.
The computed securityContexts then leave runAsNonRoot out: the kubelet refuses to start a
container whose runAsNonRoot contradicts its user. */}}
{{- define "scraper.runsAsRoot" -}}
{{- $c := .Values.securityContext -}}
{{- $p := .Values.podSecurityContext -}}
{{- if hasKey $c "runAsUser" -}}
{{- if eq (int $c.runAsUser) 0 }}true{{ end -}}
{{- else if hasKey $p "runAsUser" -}}
{{- if eq (int $p.runAsUser) 0 }}true{{ end -}}
{{- else if or .Values.ebpf.enabled (and (eq .Values.mode "daemonset") .Values.store.hostPath.enabled) -}}
true
{{- end -}}
{{- end -}}

{{/* Settings that cannot be expressed in values.schema.json. */}}
{{- define "scraper.validate" -}}
{{- $v := .Values -}}
{{- $generated := include "scraper.generatesConfig" . -}}
{{- if and $v.ebpf.enabled (ne $v.mode "daemonset") -}}
{{- fail "ebpf.enabled needs mode: daemonset (the sampler profiles the processes of its own node)" -}}
{{- end -}}
{{- if and $generated (not $v.backend.url) (not $v.store.enabled) -}}
{{- fail "the generated config needs somewhere to send profiles: set backend.url, store.enabled, or both" -}}
{{- end -}}
{{- if and $v.backend.basicAuth.existingSecret (not $v.backend.url) $generated -}}
{{- fail "backend.basicAuth.existingSecret is set but backend.url is empty" -}}
{{- end -}}
{{- if and $v.config.content $v.config.existingConfigMap -}}
{{- fail "set config.content or config.existingConfigMap, not both" -}}
{{- end -}}
{{- if and $v.config.restartOnChange $v.config.existingConfigMap -}}
{{- fail "config.restartOnChange needs the chart's own ConfigMap; an existing one is reloaded through config.watchInterval" -}}
{{- end -}}
{{- if and $v.clustering.enabled (eq $v.mode "daemonset") -}}
{{- fail "clustering.enabled needs mode: statefulset or deployment (daemonset pods already split the targets by node)" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (not $v.clustering.enabled) -}}
{{- fail "autoscaling.enabled needs clustering.enabled: without it, replicas added by the autoscaler would not share the targets" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas is greater than autoscaling.maxReplicas" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (not $v.autoscaling.targetCPUUtilizationPercentage) (not $v.autoscaling.targetMemoryUtilizationPercentage) -}}
{{- fail "autoscaling.enabled needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage above 0" -}}
{{- end -}}
{{- if and (eq $v.mode "deployment") (not $v.clustering.enabled) (gt (int (include "scraper.replicas" .)) 1) -}}
{{- fail "mode: deployment with more than one replica needs clustering.enabled, or every replica scrapes every target" -}}
{{- end -}}
{{- if and $v.podDisruptionBudget.enabled (eq $v.mode "daemonset") -}}
{{- fail "podDisruptionBudget.enabled needs mode: statefulset or deployment (a node drain does not evict DaemonSet pods)" -}}
{{- end -}}
{{- if and $v.podDisruptionBudget.enabled (eq (toString $v.podDisruptionBudget.minAvailable) "") (eq (toString $v.podDisruptionBudget.maxUnavailable) "") -}}
{{- fail "podDisruptionBudget.enabled needs minAvailable or maxUnavailable" -}}
{{- end -}}
{{- if and $v.store.hostPath.enabled (ne $v.mode "daemonset") -}}
{{- fail "store.hostPath.enabled needs mode: daemonset (use store.persistence in statefulset mode)" -}}
{{- end -}}
{{- if and $v.store.persistence.enabled (ne $v.mode "statefulset") -}}
{{- fail "store.persistence.enabled needs mode: statefulset (a PersistentVolumeClaim per replica); in daemonset mode use store.hostPath" -}}
{{- end -}}
{{- if $v.autoscaling.enabled -}}
{{- $requests := default dict (default dict $v.resources).requests -}}
{{- if and $v.autoscaling.targetCPUUtilizationPercentage (not $requests.cpu) -}}
{{- fail "autoscaling.targetCPUUtilizationPercentage needs resources.requests.cpu: the autoscaler measures utilization against it" -}}
{{- end -}}
{{- if and $v.autoscaling.targetMemoryUtilizationPercentage (not $requests.memory) -}}
{{- fail "autoscaling.targetMemoryUtilizationPercentage needs resources.requests.memory: the autoscaler measures utilization against it" -}}
{{- end -}}
{{- end -}}
{{- if $v.ebpf.enabled -}}
{{- range $where, $ctx := dict "podSecurityContext" $v.podSecurityContext "securityContext" $v.securityContext -}}
{{- if or $ctx.runAsNonRoot (and (hasKey $ctx "runAsUser") (ne (int $ctx.runAsUser) 0)) -}}
{{- fail (printf "ebpf.enabled runs the pod as root: %s must not set runAsNonRoot or a non-zero runAsUser" $where) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if include "scraper.runsAsRoot" . -}}
{{- range $where, $ctx := dict "podSecurityContext" $v.podSecurityContext "securityContext" $v.securityContext -}}
{{- if $ctx.runAsNonRoot -}}
{{- fail (printf "%s.runAsNonRoot is true but the container runs as root (runAsUser 0, or the root a hostPath store or eBPF needs): the kubelet would refuse to start it" $where) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
