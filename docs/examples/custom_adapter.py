"""An example user adapter: gang-schedule a custom ``TrainingRun`` kind.

Register it in your package's ``pyproject.toml``::

    [project.entry-points."podmuster.adapters"]
    trainingrun = "custom_adapter:adapters"

``podmuster run podgrouper`` (and ``podmuster group``) load it at start-up; every pod
whose top owner is an ``example.com/*`` ``TrainingRun`` then joins one PodGroup whose
``minMember`` is the run's ``spec.workers`` plus its driver.
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, fields


@dataclass(frozen=True, slots=True)
class TrainingRunGrouper:
    """One PodGroup per TrainingRun: the driver and every worker start together."""

    name: str = "trainingrun"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        run = ctx.top_owner
        workers = fields.get_int(run, "spec.workers", default=0) or 0  # errors name the field
        return default.build(ctx, subject=run, owners=ctx.owners, min_member=workers + 1)


def adapters() -> list[tuple[str, str, str, base.WorkloadGrouper]]:
    """The entry point: (group, kind, version or ``*``, grouper) per adapter."""
    return [("example.com", "TrainingRun", "*", TrainingRunGrouper())]
