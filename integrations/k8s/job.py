"""batch/v1 Job: one PodGroup per Job, its minMember from ``kai.scheduler/batch-min-member``.

Why this module exists: since KAI v0.15 a Job's pods share one PodGroup
``pg-<job>-<jobUID>`` owned by the Job, whose ``minMember`` is 1 unless the Job's
``kai.scheduler/batch-min-member`` annotation asks for a gang (docs/semantics.md §4.3).
A pod whose per-pod PodGroup ``pg-<pod>-<jobUID>`` (written by older podgroupers)
still exists keeps it, with minMember 1, so running pods are not moved to a new
PodGroup during an upgrade; the lookup finds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from crds.names import BATCH_MIN_MEMBER_ANNOTATION
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, default, fields


def job_name(job: base.RawObject) -> str:
    return f"pg-{fields.name(job)}-{fields.uid(job)}"


def legacy_name(ctx: base.GroupingContext, job: base.RawObject) -> str:
    """The per-pod name older podgroupers gave: ``pg-<pod>-<jobUID>``."""
    return f"pg-{fields.name(ctx.pod)}-{fields.uid(job)}"


def min_member(job: base.RawObject) -> int:
    """The Job's ``kai.scheduler/batch-min-member`` (>= 1), else 1."""
    value = fields.annotations_of(job).get(BATCH_MIN_MEMBER_ANNOTATION)
    if value is None:
        return 1
    field = f"metadata.annotations[{BATCH_MIN_MEMBER_ANNOTATION}]"
    return fields.as_int(value, obj=job, path=field, minimum=1, text=True)


@dataclass(frozen=True, slots=True)
class JobGrouper:
    name: str = "job"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The legacy per-pod PodGroup."""
        job = ctx.top_owner
        ns = fields.namespace(ctx.pod) or fields.namespace(job)
        return (base.ObjectQuery(PODGROUP_API_VERSION, PODGROUP_KIND, ns, legacy_name(ctx, job)),)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        job = ctx.top_owner
        legacy = legacy_name(ctx, job)
        ns = fields.namespace(ctx.pod) or fields.namespace(job)
        if legacy != job_name(job) and ctx.lookup.get(
            PODGROUP_API_VERSION, PODGROUP_KIND, ns, legacy
        ):
            return default.build(ctx, subject=job, name=legacy)
        return default.build(ctx, subject=job, name=job_name(job), min_member=min_member(job))
