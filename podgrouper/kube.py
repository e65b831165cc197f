"""The podgrouper's Events: its source name and the Event body it writes.

Why this module exists: every Event the podgrouper writes (a workload it cannot group,
a PodGroup it cannot write) names the same source, ``podgrouper``, so users can filter
them. The API it calls through, and its error tree, are :mod:`kubeapi`'s
(:mod:`kubeapi.protocol`, :mod:`kubeapi.errors`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from kubeapi import objects
from kubeapi.objects import Object

EVENT_SOURCE = "podgrouper"


def event_body(
    involved: Mapping[str, Any],
    event_type: str,
    reason: str,
    message: str,
    now: datetime.datetime | None = None,
) -> Object:
    """A core/v1 Event about ``involved`` from the podgrouper."""
    return objects.event_body(involved, event_type, reason, message, now, EVENT_SOURCE)
