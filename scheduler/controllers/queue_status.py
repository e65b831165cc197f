"""Each Queue's ``status`` from the queue tree and the PodGroups: pure, no API calls.

Why this module exists: KAI's queuecontroller shows on every queue what its
subtree asks for and holds (§2.3): ``childQueues`` (direct children, by name)
and ``allocated`` / ``allocatedNonPreemptible`` / ``requested``, each the sum of
the queue's own PodGroups' ``status.resourcesStatus`` and its children's
totals. The same numbers feed the ``kai_queue_*`` metrics.

A queue whose parent does not exist is a root of its own subtree here (the
scheduler drops orphans, but their status still tells users what they hold).
A parent cycle is broken at the first queue seen twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, Final

from crds import quantities
from scheduler.controllers.podgroup_status import Resources, format_resources

__all__ = ["FIELDS", "QueueTotals", "queue_statuses", "queue_totals"]

FIELDS: Final = ("allocated", "allocatedNonPreemptible", "requested")

QueueTotals = dict[str, dict[str, Resources]]
"""Queue name → field (``allocated``, ...) → resource → amount."""


def _parse(raw: Mapping[str, Any] | None) -> Resources:
    out: Resources = {}
    for name, value in (raw or {}).items():
        try:
            out[str(name)] = quantities.parse_quantity(
                value if isinstance(value, int | float) else str(value)
            )
        except (quantities.QuantityError, ValueError):
            continue  # a hand-written bad value must not stop the whole tree
    return out


def _add_into(into: Resources, amounts: Mapping[str, Fraction]) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _children(queues: Iterable[Mapping[str, Any]]) -> tuple[list[str], dict[str, list[str]]]:
    parents: dict[str, str] = {}
    for queue in queues:
        parents[_name(queue)] = str((queue.get("spec") or {}).get("parentQueue") or "")
    children: dict[str, list[str]] = {name: [] for name in parents}
    roots = []
    for name, parent in sorted(parents.items()):
        if parent and parent in parents and parent != name:
            children[parent].append(name)
        else:
            roots.append(name)
    return roots, children


def queue_totals(
    queues: Iterable[Mapping[str, Any]], podgroups: Iterable[Mapping[str, Any]]
) -> tuple[QueueTotals, dict[str, list[str]]]:
    """Rolled-up amounts per queue and each queue's direct children."""
    queues = list(queues)
    roots, children = _children(queues)
    own: QueueTotals = {name: {f: {} for f in FIELDS} for name in children}
    for group in podgroups:
        queue = str((group.get("spec") or {}).get("queue") or "")
        if queue not in own:
            continue
        status = (group.get("status") or {}).get("resourcesStatus") or {}
        for field in FIELDS:
            _add_into(own[queue][field], _parse(status.get(field)))
    totals: QueueTotals = {}

    def roll(name: str) -> None:
        # Iterative post-order: deep trees never hit the recursion limit.
        stack = [(name, False)]
        visiting: set[str] = set()
        while stack:
            current, expanded = stack.pop()
            if current in totals:
                continue
            if not expanded:
                if current in visiting:
                    continue  # a parent cycle: this edge is dropped
                visiting.add(current)
                stack.append((current, True))
                stack.extend((c, False) for c in children[current] if c not in totals)
                continue
            sums = {f: dict(own[current][f]) for f in FIELDS}
            for child in children[current]:
                for field in FIELDS:
                    _add_into(sums[field], totals.get(child, {}).get(field, {}))
            totals[current] = sums

    for root in roots:
        roll(root)
    for name in children:  # queues on a parent cycle are reachable from no root
        roll(name)
    return totals, children


def queue_statuses(
    queues: Iterable[Mapping[str, Any]], podgroups: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Queue name → the ``status`` fields this controller owns."""
    totals, children = queue_totals(queues, podgroups)
    return {
        name: {
            "childQueues": list(children[name]),
            **{field: format_resources(totals[name][field]) for field in FIELDS},
        }
        for name in sorted(totals)
    }
