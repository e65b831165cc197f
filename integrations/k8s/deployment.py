"""apps/v1 Deployment: one PodGroup per pod, inference priority by default.

Why this module exists: Deployment replicas serve independently, so each pod is its
own gang (``pg-<pod>-<podUID>``, owner = pod) while labels, annotations, queue and
topology come from the Deployment; priority is resolved on the Deployment only with
``inference`` as the fallback (docs/semantics.md §4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, fields


@dataclass(frozen=True, slots=True)
class DeploymentGrouper:
    name: str = "deployment"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        return default.build(
            ctx,
            subject=ctx.top_owner,
            owners=(ctx.top_owner,),
            fallback_priority=default.INFERENCE,
            name=f"pg-{fields.name(ctx.pod)}-{fields.uid(ctx.pod)}",
            owner=ctx.pod,
        )
