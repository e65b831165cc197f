"""Grove (``grove.io`` PodCliqueSet, formerly PodGangSet): one PodGroup per PodGang.

Why this module exists: Grove's operator already decides the gangs.  For every
PodCliqueSet replica (and every scaled replica of a PodCliqueScalingGroup beyond its
``minAvailable``) it writes a ``scheduler.grove.io/v1alpha1`` PodGang listing, per
PodClique, the pods (``podReferences``) and how many must run together
(``minReplicas``), plus topology packing and groups of PodCliques packed together
(``topologyConstraintGroupConfigs``); each pod carries its PodGang's name in the label
``grove.io/podgang``.  KAI's Grove grouper (KAI v0.17) turns that PodGang into the
PodGroup ``pg-<podgang>-<podgangUID>`` owned by the PodGang:

* a leaf subgroup per PodGang ``podgroups[]`` entry (``minMember`` = ``minReplicas``,
  which must be > 0; its pods; its pack constraint), the root ``minMember`` their sum;
* a parent per ``topologyConstraintGroupConfigs[]`` entry that names PodCliques
  (``minSubGroup`` = how many it names), which become its children;
* topology: the PodGang's pack constraint with the topology named by its
  ``grove.io/topology-name`` (else ``kai.scheduler/topology``) annotation, else the
  ``kai.scheduler/topology*`` annotations;
* queue: the PodGang's queue label (Grove mirrors the PodCliqueSet's labels onto it),
  the pod's, then — podmuster only — the top owner's: a DynamoGraphDeployment's queue
  label reaches no PodGang, and KAI falls back to the default queue;
* priority: the PodGang's ``spec.priorityClassName``; labels and annotations of the
  top owner (the PodCliqueSet, or a DynamoGraphDeployment's, which is skipped to its
  PodCliqueSet like an Argo Workflow) fill the PodGroup's gaps, and their
  ``priorityClassName`` / ``kai.scheduler/preemptibility`` labels and
  ``kai.scheduler/preemption-delay`` annotation then override.

The PodGang is read through the lookup (:meth:`GroveGrouper.related_objects`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.errors import shown
from crds.names import (
    PREEMPTIBILITY_LABEL,
    PREEMPTION_DELAY_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    TOPOLOGY_ANNOTATION,
)
from integrations import base, default, fields, resolution

PODGANG_API_VERSION = "scheduler.grove.io/v1alpha1"
PODGANG_KIND = "PodGang"
PODGANG_LABEL = "grove.io/podgang"
TOPOLOGY_NAME_ANNOTATION = "grove.io/topology-name"
_PREEMPTIBILITY = frozenset({resolution.PREEMPTIBLE, resolution.NON_PREEMPTIBLE, ""})


def _gang_name(ctx: base.GroupingContext) -> str:
    name = fields.labels(ctx.pod).get(PODGANG_LABEL)
    if not name:
        raise base.GroupingError(
            fields.describe(ctx.pod), f"metadata.labels[{PODGANG_LABEL}]", "is required"
        )
    return str(name)


def _namespace(ctx: base.GroupingContext) -> str:
    return fields.namespace(ctx.pod) or fields.namespace(ctx.top_owner)


def _pack(
    gang: base.RawObject, where: Mapping[str, Any], path: str, topology: str
) -> base.TopologyConstraint | None:
    """``<path>.topologyConstraint.packConstraint`` of ``where``; needs a topology name."""
    pack = fields.get_mapping(where, "topologyConstraint.packConstraint")
    required, preferred = pack.get("required"), pack.get("preferred")
    if required is None and preferred is None:
        return None
    if not topology:
        raise base.GroupingError(
            fields.describe(gang),
            f"{path}topologyConstraint.packConstraint",
            f"needs a topology: annotate the PodGang {TOPOLOGY_NAME_ANNOTATION}",
        )
    return base.TopologyConstraint(topology, str(required or ""), str(preferred or ""))


def _required_str(gang: base.RawObject, where: Mapping[str, Any], key: str, path: str) -> str:
    value = where.get(key)
    if not isinstance(value, str) or not value:
        raise base.GroupingError(fields.describe(gang), f"{path}{key}", "is required")
    return value


def _parents(gang: base.RawObject, topology: str) -> tuple[list[base.SubGroupSpec], dict[str, str]]:
    """Parent subgroups from ``topologyConstraintGroupConfigs`` and child → parent."""
    parents: list[base.SubGroupSpec] = []
    parent_of: dict[str, str] = {}
    for index, config in enumerate(fields.get_list(gang, "spec.topologyConstraintGroupConfigs")):
        path = f"spec.topologyConstraintGroupConfigs[{index}]."
        if not isinstance(config, Mapping):
            raise base.GroupingError(fields.describe(gang), path[:-1], "must be an object")
        name = _required_str(gang, config, "name", path)
        members = config.get("podGroupNames") or []
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise base.GroupingError(
                fields.describe(gang), f"{path}podGroupNames", "must be a list of names"
            )
        if not members:
            continue
        parent_of.update(dict.fromkeys(members, name))
        parents.append(
            base.SubGroupSpec(
                name, min_sub_group=len(members), topology=_pack(gang, config, path, topology)
            )
        )
    return parents, parent_of


def _pod_names(
    gang: base.RawObject, item: Mapping[str, Any], path: str, namespace: str
) -> tuple[str, ...]:
    refs = item.get("podReferences")
    if not isinstance(refs, list):
        raise base.GroupingError(fields.describe(gang), f"{path}podReferences", "is required")
    names: list[str] = []
    for index, ref in enumerate(refs):
        where = f"{path}podReferences[{index}]."
        if not isinstance(ref, Mapping):
            raise base.GroupingError(fields.describe(gang), where[:-1], "must be an object")
        ref_namespace = _required_str(gang, ref, "namespace", where)
        if ref_namespace != namespace:
            raise base.GroupingError(
                fields.describe(gang),
                f"{where}namespace",
                f"is {ref_namespace}: a PodGang may only name pods of its own namespace",
            )
        names.append(_required_str(gang, ref, "name", where))
    return tuple(names)


def _leaves(
    gang: base.RawObject, parent_of: Mapping[str, str], topology: str, namespace: str
) -> list[base.SubGroupSpec]:
    leaves: list[base.SubGroupSpec] = []
    for index, item in enumerate(fields.get_list(gang, "spec.podgroups")):
        path = f"spec.podgroups[{index}]."
        if not isinstance(item, Mapping):
            raise base.GroupingError(fields.describe(gang), path[:-1], "must be an object")
        name = _required_str(gang, item, "name", path)
        if item.get("minReplicas") is None:
            raise base.GroupingError(fields.describe(gang), f"{path}minReplicas", "is required")
        minimum = fields.get_int(gang, "minReplicas", within=item, prefix=path, minimum=1)
        assert minimum is not None
        leaves.append(
            base.SubGroupSpec(
                name,
                minimum,
                parent=parent_of.get(name),
                topology=_pack(gang, item, path, topology),
                pod_names=_pod_names(gang, item, path, namespace),
            )
        )
    return leaves


def _merged(ours: Mapping[str, str], top: Mapping[str, Any]) -> dict[str, str]:
    """``ours`` with the top owner's entries added where keys are missing."""
    result = {str(k): str(v) for k, v in top.items()}
    result.update(ours)
    return result


