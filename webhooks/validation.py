"""What makes a PodGroup, a Queue or a Topology acceptable: pure functions, no API server.

Why this module exists: a PodGroup whose subgroups form a cycle, or a Queue tree with a
loop or a missing parent, is accepted by the CRD schema yet leaves the scheduler
unable to place anything. The admission webhook refuses such objects at the door; the
rules live here, apart from the HTTP edge (:mod:`webhooks.server`), so each can be
tested with bad inputs directly. Every problem is an :class:`~crds.errors.InputError`
naming the object and the field, the project's one-line error format.

Both kinds are first checked by their :mod:`crds` model, the same check the
scheduler applies when it reads them (unknown fields, types, ``minMember`` >= 0, a
quota or limit of -1 or >= 0, ``overQuotaWeight`` >= 0); a model error is the one
problem reported. Then:

PodGroup: the subgroups form a tree (:func:`crds.podgroup.subgroup_problems`: unique
names, every ``parent`` names a subgroup of the same PodGroup, no cycles), and
``minMember``/``minSubGroup`` are used as KAI v0.17 allows
(:func:`crds.podgroup.min_definition_problems`). As in KAI, some of the latter only
warn: ``minSubGroup`` above the number of children (create and update) and
``minMember`` on a mid-level subgroup (update only, so objects written before the
rule can still change).

Queue (KAI rejects a Queue without ``spec.resources``; podmuster also checks the tree):

* ``spec.resources`` is present;
* ``spec.parentQueue``, when set, names an existing Queue other than itself, and the
  new parent chain does not come back to this Queue.

Topology (as KAI's webhook, which checks the aliases; podmuster checks every rule
between levels the scheduler applies when it reads one, :func:`crds.topology.level_problems`):
node labels unique, ``kubernetes.io/hostname`` only last, aliases unique and none
equal to a node label. Every broken rule is reported, each at its own
``spec.levels[i]`` field, so one answer says all that must change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from crds import podgroup, queue, rules, topology
from crds.errors import InputError, from_validation_error, object_error

__all__ = ["podgroup_review", "validate_podgroup", "validate_queue", "validate_topology"]

Problems = list[InputError]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def validate_podgroup(obj: Mapping[str, Any], *, update: bool = False) -> Problems:
    """The problems of PodGroup ``obj`` (empty when it is acceptable)."""
    return podgroup_review(obj, update=update)[0]


def podgroup_review(obj: Mapping[str, Any], *, update: bool = False) -> tuple[Problems, Problems]:
    """``(errors, warnings)`` of PodGroup ``obj`` on create (or ``update``)."""
    try:
        model = podgroup.PodGroup.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [from_validation_error(None, obj, exc)], []
    errors, warnings = podgroup.admission_problems(model.spec, update=update)
    return (
        [object_error(None, obj, field, message) for field, message in errors],
        [object_error(None, obj, field, message) for field, message in warnings],
    )


def validate_queue(obj: Mapping[str, Any], existing: Mapping[str, Mapping[str, Any]]) -> Problems:
    """The problems of Queue ``obj``, given the Queues that exist now by name.

    ``existing`` may contain the old version of ``obj`` itself (an update); the new
    version replaces it for the cycle check.
    """
    try:
        model = queue.Queue.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [from_validation_error(None, obj, exc)]
    problems: Problems = []
    name = model.metadata.name
    if model.spec.resources is None:
        problems.append(
            object_error(None, obj, "spec.resources", "required (gpu, cpu and memory quotas)")
        )
    try:
        rules.admission_gate_opt_in(model.metadata.annotations or {})
    except rules.RuleError as exc:
        problems.append(object_error(None, obj, exc.field, exc.message))
    parent = model.parent()
    if parent is None:
        return problems
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


def validate_topology(obj: Mapping[str, Any]) -> Problems:
    """The problems of Topology ``obj`` (empty when it is acceptable)."""
    try:
        model = topology.Topology.model_validate(
            obj, context={topology.LEVELS_CHECKED_BY_CALLER: True}
        )
    except pydantic.ValidationError as exc:
        return [from_validation_error(None, obj, exc)]
    return [
        object_error(None, obj, f"spec.{field}", message)
        for field, message in topology.level_problems(model.spec.levels)
    ]


def _ancestors(start: str, existing: Mapping[str, Mapping[str, Any]], stop: str) -> list[str]:
    """``start`` and its parents, up to the root, ``stop``, or a name seen twice."""
    chain: list[str] = []
    node = start
    while node and node not in chain:
        chain.append(node)
        if node == stop:
            break
        parent = _mapping(existing.get(node)).get("spec")
        node = str(_mapping(parent).get("parentQueue") or "")
    return chain
