"""The GVK → grouper registry, built explicitly from :data:`BUILTIN`.

Why this module exists: which adapter handles a kind is data, not import side
effects.  :func:`build_registry` turns the ``BUILTIN`` table into a
:class:`GrouperRegistry` (duplicates rejected); lookup tries the exact GVK, then
the same group/kind with version ``*``, then the default grouper (KAI hub,
docs/semantics.md §4.1).  :meth:`GrouperRegistry.group` is the whole per-pod pipeline:
plugin, then the node-pool label copied from the pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Final

from integrations import (
    base,
    default,
    fields,
    grove,
    jobset,
    knative,
    lws,
    skipping,
    upstream_workload,
)
from integrations.k8s import cronjob, deployment, job, pod
from integrations.kubeflow import distributed, mpi, pytorch
from integrations.ray import cronjob as ray_cronjob
from integrations.ray import grouper as ray

GVK = base.GroupVersionKind
GrouperFactory = Callable[["GrouperRegistry"], base.WorkloadGrouper]


def _const(grouper: base.WorkloadGrouper) -> GrouperFactory:
    return lambda _registry: grouper


_RAY = ray.RayGrouper()
_SKIP: GrouperFactory = skipping.SkipTopOwnerGrouper

BUILTIN: Final[tuple[tuple[GVK, GrouperFactory], ...]] = (
    (GVK("", "v1", "Pod"), _const(pod.PodGrouper())),
    (GVK("apps", "v1", "Deployment"), _const(deployment.DeploymentGrouper())),
    (GVK("apps", "v1", "StatefulSet"), _const(default.DefaultGrouper())),
    (GVK("apps", "v1", "ReplicaSet"), _const(default.DefaultGrouper())),
    (GVK("batch", "v1", "Job"), _const(job.JobGrouper())),
    (GVK("batch", "v1", "CronJob"), _const(cronjob.CronJobGrouper())),
    (
        GVK("kubeflow.org", "v1", "TFJob"),
        _const(distributed.DistributedGrouper("tensorflow", "tfReplicaSpecs")),
    ),
    (GVK("kubeflow.org", "v1", "PyTorchJob"), _const(pytorch.PyTorchGrouper())),
    (
        GVK("kubeflow.org", "v1", "XGBoostJob"),
        _const(distributed.DistributedGrouper("xgboost", "xgbReplicaSpecs", ("Master", "Worker"))),
    ),
    (
        GVK("kubeflow.org", "v1", "JAXJob"),
        _const(distributed.DistributedGrouper("jax", "jaxReplicaSpecs", ("Worker",))),
    ),
    (GVK("kubeflow.org", "v1", "MPIJob"), _const(mpi.MPIGrouper())),
    (GVK("kubeflow.org", "v2beta1", "MPIJob"), _const(mpi.MPIGrouper())),
    (
        GVK("kubeflow.org", "v1beta1", "Notebook"),
        _const(default.DefaultGrouper("notebook", default.BUILD, top_owner_only=True)),
    ),
    (GVK("kubeflow.org", "v1alpha1", "ScheduledWorkflow"), _const(default.DefaultGrouper())),
    (GVK("trainer.kubeflow.org", "v1alpha1", "TrainJob"), _SKIP),
    (GVK("jobset.x-k8s.io", "v1alpha2", "JobSet"), _const(jobset.JobSetGrouper())),
    (
        GVK("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"),
        _const(lws.LeaderWorkerSetGrouper()),
    ),
    (GVK("ray.io", "*", "RayCluster"), _const(_RAY)),
    (GVK("ray.io", "*", "RayJob"), _const(_RAY)),
    (GVK("ray.io", "*", "RayService"), _const(_RAY)),
    (GVK("serving.knative.dev", "v1", "Service"), _const(knative.KnativeGrouper())),
    (GVK("argoproj.io", "v1alpha1", "Workflow"), _SKIP),
    (GVK("grove.io", "v1alpha1", "PodCliqueSet"), _const(grove.GroveGrouper())),
    (GVK("grove.io", "v1alpha1", "PodGangSet"), _const(grove.GroveGrouper())),
    (GVK("nvidia.com", "*", "DynamoGraphDeployment"), _SKIP),
)
"""KAI's table (docs/semantics.md §4.3) for the kinds podmuster supports."""

