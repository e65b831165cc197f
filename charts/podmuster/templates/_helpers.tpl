{{/*
Names, labels and the pieces every Deployment shares.
*/}}

{{- define "podmuster.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: <fullname>-<component>. Call with (list $ "scheduler"). */}}
{{- define "podmuster.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "podmuster.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "podmuster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component. Call with (list $ "scheduler"). */}}
{{- define "podmuster.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "podmuster.componentLabels" -}}
{{ include "podmuster.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "podmuster.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The components this release runs as Deployments, by mode. */}}
{{- define "podmuster.deployments" -}}
{{- if eq .Values.mode "all" -}}
all
{{- else -}}
podgrouper scheduler binder controllers
{{- end -}}
{{- if .Values.webhooks.enabled }} webhooks{{ end -}}
{{- end -}}

{{/* Components with leader election (one Lease each). */}}
{{- define "podmuster.leaderElected" -}}
scheduler binder controllers all
{{- end -}}

{{/* Flags shared by the scheduler, binder, controllers and all. */}}
{{- define "podmuster.leaderFlags" -}}
{{- if .Values.leaderElection.enabled }}
- --leader-elect
- --leader-elect-namespace={{ .Release.Namespace }}
{{- end }}
- --metrics-port={{ .Values.metricsPort }}
{{- end -}}

{{/* The GPU reservation pods' flags (binder and all). */}}
{{- define "podmuster.reservationFlags" -}}
{{- $r := .Values.binder.resourceReservation -}}
- --resource-reservation-namespace={{ $r.namespace }}
{{- with $r.image }}
- --resource-reservation-image={{ . }}
{{- end }}
- --resource-reservation-runtime-class={{ $r.runtimeClassName }}
- --resource-reservation-allocation-timeout={{ $r.allocationTimeout }}
- --resource-reservation-grace={{ $r.grace }}
{{- if .Values.binder.cdiEnabled }}
- --cdi-enabled
{{- end }}
{{- end -}}

{{/* The podgrouper's grouping flags (podgrouper and all). */}}
{{- define "podmuster.groupingFlags" -}}
{{- $p := .Values.podgrouper -}}
- --scheduler-name={{ .Values.schedulerName }}
- --queue-label-key={{ .Values.queueLabelKey }}
- --nodepool-label-key={{ $p.nodepoolLabelKey }}
{{- with $p.namespaceLabelSelector }}
- --namespace-label-selector={{ . }}
{{- end }}
{{- with $p.podLabelSelector }}
- --pod-label-selector={{ . }}
{{- end }}
{{- range $p.namespaces }}
- --namespace={{ . }}
{{- end }}
{{- with $p.defaultPrioritiesConfigMap.name }}
- --default-priorities-configmap-name={{ . }}
- --default-priorities-configmap-namespace={{ default $.Release.Namespace $p.defaultPrioritiesConfigMap.namespace }}
{{- end }}
- --knative-gang-schedule={{ $p.knativeGangSchedule }}
- --max-concurrent-reconciles={{ $p.maxConcurrentReconciles }}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
{{- end -}}

{{/* The container arguments of one component. Call with (list $ "scheduler"). */}}
{{- define "podmuster.args" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
- run
- {{ $component }}
{{- if eq $component "podgrouper" }}
{{ include "podmuster.groupingFlags" $root }}
- --liveness=http://0.0.0.0:{{ $root.Values.metricsPort }}/healthz
{{- else if eq $component "scheduler" }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --config=/etc/podmuster/scheduler.yaml
- --schedule-period={{ $root.Values.scheduler.schedulePeriod }}
- --bind-backoff-limit={{ $root.Values.scheduler.bindBackoffLimit }}
- --log-format={{ $root.Values.logFormat }}
{{- include "podmuster.leaderFlags" $root }}
{{- else if eq $component "binder" }}
- --workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
- --log-format={{ $root.Values.logFormat }}
- --log-level={{ $root.Values.logLevel }}
{{- include "podmuster.leaderFlags" $root }}
{{- else if eq $component "controllers" }}
- --debounce={{ $root.Values.controllers.debounce }}
- --log-format={{ $root.Values.logFormat }}
- --log-level={{ $root.Values.logLevel }}
{{- include "podmuster.leaderFlags" $root }}
{{- else if eq $component "webhooks" }}
- --port={{ $root.Values.webhooks.port }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --health-port={{ $root.Values.metricsPort }}
- --tls-cert-file=/etc/podmuster/tls/tls.crt
- --tls-key-file=/etc/podmuster/tls/tls.key
- --log-level={{ $root.Values.logLevel }}
{{- else if eq $component "all" }}
{{ include "podmuster.groupingFlags" $root }}
- --config=/etc/podmuster/scheduler.yaml
- --schedule-period={{ $root.Values.scheduler.schedulePeriod }}
- --bind-backoff-limit={{ $root.Values.scheduler.bindBackoffLimit }}
- --binder-workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
- --debounce={{ $root.Values.controllers.debounce }}
{{- include "podmuster.leaderFlags" $root }}
{{- end }}
{{- end -}}

{{/* The selectors of the pod webhooks (validation and mutation): webhooks.pods. */}}
{{- define "podmuster.podWebhookSelectors" -}}
{{- $namespaces := deepCopy (.namespaceSelector | default dict) }}
{{- if .excludeNamespaces }}
{{- $excluded := dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" .excludeNamespaces }}
{{- $_ := set $namespaces "matchExpressions" (append ($namespaces.matchExpressions | default list) $excluded) }}
{{- end -}}
namespaceSelector: {{ toJson $namespaces }}
objectSelector: {{ toJson .objectSelector }}
{{- end -}}
