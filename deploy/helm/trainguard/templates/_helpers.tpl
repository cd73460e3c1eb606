{{/* Names, labels and the environment blocks every TrainGuard container shares. */}}

{{- define "trainguard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "trainguard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: trainguard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "sink") */}}
{{- define "trainguard.selectorLabels" -}}
app.kubernetes.io/name: trainguard
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "trainguard.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end -}}

{{- define "trainguard.secretName" -}}
{{- .Values.secrets.name | default (printf "%s" (include "trainguard.fullname" .)) -}}
{{- end -}}

{{- define "trainguard.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (printf "%s-act" (include "trainguard.fullname" .)) -}}
{{- end -}}

{{/* One env entry from a secret key: (dict "root" $ "name" "TG_CLICKHOUSE_PASSWORD" "key" "clickhouse-password" "optional" true) */}}
{{- define "trainguard.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "trainguard.secretName" .root }}
      key: {{ .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/* TG_KAFKA_*: every process but migrate and retention. */}}
{{- define "trainguard.busEnv" -}}
- name: TG_KAFKA_MODE
  value: kafka
- name: TG_KAFKA_BOOTSTRAP
  value: {{ .Values.kafka.bootstrap | quote }}
- name: TG_KAFKA_TOPIC_PREFIX
  value: {{ .Values.kafka.topicPrefix | quote }}
{{- end -}}

{{/* TG_CLICKHOUSE_*: every process that reads or writes the store; the password from the Secret. */}}
{{- define "trainguard.storeEnv" -}}
- name: TG_CLICKHOUSE_MODE
  value: server
- name: TG_CLICKHOUSE_HOST
  value: {{ .Values.clickhouse.host | quote }}
- name: TG_CLICKHOUSE_PORT
  value: {{ .Values.clickhouse.port | quote }}
- name: TG_CLICKHOUSE_DATABASE
  value: {{ .Values.clickhouse.database | quote }}
- name: TG_CLICKHOUSE_USER
  value: {{ .Values.clickhouse.user | quote }}
{{- with .Values.clickhouse.retentionDays }}
- name: TG_CLICKHOUSE_RETENTION_DAYS
  value: {{ . | quote }}
{{- end }}
{{ include "trainguard.secretEnv" (dict "root" . "name" "TG_CLICKHOUSE_PASSWORD" "key" "clickhouse-password" "optional" true) }}
{{- end -}}

{{/* TG_ACT_* and the webhook key: the action engine, and the API (it continues approved ladders). */}}
{{- define "trainguard.actEnv" -}}
- name: TG_ACT_GROUP
  value: {{ .Values.act.group | quote }}
- name: TG_ACT_MODE
  value: {{ .Values.act.mode | quote }}
- name: TG_ACT_EXECUTOR
  value: {{ .Values.act.executor | quote }}
- name: TG_ACT_FLEET_NODES
  value: {{ .Values.act.fleetNodes | quote }}
{{- if eq .Values.act.executor "kubernetes" }}
{{- $auth := .Values.act.kubeAuth }}
- name: TG_ACT_KUBE_AUTH
  value: {{ $auth | quote }}
- name: TG_ACT_KUBE_NAMESPACE
  value: {{ .Values.act.kubeNamespace | quote }}
- name: TG_ACT_KUBE_OPTOUT_LABEL
  value: {{ .Values.act.optoutLabel | quote }}
{{- if eq $auth "explicit" }}
- name: TG_ACT_KUBE_HOST
  value: {{ required "act.kubeHost is required with act.kubeAuth explicit" .Values.act.kubeHost | quote }}
{{ include "trainguard.secretEnv" (dict "root" . "name" "TG_ACT_KUBE_TOKEN" "key" "kube-token" "optional" true) }}
{{- if .Values.act.kubeCaCert }}
- name: TG_ACT_KUBE_CA_CERT
  value: {{ include "trainguard.secretFile" "kube-ca-cert" | quote }}
{{- end }}
{{- else if eq $auth "kubeconfig" }}
- name: TG_ACT_KUBE_CONFIG
  value: {{ include "trainguard.secretFile" "kubeconfig" | quote }}
{{- with .Values.act.kubeContext }}
- name: TG_ACT_KUBE_CONTEXT
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.act.consoleUrl }}
- name: TG_ACT_CONSOLE_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.act.operatorUrl }}
- name: TG_ACT_OPERATOR_URL
  value: {{ . | quote }}
{{ include "trainguard.secretEnv" (dict "root" $ "name" "TG_ACT_OPERATOR_SECRET" "key" "operator-secret") }}
{{- end }}
{{- with .Values.act.webhookHosts }}
- name: TG_ACT_WEBHOOK_HOSTS
  value: {{ toJson . | quote }}
{{- end }}
{{ include "trainguard.secretEnv" (dict "root" . "name" "TG_WEBHOOK_KEY" "key" "webhook-key") }}
{{- range $name, $value := .Values.act.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* A component's extra settings: (dict "env" .Values.sink.env) */}}
{{- define "trainguard.extraEnv" -}}
{{- range $name, $value := .env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* Pod-level scheduling fields of a component: (dict "root" $ "c" .Values.sink) */}}
{{- define "trainguard.scheduling" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .c.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A writable /tmp on a read-only root file system (volume "tmp"). */}}
{{- define "trainguard.tmpVolume" -}}
- name: tmp
  emptyDir: { medium: Memory, sizeLimit: 64Mi }
{{- end -}}


{{/* Where a Secret key mounted as a file lies: (include "trainguard.secretFile" "kubeconfig") */}}
{{- define "trainguard.secretFile" -}}
{{ printf "/etc/trainguard/secrets/%s" . }}
{{- end -}}

{{/* Whether act and api use the pod's ServiceAccount (and so need the chart's RBAC): "true" or "". */}}
{{- define "trainguard.inCluster" -}}
{{- if and (eq .Values.act.executor "kubernetes") (has .Values.act.kubeAuth (list "incluster" "auto")) -}}
true
{{- end -}}
{{- end -}}

{{/* Secret keys a pod reads as files, space-separated: (dict "root" $ "alerts" true) */}}
{{- define "trainguard.secretFileKeys" -}}
{{- $v := .root.Values -}}
{{- $keys := list -}}
{{- if eq $v.act.executor "kubernetes" -}}
{{- if eq $v.act.kubeAuth "kubeconfig" -}}{{- $keys = append $keys "kubeconfig" -}}{{- end -}}
{{- if and (eq $v.act.kubeAuth "explicit") $v.act.kubeCaCert -}}{{- $keys = append $keys "kube-ca-cert" -}}{{- end -}}
{{- end -}}
{{- if and .alerts $v.alertmanager.url -}}
{{- if eq $v.alertmanager.auth "basic" -}}{{- $keys = append $keys "alertmanager-password" -}}{{- end -}}
{{- if eq $v.alertmanager.auth "bearer" -}}{{- $keys = append $keys "alertmanager-bearer-token" -}}{{- end -}}
{{- end -}}
{{- join " " $keys -}}
{{- end -}}

{{/* The pod's ServiceAccount fields (act and api). */}}
{{- define "trainguard.actIdentity" -}}
{{- if include "trainguard.inCluster" . }}
serviceAccountName: {{ include "trainguard.serviceAccountName" . }}
{{- else }}
automountServiceAccountToken: false
{{- end }}
{{- end -}}

{{/* The volume of the Secret keys read as files, none when there are none: (dict "root" $ "alerts" true) */}}
{{- define "trainguard.secretFileVolume" -}}
{{- $keys := include "trainguard.secretFileKeys" . | trim }}
{{- if $keys }}
- name: credentials
  secret:
    secretName: {{ include "trainguard.secretName" .root }}
    defaultMode: 0440
    items:
      {{- range splitList " " $keys }}
      - { key: {{ . }}, path: {{ . }} }
      {{- end }}
{{- end }}
{{- end -}}

{{/* Its mount. */}}
{{- define "trainguard.secretFileMount" -}}
{{- if include "trainguard.secretFileKeys" . | trim }}
- { name: credentials, mountPath: /etc/trainguard/secrets, readOnly: true }
{{- end }}
{{- end -}}

{{/* TG_ALERTMANAGER_*: the action engine; credentials as files from the Secret. */}}
{{- define "trainguard.alertmanagerEnv" -}}
{{- with .Values.alertmanager }}
{{- if .url }}
- name: TG_ALERTMANAGER_URL
  value: {{ .url | quote }}
{{- if eq .auth "basic" }}
- name: TG_ALERTMANAGER_USERNAME
  value: {{ required "alertmanager.username is required with alertmanager.auth basic" .username | quote }}
- name: TG_ALERTMANAGER_PASSWORD_FILE
  value: {{ include "trainguard.secretFile" "alertmanager-password" | quote }}
{{- else if eq .auth "bearer" }}
- name: TG_ALERTMANAGER_BEARER_TOKEN_FILE
  value: {{ include "trainguard.secretFile" "alertmanager-bearer-token" | quote }}
{{- end }}
- name: TG_ALERTMANAGER_INTERVAL_S
  value: {{ .intervalS | quote }}
- name: TG_ALERTMANAGER_RESOLVED_RETENTION_S
  value: {{ .resolvedRetentionS | quote }}
- name: TG_ALERTMANAGER_TIMEOUT_S
  value: {{ .timeoutS | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A headless Service over one component's /metrics: (dict "root" $ "component" "sink" "port" 9102) */}}
{{- define "trainguard.metricsService" -}}
# /metrics of every {{ .component }} pod (headless: Prometheus scrapes each pod).
apiVersion: v1
kind: Service
metadata:
  name: {{ include "trainguard.fullname" .root }}-{{ .component }}-metrics
  labels: {{- include "trainguard.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
    trainguard.io/metrics: "true"
    trainguard.io/scrape-job: trainguard-{{ .component }}
  {{- if .root.Values.metrics.annotations }}
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ .port | quote }}
    prometheus.io/path: /metrics
  {{- end }}
spec:
  clusterIP: None
  selector: {{- include "trainguard.selectorLabels" (dict "root" .root "component" .component) | nindent 4 }}
  ports:
    - { name: metrics, port: {{ .port }}, targetPort: metrics }
{{- end -}}
