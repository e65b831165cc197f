"""A fresh read of one node's pods, for the bind-time room check.

Why this module exists: the binder and the scheduler's direct binds both check, just
before ``pods/binding``, that the node still has room (:mod:`scheduler.cache.room`).
Their Pod watch may lag the API server; another scheduler's bind of a moment ago is seen
only by a read. This lists the node's pods (``fieldSelector=spec.nodeName``, served
consistently by the API server) into the room, so both components read the same way.
The list is made before every bind: skipping it until the watch has shown another
scheduler's pod is unsound, since the watch may not yet show the first one (an e2e run
under load bound a pod onto a node kube-scheduler had just filled that way). A failed
read leaves the room as the watch made it: the check still runs.

The list's ``resourceVersion`` is returned: the revision the check was made at, which
each bind logs (``checked_at``). Another scheduler's bind after it is not in the check
(docs/semantics.md §5.10, Limits); with the revision that case can be told from a bad
check.
"""

from __future__ import annotations

import logging

from kubeapi.errors import ApiError
from kubeapi.protocol import KubeWatcher
from scheduler.cache.room import NodeRoom

log = logging.getLogger("podmuster.room")


async def refresh(room: NodeRoom, api: KubeWatcher, node: str) -> str | None:
    """File the pods the API server has bound to ``node`` now in ``room``, before a pod is
    bound there; the revision they were read at, or None when the read failed."""
    try:
        listing = await api.list_all("v1", "Pod", "", fields={"spec.nodeName": node})
    except ApiError as exc:
        log.debug("listing the pods of node %s for its room: %s", node, exc)
        return None
    room.listed(listing.items)
    return listing.resource_version or None