PODMUSTER_ONLY: Final[tuple[tuple[GVK, GrouperFactory], ...]] = (
    (
        GVK("kubeflow.org", "v1", "PaddleJob"),
        _const(distributed.DistributedGrouper("paddle", "paddleReplicaSpecs")),
    ),
    (
        GVK("kubeflow.org", "v1", "Notebook"),
        _const(default.DefaultGrouper("notebook", default.BUILD, top_owner_only=True)),
    ),
    (GVK("ray.io", "*", "RayCronJob"), _const(ray_cronjob.RayCronJobGrouper(rayjobs=_RAY))),
)
"""Kinds KAI leaves to the default grouper although they gang or default differently."""


UPSTREAM: Final = upstream_workload.UpstreamWorkloadGrouper()
"""Kubernetes' own PodGroups (``scheduling.k8s.io``): chosen by the pod, not a GVK."""


class DuplicateGrouperError(ValueError):
    """Two groupers were registered for one GVK."""


class GrouperRegistry:
    """GVK → grouper; exact, then version ``*``, then the default grouper."""

    def __init__(self, default_grouper: base.WorkloadGrouper | None = None) -> None:
        self._default = default_grouper or default.DefaultGrouper()
        self._table: dict[GVK, base.WorkloadGrouper] = {}

    @property
    def default(self) -> base.WorkloadGrouper:
        return self._default

    def register(self, gvk: GVK, grouper: base.WorkloadGrouper) -> None:
        if gvk in self._table:
            raise DuplicateGrouperError(f"a grouper is already registered for {gvk}")
        self._table[gvk] = grouper

    def lookup_exact(self, gvk: GVK) -> base.WorkloadGrouper | None:
        return self._table.get(gvk)

    def has_match(self, gvk: GVK) -> bool:
        return gvk in self._table or dataclasses.replace(gvk, version="*") in self._table

    def lookup(self, gvk: GVK) -> base.WorkloadGrouper:
        return (
            self._table.get(gvk)
            or self._table.get(dataclasses.replace(gvk, version="*"))
            or self._default
        )

    def grouper_for(self, ctx: base.GroupingContext) -> base.WorkloadGrouper:
        """The grouper of ``ctx.pod``: a pod naming an upstream ``podgroups.scheduling.k8s.io``
        in ``spec.schedulingGroup`` is grouped by it, whatever owns the pod; other pods by
        their top owner's grouper."""
        if upstream_workload.scheduling_group(ctx.pod):
            return UPSTREAM
        return self.lookup(GVK.of(ctx.top_owner))

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        """Group ``ctx.pod``: :meth:`grouper_for`, then the node-pool label copy."""
        spec = self.grouper_for(ctx).group(ctx)
        key = ctx.settings.nodepool_label_key
        pool = fields.labels(ctx.pod).get(key)
        if pool is not None and key not in spec.labels:
            spec = dataclasses.replace(spec, labels={**spec.labels, key: str(pool)})
        return spec


def build_registry(
    entries: Iterable[tuple[GVK, GrouperFactory]] | None = None,
    *,
    settings: base.GroupingSettings | None = None,
) -> GrouperRegistry:
    """A registry from ``entries`` (default: ``BUILTIN`` plus the podmuster-only kinds).

    With ``settings.reproduce_kai_bugs`` the podmuster-only kinds are left out.
    """
    if entries is None:
        kai_only = settings is not None and settings.reproduce_kai_bugs
        entries = BUILTIN if kai_only else (*BUILTIN, *PODMUSTER_ONLY)
    registry = GrouperRegistry()
    for gvk, factory in entries:
        registry.register(gvk, factory(registry))
    return registry
