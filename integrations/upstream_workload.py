"""Pods in a Kubernetes PodGroup (``spec.schedulingGroup``): the KAI PodGroup derived from it.

Why this module exists: Kubernetes 1.37 lets a pod name its scheduling group itself
(``spec.schedulingGroup.podGroupName``, a ``podgroups.scheduling.k8s.io`` object made
from a ``Workload`` template, possibly under ``compositepodgroups.scheduling.k8s.io``).
Such a pod is grouped by that object, whatever owns the pod: this adapter turns the
upstream group (or the tree under its root CompositePodGroup) into one KAI PodGroup
(``podgroups.scheduling.run.ai``), so the engine, the simulator and ``podmuster
group``/``schedule`` work on it unchanged.  Mapping (docs/integrations.md):

==========================================  ===============================================
upstream                                    KAI PodGroup
==========================================  ===============================================
root group (PodGroup or CompositePodGroup)  one PodGroup ``pg-<root>-<root uid>`` owned by it
PodGroup ``gang.minCount``                  ``minMember`` (of the PodGroup or its leaf)
PodGroup ``basic``                          ``minMember: 0`` (no gang)
CompositePodGroup under the root            a subgroup; PodGroups are leaf subgroups
CompositePodGroup ``gang.minGroupCount``    ``minSubGroup``; ``basic``: ``minSubGroup: 1``
``priorityClassName``                       ``priorityClassName`` (root first)
``schedulingConstraints.topology[0].key``   ``topologyConstraint.requiredTopologyLevel``
``kai.scheduler/queue`` label               ``queue`` (PodGroup, composites, Workload)
==========================================  ===============================================

Bad input raises :class:`~integrations.base.GroupingError` naming the object by its
resource (``podgroups.scheduling.k8s.io ns/name``) and the field.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pydantic

from crds import topology as topology_api
from crds import upstream_workload as up
from crds.meta import KaiModel
from crds.names import TOPOLOGY_ANNOTATION
from integrations import base, default, fields, resolution

SCHEDULING_GROUP_FIELD = "spec.schedulingGroup.podGroupName"
TOPOLOGY_FIELD = "spec.schedulingConstraints.topology[0].key"
MAX_TREE_DEPTH = 4
"""Upstream's ``WorkloadMaxTreeDepth``: deeper parent chains are an error."""
LABEL_VALUE_MAX = 63

ModelT = TypeVar("ModelT", bound=KaiModel)


def scheduling_group(pod: base.RawObject) -> str | None:
    """The name of the upstream PodGroup ``pod`` joins, or ``None``."""
    value = fields.get(pod, SCHEDULING_GROUP_FIELD)
    return str(value) if value else None


def kai_podgroup_name(root: base.RawObject) -> str:
    """The KAI PodGroup made for the upstream tree rooted at ``root``: ``pg-<name>-<uid>``."""
    return f"pg-{fields.name(root)}-{fields.uid(root)}"


UPSTREAM_KINDS = frozenset({up.WORKLOAD_KIND, up.PODGROUP_KIND, up.COMPOSITE_KIND})


def is_upstream(obj: base.RawObject) -> bool:
    """Whether ``obj`` is a ``scheduling.k8s.io`` Workload, PodGroup or CompositePodGroup."""
    gvk = base.GroupVersionKind.of(obj)
    return gvk.group == up.GROUP and gvk.kind in UPSTREAM_KINDS


def root_of(pod: base.RawObject, lookup: base.ObjectLookup) -> base.RawObject | None:
    """The root of the upstream tree ``pod`` joins (its PodGroup or the top
    CompositePodGroup above it), or ``None`` when a group on the way is missing."""
    ns = fields.namespace(pod)
    current = lookup.get(up.V1BETA1, up.PODGROUP_KIND, ns, scheduling_group(pod) or "")
    for _ in range(MAX_TREE_DEPTH + 1):
        parent = fields.get(current, "spec.parentCompositePodGroupName") if current else None
        if not parent:
            return current
        current = lookup.get(up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, ns, str(parent))
    return None


