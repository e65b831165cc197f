"""LeaderWorkerSet: one PodGroup per group replica, ``leader``/``workers`` or segments.

Why this module exists: each LWS group (a leader plus ``size - 1`` workers) is an
independent gang, ``pg-<lws>-<uid>-group-<i>``.  Under ``startupPolicy:
LeaderReady`` the workers are created only once the leader runs, so the gang is 1
while the leader is unscheduled.  Large groups may be cut into topology segments of
S pods (docs/semantics.md §4.3, LeaderWorkerSet subgroups).

podmuster difference (KAI bug): KAI validates S against the current gang R, so an
unscheduled LeaderReady leader (R = 1) with segmentation can never be grouped.  We
validate S against ``size`` and skip segmentation while R = 1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from crds.names import SEGMENT_SIZE_ANNOTATION
from integrations import base, default, fields, resolution, templates

GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
SIZE_ANNOTATION = "leaderworkerset.sigs.k8s.io/size"
LEADER_CREATED = "LeaderCreated"
LEADER_READY = "LeaderReady"
LEADER_WORKER = "LeaderWorker"
LEADER_EXCLUDED = "LeaderExcluded"
_TEMPLATE = "spec.leaderWorkerTemplate"
_WORKER_ANNOTATIONS = f"{_TEMPLATE}.workerTemplate.metadata.annotations"


def gang_size(ctx: base.GroupingContext, size: int) -> int:
    lws = ctx.top_owner
    policy = fields.get(lws, "spec.startupPolicy") or LEADER_CREATED
    if policy == LEADER_CREATED:
        return size
    if policy != LEADER_READY:
        raise base.GroupingError(
            fields.describe(lws), "spec.startupPolicy", f"unknown startup policy {policy!r}"
        )
    is_leader = fields.labels(ctx.pod).get(WORKER_INDEX) == "0"
    if is_leader and not fields.get(ctx.pod, "spec.nodeName"):
        return 1
    return fields.parse_int(fields.annotations_of(ctx.pod).get(SIZE_ANNOTATION)) or size


def segment_size(lws: base.RawObject) -> tuple[int, str] | None:
    """The segment size and the field it was read from (``subGroupPolicy.subGroupSize``,
    else the segment-size annotation of the LWS, else of its worker template)."""
    policy_path = f"{_TEMPLATE}.subGroupPolicy.subGroupSize"
    policy_size = fields.get_int(lws, policy_path)
    if policy_size is not None:
        return policy_size, policy_path
    template = fields.get_string_map(lws, _WORKER_ANNOTATIONS)
    for source, path in (
        (fields.annotations_of(lws), "metadata.annotations"),
        (template, _WORKER_ANNOTATIONS),
    ):
        if SEGMENT_SIZE_ANNOTATION in source:
            field = f"{path}[{SEGMENT_SIZE_ANNOTATION}]"
            value = source[SEGMENT_SIZE_ANNOTATION]
            return fields.as_int(value, obj=lws, path=field, minimum=None, text=True), field
    return None


def _segment_of(worker: int, gang: int, size: int, excluded: bool) -> int:
    if worker == 0:
        return 0
    if excluded or (gang - 1) % size == 0:
        return (worker - 1) // size
    return worker // size


def _segment_members(lws: base.RawObject, gang: int, size: int, excluded: bool) -> dict[int, int]:
    """The pods of each segment, as :func:`_segment_of` places workers ``0 .. gang - 1``
    (the leader not among them when ``excluded``), from the counts alone: a group of
    two billion pods is not walked pod by pod, and its segments are capped."""
    shifted = excluded or (gang - 1) % size == 0
    workers = gang - 1 if shifted else gang  # those cut into segments of ``size``
    read = f"{_TEMPLATE}.size={gang}, segment size={size}"
    fields.subgroup_count(lws, -(-workers // size), read)
    members = dict.fromkeys(range(workers // size), size)
    if workers % size:
        members[workers // size] = workers % size
    if shifted and not excluded:
        members[0] = members.get(0, 0) + 1  # the leader, in the first segment
    return members


def segmented(
    ctx: base.GroupingContext, gang: int, size: int, worker: int | None
) -> tuple[base.SubGroupSpec, ...]:
    lws = ctx.top_owner
    policy = fields.get(lws, f"{_TEMPLATE}.subGroupPolicy.subGroupPolicyType") or LEADER_WORKER
    if policy not in (LEADER_WORKER, LEADER_EXCLUDED):
        raise base.GroupingError(
            fields.describe(lws),
            f"{_TEMPLATE}.subGroupPolicy.subGroupPolicyType",
            f"unknown policy {policy!r}",
        )
    excluded = policy == LEADER_EXCLUDED
    if excluded and (gang - 1) % size != 0:
        raise base.GroupingError(
            fields.describe(lws),
            f"{_TEMPLATE}.subGroupPolicy.subGroupSize",
            f"LeaderExcluded needs size-1 ({gang - 1}) divisible by {size}",
        )
    members = _segment_members(lws, gang, size, excluded)
    topology = resolution.segment_topology(
        ctx.pod, fields.get_string_map(lws, _WORKER_ANNOTATIONS), lws
    )
    pod = (fields.name(ctx.pod),)
    mine = None if worker is None else _segment_of(worker, gang, size, excluded)
    result: list[base.SubGroupSpec] = []
    if excluded:
        result.append(base.SubGroupSpec("leader", 1, pod_names=pod if worker == 0 else ()))
    for segment, count in sorted(members.items()):
        is_mine = mine == segment and (worker != 0 or not excluded)
        if segment == 0 and not excluded:
            # a parent counts children (KAI v0.17): leader and workers
            result.append(base.SubGroupSpec("segment-0", min_sub_group=2, topology=topology))
            result.append(
                base.SubGroupSpec("leader", 1, "segment-0", pod_names=pod if worker == 0 else ())
            )
            result.append(
                base.SubGroupSpec(
                    "workers",
                    count - 1,
                    "segment-0",
                    pod_names=pod if is_mine and worker else (),
                )
            )
            continue
        result.append(
            base.SubGroupSpec(
                f"segment-{segment}", count, topology=topology, pod_names=pod if is_mine else ()
            )
        )
    return tuple(result)


def subgroups(ctx: base.GroupingContext, size: int, gang: int) -> tuple[base.SubGroupSpec, ...]:
    lws = ctx.top_owner
    worker = fields.parse_int(fields.labels(ctx.pod).get(WORKER_INDEX))
    read = segment_size(lws)
    compat = ctx.settings.reproduce_kai_bugs
    if read is not None and (compat or gang > 1):
        segment, field = read
        bound = gang if compat else size
        if not 1 < segment <= bound:
            raise base.GroupingError(
                fields.describe(lws), field, f"must satisfy 1 < {segment} <= {bound}"
            )
        return segmented(ctx, gang, segment, worker)
    pod = (fields.name(ctx.pod),)
    result = [base.SubGroupSpec("leader", 1, pod_names=pod if worker == 0 else ())]
    if gang > 1:
        result.append(base.SubGroupSpec("workers", gang - 1, pod_names=pod if worker else ()))
    return tuple(result)


@dataclass(frozen=True, slots=True)
class LeaderWorkerSetGrouper:
    name: str = "lws"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        lws = ctx.top_owner
        size = fields.get_int(lws, f"{_TEMPLATE}.size", 1, minimum=1) or 1
        gang = gang_size(ctx, size)
        name = f"pg-{fields.name(lws)}-{fields.uid(lws)}"
        group_index = fields.parse_int(fields.labels(ctx.pod).get(GROUP_INDEX))
        if group_index is not None:
            name = f"{name}-group-{group_index}"
        spec = default.build(ctx, subject=lws, name=name, min_member=gang)
        return dataclasses.replace(spec, subgroups=subgroups(ctx, size, gang))


NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LEADER_NAME = "leaderworkerset.sigs.k8s.io/leader-name"


def synthesize_groups(lws: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Leader StatefulSet ``<lws>`` with leaders ``<lws>-<i>``; per leader a worker
    StatefulSet ``<lws>-<i>`` (owned by the leader pod) with workers ``<lws>-<i>-<j>``."""
    name = fields.name(lws)
    replicas = templates.count(lws, fields.get(lws, "spec.replicas"), "spec.replicas")
    size = templates.count(lws, fields.get(lws, f"{_TEMPLATE}.size"), f"{_TEMPLATE}.size")
    templates.expect_pods(replicas * max(size, 1))  # a leader each, size - 1 workers
    worker_at, leader_at = f"{_TEMPLATE}.workerTemplate", f"{_TEMPLATE}.leaderTemplate"
    worker_template = templates.checked_template(lws, fields.get(lws, worker_at), worker_at)
    leader_template = (
        templates.checked_template(lws, fields.get(lws, leader_at), leader_at) or worker_template
    )
    leader_sts = templates.make_object(
        "apps/v1", "StatefulSet", name, lws, labels={NAME_LABEL: name}, spec={"replicas": replicas}
    )
    result: list[dict[str, Any]] = [leader_sts]
    for group in range(replicas):
        key = templates.suffix(f"{fields.uid(lws)}/{group}", 40)
        labels = {NAME_LABEL: name, GROUP_INDEX: str(group), GROUP_KEY: key}
        notes = {SIZE_ANNOTATION: str(size)}
        leader = templates.make_pod(
            leader_template,
            f"{name}-{group}",
            leader_sts,
            labels={**labels, WORKER_INDEX: "0"},
            annotations=notes,
        )
        result.append(leader)
        if size <= 1:
            continue
        worker_sts = templates.make_object(
            "apps/v1", "StatefulSet", f"{name}-{group}", leader, labels=labels
        )
        result.append(worker_sts)
        for worker in range(1, size):
            result.append(
                templates.make_pod(
                    worker_template,
                    f"{name}-{group}-{worker}",
                    worker_sts,
                    labels={**labels, WORKER_INDEX: str(worker)},
                    annotations={**notes, LEADER_NAME: f"{name}-{group}"},
                )
            )
    return result
