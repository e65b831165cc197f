{{/*
Cluster-wide RBAC rules of each component: exactly the calls it makes, nothing more.
Derived from the code (kubeapi calls in podgrouper/, scheduler/live, scheduler/binder,
scheduler/controllers); tests/chart/test_rbac.py pins them. Leases are granted
separately, in the release namespace only (rbac.yaml).
*/}}

{{- define "podmuster.rules.podgrouper" -}}
# kopf watches pods and keeps its progress in pod annotations; the podgrouper labels and
# annotates pods with their PodGroup; the MPI adapter lists a job's pods.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, patch]
# The owner walk reads metadata; the top two owners are read in full.
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups]
  verbs: [get, create, update]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [list]
# Kubernetes' own groups (podgroups.scheduling.k8s.io, not KAI's): the upstream adapter
# reads a pod's group, its parents and Workload; the status mirror watches the KAI
# PodGroups made from them and writes the upstream PodGroup's conditions; a topology key
# is looked up among the Topologies.
- apiGroups: [scheduling.k8s.io]
  resources: [workloads, podgroups, compositepodgroups]
  verbs: [get, list]
# ... and watches the upstream PodGroups, to group the pods that named one before it existed.
- apiGroups: [scheduling.k8s.io]
  resources: [podgroups]
  verbs: [watch]
- apiGroups: [scheduling.k8s.io]
  resources: [podgroups/status, compositepodgroups/status]
  verbs: [update, patch]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups]
  verbs: [list, watch]
- apiGroups: [kai.scheduler]
  resources: [topologies]
  verbs: [list]
# kopf follows the cluster's resource definitions to notice new kinds (read-only); without
# it, kopf retries the list at every start and then logs that it cannot watch.
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [list, watch]
- apiGroups: [apps]
  resources: [deployments, replicasets, statefulsets]
  verbs: [get]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: [get]
- apiGroups: [kubeflow.org]
  resources: [tfjobs, pytorchjobs, xgboostjobs, jaxjobs, mpijobs, paddlejobs, notebooks, scheduledworkflows]
  verbs: [get]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs]
  verbs: [get]
- apiGroups: [jobset.x-k8s.io]
  resources: [jobsets]
  verbs: [get]
- apiGroups: [leaderworkerset.x-k8s.io]
  resources: [leaderworkersets]
  verbs: [get]
- apiGroups: [ray.io]
  resources: [rayclusters, rayjobs, rayservices, raycronjobs]
  verbs: [get]
- apiGroups: [serving.knative.dev]
  resources: [services, configurations, revisions]
  verbs: [get]
- apiGroups: [argoproj.io]
  resources: [workflows]
  verbs: [get]
# Grove: the owners, and the PodGang a pod's label names (its gang is read from it).
- apiGroups: [grove.io]
  resources: [podcliquesets, podgangsets, podcliques, podcliquescalinggroups]
  verbs: [get]
- apiGroups: [scheduler.grove.io]
  resources: [podgangs]
  verbs: [get]
- apiGroups: [nvidia.com]
  resources: [dynamographdeployments]
  verbs: [get]
{{- with .Values.podgrouper.namespaces }}
# kopf follows the namespaces matching --namespace patterns.
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, watch]
{{- end }}
{{- range .Values.podgrouper.extraOwnerRules }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: [get]
{{- end }}
{{- end -}}

{{- define "podmuster.rules.scheduler" -}}
# The informers: everything a scheduling cycle reads.
- apiGroups: [""]
  resources: [nodes]
  verbs: [list, watch]
# Pods are also deleted to evict them (reclaim, preempt, consolidation), and patched to
# remove the queue admission gate (kai.scheduler/queue-admission) once their queue has room.
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, delete, patch]
# The PodScheduled condition with the reasons a pod is pending.
- apiGroups: [""]
  resources: [pods/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups, queues]
  verbs: [list, watch]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups/status]
  verbs: [patch]
