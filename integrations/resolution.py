"""Queue, priority, preemptibility, topology and metadata resolution (docs/semantics.md §3, §4.2).

Why this module exists: every adapter resolves these the same way from "the object
it groups on" plus the pod; only the object and the fallback priority differ.  The
rules are written once here, as small functions, so each adapter states only what
is special about its framework.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from crds import durations
from crds.errors import shown
from crds.names import (
    PREEMPTIBILITY_LABEL,
    PREEMPTION_DELAY_ANNOTATION,
    PRIORITY_CLASS_LABEL,
    SEGMENT_PREFERRED_ANNOTATION,
    SEGMENT_REQUIRED_ANNOTATION,
    STALENESS_GRACE_PERIOD_ANNOTATION,
    TOP_OWNER_METADATA_ANNOTATION,
    TOPOLOGY_ANNOTATION,
    TOPOLOGY_PREFERRED_ANNOTATION,
    TOPOLOGY_REQUIRED_ANNOTATION,
)
from integrations import base, fields

PROJECT_LABEL = "project"
USER_KEY = "user"

PREEMPTIBLE = "preemptible"
NON_PREEMPTIBLE = "non-preemptible"
_PREEMPTIBILITY_VALUES = frozenset({PREEMPTIBLE, NON_PREEMPTIBLE})


def resolve_queue(ctx: base.GroupingContext, subject: base.RawObject) -> str:
    """Subject label → pod label → ``project`` (subject, then pod) → default queue.

    A present-but-empty label counts as found.
    """
    key = ctx.settings.queue_label_key
    for source in (subject, ctx.pod):
        if key in fields.labels(source):
            return str(fields.labels(source)[key])
    for source in (subject, ctx.pod):
        if PROJECT_LABEL in fields.labels(source):
            project = str(fields.labels(source)[PROJECT_LABEL])
            pool = fields.labels(ctx.pod).get(ctx.settings.nodepool_label_key)
            return f"{project}-{pool}" if pool else project
    return ctx.settings.default_queue


def _group_of(obj: base.RawObject) -> str:
    return base.GroupVersionKind.of(obj).group


def _default_entry(ctx: base.GroupingContext, owner: base.RawObject) -> base.DefaultPriority | None:
    """The ConfigMap entry for ``owner``: by ``Kind.group`` first, then bare ``Kind``."""
    table: dict[str, base.DefaultPriority] = {}
    for entry in ctx.default_priorities:
        table[f"{entry.type_name}.{entry.group}" if entry.group else entry.type_name] = entry
    kind = str(owner.get("kind", ""))
    return table.get(f"{kind}.{_group_of(owner)}") or table.get(kind)


def default_labels(ctx: base.GroupingContext, owner: base.RawObject) -> dict[str, str]:
    """The defaults-ConfigMap entry for ``owner``'s kind as the labels that would say it.

    A skipped wrapper (a DynamoGraphDeployment, a TrainJob) hands its kind's default
    priority (when that PriorityClass exists) and preemptibility down to the object
    grouped on, which then reads them like its own labels.
    """
    entry = _default_entry(ctx, owner)
    result: dict[str, str] = {}
    if entry and entry.priority_name and entry.priority_name in ctx.priority_classes:
        result[PRIORITY_CLASS_LABEL] = entry.priority_name
    if entry and entry.preemptibility:
        result[PREEMPTIBILITY_LABEL] = entry.preemptibility
    return result


_LABEL = f"metadata.labels[{PRIORITY_CLASS_LABEL}]"
_SPEC = "spec.priorityClassName"


def _class_name(obj: base.RawObject, raw: Any, field: str) -> str | None:
    """A priority class name read at ``field`` of ``obj``: a string, or an error naming it."""
    if raw is None or isinstance(raw, str):
        return raw
    raise base.GroupingError(fields.describe(obj), field, f"expected a string, got {shown(raw)}")


def resolve_priority(
    ctx: base.GroupingContext, chain: Iterable[base.RawObject], fallback: str
) -> str:
    """The first existing candidate per owner (bottom→top), then ConfigMap defaults.

    For each owner the single candidate is its ``priorityClassName`` label, else the
    pod's label, else ``pod.spec.priorityClassName``.  The fallback is not checked.
    """
    owners = tuple(chain)
    pod_label = _class_name(ctx.pod, fields.labels(ctx.pod).get(PRIORITY_CLASS_LABEL), _LABEL)
    pod_spec = _class_name(ctx.pod, fields.get(ctx.pod, "spec.priorityClassName"), _SPEC)
    for owner in owners:
        label = _class_name(owner, fields.labels(owner).get(PRIORITY_CLASS_LABEL), _LABEL)
        candidate = label or pod_label or pod_spec
        if candidate and candidate in ctx.priority_classes:
            return str(candidate)
    for owner in owners:
        entry = _default_entry(ctx, owner)
        if entry and entry.priority_name and entry.priority_name in ctx.priority_classes:
            return entry.priority_name
    return fallback


def resolve_preemptibility(ctx: base.GroupingContext, chain: Iterable[base.RawObject]) -> str:
    """Owner labels bottom→top, the pod label, ConfigMap defaults, else empty.

    A label set to ``""`` is a valid value, as in KAI (``ParsePreemptibility``): it ends
    the search, and the scheduler derives preemptibility from the priority.
    """
    owners = tuple(chain)
    for source in (*owners, ctx.pod):
        value = fields.labels(source).get(PREEMPTIBILITY_LABEL)
        if value == "" or value in _PREEMPTIBILITY_VALUES:
            return str(value)
    for owner in owners:
        entry = _default_entry(ctx, owner)
        if entry and entry.preemptibility.lower() in _PREEMPTIBILITY_VALUES:
            return entry.preemptibility.lower()
    return ""


def first_duration(sources: Iterable[Mapping[str, Any]], key: str, *, negative: bool = True) -> str:
    """The first valid Go duration under ``key`` in ``sources`` (annotation maps), as Go
    prints it.

    Invalid values (and negative ones unless ``negative``) are skipped, as KAI skips them
    with a log line, so a typo never blocks grouping.
    """
    for source in sources:
        value = source.get(key)
        if value is None:
            continue
        try:
            if negative or durations.seconds(str(value)) >= 0:
                return durations.go_string(str(value))
        except ValueError:
            continue
    return ""


def resolve_preemption_delay(ctx: base.GroupingContext, chain: Iterable[base.RawObject]) -> str:
    """``kai.scheduler/preemption-delay``: owners bottom→top, then the pod; >= 0 only."""
    sources = (fields.annotations_of(o) for o in (*chain, ctx.pod))
    return first_duration(sources, PREEMPTION_DELAY_ANNOTATION, negative=False)


def resolve_staleness_grace_period(
    ctx: base.GroupingContext, chain: Iterable[base.RawObject]
) -> str:
    """``kai.scheduler/staleness-grace-period``: owners bottom→top, then the pod."""
    sources = (fields.annotations_of(o) for o in (*chain, ctx.pod))
    return first_duration(sources, STALENESS_GRACE_PERIOD_ANNOTATION)


def topology_of(annotations: Mapping[str, str]) -> base.TopologyConstraint:
    """The three ``kai.scheduler/topology*`` annotations, copied verbatim."""
    return base.TopologyConstraint(
        topology=str(annotations.get(TOPOLOGY_ANNOTATION, "")),
        required_level=str(annotations.get(TOPOLOGY_REQUIRED_ANNOTATION, "")),
        preferred_level=str(annotations.get(TOPOLOGY_PREFERRED_ANNOTATION, "")),
    )


def top_owner_metadata(subject: base.RawObject) -> str:
    """The YAML the podgrouper stores about the object grouped on."""
    gvk = base.GroupVersionKind.of(subject)
    body = {
        "name": fields.name(subject),
        "uid": fields.uid(subject),
        "group": gvk.group,
        "version": gvk.version,
        "kind": gvk.kind,
    }
    return str(yaml.safe_dump(body, sort_keys=False))


def pod_group_labels(ctx: base.GroupingContext, subject: base.RawObject) -> dict[str, str]:
    """All subject labels, plus the pod's ``user`` label when the subject has none."""
    result = {str(k): str(v) for k, v in fields.labels(subject).items()}
    pod_user = fields.labels(ctx.pod).get(USER_KEY)
    if USER_KEY not in result and pod_user is not None:
        result[USER_KEY] = str(pod_user)
    return result


