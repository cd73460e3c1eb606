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
{{- with .Values.act.kubeHost }}
- name: TG_ACT_KUBE_HOST
  value: {{ . | quote }}
{{- end }}
- name: TG_ACT_KUBE_NAMESPACE
  value: {{ .Values.act.kubeNamespace | quote }}
{{ include "trainguard.secretEnv" (dict "root" . "name" "TG_ACT_KUBE_TOKEN" "key" "kube-token" "optional" true) }}
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
