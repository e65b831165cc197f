"""MPIJob (kubeflow.org v1 and v2beta1): Kubeflow gang minus a launcher not yet created.

Why this module exists: with ``launcherCreationPolicy: WaitForWorkersReady`` the MPI
operator creates the launcher only after the workers run, so counting it in the gang
would deadlock; while no non-terminating launcher pod exists (labels
``training.kubeflow.org/job-name`` and ``job-role=launcher``), the Launcher replicas
are subtracted — from ``minAvailable`` too (docs/semantics.md §4.3).
"""

from __future__ import annotations

from dataclasses import dataclass

from integrations import base, default, fields
from integrations.kubeflow import distributed

SPECS = "mpiReplicaSpecs"
WAIT_FOR_WORKERS = "WaitForWorkersReady"


def launcher_query(ctx: base.GroupingContext, job: base.RawObject) -> base.ObjectQuery:
    ns = fields.namespace(ctx.pod) or fields.namespace(job)
    selector = {
        distributed.JOB_NAME_LABEL: fields.name(job),
        distributed.JOB_ROLE_LABEL: "launcher",
    }
    return base.ObjectQuery("v1", "Pod", ns, labels=selector)


def launcher_exists(ctx: base.GroupingContext, job: base.RawObject) -> bool:
    query = launcher_query(ctx, job)
    pods = ctx.lookup.list(query.api_version, query.kind, query.namespace, query.labels)
    return any(fields.metadata(p).get("deletionTimestamp") is None for p in pods)


_INNER = distributed.DistributedGrouper("mpi", SPECS, ("Launcher", "Worker"))


@dataclass(frozen=True, slots=True)
class MPIGrouper:
    name: str = "mpi"
    inner: distributed.DistributedGrouper = _INNER

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The launcher pods, needed only under ``WaitForWorkersReady``."""
        if fields.get(ctx.top_owner, "spec.launcherCreationPolicy") != WAIT_FOR_WORKERS:
            return ()
        return (launcher_query(ctx, ctx.top_owner),)

    def min_member(self, ctx: base.GroupingContext) -> int:
        job = ctx.top_owner
        total = self.inner.min_member(ctx)
        if fields.get(job, "spec.launcherCreationPolicy") == WAIT_FOR_WORKERS and not (
            launcher_exists(ctx, job)
        ):
            total -= distributed.replicas_of(job, SPECS, "Launcher") or 0
        return max(total, 0)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        return default.build(ctx, subject=ctx.top_owner, min_member=self.min_member(ctx))
