"""The binder's periodic sync of GPU groups: which reservation and sharing pods must go,
and which reservation pods to re-create.

Why this module exists: a reservation pod holds a whole GPU for the pods of its group.
When the group empties, the GPU must be given back; when the reservation pod is lost
(deleted by hand, evicted, its namespace deleted by ``helm uninstall``), the pods still
using that GPU are no longer accounted for by the kubelet: either the reservation is
re-created on the same GPU, or those pods must go, so the scheduler places them again.
Both are decided here from the binder's watch caches (pods and BindRequests), as pure
functions; the reconciler creates and deletes. Rules (``docs/semantics.md`` §6 "Binder
sync"):

* Only the binder's own work counts: sharing pods whose ``spec.schedulerName`` is its
  scheduler name, and reservation pods in its reservation namespace
  (:func:`~scheduler.binder.sharing.is_reservation`). It deletes only the reservation
  pods carrying its own labels (:meth:`Settings.owns`); another scheduler's reservation
  pods (KAI's) in the same namespace still count as holding their group and are never
  deleted.
* A group is **in use** while one of those sharing pods labelled with it is Running, or
  Pending and already bound, or while a BindRequest that is not finished (not Succeeded,
  not failed for good) selects it: the binder may be between creating the reservation
  pod and labelling the pod.
* A reservation pod of the binder's whose group has not been in use for ``grace``
  seconds is deleted.
* A group in use with no live reservation pod is **restored** once: the reconciler
  re-creates its reservation pod on the sharing pods' node, annotated with the GPU
  UUID(s) the pods use (``podmuster.io/restored-for-gpu``). It holds the group when it
  reports one of them; if it reports another GPU, fails, or reports nothing within the
  allocation ``timeout``, it is deleted and the restore counts as tried. (KAI's binder
  does not re-create: it deletes the Running pods of such a group at once.)
* A bound sharing pod (annotation ``received-resource-type: Fraction``, Pending or
  Running, not being deleted) whose group's restore was tried and that has had no live
  reservation pod for ``grace`` seconds since is deleted.

The grace is measured by the binder's own clock across sync runs (``since`` maps each
suspect to when it was first seen so), never by creation timestamps, so watch-cache lag
and clock skew cannot cut it short; a restarted binder starts counting again (and may
try a restore again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from crds import gpusharing as names
from crds.bindrequest import PHASE_SUCCEEDED, RESOURCE_TYPE_FRACTION
from scheduler.binder.decide import finally_failed
from scheduler.binder.sharing import Settings, is_reservation, reserved_gpu

__all__ = ["Plan", "Restore", "groups_of", "plan", "restore_state", "tried_key"]

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


@dataclass(frozen=True)
class Restore:
    """Re-create the reservation pod of ``group`` on ``node`` for its sharing ``pods``."""

    group: str
    node: str
    pods: tuple[Object, ...]


@dataclass
class Plan:
    """Reservation pods to delete, sharing pods to delete (each with its lost group),
    groups to restore, and the ``since`` map to pass to the next run."""

    reservations: list[Object] = field(default_factory=list)
    orphans: list[tuple[Object, str]] = field(default_factory=list)
    restores: list[Restore] = field(default_factory=list)
    since: dict[str, float] = field(default_factory=dict)


_TRIED = "tried/"


def tried_key(group: str) -> str:
    """The ``since`` key recording that ``group``'s restore was tried (the reconciler
    sets it when it creates the pod, or cannot)."""
    return _TRIED + group


def _meta(obj: Object) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


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


Restoring = Literal["plain", "held", "pending", "failed"]


def restore_state(pod: Object) -> Restoring:
    """A live reservation pod's standing: ``plain`` (not a restore), ``held`` (a restore
    that reported one of the expected GPUs), ``pending`` (a restore that has not reported
    yet; the plan times it out), ``failed`` (it reported another GPU, or finished)."""
    expected = (_meta(pod).get("annotations") or {}).get(names.RESTORED_FOR_GPU_ANNOTATION)
    if expected is None:
        return "plain"
    reported = reserved_gpu(pod)
    if reported:
        return "held" if reported in str(expected).split(",") else "failed"
    return "failed" if _phase(pod) in ("Failed", "Succeeded") else "pending"


def plan(
    pods: Iterable[Object],
    requests: Iterable[Object],
    *,
    settings: Settings,
    now: float,
    since: Mapping[str, float],
) -> Plan:
    """What to delete and restore now; ``since`` is the previous run's :attr:`Plan.since`."""
    reservations: dict[str, list[Object]] = {}
    sharing: list[Object] = []
    in_use = _live_request_groups(requests)
    for pod in pods:
        if is_reservation(pod, settings.namespace):
            group = str(_meta(pod)["labels"][names.GPU_GROUP_LABEL])
            reservations.setdefault(group, []).append(pod)
            continue
        if (pod.get("spec") or {}).get("schedulerName") != settings.scheduler_name:
            continue  # another scheduler's pod: its own binder keeps its group
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

    def overdue(key: str, after: float) -> bool:
        first = out.since.setdefault(key, since.get(key, now))
        return now - first >= after

    def delete(pod: Object) -> None:
        if settings.owns(pod) and all(p is not pod for p in out.reservations):
            out.reservations.append(pod)

    alive: set[str] = set()  # a reservation pod holds it, or a restore is under way
    settled: set[str] = set()  # a reservation pod holds it
    tried = {k.removeprefix(_TRIED) for k in since if k.startswith(_TRIED)}
    for group, held in sorted(reservations.items()):
        for pod in held:
            if _meta(pod).get("deletionTimestamp"):
                continue
            state = restore_state(pod)
            if state == "pending" and overdue(f"restore/{group}", settings.timeout):
                state = "failed"
            if state == "failed":
                delete(pod)
                tried.add(group)
                out.since.setdefault(tried_key(group), since.get(tried_key(group), now))
                continue
            alive.add(group)
            if state != "pending":
                settled.add(group)
        if group not in in_use and overdue(f"unused/{group}", settings.grace):
            for pod in held:
                if not _meta(pod).get("deletionTimestamp"):
                    delete(pod)
    restoring: dict[str, list[Object]] = {}
    for pod in sharing:
        lost = sorted(groups_of(pod) - alive)
        given_up = [g for g in lost if g in tried]
        for group in lost:
            if group not in tried:
                restoring.setdefault(group, []).append(pod)
        if given_up and all([overdue(f"lost/{g}", settings.grace) for g in given_up]):
            out.orphans.append((pod, given_up[0]))  # every clock above starts
    for group, users in sorted(restoring.items()):
        node = min(str((p.get("spec") or {}).get("nodeName") or "") for p in users)
        out.restores.append(Restore(group, node, tuple(users)))
    # A tried restore is remembered while its group is still short of a reservation pod.
    for group in {g for pod in sharing for g in groups_of(pod)} - settled:
        if tried_key(group) in since:
            out.since[tried_key(group)] = since[tried_key(group)]
    return out
