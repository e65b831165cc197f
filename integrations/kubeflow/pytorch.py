"""PyTorchJob: Kubeflow gang with elastic minimum, ``master``/``worker`` subgroups, segments.

Why this module exists: PyTorch adds two things to the shared Kubeflow rule.  The
gang size is the replica sum, overridden by ``elasticPolicy.minReplicas``, overridden
by ``schedulingPolicy.minAvailable``; and pods are split into a ``master`` and a
``worker`` pod set, the workers optionally cut into topology segments of
``kai.scheduler/segment-size`` pods (docs/semantics.md §4.3, PyTorchJob subgroups).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from crds.errors import shown
from crds.names import SEGMENT_SIZE_ANNOTATION
from integrations import base, default, fields, resolution
from integrations.kubeflow import distributed

SPECS = "pytorchReplicaSpecs"
WORKER_TEMPLATE_ANNOTATIONS = f"spec.{SPECS}.Worker.template.metadata.annotations"


def min_member(job: base.RawObject) -> int:
    explicit = fields.get_int(job, distributed.MIN_AVAILABLE)
    if explicit is not None:
        return explicit
    total = distributed.sum_of_replicas(job, SPECS, ())
    elastic = fields.get_int(job, "spec.elasticPolicy.minReplicas")
    return elastic if elastic is not None else total


def _segment_size(ctx: base.GroupingContext) -> int | None:
    """From the pod's annotation, else the Worker template's; must be a positive integer."""
    job = ctx.top_owner
    template = fields.get_string_map(job, WORKER_TEMPLATE_ANNOTATIONS)
    for obj, source, path in (
        (ctx.pod, fields.annotations_of(ctx.pod), "metadata.annotations"),
        (job, template, WORKER_TEMPLATE_ANNOTATIONS),
    ):
        if SEGMENT_SIZE_ANNOTATION in source:
            return fields.as_int(
                source[SEGMENT_SIZE_ANNOTATION],
                obj=obj,
                path=f"{path}[{SEGMENT_SIZE_ANNOTATION}]",
                minimum=1,
                text=True,
            )
    return None


def _worker_segments(
    ctx: base.GroupingContext, size: int, worker_min: int
) -> tuple[base.SubGroupSpec, ...]:
    job = ctx.top_owner
    workers = distributed.replicas_of(job, SPECS, "Worker") or 1
    read = f"spec.{SPECS}.Worker.replicas={workers}, segment size={size}"
    count = fields.subgroup_count(job, math.ceil(workers / size), read)
    topology = resolution.segment_topology(
        ctx.pod, fields.get_string_map(job, WORKER_TEMPLATE_ANNOTATIONS), job
    )
    pod_segment = None
    if _replica_type(ctx.pod) == "worker":
        index = fields.labels(ctx.pod).get(distributed.REPLICA_INDEX_LABEL)
        parsed = fields.parse_int(index)
        if parsed is None:
            raise base.GroupingError(
                fields.describe(ctx.pod),
                f"metadata.labels[{distributed.REPLICA_INDEX_LABEL}]",
                f"expected an integer replica index, got {shown(index)}",
            )
        pod_segment = parsed // size
    # the parent counts its segments (KAI v0.17); segments past the first worker_min
    # workers are elastic: minMember 0
    segments = [base.SubGroupSpec(name="worker", min_sub_group=count)]
    mandatory = math.ceil(worker_min / size)
    for i in range(count):
        full = size if i < count - 1 else workers - size * (count - 1)
        segments.append(
            base.SubGroupSpec(
                name=f"worker-{i}",
                min_member=full if i < mandatory else 0,
                parent="worker",
                topology=topology,
                pod_names=(fields.name(ctx.pod),) if pod_segment == i else (),
            )
        )
    return tuple(segments)


def _replica_type(pod: base.RawObject) -> str:
    return str(fields.labels(pod).get(distributed.REPLICA_TYPE_LABEL, "")).lower()


def subgroups(ctx: base.GroupingContext, total: int) -> tuple[base.SubGroupSpec, ...]:
    job = ctx.top_owner
    specs = distributed.replica_specs(job, SPECS)
    pod = (fields.name(ctx.pod),)
    kind = _replica_type(ctx.pod)
    result: list[base.SubGroupSpec] = []
    masters = distributed.replicas_of(job, SPECS, "Master") or 0
    if "Master" in specs and masters > 0:
        result.append(
            base.SubGroupSpec("master", masters, pod_names=pod if kind == "master" else ())
        )
    if "Worker" in specs:
        worker_min = max(0, total - masters)
        size = _segment_size(ctx)
        if size is None:
            result.append(
                base.SubGroupSpec("worker", worker_min, pod_names=pod if kind == "worker" else ())
            )
        else:
            result.extend(_worker_segments(ctx, size, worker_min))
    return tuple(result)


@dataclass(frozen=True, slots=True)
class PyTorchGrouper:
    name: str = "pytorch"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        total = min_member(ctx.top_owner)
        spec = default.build(ctx, subject=ctx.top_owner, min_member=total)
        return dataclasses.replace(spec, subgroups=subgroups(ctx, total))
