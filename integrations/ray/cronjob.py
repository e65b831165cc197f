"""RayCronJob: each scheduled run is its own RayJob gang, grouped as a RayJob.

Why this module exists: KubeRay's RayCronJob (``spec.schedule``, ``spec.jobTemplate``,
a RayJob spec) creates a RayJob ``<cron>-<x>`` per tick, owned by the RayCronJob and
labelled ``ray.io/cronjob-name``.  KAI has no grouper for the kind, so its default
grouper groups on the top owner: every run of every tick in one PodGroup
``pg-<cron>-<uid>`` with minMember 1 and no subgroups — neither a gang nor one group
per run.  podmuster skips the RayCronJob as it skips an Argo Workflow: the RayJob below
is grouped by the Ray adapter (its cluster's gang and subgroups), with the RayCronJob's
labels and annotations (the queue, a priority) filling what the RayJob lacks, since
KubeRay copies none of them onto it.  ``reproduce_kai_bugs`` leaves the kind out of the
registry, giving KAI's default grouping.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from integrations import base, default, skipping
from integrations.ray import grouper as ray

CRONJOB_NAME_LABEL = "ray.io/cronjob-name"


def _inner(ctx: base.GroupingContext) -> base.GroupingContext | None:
    """The context with the RayJob below the RayCronJob as top owner (None: no RayJob)."""
    below = ctx.owners[:-1] if ctx.owners else ()
    if not below or below[-1].get("kind") != "RayJob":
        return None
    rayjob = skipping.fill_gaps(below[-1], ctx.top_owner)
    return dataclasses.replace(ctx, top_owner=rayjob, owners=(*below[:-1], rayjob))


@dataclass(frozen=True, slots=True)
class RayCronJobGrouper:
    name: str = "ray-cronjob"
    rayjobs: ray.RayGrouper = dataclasses.field(default_factory=ray.RayGrouper)

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        inner = _inner(ctx)
        return self.rayjobs.related_objects(inner) if inner is not None else ()

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        inner = _inner(ctx)
        if inner is None:  # not a pod of a scheduled RayJob: KubeRay makes none such
            return default.build(ctx, subject=ctx.top_owner)
        return self.rayjobs.group(inner)
