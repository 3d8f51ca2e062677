{{/* The pod template shared by the DaemonSet, the StatefulSet and the Deployment. */}}
{{- define "scraper.podTemplate" -}}
metadata:
  labels:
    {{- include "scraper.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- /* A changed config is reloaded in place (--config.watch-interval); rolling the pods
  instead would lose their delta baselines and, with an emptyDir store, the store. */}}
  {{- if or .Values.config.restartOnChange .Values.podAnnotations }}
  annotations:
    {{- if .Values.config.restartOnChange }}
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- end }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- end }}
spec:
  serviceAccountName: {{ include "scraper.serviceAccountName" . }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- if .Values.ebpf.enabled }}
  # The sampler sees every process of the node: host PID namespace (which also makes /proc
  # the host's), as root.
  hostPID: true
  {{- end }}
  {{- $podSecurity := include "scraper.podSecurityContext" . | fromYaml }}
  securityContext:
    {{- mustMergeOverwrite $podSecurity (deepCopy .Values.podSecurityContext) | toYaml | nindent 4 }}
  # Lets the store's writer commit and close on SIGTERM.
  terminationGracePeriodSeconds: 30
  containers:
    - name: scraper
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - run
        {{- if .Values.config.existingConfigMap }}
        # Every *.alloy key of the ConfigMap is a file of the config.
        - /etc/scraper
        {{- else }}
        - /etc/scraper/config.alloy
        {{- end }}
        - --server.http.listen-addr=0.0.0.0:{{ .Values.server.port }}
        - --storage.path=/var/lib/scraper
        - --config.watch-interval={{ .Values.config.watchInterval }}
        {{- if .Values.clustering.enabled }}
        - --cluster.enabled
        - --cluster.kubernetes-service={{ .Release.Namespace }}/{{ include "scraper.clusterServiceName" . }}
        {{- end }}
        {{- with .Values.extraArgs }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      env:
        {{- if eq .Values.mode "daemonset" }}
        # The config's discovery selects pods by spec.nodeName=$HOSTNAME.
        - name: HOSTNAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        {{- end }}
        # In statefulset mode without clustering, the shard is the ordinal suffix of the pod name.
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        {{- if .Values.clustering.enabled }}
        # Where the other replicas reach this one: with no --cluster.advertise-address, scraper
        # advertises POD_IP and its listen port (bracketed when POD_IP is IPv6).
        - name: POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        {{- end }}
        {{- with .Values.backend.basicAuth.existingSecret }}
        - name: PYROSCOPE_USERNAME
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: {{ $.Values.backend.basicAuth.usernameKey }}
        - name: PYROSCOPE_PASSWORD
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: {{ $.Values.backend.basicAuth.passwordKey }}
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: http-metrics
          containerPort: {{ .Values.server.port }}
          protocol: TCP
      {{- /* Liveness asks only whether the server answers. /-/healthy turns 500 while a backend
      is down or every target is, and a restart fixes neither: it loses the queued profiles and
      the delta baselines. Component health is for people (UI, /-/healthy, metrics). */}}
      livenessProbe:
        httpGet:
          path: /-/ready
          port: http-metrics
        initialDelaySeconds: 10
        periodSeconds: 15
        failureThreshold: 4
      readinessProbe:
        httpGet:
          path: /-/ready
          port: http-metrics
        periodSeconds: 5
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- $security := include "scraper.containerSecurityContext" . | fromYaml }}
      securityContext:
        {{- mustMergeOverwrite $security (deepCopy .Values.securityContext) | toYaml | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/scraper
          readOnly: true
        - name: data
          mountPath: /var/lib/scraper
        - name: tmp
          mountPath: /tmp
        {{- if .Values.ebpf.enabled }}
        - name: debugfs
          mountPath: /sys/kernel/debug
          readOnly: true
        {{- end }}
        {{- with .Values.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "scraper.configMapName" . }}
    {{- if and (eq .Values.mode "daemonset") .Values.store.hostPath.enabled }}
    # On the node, so the store outlives the pod; bounded by the store's retention and max_size.
    - name: data
      hostPath:
        path: {{ .Values.store.hostPath.path | default (printf "/var/lib/scraper/%s/%s" .Release.Namespace .Release.Name) }}
        type: {{ .Values.store.hostPath.type }}
    {{- else if not (and (eq .Values.mode "statefulset") .Values.store.persistence.enabled) }}
    - name: data
      emptyDir:
        sizeLimit: {{ .Values.store.volume.sizeLimit }}
    {{- end }}
    - name: tmp
      emptyDir:
        sizeLimit: 64Mi
    {{- if .Values.ebpf.enabled }}
    - name: debugfs
      hostPath:
        path: /sys/kernel/debug
        type: Directory
    {{- end }}
    {{- with .Values.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}


{{/* The pod's securityContext before podSecurityContext is merged over it. */}}
{{- define "scraper.podSecurityContext" -}}
{{- if or .Values.ebpf.enabled (and (eq .Values.mode "daemonset") .Values.store.hostPath.enabled) -}}
{{- /* Root: the eBPF sampler needs it, and a hostPath directory is created root-owned by
kubelet (fsGroup does not apply to hostPath). Capabilities stay dropped unless eBPF adds its
four. */ -}}
runAsUser: 0
runAsGroup: 0
seccompProfile:
  type: RuntimeDefault
{{- else -}}
{{- if not (include "scraper.runsAsRoot" .) }}
runAsNonRoot: true
{{- end }}
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}
{{- end -}}

{{/* The container's securityContext before securityContext is merged over it. */}}
{{- define "scraper.containerSecurityContext" -}}
readOnlyRootFilesystem: true
{{- if and .Values.ebpf.enabled .Values.ebpf.privileged }}
privileged: true
{{- else }}
allowPrivilegeEscalation: false
capabilities:
  drop: [ALL]
  {{- if .Values.ebpf.enabled }}
  {{- /* BPF+PERFMON load and attach the sampler, SYS_PTRACE reads other processes' binaries
  through /proc/<pid>/root and SYSLOG reads kernel symbols. */}}
  add: [BPF, PERFMON, SYS_PTRACE, SYSLOG]
  {{- end }}
{{- if not (include "scraper.runsAsRoot" .) }}
runAsNonRoot: true
{{- end }}
{{- end }}
{{- end -}}
