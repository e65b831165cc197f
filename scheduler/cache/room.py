"""Bind-time admission: does the pod still fit on its node, by what the node's pods hold now?

Why this module exists: the scheduler decided on a snapshot, and the bind happens a
moment later. Another scheduler (kube-scheduler on the same nodes) may have bound a
pod into the same room meanwhile; the kubelet would then fail ours with ``OutOfcpu``
or ``OutOfmemory``. A Pod watch is fresher than any snapshot, so just before
``pods/binding`` the binder (and the scheduler's direct binds) check the node's room
the way the kubelet admits pods, plus the room held for a preemptor another scheduler
nominated (docs/semantics.md §5.10). It lives with the cache because both live
components use it and it only reads objects:

* a pod *holds* room on node N while it is bound there (``spec.nodeName`` = N) and not
  terminal (phase neither Succeeded nor Failed), deletion in progress included (the
  kubelet counts it until it is gone), or while it is Pending, unbound, with
  ``status.nominatedNodeName`` = N and another ``schedulerName`` than the pod being
  bound (the snapshot counts only other schedulers' nominations: were the two to
  disagree, a refused pod would be decided onto the same node again and again);
* the pod fits when, for every resource it requests, the node's allocatable minus what
  the other holders request is at least its request (pods count as a resource too).

:class:`NodeRoom` keeps the holders per node from the watch's (old, new) pairs, so a
check costs one sum over the pods of one node. A watch may lag by far more than the
moment between a check and its bind, so the callers first list the node's pods
(``fieldSelector=spec.nodeName``, a consistent read) and file them with
:meth:`NodeRoom.listed`: the race with another scheduler narrows to that one round trip.
A pod that cannot be read holds nothing (the scheduler reports it). Pure: no API calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from scheduler.api.resources import ResourceSpace, Vector, format_amount, widen
from scheduler.cache import parsing, reading
from scheduler.cache.parsing import FieldError

__all__ = ["NodeRoom", "held_on"]

Key = tuple[str, str]
TERMINAL = frozenset({"Succeeded", "Failed"})


def _key(pod: Mapping[str, Any]) -> Key:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


_GONE_KEPT = 100_000
"""Deleted pods remembered against older listings: far more than are deleted in the time
one listing takes."""


def _version(pod: Mapping[str, Any] | None) -> int | None:
    """The pod's ``metadata.resourceVersion`` as a number, or None (absent, or not the
    integer etcd gives: then no order is assumed and the pod is filed as given)."""
    raw = ((pod or {}).get("metadata") or {}).get("resourceVersion")
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def held_on(pod: Mapping[str, Any]) -> str:
    """The node ``pod`` holds room on ('' for none); see the module docstring."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if status.get("phase") in TERMINAL:
        return ""
    node = spec.get("nodeName")
    if node:
        return str(node)
    if status.get("phase", "Pending") == "Pending":
        return str(status.get("nominatedNodeName") or "")
    return ""


class NodeRoom:
    """Per node, the requests of the pods holding room there; fed with every Pod change."""

    def __init__(self) -> None:
        self.space = ResourceSpace()
        self._where: dict[Key, str] = {}
        # node -> pod key -> (request, schedulerName if held by nomination, else None)
        self._held: dict[str, dict[Key, tuple[Vector, str | None]]] = {}
        # the resourceVersion of each pod's state filed last, and of the pods deleted
        # (bounded, oldest first out): a listing older than either must not undo them
        self._version: dict[Key, int] = {}
        self._gone: dict[Key, int] = {}

    def pod_changed(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A watch event (or our own bind seen before its event): re-file the pod."""
        key = _key(new if new is not None else old or {})
        if new is None:
            self._version.pop(key, None)
            deleted_at = _version(old)
            if deleted_at is not None:
                self._gone.pop(key, None)
                self._gone[key] = deleted_at
                if len(self._gone) > _GONE_KEPT:
                    del self._gone[next(iter(self._gone))]
        else:
            version = _version(new)
            if version is not None:
                self._version[key] = version
            self._gone.pop(key, None)
        node = self._where.pop(key, None)
        if node is not None:
            holders = self._held[node]
            holders.pop(key, None)
            if not holders:
                del self._held[node]
        if new is None:
            return
        node = held_on(new)
        if not node:
            return
        try:
            request = parsing.pod_request(new.get("spec") or {}, self.space)
        except FieldError:
            return
        spec = new.get("spec") or {}
        nominated = None if spec.get("nodeName") else str(spec.get("schedulerName") or "")
        self._where[key] = node
        self._held.setdefault(node, {})[key] = (request, nominated)

    def listed(self, pods: Iterable[Mapping[str, Any]]) -> None:
        """A fresh listing of one node's pods (``fieldSelector spec.nodeName``): re-file each.

        A watch can lag the API server by far longer than a list takes, so just before a
        bind the caller lists the node's pods and hands them here. Pods missing from the
        listing are kept: they may be our own binds still in flight, and the watch
        removes the ones that are gone. The watch can also be ahead of the listing: a pod
        whose deletion (or a later state) was filed after the listing was read is not
        filed again from it, or it would hold room it left for good (no later event
        would remove it).
        """
        for pod in pods:
            key, version = _key(pod), _version(pod)
            if version is not None:
                gone, known = self._gone.get(key), self._version.get(key)
                if (gone is not None and version <= gone) or (
                    known is not None and version < known
                ):
                    continue
            self.pod_changed(None, pod)

    def shortfall(self, node: Mapping[str, Any], pod: Mapping[str, Any]) -> str | None:
        """Why ``pod`` does not fit on ``node`` beside the other holders, or None if it fits.

        Only what the pod requests is compared, as the kubelet does. A node or pod that
        cannot be read, or a node without ``status.allocatable``, is not refused here.
        """
        name = str((node.get("metadata") or {}).get("name") or "")
        if not (node.get("status") or {}).get("allocatable"):
            return None
        try:
            allocatable = reading.read_node(node, self.space)[1]
            request = parsing.pod_request(pod.get("spec") or {}, self.space)
        except FieldError:
            return None
        width = self.space.width
        me = _key(pod)
        mine = str((pod.get("spec") or {}).get("schedulerName") or "")
        used = np.zeros(width, dtype=np.int64)
        for key, (held, nominated_by) in self._held.get(name, {}).items():
            if key != me and (nominated_by is None or nominated_by != mine):
                used += widen(held, width)
        free = widen(allocatable, width) - used
        request = widen(request, width)
        short = [int(c) for c in np.nonzero((request > 0) & (request > free))[0]]
        if not short:
            return None
        what = ", ".join(
            f"{self.space.names[c]} {format_amount(c, float(request[c]))} requested, "
            f"{format_amount(c, float(max(free[c], 0)))} free"
            for c in short
        )
        return (
            f"node {name} has no room for pod {me[0]}/{me[1]} any more ({what}): "
            f"pods bound or nominated there since the decision hold it"
        )