def group_podgang(ctx: base.GroupingContext, gang: base.RawObject) -> base.PodGroupSpec:
    """The PodGroup of one PodGang (module docstring)."""
    spec = default.build(ctx, subject=gang)
    annotations = fields.annotations_of(gang)
    topology_name = str(
        annotations.get(TOPOLOGY_NAME_ANNOTATION) or annotations.get(TOPOLOGY_ANNOTATION) or ""
    )
    topology = _pack(gang, fields.get_mapping(gang, "spec"), "spec.", topology_name)
    labels = _merged(spec.labels, fields.labels(ctx.top_owner))
    merged_annotations = _merged(spec.annotations, fields.annotations_of(ctx.top_owner))
    priority = spec.priority_class_name
    gang_priority = fields.get(gang, "spec.priorityClassName")
    if isinstance(gang_priority, str):
        priority = gang_priority
    priority = labels.get(PRIORITY_CLASS_LABEL, priority)
    preemptibility = spec.preemptibility
    if PREEMPTIBILITY_LABEL in labels:
        preemptibility = labels[PREEMPTIBILITY_LABEL]
        if preemptibility not in _PREEMPTIBILITY:
            raise base.GroupingError(
                fields.describe(ctx.top_owner),
                f"metadata.labels[{PREEMPTIBILITY_LABEL}]",
                f"must be {resolution.PREEMPTIBLE} or {resolution.NON_PREEMPTIBLE},"
                f" got {shown(preemptibility)}",
            )
    delay = resolution.first_duration(
        (merged_annotations,), PREEMPTION_DELAY_ANNOTATION, negative=False
    )
    fallback = resolution.topology_of(merged_annotations)
    queue = spec.queue
    key = ctx.settings.queue_label_key
    top_queue = fields.labels(ctx.top_owner).get(key)
    own = key in fields.labels(gang) or key in fields.labels(ctx.pod)
    if top_queue is not None and not own and not ctx.settings.reproduce_kai_bugs:
        queue = str(top_queue)
    chosen = topology or base.TopologyConstraint()
    parents, parent_of = _parents(gang, topology_name)
    leaves = _leaves(gang, parent_of, topology_name, fields.namespace(gang) or _namespace(ctx))
    return dataclasses.replace(
        spec,
        queue=queue,
        labels=labels,
        annotations=merged_annotations,
        priority_class_name=priority,
        preemptibility=preemptibility,
        preemption_delay=delay or spec.preemption_delay,
        topology=base.TopologyConstraint(
            chosen.topology or fallback.topology,
            chosen.required_level or fallback.required_level,
            chosen.preferred_level or fallback.preferred_level,
        ),
        min_member=fields.int32_total(
            gang, sum(leaf.min_member for leaf in leaves), "spec.podgroups[*].minReplicas"
        ),
        subgroups=(*parents, *leaves),
    )


@dataclass(frozen=True, slots=True)
class GroveGrouper:
    """PodCliqueSet / PodGangSet: the PodGang named by the pod's ``grove.io/podgang``."""

    name: str = "grove"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The pod's PodGang."""
        name = fields.labels(ctx.pod).get(PODGANG_LABEL)
        if not name:
            return ()
        return (base.ObjectQuery(PODGANG_API_VERSION, PODGANG_KIND, _namespace(ctx), str(name)),)

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        name = _gang_name(ctx)
        gang = ctx.lookup.get(PODGANG_API_VERSION, PODGANG_KIND, _namespace(ctx), name)
        if gang is None:
            raise base.GroupingError(
                fields.describe(ctx.pod),
                f"metadata.labels[{PODGANG_LABEL}]",
                f"names PodGang {_namespace(ctx)}/{name}, which does not exist (yet):"
                " Grove writes it once the pods are created; the pod is grouped on its next update",
            )
        return group_podgang(ctx, gang)
