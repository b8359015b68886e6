{{/*
Names are cut at 63 characters: Kubernetes name fields and label values are DNS labels.
Every helper takes the chart's own context, so a parent chart can pass
(index .Subcharts "llm-savings-exporter") and get the same names as this chart renders.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "llm-savings-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: fullnameOverride, else release-name, else release-chartname,
cut at 63 characters.
*/}}
{{- define "llm-savings-exporter.fullname" -}}
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

{{/* A name derived from the full name plus a suffix, still at most 63 characters. */}}
{{- define "llm-savings-exporter.suffixedName" -}}
{{- $ctx := index . 0 }}
{{- $suffix := index . 1 }}
{{- printf "%s-%s" (include "llm-savings-exporter.fullname" $ctx | trunc (int (sub 62 (len $suffix))) | trimSuffix "-") $suffix }}
{{- end }}

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "llm-savings-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "llm-savings-exporter.labels" -}}
helm.sh/chart: {{ include "llm-savings-exporter.chart" . }}
{{ include "llm-savings-exporter.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llm-savings-exporter
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the chart's pods; never change them on upgrade. */}}
{{- define "llm-savings-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llm-savings-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Pod labels the Service (and by default the PodMonitor) select. */}}
{{- define "llm-savings-exporter.podSelector" -}}
{{- if .Values.service.selector }}
{{- toYaml .Values.service.selector }}
{{- else }}
{{- include "llm-savings-exporter.selectorLabels" . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the chart's pods run as. */}}
{{- define "llm-savings-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llm-savings-exporter.fullname" .) .Values.serviceAccount.name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The exporter image reference: repository@digest, else repository:tag (tag defaults to appVersion). */}}
{{- define "llm-savings-exporter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Whether the OTLP receiver is open: "true" or "". */}}
{{- define "llm-savings-exporter.otlpEnabled" -}}
{{- if or (eq .Values.mode "standalone") .Values.config.otlp.enabled }}true{{ end }}
{{- end }}

{{/* Whether this chart runs any pod of its own: "true" or "". */}}
{{- define "llm-savings-exporter.hasWorkload" -}}
{{- if or (eq .Values.mode "standalone") .Values.exampleGateway.enabled }}true{{ end }}
{{- end }}

{{/* Name of the ConfigMap holding config.yaml. */}}
{{- define "llm-savings-exporter.configMapName" -}}
{{- include "llm-savings-exporter.suffixedName" (list . "config") }}
{{- end }}

{{/* Name of the ConfigMap holding the price table, or "" for the image's bundled table. */}}
{{- define "llm-savings-exporter.pricesConfigMapName" -}}
{{- if .Values.prices.existingConfigMap }}
{{- .Values.prices.existingConfigMap }}
{{- else if .Values.prices.inline }}
{{- include "llm-savings-exporter.suffixedName" (list . "prices") }}
{{- end }}
{{- end }}

{{/* Fixed paths inside the exporter container. */}}
{{- define "llm-savings-exporter.configPath" -}}/etc/llm-savings-exporter/config.yaml{{- end }}
{{- define "llm-savings-exporter.pricesDir" -}}/etc/llm-savings-exporter/prices{{- end }}
{{- define "llm-savings-exporter.stateDir" -}}/var/lib/llm-savings-exporter{{- end }}

{{/*
The config file (llm-savings-config/v1), parsed by exporter/config.py. Values arrive
as float64: integer settings are cast with int64 (else toYaml writes 1.6777216e+07
and the loader refuses a float where it wants an integer); second/day settings stay
numbers. Only keys present in values are written; the loader defaults the rest.
*/}}
{{- define "llm-savings-exporter.configYaml" -}}
{{- $c := .Values.config }}
{{- $ints := list "max_models" "max_tenants" "max_methods" "max_components" "month_retention" "max_line_bytes" "max_body_bytes" "queue_size" "dedupe_max_ids" }}
{{- $nums := list "dedupe_window_days" "checkpoint_interval_seconds" "poll_interval_seconds" "interval_seconds" }}
{{- $sources := list }}
{{- $srcValues := ternary .Values.standalone.sources $c.sources (eq .Values.mode "standalone") }}
{{- range $srcValues }}
{{- $s := dict }}
{{- range $k, $v := . }}
{{- $_ := set $s $k (ternary (int64 $v) (ternary (float64 $v) $v (has $k $nums)) (has $k $ints)) }}
{{- end }}
{{- $sources = append $sources $s }}
{{- end }}
{{- $bind := ternary "0.0.0.0" .Values.otlpReceiver.bindAddress (eq .Values.mode "standalone") }}
{{- $otlp := dict "enabled" (eq (include "llm-savings-exporter.otlpEnabled" .) "true") "listen" (printf "%s:%d" $bind (int .Values.ports.otlp)) }}
{{- range $k, $v := $c.otlp }}
{{- if ne $k "enabled" }}{{ $_ := set $otlp $k (ternary (int64 $v) $v (has $k $ints)) }}{{ end }}
{{- end }}
{{- $push := dict }}
{{- range $k, $v := $c.otlp_push }}
{{- $_ := set $push $k (ternary (float64 $v) $v (has $k $nums)) }}
{{- end }}
{{- $labels := dict }}
{{- range $k, $v := $c.labels }}
{{- $_ := set $labels $k (ternary (int64 $v) $v (has $k $ints)) }}
{{- end }}
{{- $cfg := dict "schema" "llm-savings-config/v1" "listen" (printf "0.0.0.0:%d" (int .Values.ports.metrics)) "state_dir" (include "llm-savings-exporter.stateDir" .) "labels" $labels "sources" $sources "otlp" $otlp "otlp_push" $push }}
{{- range $k := list "timezone" "dedupe_window_days" "dedupe_max_ids" "checkpoint_interval_seconds" "month_retention" }}
{{- if hasKey $c $k }}
{{- $v := index $c $k }}
{{- $_ := set $cfg $k (ternary (int64 $v) (ternary (float64 $v) $v (has $k $nums)) (has $k $ints)) }}
{{- end }}
{{- end }}
{{- if include "llm-savings-exporter.pricesConfigMapName" . }}
{{- $_ := set $cfg "prices" (printf "%s/%s" (include "llm-savings-exporter.pricesDir" .) .Values.prices.key) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/*
Pod annotation that rolls the pods when the config changes: config.yaml is mounted
with subPath, which Kubernetes never refreshes. The price table needs no roll: its
directory mount is refreshed and the exporter hot-reloads it.
*/}}
{{- define "llm-savings-exporter.checksumAnnotations" -}}
checksum/llm-savings-config: {{ include "llm-savings-exporter.configYaml" . | sha256sum }}
{{- end }}

{{/* Pod-level settings shared by the chart's own pods (example gateway, standalone). */}}
{{- define "llm-savings-exporter.podCommon" -}}
serviceAccountName: {{ include "llm-savings-exporter.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountServiceAccountToken }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
topologySpreadConstraints of one of the chart's workloads, from (list context component):
an item without labelSelector selects the workload's own pods.
*/}}
{{- define "llm-savings-exporter.topologySpread" -}}
{{- $ctx := index . 0 }}
{{- $selector := merge (include "llm-savings-exporter.selectorLabels" $ctx | fromYaml) (dict "app.kubernetes.io/component" (index . 1)) }}
{{- $items := list }}
{{- range $ctx.Values.topologySpreadConstraints }}
{{- $item := deepCopy . }}
{{- if not (hasKey $item "labelSelector") }}
{{- $_ := set $item "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
{{- $items = append $items $item }}
{{- end }}
{{- with $items }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
updateStrategy for (list context workloadKind): the StatefulSet takes RollingUpdate
(with partition) or OnDelete, the Deployment RollingUpdate (maxSurge, maxUnavailable)
or Recreate; anything else is refused here, naming the value.
*/}}
{{- define "llm-savings-exporter.updateStrategy" -}}
{{- $ctx := index . 0 }}
{{- $kind := index . 1 }}
{{- $strategy := $ctx.Values.updateStrategy }}
{{- $allowed := ternary (list "RollingUpdate" "OnDelete") (list "RollingUpdate" "Recreate") (eq $kind "StatefulSet") }}
{{- if and $strategy.type (not (has $strategy.type $allowed)) }}
{{- fail (printf "updateStrategy.type %s does not apply to the %s the chart renders (use %s)" $strategy.type $kind (join " or " $allowed)) }}
{{- end }}
{{- $rolling := default (dict) $strategy.rollingUpdate }}
{{- $fields := ternary (list "partition" "maxUnavailable") (list "maxSurge" "maxUnavailable") (eq $kind "StatefulSet") }}
{{- range $key, $_ := $rolling }}
{{- if not (has $key $fields) }}
{{- fail (printf "updateStrategy.rollingUpdate.%s does not apply to the %s the chart renders (it takes %s)" $key $kind (join ", " $fields)) }}
{{- end }}
{{- end }}
{{- if and $rolling (ne (default "RollingUpdate" $strategy.type) "RollingUpdate") }}
{{- fail (printf "updateStrategy.rollingUpdate needs updateStrategy.type RollingUpdate, not %s" $strategy.type) }}
{{- end }}
{{- with $strategy }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
Refuses an object that selects "the chart's own pods" when the chart renders none: in
sidecar mode without the example gateway the pods are the user's gateway's.
*/}}
{{- define "llm-savings-exporter.needsOwnPods" -}}
{{- if not (include "llm-savings-exporter.hasWorkload" (index . 0)) }}
{{- fail (printf "%s.enabled applies to the chart's own pods (mode: standalone, or exampleGateway.enabled); in sidecar mode your gateway's chart owns its pods' %s" (index . 1) (index . 2)) }}
{{- end }}
{{- end }}

{{/* The component label of the chart's own pods: standalone or example-gateway. */}}
{{- define "llm-savings-exporter.ownComponent" -}}
{{- ternary "standalone" "example-gateway" (eq .Values.mode "standalone") }}
{{- end }}

{{/* Whether standalone replicas > 1 (then spans must arrive by trace id): "true" or "". */}}
{{- define "llm-savings-exporter.sharded" -}}
{{- if and (eq .Values.mode "standalone") (gt (int .Values.standalone.replicas) 1) }}
{{- if not .Values.standalone.traceAffinity }}
{{- fail "standalone.replicas > 1 needs standalone.traceAffinity: true: each replica has its own dedupe ledger, so spans must reach the replicas by trace id (the OpenTelemetry Collector's loadbalancing exporter, routing_key: traceID, to the headless Service), never round-robin" }}
{{- end }}true
{{- end }}
{{- end }}

{{/* Name of the ConfigMap holding the gRPC bridge's Collector config. */}}
{{- define "llm-savings-exporter.grpcBridgeConfigMapName" -}}
{{- include "llm-savings-exporter.suffixedName" (list . "grpc-bridge") }}
{{- end }}
