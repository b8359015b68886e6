{{/*
The exporter container, as one item of a pod's `containers` list.

Include it in your own gateway Deployment (README.md has the full example):

  containers:
    - name: gateway
      ...
    {{- include "llm-savings-exporter.sidecarContainer" (index .Subcharts "llm-savings-exporter") | nindent 4 }}
  volumes:
    {{- include "llm-savings-exporter.sidecarVolumes" (index .Subcharts "llm-savings-exporter") | nindent 4 }}

It takes the chart's own context, so names and values are this chart's.
The log volume is mounted read-only: the exporter only reads the gateway's logs.
*/}}
{{- define "llm-savings-exporter.sidecarContainer" -}}
{{- $otlp := eq (include "llm-savings-exporter.otlpEnabled" .) "true" -}}
- name: llm-savings-exporter
  image: {{ include "llm-savings-exporter.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - run
    - --config
    - {{ include "llm-savings-exporter.configPath" . }}
    {{- range .Values.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: LLM_SAVINGS_LOG_LEVEL
      value: {{ .Values.logLevel | quote }}
    {{- if .Values.otlpReceiver.bearerToken.existingSecret }}
    - name: LLM_SAVINGS_OTLP_BEARER_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ .Values.otlpReceiver.bearerToken.existingSecret }}
          key: {{ .Values.otlpReceiver.bearerToken.key }}
    {{- end }}
    {{- with .Values.extraEnv }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: {{ .Values.ports.names.metrics }}
      containerPort: {{ int .Values.ports.metrics }}
      protocol: TCP
    {{- if $otlp }}
    - name: {{ .Values.ports.names.otlp }}
      containerPort: {{ int .Values.ports.otlp }}
      protocol: TCP
    {{- end }}
  {{- if .Values.probes.startup.enabled }}
  startupProbe:
    {{- include "llm-savings-exporter.probe" (list . "startup" "/healthz") | nindent 4 }}
  {{- end }}
  {{- if .Values.probes.liveness.enabled }}
  livenessProbe:
    {{- include "llm-savings-exporter.probe" (list . "liveness" "/healthz") | nindent 4 }}
  {{- end }}
  {{- if .Values.probes.readiness.enabled }}
  readinessProbe:
    {{- include "llm-savings-exporter.probe" (list . "readiness" "/readyz") | nindent 4 }}
  {{- end }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    {{- if ne .Values.mode "standalone" }}
    - name: {{ .Values.logVolume.name }}
      mountPath: {{ .Values.logVolume.mountPath }}
      readOnly: true
    {{- end }}
    - name: llm-savings-state
      mountPath: {{ include "llm-savings-exporter.stateDir" . }}
    - name: llm-savings-config
      mountPath: {{ include "llm-savings-exporter.configPath" . }}
      subPath: config.yaml
      readOnly: true
    {{- if include "llm-savings-exporter.pricesConfigMapName" . }}
    - name: llm-savings-prices
      mountPath: {{ include "llm-savings-exporter.pricesDir" . }}
      readOnly: true
    {{- end }}
    - name: llm-savings-tmp
      mountPath: /tmp
    {{- with .Values.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/*
The volumes the sidecar container needs, as items of a pod's `volumes` list:
the shared log emptyDir (unless logVolume.create is false because your pod has it),
the state volume, the config and price ConfigMaps, and a small /tmp.
In standalone mode the state volume comes from the StatefulSet's volumeClaimTemplates.
*/}}
{{- define "llm-savings-exporter.sidecarVolumes" -}}
{{- include "llm-savings-exporter.sidecarVolumeItems" . | trim }}
{{- end }}

{{/* The items of sidecarVolumes, before trimming the leading newline. */}}
{{- define "llm-savings-exporter.sidecarVolumeItems" -}}
{{- if and (ne .Values.mode "standalone") .Values.logVolume.create }}
- name: {{ .Values.logVolume.name }}
  emptyDir:
    {{- if .Values.logVolume.sizeLimit }}
    sizeLimit: {{ .Values.logVolume.sizeLimit }}
    {{- end }}
{{- end }}
{{- if ne .Values.mode "standalone" }}
- name: llm-savings-state
  {{- if .Values.state.existingClaim }}
  persistentVolumeClaim:
    claimName: {{ .Values.state.existingClaim }}
  {{- else }}
  emptyDir:
    {{- if .Values.state.sizeLimit }}
    sizeLimit: {{ .Values.state.sizeLimit }}
    {{- end }}
  {{- end }}
{{- end }}
- name: llm-savings-config
  configMap:
    name: {{ include "llm-savings-exporter.configMapName" . }}
{{- with include "llm-savings-exporter.pricesConfigMapName" . }}
- name: llm-savings-prices
  configMap:
    name: {{ . }}
{{- end }}
- name: llm-savings-tmp
  emptyDir:
    medium: Memory
    sizeLimit: 16Mi
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
One probe of the exporter container, from (list context probeName defaultPath): the
timings of probes.<probeName> as given; exec, tcpSocket or grpc when one is set, else
httpGet merged over GET defaultPath on the metrics port. Two handlers are refused.
*/}}
{{- define "llm-savings-exporter.probe" -}}
{{- $ctx := index . 0 }}
{{- $values := index $ctx.Values.probes (index . 1) }}
{{- $probe := dict }}
{{- range $key, $value := omit $values "enabled" "httpGet" "exec" "tcpSocket" "grpc" }}
{{- if not (kindIs "invalid" $value) }}{{ $_ := set $probe $key (int64 $value) }}{{ end }}
{{- end }}
{{- $handlers := list }}
{{- range $name := list "exec" "tcpSocket" "grpc" }}
{{- if index $values $name }}{{ $handlers = append $handlers $name }}{{ end }}
{{- end }}
{{- if or (gt (len $handlers) 1) (and $handlers $values.httpGet) }}
{{- fail (printf "probes.%s: set one handler (httpGet, exec, tcpSocket or grpc), not %s" (index . 1) (join " and " (ternary (prepend $handlers "httpGet") $handlers (not (empty $values.httpGet))))) }}
{{- end }}
{{- if $handlers }}
{{- $name := first $handlers }}
{{- $_ := set $probe $name (index $values $name) }}
{{- else }}
{{- $default := dict "path" (index . 2) "port" $ctx.Values.ports.names.metrics }}
{{- $_ := set $probe "httpGet" (merge (deepCopy (default (dict) $values.httpGet)) $default) }}
{{- end }}
{{- toYaml $probe }}
{{- end }}
