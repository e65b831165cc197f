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

    def pod_changed(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """A watch event (or our own bind seen before its event): re-file the pod."""
        key = _key(new if new is not None else old or {})
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
        removes the ones that are gone.
        """
        for pod in pods:
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