def pod_group_annotations(ctx: base.GroupingContext, subject: base.RawObject) -> dict[str, str]:
    """Pod ``user`` annotation and top-owner metadata, overwritten by subject annotations."""
    result: dict[str, str] = {}
    pod_user = fields.annotations_of(ctx.pod).get(USER_KEY)
    if pod_user is not None:
        result[USER_KEY] = str(pod_user)
    result[TOP_OWNER_METADATA_ANNOTATION] = top_owner_metadata(subject)
    result.update({str(k): str(v) for k, v in fields.annotations_of(subject).items()})
    return result


def _first(sources: Iterable[Mapping[str, str]], key: str) -> str:
    return next((str(s[key]) for s in sources if s.get(key)), "")


def segment_topology(
    pod: base.RawObject, template: Mapping[str, str], top_owner: base.RawObject
) -> base.TopologyConstraint | None:
    """A segment's constraint (PyTorch, LWS).

    Levels come from the pod's ``kai.scheduler/segment-topology-*`` annotations, then
    the worker template's; the topology name from the pod, the template, then the top
    owner.  No constraint unless a level is set and a topology name resolves.
    """
    sources = (fields.annotations_of(pod), template)
    required = _first(sources, SEGMENT_REQUIRED_ANNOTATION)
    preferred = _first(sources, SEGMENT_PREFERRED_ANNOTATION)
    topology = _first((*sources, fields.annotations_of(top_owner)), TOPOLOGY_ANNOTATION)
    if not topology or not (required or preferred):
        return None
    return base.TopologyConstraint(topology, required, preferred)


def default_priorities(configmap: base.RawObject | None) -> tuple[base.DefaultPriority, ...]:
    """The entries of the default-priorities ConfigMap (data key ``types``, a JSON array).

    A missing ConfigMap, a missing key or bad JSON disables the defaults, as in KAI.
    """
    data = fields.get(configmap, "data.types") if configmap is not None else None
    try:
        entries = json.loads(data) if isinstance(data, str) else None
    except ValueError:
        return ()
    if not isinstance(entries, list):
        return ()
    return tuple(
        base.DefaultPriority(
            type_name=str(e.get("typeName", "")),
            group=str(e.get("group", "")),
            priority_name=str(e.get("priorityName", "")),
            preemptibility=str(e.get("preemptibility", "")),
        )
        for e in entries
        if isinstance(e, Mapping) and e.get("typeName")
    )
