"""batch/v1 CronJob: one PodGroup per run, grouped on the pod's owning Job.

Why this module exists: a CronJob's runs are separate Jobs; KAI groups on the Job
(``pg-<job>-<jobUID>``, owner = Job) and takes labels, annotations, queue, priority
and preemptibility from it (i.e. from ``jobTemplate.metadata``), never from the
CronJob itself (docs/semantics.md §4.3).

podmuster difference: the run's Job's ``kai.scheduler/batch-min-member`` (from
``jobTemplate.metadata.annotations``) sets minMember as for any Job; KAI's CronJob
grouper ignores it (``reproduce_kai_bugs`` restores that).
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, fields
from integrations.k8s import job as job_grouping


@dataclass(frozen=True, slots=True)
class CronJobGrouper:
    name: str = "cronjob"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        job = next((o for o in ctx.owners if o.get("kind") == "Job"), None)
        if job is None:
            raise base.GroupingError(
                fields.describe(ctx.pod),
                "metadata.ownerReferences",
                f"a pod of {fields.describe(ctx.top_owner)} must be owned by a Job",
            )
        if ctx.settings.reproduce_kai_bugs:
            return default.build(ctx, subject=job)
        return default.build(ctx, subject=job, min_member=job_grouping.min_member(job))
