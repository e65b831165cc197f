"""batch/v1 Job: one PodGroup per pod, owned by the Job (docs/semantics.md §4.3).

Why this module exists: Job pods are independent units (each completion is its own
gang of one), so the PodGroup is named ``pg-<pod>-<jobUID>``.  For a Job with
``parallelism`` <= 1 an existing legacy PodGroup ``pg-<job>-<jobUID>`` (written by
older podgroupers) is reused instead, found through the lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, default, fields


def legacy_name(job: base.RawObject) -> str:
    return f"pg-{fields.name(job)}-{fields.uid(job)}"


def job_pod_group_name(ctx: base.GroupingContext, job: base.RawObject) -> str:
    """``pg-<pod>-<jobUID>``, or the legacy per-Job name when such a PodGroup exists."""
    parallelism = fields.get_int(job, "spec.parallelism", minimum=None)
    if parallelism is None or parallelism <= 1:
        ns = fields.namespace(ctx.pod) or fields.namespace(job)
        existing = ctx.lookup.get(PODGROUP_API_VERSION, PODGROUP_KIND, ns, legacy_name(job))
        if existing is not None:
            return legacy_name(job)
    return f"pg-{fields.name(ctx.pod)}-{fields.uid(job)}"


@dataclass(frozen=True, slots=True)
class JobGrouper:
    name: str = "job"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The legacy per-Job PodGroup."""
        job = ctx.top_owner
        ns = fields.namespace(ctx.pod) or fields.namespace(job)
        return (base.ObjectQuery(PODGROUP_API_VERSION, PODGROUP_KIND, ns, legacy_name(job)),)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        job = ctx.top_owner
        return default.build(ctx, subject=job, name=job_pod_group_name(ctx, job))
