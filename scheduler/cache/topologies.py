"""Readers for Topology CRs and the ``topologyConstraint`` fields of PodGroups (§2.1, §2.5).

Why: the apiserver enforces the Topology CRD's rules, but offline snapshots
and hand-written PodGroups reach the engine unchecked; a bad level or a
constraint field of the wrong type must become a ``FieldError`` naming the
field, so the cache keeps that one object out and serves the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from crds.topology import HOSTNAME_LABEL, LABEL_KEY_PATTERN, MAX_LEVELS
from scheduler.api.topology import TopologyConstraintInfo, TopologyInfo, TopologyTree
from scheduler.cache.parsing import FieldError

_LABEL_KEY = re.compile(LABEL_KEY_PATTERN)
_MAX_LABEL_LENGTH = 316


def read_topology(body: Mapping[str, Any]) -> TopologyInfo:
    """A Topology's name and levels; every CRD rule that needs no previous version is checked."""
    meta = body.get("metadata") or {}
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise FieldError("spec", "is required (a map with levels)")
    levels = spec.get("levels")
    if not isinstance(levels, list) or not levels:
        raise FieldError("spec.levels", "expected a non-empty list of {nodeLabel}")
    if len(levels) > MAX_LEVELS:
        raise FieldError("spec.levels", f"at most {MAX_LEVELS} levels, got {len(levels)}")
    labels: list[str] = []
    for i, level in enumerate(levels):
        field = f"spec.levels[{i}].nodeLabel"
        label = level.get("nodeLabel") if isinstance(level, Mapping) else None
        if not isinstance(label, str) or not label:
            raise FieldError(field, "is required (a node label key)")
        if len(label) > _MAX_LABEL_LENGTH or not _LABEL_KEY.match(label):
            raise FieldError(field, f"{label!r} is not a valid label key")
        if label in labels:
            raise FieldError(field, f"duplicate level {label!r}")
        if label == HOSTNAME_LABEL and i != len(levels) - 1:
            raise FieldError(field, f"{HOSTNAME_LABEL} may only be the last level")
        labels.append(label)
    return TopologyInfo(str(meta.get("name")), tuple(labels))


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
            raise FieldError(f"{field}.{key}", f"expected a string, got {value!r}")
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
