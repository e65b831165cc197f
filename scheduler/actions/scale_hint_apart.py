"""Which of a gang's pods must be apart, for the scale-up hint: at most ``cap`` per domain.

Why this module exists: the scale-up hint (``scale_hint``) packs a gang's shortfall onto
free room and onto new nodes by resources. A gang whose pods are required anti-affine to
each other (``podAntiAffinity`` per ``kubernetes.io/hostname``: one pod per node) cannot
be packed several to a node, so a resource-only count asks for too few nodes. The rules
themselves live in the engine's plugin (:mod:`scheduler.plugins.pod_affinity`,
docs/semantics.md §14): the hint asks it, through the session's dynamic constraints,
which existing nodes a pod may use as the cycle stands (nodes already holding a pod the
rule matches drop out). What it cannot ask the plugin is how the gang's own pods, none
placed yet, limit each other; that is what :func:`apart_rules` states, as "at most
``cap`` of these tasks in one domain of ``key``": a required anti-affinity term of a task
that selects tasks of the gang makes the term's owners and the tasks it selects one per
domain of its ``topologyKey`` (one pod selected by the term and one owning it may not
share the domain, either way round; taking them all as one group is exact when the owners
are the pods selected, the common case of N identical workers, and asks for more room
than needed otherwise).

A topology spread constraint is not such a rule: it lets a node take a second pod once
every eligible node holds one, a level only the plugin's per-node counts know, so the
hint packs spread pods by resources (it may then ask for too few nodes; asking a node per
pod would ask for far too many wherever every node can take a pod).

New nodes count as domains of their own for every key: the hint says so for keys other
than hostname (a new node's zone is not ours to choose).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.affinity import PodTerm
from scheduler.api.namespaces import namespace_lookup
from scheduler.api.pods import PodInfo
from scheduler.framework import extension_points as ep
from scheduler.framework.domains import domains
from scheduler.framework.session import Session


@dataclass(frozen=True, slots=True)
class Apart:
    """At most ``cap`` of the tasks ``members`` (indices) in one domain of ``key``."""

    key: str
    members: frozenset[int]
    cap: int

    def domain_of(self, session: Session, columns: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """The domain of ``key`` of each node column; a node without the key is a domain
        of its own (negative ids), as the plugin lets such a node pass anti-affinity."""
        found = domains(session.snapshot.nodes, self.key)
        of = found.of_node[columns].copy()
        missing = ~found.has_key[columns]
        of[missing] = -1 - np.flatnonzero(missing)
        return of


def apart_rules(session: Session, tasks: Sequence[PodInfo]) -> list[Apart]:
    """The rules by which the gang's tasks limit each other (see the module docstring)."""
    ns_labels = namespace_lookup(session.snapshot.namespace_labels)

    owners: dict[PodTerm, set[int]] = {}
    for i, task in enumerate(tasks):
        if task.pod_affinity is not None:
            for term in task.pod_affinity.anti_affinity:
                owners.setdefault(term, set()).add(i)
    rules: list[Apart] = []
    for term, owned in owners.items():
        selected = {
            i for i, t in enumerate(tasks) if term.matches(t.namespace, t.labels, ns_labels)
        }
        if selected:
            rules.append(Apart(term.topology_key, frozenset(owned | selected), 1))
    return rules


def room_masks(
    session: Session, tasks: Sequence[PodInfo], masks: Sequence[ep.Mask]
) -> list[ep.Mask]:
    """Per task, the nodes whose free room it may use now: its static ``masks`` narrowed by
    the plugins' placement-dependent rules as the cycle stands (anti-affinity to pods
    already there, spread counts). Shapes are judged by the static masks alone: a new
    node holds no pods."""
    if not session.dynamic_constraints:
        return list(masks)
    out: list[ep.Mask] = []
    # A gang's workers differ in name only: the rules see a pod's constraints, namespace
    # and labels, so identical ones are asked once.
    seen: dict[object, ep.Mask] = {}
    for task, mask in zip(tasks, masks, strict=True):
        key = (
            task.constraint_key,
            task.namespace,
            task.pod_affinity,
            task.spread,
            tuple(sorted(task.labels.items())),
        )
        narrowed = seen.get(key)
        if narrowed is None:
            parts, _ = session.dynamic_constraint(task)
            narrowed = mask.copy()
            for part, _reason in parts:
                narrowed &= part
            seen[key] = narrowed
        out.append(narrowed)
    return out
