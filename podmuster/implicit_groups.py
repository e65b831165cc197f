"""PodGroups for pods that arrive without one, as the podgrouper would make for a bare pod.

Why: a snapshot taken from a live cluster already holds the podgrouper's
PodGroups, but hand-written snapshots and quick experiments often list only
pods. For a pod of our scheduler without a ``pod-group-name`` annotation, the
offline commands derive the PodGroup KAI's default grouper would create: one
group per pod, minMember 1, queue from the ``kai.scheduler/queue`` label (else
``default-queue``), priority from the pod, the node-pool label copied. A pod
whose annotation names a PodGroup that is missing is left alone, as in a live cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crds.documents import SourcedObject
from crds.names import (
    DEFAULT_QUEUE,
    NODE_POOL_LABEL,
    POD_GROUP_ANNOTATION,
    PREEMPTIBILITY_LABEL,
    QUEUE_LABEL,
)
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from scheduler.cache.parsing import FieldError
from scheduler.cache.reading import creation_of

_Parts = tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]


def _map(raw: Any) -> Mapping[str, Any] | None:
    """``raw`` if it is a map (unset is empty), None if it is anything else."""
    if raw is None:
        return {}
    return raw if isinstance(raw, Mapping) else None


def _parts(body: Mapping[str, Any]) -> _Parts | None:
    """A pod's ``(spec, metadata, status, labels)``; None when one is malformed (not a map,
    labels or annotations that are not strings, a creationTimestamp that is no RFC 3339
    time): the pod reader reports that field and leaves the pod out, so no PodGroup is
    made for it (it would get a line of its own, for an object in no file)."""
    spec, meta, status = (_map(body.get(key)) for key in ("spec", "metadata", "status"))
    if spec is None or meta is None or status is None:
        return None
    for key in ("labels", "annotations"):
        values = _map(meta.get(key))
        if values is None or not all(type(v) is str for v in values.values()):
            return None
    try:
        creation_of(body)  # as the pod reader reads it
    except FieldError:
        return None
    return spec, meta, status, meta.get("labels") or {}


def add_implicit_pod_groups(
    objects: Sequence[SourcedObject], scheduler_name: str
) -> list[SourcedObject]:
    """The objects plus one PodGroup per ungrouped pod of ``scheduler_name``."""
    out = list(objects)
    for position, item in enumerate(objects):
        body = item.obj
        if body.get("kind") != "Pod":
            continue
        parts = _parts(body)
        if parts is None:
            continue
        spec, meta, status, labels = parts
        annotations = meta.get("annotations") or {}
        if spec.get("schedulerName") != scheduler_name or POD_GROUP_ANNOTATION in annotations:
            continue
        if status.get("phase") in ("Succeeded", "Failed"):
            continue
        name = f"pg-{meta.get('name')}-{meta.get('uid')}"
        pod_group: dict[str, Any] = {
            "apiVersion": PODGROUP_API_VERSION,
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace") or "default",
                "uid": f"{meta.get('uid')}-pg",
                "creationTimestamp": meta.get("creationTimestamp"),
            },
            "spec": {
                "minMember": 1,
                "queue": labels.get(QUEUE_LABEL, DEFAULT_QUEUE),
                "priorityClassName": labels.get("priorityClassName")
                or spec.get("priorityClassName")
                or "",
            },
        }
        if NODE_POOL_LABEL in labels:  # copied as the podgrouper does
            pod_group["metadata"]["labels"] = {NODE_POOL_LABEL: labels[NODE_POOL_LABEL]}
        if labels.get(PREEMPTIBILITY_LABEL) in ("preemptible", "non-preemptible"):
            pod_group["spec"]["preemptibility"] = labels[PREEMPTIBILITY_LABEL]
        new_annotations = dict(annotations)
        new_annotations[POD_GROUP_ANNOTATION] = name
        new_meta = dict(meta)
        new_meta["annotations"] = new_annotations
        new_body = dict(body)
        new_body["metadata"] = new_meta
        out[position] = SourcedObject(new_body, item.source, item.index)
        out.append(SourcedObject(pod_group, item.source, item.index))
    return out
