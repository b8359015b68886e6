{{/*
The OTLP/gRPC -> OTLP/HTTP bridge of standalone mode (standalone.grpcBridge.enabled): an
OpenTelemetry Collector container next to the exporter. The Collector's loadbalancing
exporter sends OTLP/gRPC only; this container receives it on grpcBridge.port and forwards
every request to the exporter in the same pod (127.0.0.1), with no queue of its own, so the
exporter's answer (200, 429, 503) is the answer the load balancer sees and a retry comes
back to the same replica.
*/}}
{{- define "llm-savings-exporter.grpcBridgeContainer" -}}
{{- $bridge := .Values.standalone.grpcBridge -}}
- name: otlp-grpc-bridge
  image: "{{ $bridge.image.repository }}:{{ $bridge.image.tag }}"
  imagePullPolicy: {{ $bridge.image.pullPolicy }}
  args:
    - --config=/etc/otlp-grpc-bridge/config.yaml
  {{- if .Values.otlpReceiver.bearerToken.existingSecret }}
  env:
    - name: LLM_SAVINGS_OTLP_BEARER_TOKEN
      valueFrom:
        secretKeyRef:
          name: {{ .Values.otlpReceiver.bearerToken.existingSecret }}
          key: {{ .Values.otlpReceiver.bearerToken.key }}
  {{- end }}
  ports:
    - name: otlp-grpc
      containerPort: {{ int $bridge.port }}
      protocol: TCP
    - name: bridge-health
      containerPort: {{ int $bridge.healthPort }}
      protocol: TCP
  livenessProbe:
    httpGet:
      path: /
      port: bridge-health
  readinessProbe:
    httpGet:
      path: /
      port: bridge-health
  {{- with $bridge.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - name: otlp-grpc-bridge-config
      mountPath: /etc/otlp-grpc-bridge
      readOnly: true
{{- end }}

{{/* The bridge's Collector config (config.yaml of its ConfigMap). */}}
{{- define "llm-savings-exporter.grpcBridgeConfig" -}}
{{- $bridge := .Values.standalone.grpcBridge }}
{{- $http := dict
  "traces_endpoint" (printf "http://127.0.0.1:%d/v1/traces" (int .Values.ports.otlp))
  "compression" "gzip"
  "sending_queue" (dict "enabled" false)
  "retry_on_failure" (dict "enabled" true "initial_interval" "1s" "max_interval" "10s" "max_elapsed_time" "60s") }}
{{- if .Values.otlpReceiver.bearerToken.existingSecret }}
{{- $_ := set $http "headers" (dict "Authorization" "Bearer ${env:LLM_SAVINGS_OTLP_BEARER_TOKEN}") }}
{{- end }}
{{- $config := dict
  "extensions" (dict "health_check" (dict "endpoint" (printf "0.0.0.0:%d" (int $bridge.healthPort))))
  "receivers" (dict "otlp" (dict "protocols" (dict "grpc" (dict "endpoint" (printf "0.0.0.0:%d" (int $bridge.port))))))
  "exporters" (dict "otlphttp" $http)
  "service" (dict "extensions" (list "health_check") "pipelines" (dict "traces" (dict "receivers" (list "otlp") "exporters" (list "otlphttp")))) }}
{{- toYaml $config }}
{{- end }}
