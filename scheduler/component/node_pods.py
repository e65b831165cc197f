"""A fresh read of one node's pods, for the bind-time room check.

Why this module exists: the binder and the scheduler's direct binds both check, just
before ``pods/binding``, that the node still has room (:mod:`scheduler.cache.room`).
Their Pod watch may lag the API server; another scheduler's bind of a moment ago is seen
only by a read. This lists the node's pods (``fieldSelector=spec.nodeName``, served
consistently by the API server) into the room, so both components read the same way.
Until a pod of another scheduler has been seen, there is no one to race and no list is
made (DaemonSet pods aside, each bound once to its own node). A failed read leaves the
room as the watch made it: the check still runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubeapi.errors import ApiError
from kubeapi.protocol import KubeReader
from scheduler.cache.room import NodeRoom

log = logging.getLogger("podmuster.room")


async def refresh(room: NodeRoom, api: KubeReader, node: str, pod: Mapping[str, Any]) -> None:
    """File the pods the API server has bound to ``node`` now in ``room``, before ``pod``
    is bound there; nothing while no other scheduler has been seen (:meth:`NodeRoom.shared`)."""
    if not room.shared(pod):
        return
    try:
        pods = await api.list("v1", "Pod", "", fields={"spec.nodeName": node})
    except ApiError as exc:
        log.debug("listing the pods of node %s for its room: %s", node, exc)
        return
    room.listed(pods)
