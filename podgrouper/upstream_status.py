"""The live edge of the upstream status mirror: read, decide, write ``status.conditions``.

Why this module exists: :mod:`podgrouper.upstream_conditions` decides an upstream
PodGroup's ``PodGroupInitiallyScheduled`` condition; this module reads what it needs
(the ``podgroups.scheduling.k8s.io`` object, the pods of its namespace, the
``podgroups.scheduling.run.ai`` PodGroup they joined) and patches the ``status``
subresource only when the decision changes something.  The podgrouper's handlers call
it on pod events of pods naming an upstream PodGroup and on KAI PodGroup events of
PodGroups derived from one.

It reads and patches (the ``status`` subresource) through
:class:`~kubeapi.protocol.KubeController`, so the unit tests use the in-memory fake.
A group that vanished, or one that no longer parses, is skipped: the mirror never
fails a reconcile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pydantic

from crds import podgroup as pg_api
from crds import upstream_workload as up
from crds.names import POD_GROUP_ANNOTATION
from integrations import fields, upstream_workload
from kubeapi.errors import ConflictError, NotFoundError
from kubeapi.objects import Object, timestamp
from kubeapi.protocol import KubeController
from podgrouper import upstream_conditions


async def _kai_by_name(kube: KubeController, namespace: str, name: str) -> pg_api.PodGroup | None:
    try:
        raw = await kube.get(pg_api.API_VERSION, pg_api.KIND, namespace, name)
        return pg_api.PodGroup.model_validate(raw)
    except (NotFoundError, pydantic.ValidationError):
        return None


async def _kai_podgroup(
    kube: KubeController, namespace: str, pods: list[Mapping[str, Any]]
) -> pg_api.PodGroup | None:
    names = {fields.annotations_of(p).get(POD_GROUP_ANNOTATION) for p in pods} - {None, ""}
    for name in sorted(str(n) for n in names):
        found = await _kai_by_name(kube, namespace, name)
        if found is not None:
            return found
    return None


async def mirror(
    kube: KubeController, namespace: str, name: str, *, now: Callable[[], str] = timestamp
) -> up.Condition | None:
    """Bring ``podgroups.scheduling.k8s.io namespace/name``'s condition up to date.

    Returns the condition written, or ``None`` when nothing was (already right, gone,
    unreadable, or lost a write race: the next event tries again).
    """
    try:
        raw = await kube.get(up.V1BETA1, up.PODGROUP_KIND, namespace, name)
        group = up.PodGroup.model_validate(raw)
    except (NotFoundError, pydantic.ValidationError):
        return None
    if _settled(group, up.CONDITION_INITIALLY_SCHEDULED):
        return None  # terminal: no need to read the pods on every pod event
    pods = await kube.list("v1", "Pod", namespace)
    mine = upstream_conditions.members(pods, name)
    kai = await _kai_podgroup(kube, namespace, mine)
    condition = upstream_conditions.initially_scheduled(group, kai, pods, now())
    if condition is None:
        return None
    try:
        await kube.patch(
            up.V1BETA1,
            up.PODGROUP_KIND,
            namespace,
            name,
            upstream_conditions.status_patch(group, condition),
            subresource="status",
        )
    except (NotFoundError, ConflictError):
        return None
    return condition


def _settled(group: up.PodGroup | up.CompositePodGroup, condition_type: str) -> bool:
    """Whether ``group`` already says True: upstream's terminal state, never written again."""
    condition = group.condition(condition_type)
    return condition is not None and condition.status == "True"


async def _list_or_empty(
    kube: KubeController, api_version: str, kind: str, namespace: str
) -> list[Object]:
    try:
        return await kube.list(api_version, kind, namespace)
    except NotFoundError:  # the API server does not serve the kind
        return []


def _parsed(
    raws: list[Object],
) -> list[up.PodGroup | up.CompositePodGroup]:
    result: list[up.PodGroup | up.CompositePodGroup] = []
    for raw in raws:
        model = up.PodGroup if raw.get("kind") == up.PODGROUP_KIND else up.CompositePodGroup
        try:
            result.append(model.model_validate(raw))
        except pydantic.ValidationError:
            continue
    return result


def _root(
    composite: up.CompositePodGroup, composites: Mapping[str, up.CompositePodGroup]
) -> up.CompositePodGroup:
    current = composite
    for _ in range(upstream_workload.MAX_TREE_DEPTH):
        parent = composites.get(current.spec.parent_composite_pod_group_name or "")
        if parent is None:
            break
        current = parent
    return current


async def mirror_composites(
    kube: KubeController, namespace: str, *, now: Callable[[], str] = timestamp
) -> int:
    """``CompositePodGroupInitiallyScheduled`` on the namespace's CompositePodGroups;
    how many were written."""
    composite_raws = await _list_or_empty(
        kube, up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, namespace
    )
    if not composite_raws:
        return 0
    pod_group_raws = await _list_or_empty(kube, up.V1BETA1, up.PODGROUP_KIND, namespace)
    groups = _parsed([*pod_group_raws, *composite_raws])
    composites = {g.metadata.name: g for g in groups if isinstance(g, up.CompositePodGroup)}
    condition_type = up.CONDITION_COMPOSITE_INITIALLY_SCHEDULED
    if all(_settled(c, condition_type) for c in composites.values()):
        return 0
    pods = await kube.list("v1", "Pod", namespace)
    kais: dict[str, pg_api.PodGroup | None] = {}
    written = 0
    for composite in composites.values():
        root = _root(composite, composites)
        kai_name = upstream_workload.kai_podgroup_name(root.to_manifest())
        if kai_name not in kais:
            kais[kai_name] = await _kai_by_name(kube, namespace, kai_name)
        condition = upstream_conditions.composite_initially_scheduled(
            composite, groups, kais[kai_name], pods, now()
        )
        if condition is None:
            continue
        patch = upstream_conditions.status_patch(composite, condition)
        try:
            await kube.patch(
                up.COMPOSITE_API_VERSION,
                up.COMPOSITE_KIND,
                namespace,
                composite.metadata.name,
                patch,
                subresource="status",
            )
        except (NotFoundError, ConflictError):
            continue
        written += 1
    return written


async def mirror_for_pod(kube: KubeController, pod: Mapping[str, Any]) -> up.Condition | None:
    """:func:`mirror` for the upstream PodGroup ``pod`` names (none: nothing), then
    :func:`mirror_composites` of its namespace."""
    name = upstream_workload.scheduling_group(pod)
    if not name:
        return None
    condition = await mirror(kube, fields.namespace(pod), name)
    await mirror_composites(kube, fields.namespace(pod))
    return condition


def derived_from_upstream(kai: Mapping[str, Any]) -> bool:
    """Whether a KAI PodGroup is owned by an upstream group (the adapter made it)."""
    return any(
        str(ref.get("apiVersion", "")).startswith(f"{up.GROUP}/")
        for ref in fields.owner_references(kai)
    )


async def mirror_for_kai_podgroup(kube: KubeController, kai: Mapping[str, Any]) -> int:
    """:func:`mirror` for every upstream PodGroup whose pods joined ``kai``; how many changed."""
    if not derived_from_upstream(kai):
        return 0
    namespace = fields.namespace(kai)
    pods = await kube.list("v1", "Pod", namespace)
    names = {
        upstream_workload.scheduling_group(p)
        for p in pods
        if fields.annotations_of(p).get(POD_GROUP_ANNOTATION) == fields.name(kai)
    } - {None}
    written = 0
    for name in sorted(str(n) for n in names):
        if await mirror(kube, namespace, name) is not None:
            written += 1
    return written + await mirror_composites(kube, namespace)
