"""What makes a PodGroup or a Queue acceptable: pure functions, no API server.

Why this module exists: a PodGroup whose subgroups form a cycle, or a Queue tree with a
loop or a missing parent, is accepted by the CRD schema yet leaves the scheduler
unable to place anything. The admission webhook refuses such objects at the door; the
rules live here, apart from the HTTP edge (:mod:`webhooks.server`), so each can be
tested with bad inputs directly. Every problem is an :class:`~crds.errors.InputError`
naming the object and the field, the project's one-line error format.

PodGroup (KAI's validating webhook, plus ``minMember`` >= 1):

* subgroup names are unique; every ``parent`` names a subgroup of the same PodGroup;
  following parents never comes back to a subgroup (no cycles);
* ``spec.minMember`` and every subgroup's ``minMember``, when set, are >= 1.

Queue (KAI rejects a Queue without ``spec.resources``; podmuster also checks the tree
and the numbers):

* ``spec.resources`` is present;
* ``spec.parentQueue``, when set, names an existing Queue other than itself, and the
  new parent chain does not come back to this Queue;
* each of gpu/cpu/memory's ``quota``, ``limit`` and ``overQuotaWeight``, when set, is a
  number; ``quota`` is -1 (unlimited) or >= 0; ``limit`` is -1 (no limit) or >= 0
  (memory: any negative means unlimited, as in KAI); ``overQuotaWeight`` is >= 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import InputError, object_error
from crds.queue import QUEUE_RESOURCE_NAMES, UNLIMITED

__all__ = ["validate_podgroup", "validate_queue"]

Problems = list[InputError]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _min_member(obj: Mapping[str, Any], value: Any, field: str, problems: Problems) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(object_error(None, obj, field, f"must be an integer >= 1, got {value!r}"))


def validate_podgroup(obj: Mapping[str, Any]) -> Problems:
    """The problems of PodGroup ``obj`` (empty when it is acceptable)."""
    problems: Problems = []
    spec = _mapping(obj.get("spec"))
    _min_member(obj, spec.get("minMember"), "spec.minMember", problems)
    raw = spec.get("subGroups")
    if raw is None:
        return problems
    if not isinstance(raw, list):
        return [object_error(None, obj, "spec.subGroups", "must be a list")]
    first_index: dict[str, int] = {}
    parents: dict[str, str] = {}
    for index, entry in enumerate(raw):
        where = f"spec.subGroups[{index}]"
        sub = _mapping(entry)
        name = sub.get("name")
        if not isinstance(name, str) or not name:
            problems.append(object_error(None, obj, f"{where}.name", "must be a non-empty string"))
            continue
        if name in first_index:
            message = f"duplicate subgroup name {name!r} (also spec.subGroups[{first_index[name]}])"
            problems.append(object_error(None, obj, f"{where}.name", message))
            continue
        first_index[name] = index
        _min_member(obj, sub.get("minMember"), f"{where}.minMember", problems)
        parent = sub.get("parent")
        if parent not in (None, ""):
            parents[name] = str(parent)
    for name, parent in parents.items():
        if parent not in first_index:
            field = f"spec.subGroups[{first_index[name]}].parent"
            problems.append(object_error(None, obj, field, f"no subgroup named {parent!r}"))
    reported: set[str] = set()
    for start in parents:
        cycle = _cycle_from(start, parents)
        if cycle and not reported & set(cycle):
            reported |= set(cycle)
            field = f"spec.subGroups[{first_index[cycle[0]]}].parent"
            path = " -> ".join([*cycle, cycle[0]])
            problems.append(
                object_error(None, obj, field, f"subgroup parents form a cycle: {path}")
            )
    return problems


def _cycle_from(start: str, parents: Mapping[str, str]) -> list[str]:
    """The cycle reached by following parents from ``start`` (in order), or []."""
    seen: list[str] = []
    node: str | None = start
    while node is not None and node not in seen:
        seen.append(node)
        node = parents.get(node)
    if node is None:
        return []
    return seen[seen.index(node) :]


def validate_queue(obj: Mapping[str, Any], existing: Mapping[str, Mapping[str, Any]]) -> Problems:
    """The problems of Queue ``obj``, given the Queues that exist now by name.

    ``existing`` may contain the old version of ``obj`` itself (an update); the new
    version replaces it for the cycle check.
    """
    problems: Problems = []
    spec = _mapping(obj.get("spec"))
    name = str(_mapping(obj.get("metadata")).get("name") or "")
    resources = spec.get("resources")
    if resources is None:
        problems.append(
            object_error(None, obj, "spec.resources", "required (gpu, cpu and memory quotas)")
        )
    elif not isinstance(resources, Mapping):
        problems.append(object_error(None, obj, "spec.resources", "must be a mapping"))
    else:
        for resource in QUEUE_RESOURCE_NAMES:
            _queue_resource(obj, resource, resources.get(resource), problems)
    parent = spec.get("parentQueue")
    if parent in (None, ""):
        return problems
    parent = str(parent)
    if parent == name:
        problems.append(
            object_error(None, obj, "spec.parentQueue", "a queue cannot be its own parent")
        )
    elif parent not in existing:
        problems.append(object_error(None, obj, "spec.parentQueue", f"no Queue named {parent!r}"))
    else:
        chain = _ancestors(parent, existing, name)
        if name in chain:
            path = " -> ".join([name, *chain[: chain.index(name) + 1]])
            message = f"parent queues would form a cycle: {path}"
            problems.append(object_error(None, obj, "spec.parentQueue", message))
    return problems


def _ancestors(start: str, existing: Mapping[str, Mapping[str, Any]], stop: str) -> list[str]:
    """``start`` and its parents, up to the root, ``stop``, or a name seen twice."""
    chain: list[str] = []
    node = start
    while node and node not in chain:
        chain.append(node)
        if node == stop:
            break
        queue = existing.get(node)
        node = str(_mapping(_mapping(queue).get("spec")).get("parentQueue") or "")
    return chain


def _queue_resource(obj: Mapping[str, Any], resource: str, raw: Any, problems: Problems) -> None:
    if raw is None:
        return
    where = f"spec.resources.{resource}"
    if not isinstance(raw, Mapping):
        problems.append(
            object_error(None, obj, where, "must be a mapping of quota, limit, overQuotaWeight")
        )
        return
    for key in ("quota", "limit", "overQuotaWeight"):
        value = raw.get(key)
        if value is None:
            continue
        field = f"{where}.{key}"
        if not _is_number(value):
            unit = {"gpu": "devices", "cpu": "millicores", "memory": "MB"}[resource]
            message = f"must be a number of {unit}, got {value!r}"
            problems.append(object_error(None, obj, field, message))
        elif key == "overQuotaWeight" and value < 0:
            problems.append(object_error(None, obj, field, f"must be >= 0, got {value}"))
        elif key == "quota" and value < 0 and value != UNLIMITED:
            message = f"must be -1 (unlimited) or >= 0, got {value}"
            problems.append(object_error(None, obj, field, message))
        elif key == "limit" and value < 0 and value != UNLIMITED and resource != "memory":
            message = f"must be -1 (no limit) or >= 0, got {value}"
            problems.append(object_error(None, obj, field, message))
