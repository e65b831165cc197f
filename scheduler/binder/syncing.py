"""The binder's periodic sync of GPU groups: which reservation and sharing pods must go.

Why this module exists: a reservation pod holds a whole GPU for the pods of its group.
When the group empties, the GPU must be given back; when the reservation pod is lost
(deleted by hand, evicted, its node drained), the pods still using that GPU are no
longer accounted for and must go too, so the scheduler places them again. Both are
decided here from the binder's watch caches (pods and BindRequests), as pure functions;
the reconciler deletes. Rules (``docs/semantics.md`` §6 "Binder sync"):

* A group is **in use** while a sharing pod labelled with it is Running, or Pending and
  already bound, or while a BindRequest that is not finished (not Succeeded, not failed
  for good) selects it: the binder may be between creating the reservation pod and
  labelling the pod.
* A reservation pod whose group has not been in use for ``grace`` seconds is deleted.
* A bound sharing pod (annotation ``received-resource-type: Fraction``, Pending or
  Running, not being deleted) whose group has had no live reservation pod for ``grace``
  seconds is deleted.

The grace is measured by the binder's own clock across sync runs (``since`` maps each
suspect to when it was first seen so), never by creation timestamps, so watch-cache lag
and clock skew cannot cut it short; a restarted binder starts counting again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crds import gpusharing as names
from crds.bindrequest import PHASE_SUCCEEDED, RESOURCE_TYPE_FRACTION
from scheduler.binder.decide import finally_failed

__all__ = ["Plan", "groups_of", "plan"]

Object = Mapping[str, Any]


def groups_of(pod: Object) -> set[str]:
    """The GPU groups a pod's labels name (``runai-gpu-group`` and ``runai-gpu-group/*``)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    groups = {
        key[len(names.MULTI_GROUP_LABEL_PREFIX) :]
        for key in labels
        if key.startswith(names.MULTI_GROUP_LABEL_PREFIX)
    }
    if labels.get(names.GPU_GROUP_LABEL):
        groups.add(str(labels[names.GPU_GROUP_LABEL]))
    return groups


@dataclass
class Plan:
    """Reservation pods to delete, sharing pods to delete (each with its lost group), and
    the ``since`` map to pass to the next run."""

    reservations: list[Object] = field(default_factory=list)
    orphans: list[tuple[Object, str]] = field(default_factory=list)
    since: dict[str, float] = field(default_factory=dict)


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _is_reservation(pod: Object, namespace: str) -> bool:
    meta = _meta(pod)
    return (
        meta.get("namespace") == namespace
        and (meta.get("labels") or {}).get("app") == names.RESERVATION_APP
    )


def _live_request_groups(requests: Iterable[Object]) -> set[str]:
    groups: set[str] = set()
    for request in requests:
        spec = request.get("spec") or {}
        if spec.get("receivedResourceType") != RESOURCE_TYPE_FRACTION:
            continue
        phase = (request.get("status") or {}).get("phase")
        if phase == PHASE_SUCCEEDED or finally_failed(request):
            continue
        groups.update(str(g) for g in spec.get("selectedGPUGroups") or ())
    return groups


def plan(
    pods: Iterable[Object],
    requests: Iterable[Object],
    *,
    namespace: str,
    grace: float,
    now: float,
    since: Mapping[str, float],
) -> Plan:
    """What to delete now; ``since`` is the previous run's :attr:`Plan.since`."""
    reservations: dict[str, list[Object]] = {}
    sharing: list[Object] = []
    in_use = _live_request_groups(requests)
    for pod in pods:
        if _is_reservation(pod, namespace):
            group = (_meta(pod).get("labels") or {}).get(names.GPU_GROUP_LABEL)
            if group:
                reservations.setdefault(str(group), []).append(pod)
            continue
        groups = groups_of(pod)
        if not groups:
            continue
        phase = _phase(pod)
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if phase == "Running" or (phase == "Pending" and bound):
            in_use |= groups
            annotations = _meta(pod).get("annotations") or {}
            fraction = annotations.get(names.RECEIVED_RESOURCE_TYPE_ANNOTATION)
            if fraction == RESOURCE_TYPE_FRACTION and not _meta(pod).get("deletionTimestamp"):
                sharing.append(pod)
    out = Plan()

    def overdue(key: str) -> bool:
        first = out.since.setdefault(key, since.get(key, now))
        return now - first >= grace

    for group, held in sorted(reservations.items()):
        if group not in in_use and overdue(f"unused/{group}"):
            out.reservations.extend(p for p in held if not _meta(p).get("deletionTimestamp"))
    alive = {
        group
        for group, held in reservations.items()
        if any(not _meta(p).get("deletionTimestamp") for p in held)
    }
    for pod in sharing:
        lost = sorted(groups_of(pod) - alive)
        if lost and all([overdue(f"lost/{g}") for g in lost]):  # every clock starts
            out.orphans.append((pod, lost[0]))
    return out
