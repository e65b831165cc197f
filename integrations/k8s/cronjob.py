"""batch/v1 CronJob: one PodGroup per run, grouped on the pod's owning Job.

Why this module exists: a CronJob's runs are separate Jobs; KAI groups on the Job
(``pg-<job>-<jobUID>``, owner = Job) and takes labels, annotations, queue, priority
and preemptibility from it (i.e. from ``jobTemplate.metadata``), never from the
CronJob itself (docs/semantics.md §4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, fields


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
        return default.build(ctx, subject=job)
