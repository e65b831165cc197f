"""What the podgrouper makes of each demo workload: PodGroups and patched pods.

Why: the demo shows grouping and scheduling together, with nothing built by
hand. The framework adapters (``integrations.group_workloads``) turn a
workload manifest into the PodGroups, and the pods its operator would create;
this module then does the live podgrouper's remaining work: the pod patch
(``pod-group-name`` annotation, ``kai.scheduler/subgroup-name`` label, as
``integrations.updates.pod_patch`` writes them) and, when the autoscaler
changes a workload, the update of the existing PodGroup with its sticky
fields. It also stamps creation times and ``Pending`` as the API server would.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.names import POD_GROUP_ANNOTATION, SUBGROUP_LABEL
from integrations.grouping import group_workloads
from integrations.updates import merged_podgroup
from podmuster.demo.cluster import stamp


class GroupingFailed(RuntimeError):
    """An adapter could not group a shipped workload: the demo's data or an adapter is wrong."""


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """The facts of one PodGroup a reader needs: name, gang size, subgroups, priority."""

    namespace: str
    name: str
    min_member: int
    subgroups: tuple[tuple[str, int], ...]
    priority: str
    queue: str
    pods: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "minMember": self.min_member,
            "subGroups": {name: size for name, size in self.subgroups},
            "priorityClassName": self.priority,
            "queue": self.queue,
            "pods": self.pods,
        }


@dataclass(frozen=True, slots=True)
class Grouped:
    """One grouping pass over a workload: its PodGroups (new or updated) and its new pods."""

    pod_groups: tuple[dict[str, Any], ...]
    new_pods: tuple[dict[str, Any], ...]
    views: tuple[PodGroupView, ...]


def key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def _view(pod_group: Mapping[str, Any], pods: int) -> PodGroupView:
    spec = pod_group["spec"]
    return PodGroupView(
        namespace=pod_group["metadata"]["namespace"],
        name=pod_group["metadata"]["name"],
        min_member=int(spec.get("minMember", 1)),
        subgroups=tuple(
            (s["name"], int(s["minMember"]))
            for s in spec.get("subGroups", ())
            if "minMember" in s  # pod sets; a parent counts children (minSubGroup)
        ),
        priority=str(spec.get("priorityClassName", "")),
        queue=str(spec.get("queue", "")),
        pods=pods,
    )


def group(
    manifest: Mapping[str, Any],
    minute: int,
    existing_groups: Mapping[str, dict[str, Any]],
    existing_pods: Mapping[str, dict[str, Any]],
) -> Grouped:
    """Group ``manifest`` as the podgrouper would at ``minute``.

    PodGroups already in ``existing_groups`` (by ``namespace/name``) are updated the
    way the podgrouper updates them; pods already in ``existing_pods`` are left as
    they are (running pods keep running), the others are returned patched.
    """
    result = group_workloads([manifest])
    if result.errors:
        raise GroupingFailed("; ".join(f"{e.object}: {e.message}" for e in result.errors))
    pods = {key(p): copy.deepcopy(p) for p in result.pods}
    members: dict[str, int] = {}
    for assignment in result.assignments:
        pod = pods[assignment.pod]
        meta = pod["metadata"]
        meta.setdefault("annotations", {})[POD_GROUP_ANNOTATION] = assignment.pod_group
        if assignment.sub_group is not None:
            meta.setdefault("labels", {})[SUBGROUP_LABEL] = assignment.sub_group
        meta["creationTimestamp"] = stamp(minute)
        pod["status"] = {"phase": "Pending"}
        group_key = f"{meta['namespace']}/{assignment.pod_group}"
        members[group_key] = members.get(group_key, 0) + 1
    pod_groups = []
    for desired in result.pod_groups:
        old = existing_groups.get(key(desired))
        body = merged_podgroup(old, desired)
        created = old["metadata"]["creationTimestamp"] if old else stamp(minute)
        body["metadata"]["creationTimestamp"] = created
        pod_groups.append(body)
    return Grouped(
        pod_groups=tuple(pod_groups),
        new_pods=tuple(p for k, p in pods.items() if k not in existing_pods),
        views=tuple(_view(pg, members.get(key(pg), 0)) for pg in pod_groups),
    )
