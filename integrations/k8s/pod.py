"""Bare pods (and pods owned by pods): one PodGroup per top-owner pod, Spark aware.

Why this module exists: a pod without a controller is its own workload; the only
twist is Spark, whose driver owns its executors and whose PodGroup is named by the
application selector so the driver and every executor share it.
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, spark


@dataclass(frozen=True, slots=True)
class PodGrouper:
    """``pg-<pod>-<uid>``, or the raw ``spark-app-selector`` for Spark pods."""

    name: str = "podjob"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        return default.build(
            ctx,
            subject=ctx.top_owner,
            owners=ctx.owners,
            name=spark.spark_group_name(ctx.pod),
        )