def where(resource: str, namespace: str, name: str) -> str:
    """``podgroups.scheduling.k8s.io ns/name``: how messages name an upstream object."""
    return f"{resource} {namespace}/{name}"


def _parse(model: type[ModelT], raw: base.RawObject, name: str) -> ModelT:
    try:
        return model.model_validate(dict(raw))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"])
        resource = {up.PodGroup: up.PODGROUP, up.CompositePodGroup: up.COMPOSITE_PODGROUP}.get(
            model, up.WORKLOAD
        )
        raise base.GroupingError(
            where(resource, fields.namespace(raw), name), path, str(first["msg"])
        ) from exc


@dataclass(frozen=True, slots=True)
class _Node:
    """One upstream group: its raw object, model and resource name."""

    raw: base.RawObject
    model: up.PodGroup | up.CompositePodGroup

    @property
    def name(self) -> str:
        return self.model.metadata.name

    @property
    def resource(self) -> str:
        return up.PODGROUP if isinstance(self.model, up.PodGroup) else up.COMPOSITE_PODGROUP

    @property
    def parent(self) -> str | None:
        return self.model.spec.parent_composite_pod_group_name

    def describe(self) -> str:
        return where(self.resource, self.model.metadata.namespace or "", self.name)


class _Tree:
    """The upstream objects one pod's grouping reads, found through the lookup."""

    def __init__(self, ctx: base.GroupingContext) -> None:
        self.ctx = ctx
        self.namespace = fields.namespace(ctx.pod)

    def pod_group(self, name: str, *, required_by: str, field_: str) -> _Node:
        raw = self.ctx.lookup.get(up.V1BETA1, up.PODGROUP_KIND, self.namespace, name)
        if raw is None:
            missing = where(up.PODGROUP, self.namespace, name)
            raise base.GroupingError(required_by, field_, f"{missing} not found")
        return _Node(raw, _parse(up.PodGroup, raw, name))

    def composite(self, name: str, *, required_by: str) -> _Node:
        raw = self.ctx.lookup.get(up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, self.namespace, name)
        if raw is None:
            missing = where(up.COMPOSITE_PODGROUP, self.namespace, name)
            raise base.GroupingError(
                required_by, "spec.parentCompositePodGroupName", f"{missing} not found"
            )
        return _Node(raw, _parse(up.CompositePodGroup, raw, name))

    def parents(self, node: _Node) -> list[_Node]:
        """The CompositePodGroups above ``node``, bottom→top (the last is the root)."""
        chain: list[_Node] = []
        current = node
        while current.parent:
            if len(chain) >= MAX_TREE_DEPTH:
                raise base.GroupingError(
                    current.describe(),
                    "spec.parentCompositePodGroupName",
                    f"the group tree is deeper than {MAX_TREE_DEPTH} levels (or has a cycle)",
                )
            current = self.composite(current.parent, required_by=current.describe())
            chain.append(current)
        return chain

    def workload(self, node: _Node) -> tuple[base.RawObject, up.Workload] | None:
        ref = node.model.spec.workload_ref
        if ref is None:
            return None
        raw = self.ctx.lookup.get(up.V1BETA1, up.WORKLOAD_KIND, self.namespace, ref.workload_name)
        if raw is None:
            missing = where(up.WORKLOAD, self.namespace, ref.workload_name)
            raise base.GroupingError(
                node.describe(), "spec.workloadRef.workloadName", f"{missing} not found"
            )
        workload = _parse(up.Workload, raw, ref.workload_name)
        if ref.template_name not in workload.template_names():
            raise base.GroupingError(
                node.describe(),
                "spec.workloadRef.templateName",
                f"{where(up.WORKLOAD, self.namespace, ref.workload_name)} has no template"
                f" {ref.template_name!r}",
            )
        return raw, workload

    def children(self) -> dict[str, list[tuple[str, base.RawObject]]]:
        """Every upstream group of the namespace with a parent, by parent name, as
        (resource, raw object): parsed only when the tree reaches it, so a broken group
        of another tree does not stop this one."""
        result: dict[str, list[tuple[str, base.RawObject]]] = {}
        listed = (
            (up.PODGROUP, self.ctx.lookup.list(up.V1BETA1, up.PODGROUP_KIND, self.namespace, {})),
            (
                up.COMPOSITE_PODGROUP,
                self.ctx.lookup.list(
                    up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, self.namespace, {}
                ),
            ),
        )
        for resource, raws in listed:
            for raw in raws:
                parent = fields.get(raw, "spec.parentCompositePodGroupName")
                if parent:
                    result.setdefault(str(parent), []).append((resource, raw))
        for nodes in result.values():
            nodes.sort(key=lambda n: (n[0], fields.name(n[1])))
        return result

    @staticmethod
    def node(resource: str, raw: base.RawObject) -> _Node:
        """``raw`` parsed as the upstream kind ``resource`` names."""
        if resource == up.PODGROUP:
            return _Node(raw, _parse(up.PodGroup, raw, fields.name(raw)))
        return _Node(raw, _parse(up.CompositePodGroup, raw, fields.name(raw)))


