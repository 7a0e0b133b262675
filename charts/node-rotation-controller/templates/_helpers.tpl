{{/* Labels on every object the chart renders. */}}
{{- define "nrc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nrc.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Deployment's selector: never changes across upgrades (immutable). */}}
{{- define "nrc.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The controller's ServiceAccount: the release name unless named. */}}
{{- define "nrc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default .Release.Name .Values.serviceAccount.name }}
{{- else -}}
{{ required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/* The default affinity: replicas apart, off Karpenter-managed nodes. */}}
{{- define "nrc.defaultAffinity" -}}
{{- $d := .Values.defaultAffinity -}}
{{- if $d.avoidKarpenterNodes }}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          - {key: karpenter.sh/nodepool, operator: DoesNotExist}
{{- end }}
{{- if eq $d.spreadReplicas "required" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels: {{- include "nrc.selector" . | nindent 10 }}
{{- else if eq $d.spreadReplicas "preferred" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels: {{- include "nrc.selector" . | nindent 12 }}
{{- end }}
{{- end -}}

{{/*
The runbook of an alert: its section of docs/operations.md under
prometheusRule.runbookBaseURL ("#runbook-" and the alert's name in lower
case). Called with (list $ "AlertName").
*/}}
{{- define "nrc.runbookURL" -}}
{{- $root := index . 0 -}}
{{- printf "%s#runbook-%s" $root.Values.prometheusRule.runbookBaseURL (index . 1 | lower) | quote -}}
{{- end -}}
