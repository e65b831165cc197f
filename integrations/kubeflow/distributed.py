"""The shared rule of Kubeflow distributed jobs: one PodGroup, gang = all replicas.

Why this module exists: TFJob, PyTorchJob, XGBoostJob, JAXJob, PaddleJob and MPIJob
differ only in the name of their replica-spec map and which replica types are
required; the gang size is ``runPolicy.schedulingPolicy.minAvailable`` when set,
else the sum of every replica spec's ``replicas`` (missing or 0 is an error).
Framework adapters wrap :class:`DistributedGrouper` (docs/semantics.md §4.3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from integrations import base, default, fields

MIN_AVAILABLE = "spec.runPolicy.schedulingPolicy.minAvailable"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


def replica_specs(job: base.RawObject, specs_field: str) -> Mapping[str, Any]:
    return fields.get_mapping(job, f"spec.{specs_field}")


def replicas_of(job: base.RawObject, specs_field: str, replica_type: str) -> int | None:
    """``replicas`` of one replica type (``None`` when the type or the field is absent)."""
    spec = replica_specs(job, specs_field).get(replica_type)
    if not isinstance(spec, Mapping):
        return None
    return fields.get_int(
        job, "replicas", within=spec, prefix=f"spec.{specs_field}.{replica_type}."
    )


def sum_of_replicas(job: base.RawObject, specs_field: str, required: tuple[str, ...]) -> int:
    """The sum of ``replicas`` over every replica spec; each must be set and > 0."""
    specs = replica_specs(job, specs_field)
    for replica_type in required:
        if replica_type not in specs:
            raise base.GroupingError(
                fields.describe(job), f"spec.{specs_field}.{replica_type}", "is required"
            )
    counts: dict[str, int] = {}
    for replica_type in specs:
        replicas = replicas_of(job, specs_field, replica_type)
        path = f"spec.{specs_field}.{replica_type}.replicas"
        if not replicas:
            raise base.GroupingError(fields.describe(job), path, "must be set and greater than 0")
        counts[path] = replicas
    return fields.int32_total(job, sum(counts.values()), fields.counts_read(counts))


def min_available(job: base.RawObject, specs_field: str, required: tuple[str, ...]) -> int:
    """``schedulingPolicy.minAvailable`` when present, else the sum of replicas."""
    explicit = fields.get_int(job, MIN_AVAILABLE)
    if explicit is not None:
        return explicit
    return sum_of_replicas(job, specs_field, required)


@dataclass(frozen=True, slots=True)
class DistributedGrouper:
    """One PodGroup per job with the Kubeflow gang size."""

    name: str
    specs_field: str
    required: tuple[str, ...] = ()

    def min_member(self, ctx: base.GroupingContext) -> int:
        return min_available(ctx.top_owner, self.specs_field, self.required)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        return default.build(ctx, subject=ctx.top_owner, min_member=self.min_member(ctx))
