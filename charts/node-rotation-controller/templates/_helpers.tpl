{{/* The app's name in labels: the chart's name unless nameOverride. */}}
{{- define "nrc.name" -}}
{{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/*
The name of the release's objects: the release name unless
fullnameOverride (suffixes such as -metrics are added to it).
*/}}
{{- define "nrc.fullname" -}}
{{ default .Release.Name .Values.fullnameOverride | trunc 55 | trimSuffix "-" }}
{{- end -}}

{{/*
Labels on every object the chart renders. part-of is fixed whatever
nameOverride says: rotationctl finds the controller's Deployment by it.
The version is the image's tag (default appVersion), what rotationctl
version reports. commonLabels come last and may not replace these.
*/}}
{{- define "nrc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nrc.selector" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: node-rotation-controller
{{- range $k, $v := .Values.commonLabels }}
{{- if or (hasPrefix "app.kubernetes.io/" $k) (hasPrefix "helm.sh/" $k) }}
{{- fail (printf "commonLabels.%s: the chart sets the app.kubernetes.io/ and helm.sh/ labels itself" $k) }}
{{- end }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/*
The Deployment's selector, immutable: a release keeps its name and its
nameOverride for life (helm upgrade refuses a change of either).
*/}}
{{- define "nrc.selector" -}}
app.kubernetes.io/name: {{ include "nrc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The controller's image: repository:tag (the tag defaults to appVersion),
and @digest when image.digest pins it (the kubelet then pulls by digest).
*/}}
{{- define "nrc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end -}}

{{/* The controller's ServiceAccount: the release's name unless named. */}}
{{- define "nrc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ default (include "nrc.fullname" .) .Values.serviceAccount.name }}
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

{{/*
The Pod's labels: the chart's and commonLabels, then podLabels for the
keys those do not set (a podLabels key cannot replace them: the selector
and the part-of lookup depend on them, and a key twice is invalid YAML).
*/}}
{{- define "nrc.podLabels" -}}
{{- $labels := include "nrc.labels" . | fromYaml -}}
{{- toYaml (merge $labels .Values.podLabels) -}}
{{- end -}}
