{{/* Names and labels shared by the templates. */}}

{{- define "kpo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kpo.fullname" -}}
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

{{- define "kpo.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kpo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kpo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kpo.labels" -}}
helm.sh/chart: {{ include "kpo.chart" . }}
{{ include "kpo.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kafka-placement-operator
{{- end }}

{{- define "kpo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kpo.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "kpo.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "kpo.sparkNamespace" -}}
{{- default .Release.Namespace .Values.planner.spark.namespace }}
{{- end }}

{{/* The custom resources the operator reconciles. */}}
{{- define "kpo.resources" -}}
- kafkaclusters
- logdircordons
- brokerdecommissions
- placementpolicies
{{- end }}

{{/* Rules the operator needs in each namespace it watches (least privilege). */}}
{{- define "kpo.namespacedRules" -}}
- apiGroups: ["kafkaplacement.io"]
  resources:
    {{- include "kpo.resources" . | nindent 4 }}
  verbs: ["get", "list", "watch", "patch"]
# Self-healing creates heals (KafkaCluster spec.selfHealing); users delete them to cancel.
- apiGroups: ["kafkaplacement.io"]
  resources: ["brokerdecommissions", "logdircordons"]
  verbs: ["create", "delete"]
- apiGroups: ["kafkaplacement.io"]
  resources:
    - kafkaclusters/status
    - logdircordons/status
    - brokerdecommissions/status
    - placementpolicies/status
  verbs: ["get", "patch"]
- apiGroups: ["kafkaplacement.io"]
  resources:
    - kafkaclusters/finalizers
    - logdircordons/finalizers
    - brokerdecommissions/finalizers
    - placementpolicies/finalizers
  verbs: ["update"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
# Plans are stored in ConfigMaps next to their resources.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Connection secrets named by KafkaCluster.spec.tls / spec.sasl.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
{{- end }}

{{/* kopf discovers its resources through the CRDs. */}}
{{- define "kpo.discoveryRules" -}}
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  verbs: ["get", "list", "watch"]
{{- end }}
