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
{{- $stem := "scheduler" -}}
{{- if $pool.name }}{{ $stem = printf "scheduler-%s" (include "podmuster.poolSlug" $pool.name) }}{{ end -}}
{{- $usage := include "podmuster.usageDBConfig" (list $root $stem) | fromJson -}}
{{- with $usage }}{{ $_ := set $fixed "usageDBConfig" . }}{{ end -}}
{{- toYaml (merge $fixed $config) -}}
{{- end -}}

{{/* Time-based fair share's usageDBConfig (docs/configuration.md) from scheduler.usage,
as JSON ("{}" with source none): list (root, file stem). builtin with
historyVolumeClaim keeps the record in <stem>.json on that claim, one file per
scheduler (a node pool's scheduler records its own queues). */}}
{{- define "podmuster.usageDBConfig" -}}
{{- $u := (index . 0).Values.scheduler.usage -}}
{{- $out := dict -}}
{{- if ne $u.source "none" -}}
{{- $out = dict "clientType" $u.source -}}
{{- with $u.params }}{{ $_ := set $out "usageParams" . }}{{ end -}}
{{- if eq $u.source "prometheus" -}}
{{- $_ := set $out "connectionString" (required "scheduler.usage.prometheus.url: required with scheduler.usage.source prometheus" $u.prometheus.url) -}}
{{- else if $u.builtin.historyVolumeClaim -}}
{{- $_ := set $out "historyFile" (printf "%s/%s.json" (include "podmuster.usageDir" .) (index . 1)) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* "true" when a node pool's scheduler has a ConfigMap of its own: it sets config, or
the builtin usage record is kept on a claim (one file per scheduler). */}}
{{- define "podmuster.poolHasConfig" -}}
{{- $root := index . 0 -}}
{{- $pool := index . 1 -}}
{{- $u := $root.Values.scheduler.usage -}}
{{- if and $pool.name (or (hasKey $pool "config") (and (eq $u.source "builtin") $u.builtin.historyVolumeClaim)) }}true{{ end -}}
{{- end -}}

{{/* Where the builtin usage record's claim is mounted. */}}
{{- define "podmuster.usageDir" -}}/var/lib/podmuster/usage{{- end -}}

{{/* Components with leader election (one Lease each). */}}
{{- define "podmuster.leaderElected" -}}
podgrouper scheduler binder controllers all node-scale-adjuster
{{- end -}}

{{/* The flags every component takes (liveprocess/flags.py), the same way for each:
list (root, kind, settings), settings being the component's values (its kubeApi, if
set, over the global one). The webhooks answer on every replica, so they take no Lease. */}}
{{- define "podmuster.commonFlags" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 1 -}}
{{- $settings := index . 2 -}}
{{- $api := merge (deepCopy (default dict $settings.kubeApi)) $root.Values.kubeApi -}}
- --log-format={{ $root.Values.logFormat }}
- --log-level={{ $root.Values.logLevel }}
- --kube-api-qps={{ $api.qps }}
- --kube-api-burst={{ $api.burst }}
- --metrics-port={{ $root.Values.metricsPort }}
{{- with $root.Values.healthPort }}
- --health-port={{ . }}
{{- end }}
{{- if and $root.Values.leaderElection.enabled (has $kind (splitList " " (include "podmuster.leaderElected" $root))) }}
- --leader-elect
- --leader-elect-lease-namespace={{ $root.Release.Namespace }}
{{- end }}
{{- end -}}

{{/* The port name the probes use: health with healthPort, else metrics. */}}
{{- define "podmuster.probePort" -}}
{{- if .Values.healthPort }}health{{ else }}metrics{{ end -}}
{{- end -}}

{{/* The container ports of metrics (and health, with healthPort). */}}
{{- define "podmuster.metricsPorts" -}}
- name: metrics
  containerPort: {{ .Values.metricsPort }}
  protocol: TCP
{{- with .Values.healthPort }}
- name: health
  containerPort: {{ . }}
  protocol: TCP
{{- end }}
{{- end -}}

