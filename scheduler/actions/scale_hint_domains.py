"""Where a gang with a required topology level may take new nodes: one domain of that level.

Why this module exists: a gang whose PodGroup requires a level (say, one rack) starts
only when all its pods fit inside one domain of that level. Free room spread over
several racks does not help it, and new nodes help only if they join the rack that
also holds the rest. The scale-up hint (``scale_hint``) therefore packs the gang per
domain: this module says which domains are candidates (every task has a node there
its selectors, affinity and taints allow; a group whose running pods already sit in
one domain is pinned to it, as placement pins it) and, for all of them at once, which
tasks do not fit each one's free room (first-fit decreasing, one array pass per task).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_USED, PodInfo
from scheduler.api.resources import Vector
from scheduler.api.topology import build_domain_tree
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session

IntArray = npt.NDArray[np.intp]
BoolMatrix = npt.NDArray[np.bool_]
ApartColumns = tuple[npt.NDArray[np.bool_], IntArray, int]  # members, key domain per column, cap


@dataclass(frozen=True, slots=True)
class DomainScope:
    """The candidate domains of a gang's required level and the nodes in play.

    ``domain_of_column[c]`` is the candidate index (into ``ids``) of node ``columns[c]``;
    the columns go domain by domain, in node order within each.
    """

    topology: str
    level: str
    ids: list[str]
    levels: tuple[str, ...]  # the node labels from the top level down to ``level``
    columns: IntArray
    domain_of_column: IntArray

    def labels(self, domain: int) -> dict[str, str]:
        """The level labels a new node of candidate ``domain`` carries."""
        return dict(zip(self.levels, self.ids[domain].split("/"), strict=True))


def domain_scope(
    session: Session, job: PodGroupInfo, tasks: Sequence[PodInfo], masks: Sequence[ep.Mask]
) -> DomainScope | str | None:
    """The gang's candidate domains, None when it requires no level, or why new nodes
    cannot help (its Topology does not exist, or the level is not one of its levels)."""
    tree = job.topology_tree
    constraint = tree.root if tree is not None else None
    if constraint is None or not constraint.required:
        return None
    topology = session.snapshot.topologies.get(constraint.topology)
    if topology is None:
        return f"topology {constraint.topology} does not exist"
    nodes = session.snapshot.nodes
    dtree = build_domain_tree(nodes, topology)
    level = dtree.level_index(constraint.required)
    if level is None:
        return f"{constraint.required} is not a level of topology {topology.name}"
    of_node = dtree.levels[level].of_node
    count = len(dtree.levels[level])
    allowed = np.ones(count, dtype=bool)
    seen: set[object] = set()
    for task, mask in zip(tasks, masks, strict=True):
        if task.constraint_key in seen:
            continue
        seen.add(task.constraint_key)
        inside = mask & (of_node >= 0)
        allowed &= np.bincount(of_node[inside], minlength=count) > 0
    placing = {id(t) for t in tasks}
    active = [p.node for p in job.iter_pods()
              if p.status in ACTIVE_USED and p.node >= 0 and id(p) not in placing]  # fmt: skip
    if active:
        pinned = np.zeros(count, dtype=bool)
        pinned[list(dtree.domains_of(level, active))] = True
        allowed &= pinned
    candidates = np.flatnonzero(allowed)
    index = np.full(count, -1, dtype=np.intp)
    index[candidates] = np.arange(len(candidates))
    columns = np.flatnonzero(nodes.schedulable & (of_node >= 0))
    columns = columns[index[of_node[columns]] >= 0]
    columns = columns[np.argsort(index[of_node[columns]], kind="stable")]  # domain by domain
    return DomainScope(
        topology.name,
        topology.levels[level],  # the node label, also when the constraint names an alias
        [dtree.levels[level].ids[d] for d in candidates],
        topology.levels[: level + 1],
        columns,
        index[of_node[columns]],
    )


def shortfalls(
    free: npt.NDArray[np.int64],
    requests: Sequence[Vector],
    masks: Sequence[ep.Mask],
    domain_of_column: IntArray,
    domains: int,
    apart: Sequence[ApartColumns] = (),
) -> BoolMatrix:
    """``left[d, t]``: task ``t`` does not fit the free room of domain ``d``.

    ``free`` (resources x columns, columns grouped by domain; not changed) is packed
    first-fit on a copy: each task, in the given order, takes the first column of each
    domain where it fits (``masks[t]`` over the columns says where it may go). With
    one domain this is plain first-fit decreasing over all the columns. ``apart``:
    (members over the tasks in the given order, each column's domain of the rule's key,
    cap): a member takes no column whose key domain already holds ``cap`` members.
    """
    left = np.ones((domains, len(requests)), dtype=bool)
    if not requests:
        return left
    rows = np.flatnonzero((np.array(requests) > 0).any(axis=0))  # only what is asked for
    room = free[rows]
    held = []  # per rule: members taken per (candidate domain, key domain)
    for _members, key_of_column, _cap in apart:
        _, index = np.unique(key_of_column, return_inverse=True)
        held.append((index.reshape(-1), np.zeros((domains, int(index.max(initial=-1)) + 1))))
    for t, (request, mask) in enumerate(zip(requests, masks, strict=True)):
        need = request[rows]
        allowed = mask
        for (members, _key, cap), (index, counts) in zip(apart, held, strict=True):
            if members[t]:
                allowed = allowed & (counts[domain_of_column, index] < cap)
        fits = np.flatnonzero((room >= need[:, None]).all(axis=0) & allowed)
        if not fits.size:
            continue
        if domains == 1:
            first = fits[:1]
        else:  # the first fitting column of each domain: where the domain changes
            of = domain_of_column[fits]
            first = fits[np.flatnonzero(np.concatenate(([True], of[1:] != of[:-1])))]
        room[:, first] -= need[:, None]
        left[domain_of_column[first], t] = False
        for (members, _key, _cap), (index, counts) in zip(apart, held, strict=True):
            if members[t]:
                counts[domain_of_column[first], index[first]] += 1
    return left