# The last-start and stale-gang annotations of a PodGroup (a merge patch of metadata).
- apiGroups: [scheduling.run.ai]
  resources: [podgroups]
  verbs: [patch]
# The scheduler creates a BindRequest per placed pod and deletes stale ones.
- apiGroups: [scheduling.run.ai]
  resources: [bindrequests]
  verbs: [list, watch, create, delete]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [list, watch]
- apiGroups: [kai.scheduler]
  resources: [topologies]
  verbs: [list, watch]
# NUMA-aware placement (plugins.numa.enabled): each node's NUMA zones.
- apiGroups: [topology.node.k8s.io]
  resources: [noderesourcetopologies]
  verbs: [list, watch]
# Volume binding: where a pod's claims can be served.
- apiGroups: [""]
  resources: [persistentvolumeclaims, persistentvolumes]
  verbs: [list, watch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [list, watch]
# Dynamic Resource Allocation: claims, the devices published for nodes, device classes.
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims, resourceslices, deviceclasses]
  verbs: [get, list, watch]
# Inter-pod affinity: namespace selectors match Namespaces by their labels.
- apiGroups: [""]
  resources: [namespaces]
  verbs: [list, watch]
{{- if .Values.scheduler.directBind }}
# --direct-bind: a pod that needs nothing of the binder is bound by the scheduler itself.
- apiGroups: [""]
  resources: [pods/binding]
  verbs: [create]
{{- end }}
{{- end -}}

{{- define "podmuster.rules.binder" -}}
- apiGroups: [scheduling.run.ai]
  resources: [bindrequests]
  verbs: [get, list, watch]
- apiGroups: [scheduling.run.ai]
  resources: [bindrequests/status]
  verbs: [patch]
# Pods and Nodes are cached from watches; a missing one is read from the server.
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods/binding]
  verbs: [create]
# Fractional GPUs: a sharing pod is labelled with its GPU group before its bind; the
# sync deletes reservation pods of emptied groups and sharing pods whose reservation
# pod is gone (in any namespace). Reservation pods are created only in their own
# namespace (a Role, resource-reservation.yaml).
- apiGroups: [""]
  resources: [pods]
  verbs: [patch, delete]
# A pod whose bind failed gets KAI's PodBound=False condition (BindingError), turned True
# if a later attempt binds it.
- apiGroups: [""]
  resources: [pods/status]
  verbs: [patch]
# A sharing pod's ConfigMap (NVIDIA_VISIBLE_DEVICES, GPU_PORTION), in the pod's namespace.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, create, update]
# A Warning Event on a sharing pod deleted because its reservation pod is gone.
- apiGroups: [""]
  resources: [events]
  verbs: [create]
# Volume binding before the pod's: a chosen PV gets the claim's claimRef (update), a
# provisioned claim the selected-node annotation (patch); classes are listed.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, patch]
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, update]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [list]
# DRA before the pod's binding: the claim's allocation and reservation (status).
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims]
  verbs: [get, list, watch]
- apiGroups: [resource.k8s.io]
  resources: [resourceclaims/status]
  verbs: [update, patch]
{{- end -}}

{{- define "podmuster.rules.controllers" -}}
# Nodes: their GPU memory sizes the GPUs of gpu-memory pods in a PodGroup's status.
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [list, watch]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [list, watch]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups, queues]
  verbs: [list, watch]
- apiGroups: [scheduling.run.ai]
  resources: [podgroups/status, queues/status]
  verbs: [patch]
{{- end -}}

{{- define "podmuster.rules.webhooks" -}}
# A Queue's parent must exist and its parent chain must not loop; /gate-pod reads which
# queues are under the admission gate.
- apiGroups: [scheduling.run.ai]
  resources: [queues]
  verbs: [list]
{{- end -}}

{{- define "podmuster.rules.all" -}}
{{ include "podmuster.rules.podgrouper" . }}
{{ include "podmuster.rules.scheduler" . }}
{{ include "podmuster.rules.binder" . }}
{{ include "podmuster.rules.controllers" . }}
{{- end -}}
