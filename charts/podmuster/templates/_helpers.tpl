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

{{/* A node pool's name as part of object names: lowered, "_" and "." as "-" (as
scheduler.cache.pools.pool_slug computes it for the pool's Lease). */}}
{{- define "podmuster.poolSlug" -}}
{{- . | lower | replace "_" "-" | replace "." "-" -}}
{{- end -}}

{{/* The components this release runs as Deployments, by mode. A node pool's scheduler is
the component scheduler-<slug>; without scheduler.defaultPool the default one is left out. */}}
{{- define "podmuster.deployments" -}}
{{- if eq .Values.mode "all" -}}
{{- if .Values.scheduler.nodePools -}}
{{- fail "scheduler.nodePools needs mode: components (mode: all runs one scheduler, for the default pool)" -}}
{{- end -}}
all
{{- else -}}
podgrouper{{ if .Values.scheduler.defaultPool }} scheduler{{ end }} binder controllers
{{- $seen := dict -}}
{{- range .Values.scheduler.nodePools -}}
{{- $slug := include "podmuster.poolSlug" .name -}}
{{- if hasKey $seen $slug -}}
{{- fail (printf "scheduler.nodePools: %q and %q have the same object name scheduler-%s" (get $seen $slug) .name $slug) -}}
{{- end -}}
{{- $_ := set $seen $slug .name }} scheduler-{{ $slug }}
{{- end -}}
{{- end -}}
{{- if .Values.webhooks.enabled }} webhooks{{ end -}}
{{- end -}}

{{/* What a Deployment runs: "scheduler" for a node pool's scheduler, else itself. */}}
{{- define "podmuster.kind" -}}
{{- $component := index . 1 -}}
{{- if hasPrefix "scheduler-" $component }}scheduler{{ else }}{{ $component }}{{ end -}}
{{- end -}}

{{/* The node pool entry of a pool's scheduler component, as JSON ("{}" for others). */}}
{{- define "podmuster.poolOf" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $found := dict -}}
{{- range $root.Values.scheduler.nodePools -}}
{{- if eq $component (printf "scheduler-%s" (include "podmuster.poolSlug" .name)) -}}
{{- $found = . -}}
{{- end -}}
{{- end -}}
{{- toJson $found -}}
{{- end -}}

{{/* The scheduler.yaml of the scheduler, or of a node pool (list $ pool) with its own
config merged over scheduler.config. */}}
{{- define "podmuster.schedulerConfig" -}}
{{- $root := index . 0 -}}
{{- $pool := index . 1 -}}
{{- $config := mergeOverwrite (deepCopy $root.Values.scheduler.config) (deepCopy (default dict $pool.config)) -}}
{{- $fixed := dict "schedulerName" $root.Values.schedulerName -}}
{{- if $root.Values.queueAdmission.allQueues }}{{ $_ := set $fixed "queueAdmissionGate" true }}{{ end -}}
{{- toYaml (merge $fixed $config) -}}
{{- end -}}

{{/* Components with leader election (one Lease each). */}}
{{- define "podmuster.leaderElected" -}}
podgrouper scheduler binder controllers all node-scale-adjuster
{{- end -}}

{{/* The flags every component takes (liveprocess/flags.py): list (root, kind). The
webhooks answer on every replica, so they take no Lease. */}}
{{- define "podmuster.commonFlags" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 1 -}}
- --log-format={{ $root.Values.logFormat }}
- --log-level={{ $root.Values.logLevel }}
- --kube-api-qps={{ $root.Values.kubeApi.qps }}
- --kube-api-burst={{ $root.Values.kubeApi.burst }}
- --metrics-port={{ $root.Values.metricsPort }}
{{- if and $root.Values.leaderElection.enabled (has $kind (splitList " " (include "podmuster.leaderElected" $root))) }}
- --leader-elect
- --leader-elect-lease-namespace={{ $root.Release.Namespace }}
{{- end }}
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
- {{ include "podmuster.kind" . }}
{{ include "podmuster.commonFlags" (list $root (include "podmuster.kind" .)) }}
{{- if eq $component "podgrouper" }}
{{ include "podmuster.groupingFlags" $root }}
{{- else if eq (include "podmuster.kind" .) "scheduler" }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --config=/etc/podmuster/scheduler.yaml
- --node-pool-label={{ $root.Values.podgrouper.nodepoolLabelKey }}
{{- with (include "podmuster.poolOf" . | fromJson).name }}
- --node-pool={{ . }}
{{- end }}
- --schedule-period={{ $root.Values.scheduler.schedulePeriod }}
- --bind-backoff-limit={{ $root.Values.scheduler.bindBackoffLimit }}
{{- else if eq $component "binder" }}
- --workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
{{- else if eq $component "controllers" }}
- --debounce={{ $root.Values.controllers.debounce }}
{{- else if eq $component "webhooks" }}
- --port={{ $root.Values.webhooks.port }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --queue-label-key={{ $root.Values.queueLabelKey }}
{{- if $root.Values.queueAdmission.allQueues }}
- --admission-gate-all-queues
{{- end }}
- --tls-cert-file=/etc/podmuster/tls/tls.crt
- --tls-key-file=/etc/podmuster/tls/tls.key
{{- else if eq $component "all" }}
{{ include "podmuster.groupingFlags" $root }}
- --config=/etc/podmuster/scheduler.yaml
- --schedule-period={{ $root.Values.scheduler.schedulePeriod }}
- --bind-backoff-limit={{ $root.Values.scheduler.bindBackoffLimit }}
- --binder-workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
- --debounce={{ $root.Values.controllers.debounce }}
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
