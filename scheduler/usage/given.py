"""Queue usage given as input (``podmuster schedule --usage FILE``), validated.

Why this module exists: an offline cycle has no history to measure, so the user
states each queue's usage directly, already normalised as KAI does (a share of
the cluster's capacity over the window: 0.25 = a quarter of the cluster for the
whole window). The file is a mapping ``usage: {QUEUE: {gpu: U, cpu: U, memory:
U}}``; a resource left out is 0, a queue left out used nothing. Errors name the
file, the queue and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from scheduler.usage.window import Vector

RESOURCES = ("gpu", "cpu", "memory")


def parse_given_usage(data: Any, source: str) -> dict[str, Vector]:
    """The ``usage`` section of a usage file; ``ValueError`` naming the bad entry."""
    if not isinstance(data, Mapping) or set(data) != {"usage"}:
        raise ValueError(f"{source}: expected one top-level key, usage")
    section = data["usage"] or {}
    if not isinstance(section, Mapping):
        raise ValueError(f"{source}: usage: expected a mapping of queue name to usage")
    usage: dict[str, Vector] = {}
    for queue, entry in section.items():
        where = f"{source}: usage.{queue}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: expected a mapping of gpu, cpu, memory to a number")
        for name in entry:
            if name not in RESOURCES:
                raise ValueError(f"{where}.{name}: unknown resource; use gpu, cpu or memory")
        values = []
        for name in RESOURCES:
            raw = entry.get(name, 0.0)
            if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
                raise ValueError(f"{where}.{name}: expected a number >= 0, got {shown(raw)}")
            values.append(float(raw))
        usage[str(queue)] = (values[0], values[1], values[2])
    return usage
