"""Gang size and subgroups of a Ray cluster spec (docs/semantics.md §4.3, Ray subgroups).

Why this module exists: RayCluster, RayJob and RayService all gang on one cluster
spec: the head plus, per worker group, ``(minReplicas if > 0 else replicas) x
numOfHosts`` pods.  This module turns a cluster spec into that minimum and the
``headgroup`` + one-subgroup-per-worker-group tree; finding the spec is the job of
the adapter in :mod:`integrations.ray.grouper`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.names import TOPOLOGY_ANNOTATION
from integrations import base, fields, resolution

GROUP_LABEL = "ray.io/group"
HEAD_GROUP = "headgroup"


@dataclass(frozen=True, slots=True)
class WorkerGroup:
    name: str
    minimum: int
    topology: base.TopologyConstraint | None


def template_topology(
    obj: base.RawObject, template: Mapping[str, Any], path: str
) -> base.TopologyConstraint | None:
    """A subgroup constraint from a pod template's ``kai.scheduler/topology*`` annotations."""
    at = f"{path}.template."
    notes = fields.get_string_map(obj, "metadata.annotations", within=template, prefix=at)
    constraint = resolution.topology_of(notes)
    if not constraint.topology:
        if constraint.required_level or constraint.preferred_level:
            raise base.GroupingError(
                fields.describe(obj),
                f"{path}.template.metadata.annotations",
                f"a placement annotation needs {TOPOLOGY_ANNOTATION}",
            )
        return None
    return constraint


def _is_suspended(group: Mapping[str, Any], kai_bug: bool) -> bool:
    # KubeRay's field is ``suspend``; KAI reads a field ``suspended`` (docs/semantics.md §4.3).
    if kai_bug:
        return group.get("suspended") is True
    return group.get("suspend") is True or group.get("suspended") is True


def worker_groups(
    obj: base.RawObject, spec: Mapping[str, Any], spec_path: str, *, kai_bug: bool = False
) -> tuple[WorkerGroup, ...]:
    """The worker groups that count towards the gang."""
    result: list[WorkerGroup] = []
    groups = spec.get("workerGroupSpecs") or []
    if not isinstance(groups, list):
        raise base.GroupingError(
            fields.describe(obj), f"{spec_path}.workerGroupSpecs", "expected a list"
        )
    for index, group in enumerate(groups):
        path = f"{spec_path}.workerGroupSpecs[{index}]"
        if not isinstance(group, Mapping):
            raise base.GroupingError(fields.describe(obj), path, "expected an object")
        name = group.get("groupName")
        if not isinstance(name, str) or not name:
            raise base.GroupingError(fields.describe(obj), f"{path}.groupName", "is required")
        replicas = fields.get_int(obj, "replicas", 0, within=group, prefix=f"{path}.") or 0
        min_replicas = fields.get_int(obj, "minReplicas", 0, within=group, prefix=f"{path}.") or 0
        hosts = fields.get_int(obj, "numOfHosts", 1, within=group, prefix=f"{path}.", minimum=1)
        if min_replicas > replicas:
            raise base.GroupingError(
                fields.describe(obj),
                f"{path}.minReplicas",
                f"minReplicas {min_replicas} is greater than replicas {replicas}",
            )
        if (replicas == 0 and min_replicas == 0) or _is_suspended(group, kai_bug):
            continue
        template = group.get("template") or {}
        count = (
            f"{path}.minReplicas={min_replicas}" if min_replicas else f"{path}.replicas={replicas}"
        )
        read = f"{count}, {path}.numOfHosts={hosts}"
        result.append(
            WorkerGroup(
                name=name,
                minimum=fields.int32_total(obj, (min_replicas or replicas) * (hosts or 1), read),
                topology=template_topology(obj, template, path),
            )
        )
    return tuple(result)


def subgroups(
    obj: base.RawObject,
    spec: Mapping[str, Any],
    spec_path: str,
    pod: base.RawObject,
    *,
    kai_bug: bool = False,
) -> tuple[int, tuple[base.SubGroupSpec, ...]]:
    """The gang size and the ``headgroup`` + worker-group subgroups; ``pod`` is listed by label."""
    pod_group = fields.labels(pod).get(GROUP_LABEL)
    pod_names = (fields.name(pod),)
    head_template = fields.get_mapping(obj, f"{spec_path}.headGroupSpec.template")
    result = [
        base.SubGroupSpec(
            name=HEAD_GROUP,
            min_member=1,
            topology=template_topology(obj, head_template, f"{spec_path}.headGroupSpec"),
            pod_names=pod_names if pod_group == HEAD_GROUP else (),
        )
    ]
    total = 1
    for group in worker_groups(obj, spec, spec_path, kai_bug=kai_bug):
        total += group.minimum
        result.append(
            base.SubGroupSpec(
                name=group.name,
                min_member=group.minimum,
                topology=group.topology,
                pod_names=pod_names if pod_group == group.name else (),
            )
        )
    return fields.int32_total(obj, total, f"{spec_path}.workerGroupSpecs"), tuple(result)
