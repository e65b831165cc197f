"""The ``PodGroupInitiallyScheduled`` condition of an upstream PodGroup, decided purely.

Why this module exists: Kubernetes expects the scheduler of a ``podgroups.scheduling.k8s.io``
group to say in ``status.conditions`` whether the group was scheduled (upstream's
``PodGroupStatus`` doc comment).  podmuster schedules the KAI PodGroup
(``podgroups.scheduling.run.ai``) derived from it; this module turns what the KAI side
shows into upstream's condition:

* ``True``, reason ``Scheduled``, once at least the gang's ``minCount`` (basic: one) of
  the group's pods are bound to nodes — and then never changed again (upstream: a
  terminal state, even if pods are later evicted);
* ``False``, reason ``Unschedulable``, while the KAI PodGroup carries an
  ``UnschedulableOnNodePool`` scheduling condition (its message copied);
* otherwise no opinion (nothing is written).

A CompositePodGroup gets ``CompositePodGroupInitiallyScheduled`` the same way, counting
its children that are scheduled (a PodGroup as above, a CompositePodGroup recursively)
against its ``minGroupCount`` (basic: one).

:mod:`podgrouper.upstream_status` reads the objects and writes the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crds import podgroup as pg_api
from crds import upstream_workload as up
from integrations import fields, upstream_workload

MESSAGE_MAX = 32768
"""metav1.Condition ``message`` limit."""


def members(pods: Iterable[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    """The live pods that name upstream PodGroup ``name`` (terminating ones left out)."""
    return [
        p
        for p in pods
        if upstream_workload.scheduling_group(p) == name
        and not fields.metadata(p).get("deletionTimestamp")
    ]


def unschedulable_message(kai: pg_api.PodGroup | None) -> str | None:
    """The message of the KAI PodGroup's unschedulable condition, or ``None``."""
    if kai is None or kai.status is None:
        return None
    for condition in kai.status.scheduling_conditions or ():
        if (
            condition.type == pg_api.CONDITION_UNSCHEDULABLE_ON_NODE_POOL
            and condition.status != "False"
        ):
            reasons = [r.message for r in condition.reasons or () if r.message]
            return "; ".join(reasons) or condition.message or "the scheduler could not place it"
    return None


def _decide(
    group: up.PodGroup | up.CompositePodGroup,
    type_: str,
    scheduled: str | None,
    kai: pg_api.PodGroup | None,
    now: str,
) -> up.Condition | None:
    """``True`` with message ``scheduled`` when it is set, else ``False`` while ``kai`` is
    unschedulable; ``None`` when that is what ``group`` already says (or True already)."""
    existing = group.condition(type_)
    if existing is not None and existing.status == "True":
        return None
    if scheduled is not None:
        kai_name = kai.metadata.name if kai else "(unknown)"
        wanted = ("True", up.REASON_SCHEDULED, f"{scheduled}; {up.KAI_PODGROUP} {kai_name}")
    else:
        message = unschedulable_message(kai)
        if message is None:
            return None
        wanted = ("False", up.REASON_UNSCHEDULABLE, message[:MESSAGE_MAX])
    if existing is not None and (existing.status, existing.reason, existing.message) == wanted:
        return None
    since = (
        existing.last_transition_time
        if existing is not None and existing.status == wanted[0]
        else now
    )
    return up.Condition(
        type=type_,
        status=wanted[0],  # type: ignore[arg-type]
        reason=wanted[1],
        message=wanted[2],
        observed_generation=group.metadata.generation,
        last_transition_time=since,
    )


def pods_scheduled(group: up.PodGroup, pods: Sequence[Mapping[str, Any]]) -> str | None:
    """Why ``group`` counts as scheduled (its gang minimum of pods bound), or ``None``."""
    mine = members(pods, group.metadata.name)
    bound = sum(1 for p in mine if fields.get(p, "spec.nodeName"))
    gang = group.spec.scheduling_policy.gang
    return _enough(bound, len(mine), gang.min_count if gang else 1, "pods scheduled by podmuster")


def _enough(done: int, total: int, needed: int, what: str) -> str | None:
    """``"<done> of <total> <what> (minimum <needed>)"`` when ``done`` reaches ``needed``."""
    return f"{done} of {total} {what} (minimum {needed})" if done >= needed else None


def initially_scheduled(
    group: up.PodGroup,
    kai: pg_api.PodGroup | None,
    pods: Sequence[Mapping[str, Any]],
    now: str,
) -> up.Condition | None:
    """The ``PodGroupInitiallyScheduled`` to write on ``group``, or ``None`` when the stored
    one is right."""
    scheduled = pods_scheduled(group, pods)
    return _decide(group, up.CONDITION_INITIALLY_SCHEDULED, scheduled, kai, now)


def children_scheduled(
    composite: up.CompositePodGroup,
    groups: Sequence[up.PodGroup | up.CompositePodGroup],
    pods: Sequence[Mapping[str, Any]],
    depth: int = 0,
) -> str | None:
    """Why ``composite`` counts as scheduled (``minGroupCount`` children, basic: one,
    scheduled, recursively), or ``None``."""
    name = composite.metadata.name
    children = [g for g in groups if g.spec.parent_composite_pod_group_name == name]
    done = 0
    for child in children:
        if isinstance(child, up.PodGroup):
            done += pods_scheduled(child, pods) is not None
        elif depth < upstream_workload.MAX_TREE_DEPTH:  # deeper (or a cycle): not counted
            done += children_scheduled(child, groups, pods, depth + 1) is not None
    gang = composite.spec.scheduling_policy.gang
    needed = gang.min_group_count if gang else 1
    return _enough(done, len(children), needed, "child groups scheduled")


def composite_initially_scheduled(
    composite: up.CompositePodGroup,
    groups: Sequence[up.PodGroup | up.CompositePodGroup],
    kai: pg_api.PodGroup | None,
    pods: Sequence[Mapping[str, Any]],
    now: str,
) -> up.Condition | None:
    """The ``CompositePodGroupInitiallyScheduled`` to write on ``composite`` (``groups``:
    the namespace's PodGroups and CompositePodGroups), or ``None``."""
    scheduled = children_scheduled(composite, groups, pods)
    return _decide(composite, up.CONDITION_COMPOSITE_INITIALLY_SCHEDULED, scheduled, kai, now)


def status_patch(
    group: up.PodGroup | up.CompositePodGroup, condition: up.Condition
) -> dict[str, Any]:
    """A merge patch of ``status.conditions``: ``condition`` replacing its type, others kept."""
    others = [
        c.to_manifest()
        for c in (group.status.conditions if group.status else None) or ()
        if c.type != condition.type
    ]
    return {
        "metadata": {"resourceVersion": group.metadata.resource_version},
        "status": {"conditions": [*others, condition.to_manifest()]},
    }
