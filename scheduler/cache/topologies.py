"""Readers for Topology CRs and the ``topologyConstraint`` fields of PodGroups (§2.1, §2.5).

Why: the apiserver enforces the Topology CRD's rules, but offline snapshots
and hand-written PodGroups reach the engine unchecked; a bad level or a
constraint field of the wrong type must become a ``FieldError`` naming the
field, so the cache keeps that one object out and serves the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds import topology
from crds.errors import shown
from scheduler.api.topology import TopologyConstraintInfo, TopologyInfo, TopologyTree
from scheduler.cache.parsing import FieldError, validated


def read_topology(body: Mapping[str, Any]) -> TopologyInfo:
    """A Topology's name, levels and level aliases, checked by its model
    (:class:`crds.topology.Topology`), a broken rule between levels at its own field."""
    model = validated(topology.Topology, body, {topology.LEVELS_CHECKED_BY_CALLER: True})
    for field, message in topology.level_problems(model.spec.levels)[:1]:
        raise FieldError(f"spec.{field}", message)
    return TopologyInfo(model.metadata.name, tuple(model.spec.node_labels()), model.spec.aliases())


def read_constraint(raw: Any, field: str) -> TopologyConstraintInfo | None:
    """One ``topologyConstraint``; None when absent or without a topology name (KAI ignores it)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise FieldError(field, "expected a map with topology, requiredTopologyLevel, ...")
    values: dict[str, str] = {}
    for key in ("topology", "requiredTopologyLevel", "preferredTopologyLevel"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise FieldError(f"{field}.{key}", f"expected a string, got {shown(value)}")
        values[key] = value or ""
    if not values["topology"]:
        return None
    return TopologyConstraintInfo(
        values["topology"], values["requiredTopologyLevel"], values["preferredTopologyLevel"]
    )


def read_topology_tree(spec: Mapping[str, Any]) -> TopologyTree | None:
    """The constraints of a PodGroup and its subgroups, or None when there are none."""
    root = read_constraint(spec.get("topologyConstraint"), "spec.topologyConstraint")
    constraints: dict[str, TopologyConstraintInfo] = {}
    parents: dict[str, str] = {}
    subgroups = spec.get("subGroups") or []
    if isinstance(subgroups, list):  # the pod-set reader reports a malformed list
        for i, sub in enumerate(subgroups):
            if not isinstance(sub, Mapping):
                continue
            name = str(sub.get("name") or "").lower()
            parents[name] = str(sub.get("parent") or "").lower()
            constraint = read_constraint(
                sub.get("topologyConstraint"), f"spec.subGroups[{i}].topologyConstraint"
            )
            if constraint is not None:
                constraints[name] = constraint
    if root is None and not constraints:
        return None
    return TopologyTree(root, constraints, parents)
