"""Framework adapters: pure functions from workloads to KAI-compatible PodGroups.

Layers inside the package (no Kubernetes client, no kopf, no I/O):

* ``base`` — values (``PodGroupSpec``, ``GroupingContext``) and protocols
  (``WorkloadGrouper``, ``ObjectLookup``); ``fields`` and ``resolution`` — shared rules;
* one module per framework family (``k8s``, ``kubeflow``, ``ray``, ``jobset``, ``lws``,
  ``knative``, ``argo``, ``trainer``, ``spark``), composed from ``default``;
* ``registry`` — the GVK table (``BUILTIN``) and ``build_registry``;
* ``templates``/``synthesis`` — the pods controllers would create;
* ``objects``/``grouping`` — offline grouping (``group_workloads``);
* ``updates`` — sticky fields on update and the pod patch, for the podgrouper.
"""

from integrations.base import (
    DefaultPriority,
    GroupingContext,
    GroupingError,
    GroupingSettings,
    GroupVersionKind,
    NeedsRelatedObjects,
    ObjectLookup,
    ObjectQuery,
    OwnerReference,
    PodGroupSpec,
    SubGroupSpec,
    TopologyConstraint,
    WorkloadGrouper,
)
from integrations.grouping import GroupingResult, ObjectError, PodAssignment, group_workloads
from integrations.registry import BUILTIN, GrouperRegistry, build_registry
from integrations.synthesis import synthesize
from integrations.templates import normalized

__all__ = [
    "BUILTIN",
    "DefaultPriority",
    "GroupVersionKind",
    "GrouperRegistry",
    "GroupingContext",
    "GroupingError",
    "GroupingResult",
    "GroupingSettings",
    "NeedsRelatedObjects",
    "ObjectError",
    "ObjectLookup",
    "ObjectQuery",
    "OwnerReference",
    "PodAssignment",
    "PodGroupSpec",
    "SubGroupSpec",
    "TopologyConstraint",
    "WorkloadGrouper",
    "build_registry",
    "group_workloads",
    "normalized",
    "synthesize",
]
