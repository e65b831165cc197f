"""Build the queue tree from Queue objects: units, special values, orphans and cycles.

Why: KAI's queue semantics hide in small rules (memory in MB, ``-1`` unlimited,
limit 0 or unset is a hard cap of 0, orphans dropped with their subtree);
applying them once here means the rest of the engine sees only engine units.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from crds import rules
from crds.errors import shown
from scheduler.api.queues import UNLIMITED, QueueInfo, QueueTree
from scheduler.api.resources import GPU_UNIT, QUEUE_RESOURCES
from scheduler.cache.parsing import FieldError, string_map
from scheduler.config import ConfigError, parse_duration

DEFAULT_QUEUE_PRIORITY = 100
_SCALE = {"gpu": float(GPU_UNIT), "cpu": 1.0, "memory": 1e6}


def _number(raw: Any, field: str) -> float:
    if raw is None:
        return 0.0
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        try:
            return float(str(raw))
        except ValueError:
            raise FieldError(field, f"expected a number, got {shown(raw)}") from None
    return float(raw)


def _to_engine(resource: str, value: float, *, clamp_negative: bool) -> float:
    if value == -1 or (clamp_negative and value < 0):
        return UNLIMITED
    return value * _SCALE[resource]


def queue_info(obj: Mapping[str, Any], creation: float, uid: str) -> QueueInfo:
    """One Queue object in engine units (docs/semantics.md §2.3)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise FieldError("spec", "expected a map")
    resources = spec.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise FieldError("spec.resources", "expected a map")
    values: dict[str, list[float]] = {"quota": [], "limit": [], "overQuotaWeight": []}
    for resource in QUEUE_RESOURCES:
        block = resources.get(resource) or {}
        if not isinstance(block, Mapping):
            raise FieldError(f"spec.resources.{resource}", "expected a map")
        for key, out in values.items():
            number = _number(block.get(key), f"spec.resources.{resource}.{key}")
            if key == "overQuotaWeight":
                if number < 0:
                    raise FieldError(f"spec.resources.{resource}.{key}", "must not be negative")
                out.append(number)
            else:
                out.append(_to_engine(resource, number, clamp_negative=resource == "memory"))
    priority = spec.get("priority", DEFAULT_QUEUE_PRIORITY)
    if priority is None:
        priority = DEFAULT_QUEUE_PRIORITY
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise FieldError("spec.priority", f"expected an integer, got {shown(priority)}")
    parent = spec.get("parentQueue") or None
    return QueueInfo(
        name=str(meta.get("name")),
        parent=str(parent) if parent else None,
        priority=priority,
        creation=creation,
        uid=uid,
        deserved=np.array(values["quota"], dtype=np.float64),
        limit=np.array(values["limit"], dtype=np.float64),
        over_quota_weight=np.array(values["overQuotaWeight"], dtype=np.float64),
        display_name=str(spec.get("displayName") or ""),
        preempt_min_runtime=_runtime(spec, "preemptMinRuntime"),
        reclaim_min_runtime=_runtime(spec, "reclaimMinRuntime"),
        admission_gate=_admission_gate(meta),
    )


def _admission_gate(meta: Mapping[str, Any]) -> bool:
    annotations = string_map(meta.get("annotations"), "metadata.annotations")
    try:
        return rules.admission_gate_opt_in(annotations)
    except rules.RuleError as exc:
        raise FieldError(exc.field, exc.message) from None


def _runtime(spec: Mapping[str, Any], key: str) -> float | None:
    """A queue's minimum runtime in seconds, or None when unset (a negative value means 0)."""
    raw = spec.get(key)
    if raw in (None, ""):
        return None
    try:
        return max(0.0, parse_duration(raw, f"spec.{key}"))
    except ConfigError as exc:
        raise FieldError(f"spec.{key}", str(exc).split(": ", 1)[-1]) from None


def build_tree(infos: list[QueueInfo], invalid: Mapping[str, str] | None = None) -> QueueTree:
    """Link parents and children; drop orphans and cycles with their subtrees.

    ``invalid``: queues that exist but could not be read (name -> why); they are dropped
    with that reason, so their jobs and children are told so, not that they do not exist.
    """
    by_name = {q.name: q for q in infos}
    dropped: dict[str, str] = {
        name: why for name, why in (invalid or {}).items() if name not in by_name
    }

    def problem(name: str, seen: set[str]) -> str | None:
        queue = by_name[name]
        if queue.parent is None:
            return None
        if queue.parent in dropped:
            return f"its ancestor queue {queue.parent!r} was dropped ({dropped[queue.parent]})"
        if queue.parent not in by_name:
            return f"its parent queue {queue.parent!r} does not exist"
        if queue.parent in seen:
            return f"queue {name!r} is part of a parent cycle"
        return problem(queue.parent, seen | {name})

    for name in sorted(by_name):
        reason = problem(name, set())
        if reason is not None:
            dropped[name] = reason
    kept = {name: q for name, q in by_name.items() if name not in dropped}
    for queue in kept.values():
        queue.children = []
    for queue in sorted(kept.values(), key=lambda q: (q.creation, q.name)):
        if queue.parent is not None:
            kept[queue.parent].children.append(queue.name)
    roots = [
        q.name
        for q in sorted(kept.values(), key=lambda q: (q.creation, q.name))
        if q.parent is None
    ]
    return QueueTree(queues=kept, roots=roots, dropped=dropped)
