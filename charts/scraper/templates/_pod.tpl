{{/* The pod template shared by the DaemonSet and the StatefulSet. */}}
{{- define "scraper.podTemplate" -}}
metadata:
  labels:
    {{- include "scraper.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # Roll the pods when the config changes.
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
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
  securityContext:
    runAsUser: 0
    runAsGroup: 0
    seccompProfile:
      type: RuntimeDefault
  {{- else }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  {{- end }}
  # Lets the store's writer commit and close on SIGTERM.
  terminationGracePeriodSeconds: 30
  containers:
    - name: scraper
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - run
        - /etc/scraper/config.alloy
        - --server.http.listen-addr=0.0.0.0:{{ .Values.server.port }}
        - --storage.path=/var/lib/scraper
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
        # In statefulset mode the shard is the ordinal suffix of the pod name.
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
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
      # Liveness is the process answering, not /-/healthy: that turns 500 while a backend is
      # down (pyroscope.write unhealthy), and restarting would throw away the queued profiles
      # the outage is being ridden out with.
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
      securityContext:
        readOnlyRootFilesystem: true
        {{- if not .Values.ebpf.enabled }}
        runAsNonRoot: true
        allowPrivilegeEscalation: false
        capabilities:
          drop: [ALL]
        {{- else if .Values.ebpf.privileged }}
        privileged: true
        {{- else }}
        # BPF+PERFMON load and attach the sampler, SYS_PTRACE reads other processes'
        # binaries through /proc/<pid>/root and SYSLOG reads kernel symbols.
        allowPrivilegeEscalation: false
        capabilities:
          drop: [ALL]
          add: [BPF, PERFMON, SYS_PTRACE, SYSLOG]
        {{- end }}
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
  volumes:
    - name: config
      configMap:
        name: {{ include "scraper.fullname" . }}
    {{- if not (and (eq .Values.mode "statefulset") .Values.store.persistence.enabled) }}
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