def _topology_level(node: _Node) -> str:
    constraints = node.model.spec.scheduling_constraints
    topology = (constraints.topology if constraints else None) or []
    return topology[0].key if topology else ""


def _topology(
    ctx: base.GroupingContext, node: _Node, named_by: Sequence[base.RawObject]
) -> base.TopologyConstraint | None:
    """The KAI constraint for ``node``'s topology key, or ``None`` without one.

    The Topology is the one named by annotation ``kai.scheduler/topology`` (on the
    node, then the Workload), else the first Topology (by name) listing the key.
    """
    key = _topology_level(node)
    if not key:
        return None
    for source in (node.raw, *named_by):
        named = fields.annotations_of(source).get(TOPOLOGY_ANNOTATION)
        if named:
            return base.TopologyConstraint(topology=str(named), required_level=key)
    topologies = ctx.lookup.list(topology_api.API_VERSION, topology_api.KIND, "", {})
    for raw in sorted(topologies, key=fields.name):
        levels = fields.get(raw, "spec.levels") or []
        if any(isinstance(level, Mapping) and level.get("nodeLabel") == key for level in levels):
            return base.TopologyConstraint(topology=fields.name(raw), required_level=key)
    raise base.GroupingError(
        node.describe(),
        TOPOLOGY_FIELD,
        f"no kai.scheduler Topology has level {key!r}; create one or name it with"
        f" annotation {TOPOLOGY_ANNOTATION} on the Workload",
    )


def subgroup_name(node_name: str) -> str:
    """``node_name`` as a subgroup name: a label value, so at most 63 characters."""
    if len(node_name) <= LABEL_VALUE_MAX:
        return node_name
    digest = hashlib.sha256(node_name.encode()).hexdigest()[:10]
    return f"{node_name[: LABEL_VALUE_MAX - 11].rstrip('-.')}-{digest}"


def _mins(node: _Node) -> tuple[int | None, int | None]:
    """(minMember, minSubGroup) of ``node`` as a KAI subgroup."""
    if isinstance(node.model, up.PodGroup):
        gang = node.model.spec.scheduling_policy.gang
        return (gang.min_count if gang else 0), None
    composite_gang = node.model.spec.scheduling_policy.gang
    return None, (composite_gang.min_group_count if composite_gang else 1)


