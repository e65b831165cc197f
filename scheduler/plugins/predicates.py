"""Node filters: node selector, required node affinity, taints and tolerations.

Why: these are kube-scheduler's rules for where a pod may run at all; the
engine evaluates each once per distinct set of pod constraints and caches the
resulting node mask, so a gang of identical pods pays for it once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scheduler.api.labels import requirement_matches
from scheduler.api.nodes import NodeMeta
from scheduler.api.pods import PodInfo
from scheduler.framework import extension_points as ep
from scheduler.framework.node_memo import per_table
from scheduler.framework.session import Session


def _match_expression(labels: Mapping[str, str], expr: Mapping[str, Any], name: str) -> bool:
    key = expr.get("key", "")
    values = tuple(str(v) for v in expr.get("values") or ())
    value = name if key == "metadata.name" else labels.get(key)
    return requirement_matches(value, str(expr.get("operator", "")), values)


def matches_node_affinity(node: NodeMeta, required: Mapping[str, Any] | None) -> bool:
    """Required node affinity: terms are ORed, expressions inside a term ANDed."""
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or ()
    if not terms:
        return False
    for term in terms:
        expressions = list(term.get("matchExpressions") or ())
        fields = list(term.get("matchFields") or ())
        if not expressions and not fields:
            continue
        if all(_match_expression(node.labels, e, node.name) for e in expressions) and all(
            _match_expression({}, f, node.name) for f in fields
        ):
            return True
    return False


def matches_label_selector(labels: Mapping[str, str], selector: Mapping[str, Any]) -> bool:
    """A ``LabelSelector`` object: every ``matchLabels`` pair and ``matchExpressions`` term."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_match_expression(labels, e, "") for e in selector.get("matchExpressions") or ())


def tolerates(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key")
        operator = toleration.get("operator", "Equal")
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        if operator == "Exists" or toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def tolerates_node(node: NodeMeta, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    return all(
        tolerates(taint, tolerations)
        for taint in node.taints
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def node_selector_mask(meta: Sequence[NodeMeta], selector: Mapping[str, str]) -> ep.Mask:
    """Nodes carrying every label of a pod's ``nodeSelector``."""
    pairs = selector.items()
    return np.array([all(node.labels.get(k) == v for k, v in pairs) for node in meta], dtype=bool)


def node_affinity_mask(meta: Sequence[NodeMeta], required: Mapping[str, Any]) -> ep.Mask:
    """Nodes a pod's required node affinity admits."""
    return np.array([matches_node_affinity(node, required) for node in meta], dtype=bool)


def toleration_mask(meta: Sequence[NodeMeta], tolerations: Sequence[Mapping[str, Any]]) -> ep.Mask:
    """Nodes whose NoSchedule/NoExecute taints the pod tolerates."""
    return np.array([tolerates_node(node, tolerations) for node in meta], dtype=bool)


_KEPT_MASKS = 4096
"""Distinct pod rules whose masks a node table keeps (each a bool per node)."""


def _masks(meta: Sequence[NodeMeta], pod: PodInfo, has_taints: bool) -> list[tuple[ep.Mask, str]]:
    """The pod's node-selector, node-affinity and toleration masks with their reasons; each
    mask read-only, since it is shared from cycle to cycle."""
    parts: list[tuple[ep.Mask, str]] = []
    if pod.node_selector:
        mask = node_selector_mask(meta, pod.node_selector)
        parts.append((mask, "node(s) didn't match Pod's node selector"))
    if pod.node_affinity:
        mask = node_affinity_mask(meta, pod.node_affinity)
        parts.append((mask, "node(s) didn't match Pod's node affinity"))
    if has_taints:
        mask = toleration_mask(meta, pod.tolerations)
        parts.append((mask, "node(s) had untolerated taint"))
    for mask, _ in parts:
        mask.flags.writeable = False
    return parts


class PredicatesPlugin:
    """Registers the node-selector, node-affinity and taint filters."""

    name = "predicates"

    def on_session_open(self, session: Session) -> None:
        nodes = session.snapshot.nodes
        meta = nodes.meta
        has_taints = per_table(nodes, "has-taints", lambda: any(node.taints for node in meta))
        # the pod's rules (its constraint key, as the session's mask cache keys them) -> its
        # masks: they read only the nodes' names, labels and taints, so they are kept with
        # the node table from cycle to cycle (a pending pod's affinity is otherwise matched
        # against every node in every cycle)
        kept: dict[object, list[tuple[ep.Mask, str]]] = per_table(nodes, "predicates.masks", dict)

        def node_filter(pod: PodInfo) -> list[tuple[ep.Mask, str]]:
            key = pod.constraint_key
            parts = kept.get(key)
            if parts is None:
                if len(kept) >= _KEPT_MASKS:
                    kept.clear()  # bounded: pods pinned one by one would each add one
                parts = kept[key] = _masks(meta, pod, has_taints)
            return list(parts)

        session.add_node_filter(node_filter)