{{/* A component's values with a node pool's own over them: list (root, kind, pool). */}}
{{- define "podmuster.settings" -}}
{{- $root := index . 0 -}}
{{- $pool := index . 2 -}}
{{- $own := pick (deepCopy $pool) "replicas" "resources" "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "extraArgs" "extraEnv" "kubeApi" -}}
{{- toJson (merge $own (deepCopy (index $root.Values (index . 1)))) -}}
{{- end -}}

{{/* Where a component's pods may run, at pod spec level: list (root, settings,
component). nodeSelector: the global one with the component's keys over it; tolerations:
both lists; affinity and topologySpreadConstraints: the component's, else the global ones.
With more than one replica, replicaAntiAffinity adds a pod anti-affinity term keeping
the replicas of this component apart (soft: preferred, hard: required). */}}
{{- define "podmuster.placement" -}}
{{- $root := index . 0 -}}
{{- $s := index . 1 -}}
{{- $component := index . 2 -}}
{{- $nodeSelector := merge (deepCopy (default dict $s.nodeSelector)) $root.Values.nodeSelector -}}
{{- $tolerations := concat $root.Values.tolerations (default list $s.tolerations) -}}
{{- $affinity := deepCopy (default $root.Values.affinity $s.affinity) -}}
{{- $spread := default $root.Values.topologySpreadConstraints $s.topologySpreadConstraints -}}
{{- $anti := $root.Values.replicaAntiAffinity -}}
{{- if and (gt (int (default 1 $s.replicas)) 1) (ne $anti.mode "off") -}}
{{- $term := dict "topologyKey" $anti.topologyKey "labelSelector" (dict "matchLabels" (include "podmuster.selectorLabels" (list $root $component) | fromYaml)) -}}
{{- $podAnti := default dict $affinity.podAntiAffinity -}}
{{- if eq $anti.mode "hard" -}}
{{- $_ := set $podAnti "requiredDuringSchedulingIgnoredDuringExecution" (append (default list $podAnti.requiredDuringSchedulingIgnoredDuringExecution) $term) -}}
{{- else -}}
{{- $_ := set $podAnti "preferredDuringSchedulingIgnoredDuringExecution" (append (default list $podAnti.preferredDuringSchedulingIgnoredDuringExecution) (dict "weight" 100 "podAffinityTerm" $term)) -}}
{{- end -}}
{{- $_ := set $affinity "podAntiAffinity" $podAnti -}}
{{- end -}}
{{- with $nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $spread }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The env every container gets, then the component's extraEnv. */}}
{{- define "podmuster.env" -}}
- name: PYTHONDONTWRITEBYTECODE
  value: "1"
- name: PYTHONUNBUFFERED
  value: "1"
{{- with .extraEnv }}
{{ toYaml . }}
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
{{- end -}}

{{/* The container arguments of one component, its extraArgs last. Call with (list $
"scheduler" settings). */}}
{{- define "podmuster.args" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $settings := index . 2 -}}
- run
- {{ include "podmuster.kind" . }}
{{ include "podmuster.commonFlags" (list $root (include "podmuster.kind" .) $settings) }}
{{- if eq $component "podgrouper" }}
{{ include "podmuster.groupingFlags" $root }}
{{- else if eq (include "podmuster.kind" .) "scheduler" }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --config=/etc/podmuster/scheduler.yaml
- --node-pool-label={{ $root.Values.podgrouper.nodepoolLabelKey }}
{{- with (include "podmuster.poolOf" . | fromJson).name }}
- --node-pool={{ . }}
{{- end }}
{{ include "podmuster.cycleFlags" $root }}
{{- else if eq $component "binder" }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
{{- else if eq $component "controllers" }}
- --debounce={{ $root.Values.controllers.debounce }}
{{- else if eq $component "webhooks" }}
- --port={{ $root.Values.webhooks.port }}
- --scheduler-name={{ $root.Values.schedulerName }}
- --queue-label-key={{ $root.Values.queueLabelKey }}
- --gpu-fraction-runtime-class-name={{ $root.Values.webhooks.pods.gpuFractionRuntimeClassName }}
{{- if $root.Values.queueAdmission.allQueues }}
- --admission-gate-all-queues
{{- end }}
- --tls-cert-file=/etc/podmuster/tls/tls.crt
- --tls-key-file=/etc/podmuster/tls/tls.key
{{- else if eq $component "all" }}
{{ include "podmuster.groupingFlags" $root }}
- --config=/etc/podmuster/scheduler.yaml
{{ include "podmuster.cycleFlags" $root }}
- --binder-workers={{ $root.Values.binder.workers }}
{{ include "podmuster.reservationFlags" $root }}
- --debounce={{ $root.Values.controllers.debounce }}
{{- end }}
{{- with $settings.extraArgs }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The scheduling cycle's flags (scheduler, its node pools, and all). */}}
{{- define "podmuster.cycleFlags" -}}
{{- $s := .Values.scheduler -}}
- --schedule-period={{ $s.schedulePeriod }}
- --bind-backoff-limit={{ $s.bindBackoffLimit }}
{{- if $s.directBind }}
- --direct-bind
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

{{/* The defaults (values.yaml) of the per-component keys that mode: all does not use for
the podgrouper, scheduler, binder and controllers: its one Deployment takes them from
all:. Keep in step with values.yaml (mode all with the defaults fails otherwise). */}}
{{- define "podmuster.componentDefaults" -}}
podgrouper: {replicas: 1, resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}}
scheduler: {replicas: 1, resources: {requests: {cpu: 500m, memory: 512Mi}, limits: {memory: 4Gi}}}
binder: {replicas: 1, resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 512Mi}}}
controllers: {replicas: 1, resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}}
{{- end -}}

{{/* Refuse values that would install something that cannot work or silently drop a
setting (templates/checks.yaml). */}}
{{- define "podmuster.checks" -}}
{{- $v := .Values -}}
{{- if eq $v.mode "all" -}}
{{- if not $v.scheduler.defaultPool -}}
{{- fail "scheduler.defaultPool: false needs mode: components (mode: all runs one scheduler, the default pool's)" -}}
{{- end -}}
{{- $defaults := include "podmuster.componentDefaults" . | fromYaml -}}
{{- $empty := dict "nodeSelector" dict "tolerations" list "affinity" dict "topologySpreadConstraints" list "extraArgs" list "extraEnv" list "kubeApi" dict -}}
{{- range $component := list "podgrouper" "scheduler" "binder" "controllers" -}}
{{- $given := index $v $component -}}
{{- $want := merge (deepCopy (index $defaults $component)) $empty -}}
{{- range $key := list "replicas" "resources" "nodeSelector" "tolerations" "affinity" "topologySpreadConstraints" "extraArgs" "extraEnv" "kubeApi" -}}
{{- if ne (toJson (index $given $key)) (toJson (index $want $key)) -}}
{{- fail (printf "%s.%s is not used in mode: all, whose one Deployment takes all.%s; set all.%s instead, or use mode: components" $component $key $key $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- else if and (not $v.scheduler.defaultPool) (not $v.scheduler.nodePools) -}}
{{- fail "scheduler.defaultPool: false with no scheduler.nodePools runs no scheduler at all: add node pools, or keep defaultPool true" -}}
{{- end -}}
{{- if not $v.leaderElection.enabled -}}
{{- $replicas := dict -}}
{{- if eq $v.mode "all" -}}
{{- $_ := set $replicas "all" $v.all.replicas -}}
{{- else -}}
{{- range $component := list "podgrouper" "scheduler" "binder" "controllers" -}}
{{- $_ := set $replicas $component (index $v $component).replicas -}}
{{- end -}}
{{- range $v.scheduler.nodePools -}}
{{- $_ := set $replicas (printf "scheduler.nodePools[%s]" .name) (default $v.scheduler.replicas .replicas) -}}
{{- end -}}
{{- end -}}
{{- if $v.clusterAutoscaling.enabled -}}
{{- $_ := set $replicas "clusterAutoscaling" $v.clusterAutoscaling.replicas -}}
{{- end -}}
{{- range $name, $n := $replicas -}}
{{- if gt (int $n) 1 -}}
{{- fail (printf "%s.replicas: %d replicas need leaderElection.enabled: without a Lease every replica acts at once (two schedulers deciding, two binders binding)" $name (int $n)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.queueAdmission.allQueues (not (and $v.webhooks.enabled $v.queueAdmission.enabled)) -}}
{{- fail "queueAdmission.allQueues needs webhooks.enabled and queueAdmission.enabled: the gate is put on pods by the mutating webhook, so without it no pod is gated" -}}
{{- end -}}
{{- end -}}

{{/* What every Deployment gets beside itself: list (root, component). A
PodDisruptionBudget (podDisruptionBudget), a Service on its metrics port
(metrics.service; every component serves /metrics there, the webhooks and the dashboard
too) and a ServiceMonitor for it (metrics.serviceMonitor), the latter only when the API
server serves monitoring.coreos.com/v1 ServiceMonitors: without the Prometheus
Operator's CRDs one would fail the whole install (NOTES.txt says it was left out).
`helm template` knows no cluster: pass --api-versions monitoring.coreos.com/v1/ServiceMonitor. */}}
{{- define "podmuster.serviceMonitorServed" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}true{{ end -}}
{{- end -}}

{{- define "podmuster.componentExtras" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $name := include "podmuster.componentName" (list $root $component) -}}
{{- if $root.Values.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "podmuster.componentLabels" (list $root $component) | nindent 4 }}
spec:
  maxUnavailable: {{ $root.Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "podmuster.selectorLabels" (list $root $component) | nindent 6 }}
{{- end }}
{{- if $root.Values.metrics.service.enabled }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}-metrics
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "podmuster.componentLabels" (list $root $component) | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "podmuster.selectorLabels" (list $root $component) | nindent 4 }}
  ports:
    - name: metrics
      port: {{ $root.Values.metricsPort }}
      targetPort: metrics
      protocol: TCP
{{- end }}
{{- if and $root.Values.metrics.serviceMonitor.enabled (include "podmuster.serviceMonitorServed" $root) }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $name }}
  namespace: {{ default $root.Release.Namespace $root.Values.metrics.serviceMonitor.namespace }}
  labels:
    {{- include "podmuster.componentLabels" (list $root $component) | nindent 4 }}
    {{- with $root.Values.metrics.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  namespaceSelector:
    matchNames: [{{ $root.Release.Namespace }}]
  selector:
    matchLabels:
      {{- include "podmuster.selectorLabels" (list $root $component) | nindent 6 }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ $root.Values.metrics.serviceMonitor.interval }}
      {{- with $root.Values.metrics.serviceMonitor.scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
{{- end }}
{{- end -}}