def _priority(
    ctx: base.GroupingContext, nodes: Iterable[_Node], owners: Sequence[base.RawObject]
) -> str:
    """The first existing ``priorityClassName`` of ``nodes``, else the KAI rules."""
    for node in nodes:
        name = node.model.spec.priority_class_name
        if name and name in ctx.priority_classes:
            return name
    return resolution.resolve_priority(ctx, owners, default.TRAIN)


def _queue(ctx: base.GroupingContext, sources: Sequence[base.RawObject]) -> str:
    """The queue label of the pod's group, its composites, the Workload, the pod's owners
    (top first); else KAI's rule on the root group (pod label, ``project``, default)."""
    key = ctx.settings.queue_label_key
    for source in sources:
        if key in fields.labels(source):
            return str(fields.labels(source)[key])
    return resolution.resolve_queue(ctx, sources[0])


@dataclass(frozen=True, slots=True)
class UpstreamWorkloadGrouper:
    """Groups a pod by the upstream PodGroup it names (see the module docstring)."""

    name: str = "upstream-workload"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The pod's group, its parents and Workload; with parents, the namespace's groups.

        Called again with what was read until nothing new is named (each step reads the
        next parent), so a plain PodGroup costs two reads and no lists.
        """
        ns = fields.namespace(ctx.pod)
        name = scheduling_group(ctx.pod)
        if not name:
            return ()
        queries = [base.ObjectQuery(up.V1BETA1, up.PODGROUP_KIND, ns, name)]
        topology_query = base.ObjectQuery(topology_api.API_VERSION, topology_api.KIND, "")
        current = ctx.lookup.get(up.V1BETA1, up.PODGROUP_KIND, ns, name)
        depth = 0
        while current is not None and depth <= MAX_TREE_DEPTH:
            workload = fields.get(current, "spec.workloadRef.workloadName")
            if workload:
                queries.append(base.ObjectQuery(up.V1BETA1, up.WORKLOAD_KIND, ns, str(workload)))
            if fields.get(current, "spec.schedulingConstraints.topology"):
                queries.append(topology_query)
            parent = fields.get(current, "spec.parentCompositePodGroupName")
            if not parent:
                break
            queries.append(
                base.ObjectQuery(up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, ns, str(parent))
            )
            current = ctx.lookup.get(up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, ns, str(parent))
            depth += 1
        if depth:
            queries += [
                base.ObjectQuery(up.V1BETA1, up.PODGROUP_KIND, ns),
                base.ObjectQuery(up.COMPOSITE_API_VERSION, up.COMPOSITE_KIND, ns),
                topology_query,
            ]
        unique: list[base.ObjectQuery] = []
        for query in queries:
            if query not in unique:
                unique.append(query)
        return tuple(unique)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        tree = _Tree(ctx)
        name = scheduling_group(ctx.pod) or ""
        leaf = tree.pod_group(
            name, required_by=fields.describe(ctx.pod), field_=SCHEDULING_GROUP_FIELD
        )
        parents = tree.parents(leaf)
        path = [leaf, *parents]
        root = path[-1]
        found = tree.workload(leaf)
        workload_raw = (found[0],) if found else ()
        # the groups, the Workload, then what owns the pod (a Job labelled with its queue)
        owners = (*(n.raw for n in path), *workload_raw, *reversed(ctx.owners))
        spec = base.PodGroupSpec(
            name=kai_podgroup_name(root.raw),
            namespace=tree.namespace,
            owner=fields.owner_reference(root.raw),
            queue=_queue(ctx, owners),
            priority_class_name=_priority(ctx, reversed(path), owners),
            preemptibility=resolution.resolve_preemptibility(ctx, owners),
            min_member=1,
            labels=resolution.pod_group_labels(ctx, root.raw),
            annotations=resolution.pod_group_annotations(ctx, root.raw),
            topology=_topology(ctx, root, workload_raw) or base.TopologyConstraint(),
        )
        if not parents:
            return _single(spec, leaf)
        return _composite(ctx, spec, tree, root, leaf, workload_raw)


def _single(spec: base.PodGroupSpec, leaf: _Node) -> base.PodGroupSpec:
    """The leaf's gang as the whole PodGroup: ``minMember`` its ``minCount``, 0 (written)
    for the basic policy."""
    min_member, _ = _mins(leaf)
    return dataclasses.replace(spec, min_member=min_member or 0)


def _composite(
    ctx: base.GroupingContext,
    spec: base.PodGroupSpec,
    tree: _Tree,
    root: _Node,
    leaf: _Node,
    named_by: Sequence[base.RawObject],
) -> base.PodGroupSpec:
    """The subgroup tree below ``root``: composites inner, PodGroups leaves."""
    children = tree.children()
    subgroups: list[base.SubGroupSpec] = []
    seen: dict[str, str] = {}
    pending: list[tuple[str, base.RawObject, str | None, int]] = [
        (resource, raw, None, 1) for resource, raw in children.get(root.name, ())
    ]
    while pending:
        resource, raw, parent, depth = pending.pop(0)
        node = tree.node(resource, raw)
        sub_name = subgroup_name(node.name)
        if sub_name.lower() in seen:
            raise base.GroupingError(
                node.describe(),
                "metadata.name",
                f"gives subgroup name {sub_name!r}, also given by {seen[sub_name.lower()]}"
                f" under {root.describe()}",
            )
        seen[sub_name.lower()] = node.describe()
        is_composite = isinstance(node.model, up.CompositePodGroup)
        below = children.get(node.name, []) if is_composite else []
        if is_composite and not below:
            continue  # an empty composite has no pods to place
        min_member, min_sub_group = _mins(node)
        subgroups.append(
            base.SubGroupSpec(
                name=sub_name,
                # a leaf writes its minMember (0 included), a composite its minSubGroup
                min_member=min_member or 0,
                min_sub_group=min_sub_group,
                parent=parent,
                topology=_topology(ctx, node, named_by),
                pod_names=(fields.name(ctx.pod),)
                if node.name == leaf.name and not is_composite
                else (),
            )
        )
        if depth >= MAX_TREE_DEPTH:
            raise base.GroupingError(
                node.describe(),
                "spec.parentCompositePodGroupName",
                f"the group tree is deeper than {MAX_TREE_DEPTH} levels",
            )
        pending.extend((kind, child, sub_name, depth + 1) for kind, child in below)
    _, root_min = _mins(root)
    return dataclasses.replace(spec, subgroups=tuple(subgroups), min_sub_group=root_min)


def gang_shortfalls(objects: Iterable[base.RawObject]) -> list[base.GroupingWarning]:
    """Upstream gangs asking for more pods than reference them (offline grouping).

    Live, pods may still be on their way; among given manifests, such a gang can never
    start, which ``podmuster group`` reports as a warning on the gang's ``minCount``.
    """
    objs = list(objects)
    members: dict[tuple[str, str], int] = {}
    for obj in objs:
        if obj.get("kind") == "Pod" and scheduling_group(obj):
            key = (fields.namespace(obj), scheduling_group(obj) or "")
            members[key] = members.get(key, 0) + 1
    warnings: list[base.GroupingWarning] = []
    for obj in objs:
        if (obj.get("apiVersion"), obj.get("kind")) != (up.V1BETA1, up.PODGROUP_KIND):
            continue
        min_count = fields.get(obj, "spec.schedulingPolicy.gang.minCount")
        if not isinstance(min_count, int):
            continue
        have = members.get((fields.namespace(obj), fields.name(obj)), 0)
        if min_count > have:
            warnings.append(
                base.GroupingWarning(
                    where(up.PODGROUP, fields.namespace(obj), fields.name(obj)),
                    "spec.schedulingPolicy.gang.minCount",
                    f"{min_count} exceeds the {have} pods that name it in"
                    f" {SCHEDULING_GROUP_FIELD}; the gang cannot start",
                )
            )
    return warnings
