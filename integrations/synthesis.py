"""Pod synthesis: the objects a workload's controllers would create, pods included.

Why this module exists: ``podmuster group`` and the simulator start from workload
manifests alone.  :func:`synthesize` returns what the real controllers would create
for one workload — intermediate owners (ReplicaSets, Jobs, RayClusters, Revisions,
StatefulSets, ...) and pods with the names, labels, ownerReferences, resources and
``schedulerName`` of their templates — deterministically.  Each kind's knowledge
lives in a hook next to its adapter; this module is the table of hooks and the
recursion between them (a CronJob's hook expands the Job it creates, and so on).
Kinds without a hook get one pod from ``spec.template`` when it is a pod template.
"""

from __future__ import annotations

import functools
from typing import Any

from integrations import (
    argo,
    base,
    fields,
    grove_pods,
    jobset,
    knative,
    lws,
    spark,
    templates,
    trainer,
)
from integrations.k8s import controllers
from integrations.kubeflow import replicas
from integrations.ray import pods as ray_pods

GVK = base.GroupVersionKind

_STATIC_HOOKS: tuple[tuple[GVK, templates.Hook], ...] = (
    (GVK("batch", "*", "Job"), controllers.job_pods),
    (GVK("batch", "*", "CronJob"), controllers.cronjob_children),
    (GVK("apps", "*", "Deployment"), controllers.deployment_children),
    (GVK("apps", "*", "ReplicaSet"), controllers.replicaset_pods),
    (GVK("apps", "*", "StatefulSet"), controllers.statefulset_pods),
    *((GVK("kubeflow.org", "v1", kind), replicas.training_pods) for kind in replicas.SPEC_FIELDS),
    (GVK("kubeflow.org", "v2beta1", "MPIJob"), replicas.mpi_v2_children),
    (GVK("kubeflow.org", "*", "Notebook"), replicas.notebook_children),
    (GVK("ray.io", "*", "RayCluster"), ray_pods.cluster_pods),
    (GVK("jobset.x-k8s.io", "*", "JobSet"), jobset.synthesize_jobs),
    (GVK("leaderworkerset.x-k8s.io", "*", "LeaderWorkerSet"), lws.synthesize_groups),
    (GVK("serving.knative.dev", "*", "Service"), knative.synthesize_revision),
    (GVK("sparkoperator.k8s.io", "*", "SparkApplication"), spark.synthesize_application),
)


_BOUND_KINDS = frozenset(
    {
        ("trainer.kubeflow.org", "TrainJob"),
        ("ray.io", "RayJob"),
        ("ray.io", "RayService"),
        ("ray.io", "RayCronJob"),
        ("argoproj.io", "Workflow"),
        ("grove.io", "PodCliqueSet"),
        ("grove.io", "PodGangSet"),
        ("nvidia.com", "DynamoGraphDeployment"),
    }
)
"""Kinds whose hooks are bound per call (to a lookup or a warning sink) in :func:`hooks`."""


def _from_template(obj: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Any other kind: ``spec.replicas`` (default 1) pods from a ``spec.template`` pod template."""
    template = fields.get(obj, "spec.template")
    containers = fields.get(obj, "spec.template.spec.containers")
    if not isinstance(template, dict) or not isinstance(containers, list):
        return []
    templates.checked_template(obj, template, "spec.template")
    count = templates.count(obj, fields.get(obj, "spec.replicas"), "spec.replicas")
    uid = fields.uid(obj)
    return [
        templates.make_pod(template, templates.generated_name(fields.name(obj), f"{uid}/{i}"), obj)
        for i in range(count)
    ]


def hooks(
    lookup: base.ObjectLookup, warn: templates.Warn = templates.ignore_warning
) -> dict[GVK, templates.Hook]:
    """The hook table; hooks that need related objects are bound to ``lookup``, and
    hooks that may have to leave something out report it to ``warn``."""
    table = dict(_STATIC_HOOKS)
    table[GVK("trainer.kubeflow.org", "*", "TrainJob")] = trainer.make_hook(lookup, warn)
    ray_children = functools.partial(ray_pods.owned_cluster_children, warn=warn)
    table[GVK("ray.io", "*", "RayJob")] = ray_children
    table[GVK("ray.io", "*", "RayService")] = ray_children
    table[GVK("ray.io", "*", "RayCronJob")] = functools.partial(
        ray_pods.cronjob_children, warn=warn
    )
    table[GVK("argoproj.io", "*", "Workflow")] = functools.partial(
        argo.synthesize_workflow, warn=warn
    )
    grove_hook = functools.partial(grove_pods.synthesize_podcliqueset, warn=warn)
    table[GVK("grove.io", "*", "PodCliqueSet")] = grove_hook
    table[GVK("grove.io", "*", "PodGangSet")] = grove_hook
    table[GVK("nvidia.com", "*", "DynamoGraphDeployment")] = functools.partial(
        grove_pods.synthesize_dynamo, warn=warn
    )
    return table


def has_hook(obj: base.RawObject) -> bool:
    gvk = GVK.of(obj)
    table = dict(_STATIC_HOOKS)
    return (
        gvk in table
        or GVK(gvk.group, "*", gvk.kind) in table
        or (gvk.group, gvk.kind) in _BOUND_KINDS
    )


def synthesize(
    obj: base.RawObject,
    lookup: base.ObjectLookup | None = None,
    warn: templates.Warn = templates.ignore_warning,
) -> list[dict[str, Any]]:
    """Everything the controllers of ``obj`` would create, in creation order.

    ``obj`` should carry a namespace, name and uid (see :func:`templates.normalized`).
    Raises :class:`~integrations.base.GroupingError` on malformed counts, on more pods
    in all than :data:`templates.MAX_SYNTHESIZED`, or a missing related object (e.g. a
    TrainJob's runtime); what is synthesized only in part (a decision made at run
    time, a field not understood) goes to ``warn``.
    """
    table = hooks(lookup or base.EmptyLookup(), warn)

    def expand(child: base.RawObject) -> list[dict[str, Any]]:
        gvk = GVK.of(child)
        hook = table.get(gvk) or table.get(GVK(gvk.group, "*", gvk.kind)) or _from_template
        return hook(child, expand)

    with templates.pod_budget(obj):
        return expand(obj)
