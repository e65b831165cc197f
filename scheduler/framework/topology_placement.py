"""Placing a gang's tasks, inside topology domains when its PodGroup asks for them (§5.8).

Why: allocate and the disruption solver both place "the tasks of this job"
inside a Statement; a PodGroup (or subgroup) with a ``topologyConstraint``
must land inside one domain of its required level, preferably inside one of
its preferred level. This module is that one routine, so no action can place
a constrained job outside its domain.

How, per constrained (sub)group:

1. candidate domains are collected from the preferred level (if any) up to the
   required level (or the whole topology), keeping those whose free capacity
   holds all the group's tasks: counted in "representative pods" when the tasks
   are identical, else as summed free resources compared by the dominant ratio.
   When the group already has active pods and a required level, only the
   required-level domain(s) holding them (and their sub-domains) qualify;
2. candidates are ordered deepest level first, then by KAI's packing order:
   the tree is sorted from the top, each domain's children tightest fit first
   (higher dominant ratio of the group's summed request to the domain's free
   resources, pod slots left out; nothing free counts as 1000), ties by id,
   and a level is read off in that order (a domain under a tighter parent
   comes before a tighter domain under a roomier parent);
3. each candidate becomes the session's node subset and the group's tasks are
   placed under checkpoint/rollback until one candidate holds them all;
   subgroups recurse inside the chosen domain (multi-level constraints,
   segments). With a preferred level, nodes get ``floor((i+1)/n*10) * 10000``
   by the packing order (position ``i`` of ``n``) of their preferred-level
   domain among all of them in the group's node set, so when the group must
   span preferred domains its pods fill the roomiest first.

Jobs without any constraint take the plain loop: one ``Session.place`` per task.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import ACTIVE_ALLOCATED, PodInfo, PodStatus
from scheduler.api.resources import CPU, GPU, MEMORY, PODS, format_amount
from scheduler.api.topology import (
    ROOT,
    DomainTree,
    TopologyConstraintInfo,
    TopologyTree,
    build_domain_tree,
)
from scheduler.framework import extension_points as ep
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement

SCORE_STEP = 10_000.0
"""Tier of the preferred-level score: above every other score but a nominated node's."""
NOTHING_FREE = 1000.0
"""KAI's packing ratio for a requested resource a domain has none of."""
MAX_DOMAIN_TRIES = 32
"""Candidate domains tried per constrained group before giving up (a bound, like KAI's)."""


def place_tasks(
    session: Session,
    statement: Statement,
    job: PodGroupInfo,
    tasks: Sequence[PodInfo],
    *,
    pipeline_only: bool = False,
    explain: bool = True,
) -> str | None:
    """Place every task in ``statement``: None on success, else why not (then nothing is kept).

    ``explain=False`` skips counting per-node fit failures for unconstrained jobs (the
    disruption solver simulates many scenarios and reports its own reasons).
    """
    token = statement.checkpoint()
    tree = job.topology_tree
    if tree is None:
        unplaced = _place_plain(session, statement, tasks, pipeline_only)
        if unplaced is None:
            return None
        task, placed = unplaced
        # Dynamic constraints (affinity, spread, volumes) are explained as they stood when
        # the task failed, with the gang's own pods placed; resources with them gone.
        dynamic = session.dynamic_constraint(task)[0] if explain else None
        statement.rollback(token)
        gang_note = (
            f"gang of {len(tasks)} pods: only {placed} could be placed; " if len(tasks) > 1 else ""
        )
        why = session.fit_failure(task, dynamic) if explain else "fits no node"
        return f"{gang_note}pod {task.key}: {why}"
    try:
        problem = _Placer(session, statement, job, tree, pipeline_only).place(tasks)
    finally:
        session.restrict_nodes(None)
    if problem is not None:
        statement.rollback(token)
    return problem


def _place_plain(
    session: Session, statement: Statement, tasks: Sequence[PodInfo], pipeline_only: bool
) -> tuple[PodInfo, int] | None:
    """The first task that fits nowhere and how many were placed before it, or None."""
    for placed, task in enumerate(tasks):
        placement = session.place(task, pipeline_only=pipeline_only)
        if placement is None:
            return task, placed
        if placement.on_idle:
            statement.allocate(task, placement.node)
        else:
            statement.pipeline(task, placement.node)
    return None


def level_name(label: str) -> str:
    """``rack`` for ``topology.kubernetes.io/rack``: how reasons name a level."""
    return label.rsplit("/", 1)[-1]


def _amount(column: int, value: float) -> str:
    if column == GPU:
        return f"{format_amount(GPU, value)} GPUs"
    if column == CPU:
        return f"{format_amount(CPU, value)} CPUs"
    if column == MEMORY:
        return f"{format_amount(MEMORY, value)} memory"
    if column == PODS:
        return f"{value:g} pod slots"
    return f"{value:g}"


@dataclass(slots=True)
class _Capacity:
    """How much of a group's demand each domain of one level holds."""

    ratio: np.ndarray  # job-to-free ratio per domain (inf: nothing free); <= 1 fits
    pack: np.ndarray  # KAI's packing ratio: summed request to free, pod slots left out
    columns: np.ndarray  # the resource columns the group requests
    free: np.ndarray  # (len(columns), domains) summed free of those columns
    held: np.ndarray | None  # representative pods held per domain (identical tasks only)


@dataclass(slots=True)
class _Demand:
    tasks: Sequence[PodInfo]
    need: np.ndarray  # summed request
    representative: PodInfo | None  # set when all tasks are identical

    @property
    def count(self) -> int:
        return len(self.tasks)


class _Placer:
    """One constrained job's placement: recursion over its subgroup tree."""

    def __init__(
        self,
        session: Session,
        statement: Statement,
        job: PodGroupInfo,
        tree: TopologyTree,
        pipeline_only: bool,
    ) -> None:
        self.session = session
        self.statement = statement
        self.job = job
        self.tree = tree
        self.pipeline_only = pipeline_only
        self.nodes = session.snapshot.nodes
        self.chains = {ps.name: tree.chain(ps.name) for ps in job.pod_sets}

    def place(self, tasks: Sequence[PodInfo]) -> str | None:
        return self._group("", tasks, None, None, "")

    # --- recursion ---------------------------------------------------------------
    def _group(
        self,
        group: str,
        tasks: Sequence[PodInfo],
        allowed: ep.Mask | None,
        score: ep.Scores | None,
        where: str,
    ) -> str | None:
        constraint = self.tree.constraint_of(group)
        if constraint is None:
            return self._children(group, tasks, allowed, score, where)
        prefix = f"sub-group {group}: " if group else ""
        resolved = self._resolve(constraint)
        if isinstance(resolved, str):
            return prefix + resolved
        dtree, required, preferred = resolved
        candidates = self._candidates(dtree, required, preferred, group, tasks, allowed)
        if isinstance(candidates, str):
            return prefix + candidates
        base, pairs, ranks = candidates
        last = ""
        tried = 0
        for level, subset in self._subsets(dtree, base, pairs):
            tried += 1
            token = self.statement.checkpoint()
            own = self._preferred_score(dtree, level, preferred, subset, base, ranks)
            inner = self._describe(dtree, level, subset)
            problem = self._children(group, tasks, subset, own if own is not None else score, inner)
            if problem is None:
                return None
            self.statement.rollback(token)
            last = problem
        return (
            f"{prefix}topology {constraint.topology}: none of the {tried} candidate domain(s)"
            f" with room for its {len(tasks)} pods could hold them all (last: {last})"
        )

    def _children(
        self,
        group: str,
        tasks: Sequence[PodInfo],
        allowed: ep.Mask | None,
        score: ep.Scores | None,
        where: str,
    ) -> str | None:
        """Tasks directly in ``group`` are placed here; the rest go to their child subgroup."""
        batches: dict[str, list[PodInfo]] = {}
        for task in tasks:
            chain = self.chains.get(task.pod_set or "", [])
            position = chain.index(group) + 1 if group in chain else 0
            batches.setdefault(chain[position] if position < len(chain) else "", []).append(task)
        for child, batch in batches.items():
            if child and child != group:
                problem = self._group(child, batch, allowed, score, where)
            else:
                problem = self._direct(batch, allowed, score, where)
            if problem is not None:
                return problem
        return None

    def _direct(
        self,
        tasks: Sequence[PodInfo],
        allowed: ep.Mask | None,
        score: ep.Scores | None,
        where: str,
    ) -> str | None:
        session = self.session
        session.restrict_nodes(allowed, score)
        for placed, task in enumerate(tasks):
            placement = session.place(task, pipeline_only=self.pipeline_only)
            if placement is None:
                if allowed is None:
                    return f"pod {task.key}: {session.fit_failure(task)}"
                return (
                    f"pod {task.key} fits none of the {int(allowed.sum())} node(s) of {where}"
                    f" ({placed} of {len(tasks)} pods placed there)"
                )
            if placement.on_idle:
                self.statement.allocate(task, placement.node)
            else:
                self.statement.pipeline(task, placement.node)
        return None

    # --- domains -----------------------------------------------------------------
    def _resolve(
        self, constraint: TopologyConstraintInfo
    ) -> tuple[DomainTree, int | None, int | None] | str:
        topology = self.session.snapshot.topologies.get(constraint.topology)
        if topology is None:
            return f"Requested topology {constraint.topology} does not exist"
        dtree = build_domain_tree(self.nodes, topology)
        levels = ", ".join(topology.levels)
        found: list[int | None] = []
        for kind, label in (("required", constraint.required), ("preferred", constraint.preferred)):
            index = dtree.level_index(label) if label else None
            if label and index is None:
                return (
                    f"invalid topology constraint: {kind} level {label!r} is not a level of"
                    f" topology {topology.name} (levels: {levels})"
                )
            found.append(index)
        required, preferred = found
        if required is not None and preferred is not None and preferred < required:
            return (
                f"invalid topology constraint: preferred level {constraint.preferred!r} is above"
                f" required level {constraint.required!r} in topology {topology.name}"
            )
        return dtree, required, preferred

    def _demand(self, tasks: Sequence[PodInfo]) -> _Demand:
        first = tasks[0]
        identical = all(
            t.constraint_key == first.constraint_key and np.array_equal(t.request, first.request)
            for t in tasks[1:]
        )
        need = np.sum([t.request for t in tasks], axis=0)
        return _Demand(tasks, need, first if identical else None)

    def _capacity(self, dtree: DomainTree, level: int, demand: _Demand, base: ep.Mask) -> _Capacity:
        nodes = self.nodes
        rep = demand.representative
        usable = base & nodes.schedulable
        if rep is not None:
            usable = usable & self.session.static_mask(rep)[0]
        columns = np.flatnonzero(demand.need)
        free = np.maximum(nodes.free[columns], 0).astype(np.float64)
        summed = dtree.per_domain(level, free, usable)
        if rep is not None:  # identical tasks: whole pods per node, the ratio in pods
            per_node = (free // rep.request[columns, None]).min(axis=0)
            held = dtree.per_domain(level, per_node[None, :], usable)[0]
            with np.errstate(divide="ignore"):
                ratio = np.where(held > 0, demand.count / np.maximum(held, 1), np.inf)
            return _Capacity(ratio, _pack(demand, columns, summed), columns, summed, held)
        with np.errstate(divide="ignore", invalid="ignore"):
            parts = demand.need[columns, None] / summed
        ratio = np.nan_to_num(parts, nan=0.0, posinf=np.inf).max(axis=0)
        return _Capacity(ratio, _pack(demand, columns, summed), columns, summed, None)

    def _active_nodes(self, group: str, tasks: Sequence[PodInfo]) -> list[int]:
        """Nodes of the group's other active-allocated pods (KAI's pinning statuses).

        A pod being deleted in the cluster does not pin: it is leaving, and its group may
        go where there is room (KAI v0.17 alike). A pod this session evicted does: a
        victim the solver evicts stays Releasing on its node until it is re-placed, so its
        job's other chunks are still pinned to the domain they all came from.
        """
        placing = {id(t) for t in tasks}
        return [
            pod.node
            for pod_set in self.job.pod_sets
            if not group or group in self.chains.get(pod_set.name, [])
            for pod in pod_set.pods
            if pod.node >= 0
            and id(pod) not in placing
            and (
                pod.status in ACTIVE_ALLOCATED
                or (pod.status == PodStatus.RELEASING and pod.base_status != PodStatus.RELEASING)
            )
        ]

    def _candidates(
        self,
        dtree: DomainTree,
        required: int | None,
        preferred: int | None,
        group: str,
        tasks: Sequence[PodInfo],
        allowed: ep.Mask | None,
    ) -> tuple[ep.Mask, list[tuple[int, int]], dict[int, np.ndarray]] | str:
        """The nodes in play, the candidate (level, domain) pairs in try order and each
        level's packing rank per domain (:meth:`_pack_ranks`), or why none."""
        base = dtree.inside if allowed is None else dtree.inside & allowed
        name = dtree.topology.name
        if not base.any():
            inside = "" if allowed is None else " inside its parent's domain"
            return (
                f"no node{inside} carries every level label of topology {name}"
                f" ({', '.join(dtree.topology.levels)})"
            )
        top = ROOT if required is None else required
        deepest = top if preferred is None else preferred
        pinned: set[int] | None = None
        if required is not None:
            active = self._active_nodes(group, tasks)
            if active:
                pinned = dtree.domains_of(required, active)
        demand = self._demand(tasks)
        capacities = {
            level: self._capacity(dtree, level, demand, base) for level in range(top, deepest + 1)
        }
        ranks = self._pack_ranks(dtree, deepest, demand, base, capacities)
        out: list[tuple[int, int]] = []
        top_capacity: _Capacity | None = None
        for level in range(deepest, top - 1, -1):
            capacity = capacities[level]
            if level == top:
                top_capacity = capacity
            fits = capacity.ratio <= 1.0
            if capacity.held is not None:
                fits = capacity.held >= demand.count
            if pinned is not None and level != ROOT:
                fits &= np.isin(self._ancestors(dtree, level, top), list(pinned))
            rank = ranks[level]
            out.extend((level, int(d)) for d in sorted(np.flatnonzero(fits), key=lambda d: rank[d]))
        if out:
            return base, out, ranks
        assert top_capacity is not None
        return self._no_room(dtree, top, demand, top_capacity, pinned)

    def _pack_ranks(
        self,
        dtree: DomainTree,
        deepest: int,
        demand: _Demand,
        base: ep.Mask,
        capacities: dict[int, _Capacity],
    ) -> dict[int, np.ndarray]:
        """Each level's domains ranked in KAI's packing order, from the top down to ``deepest``:
        by the parent's rank, then tightest fit (highest ``pack``) first, then id."""
        ranks: dict[int, np.ndarray] = {ROOT: np.zeros(1, dtype=np.intp)}
        previous: np.ndarray | None = None
        for level in range(deepest + 1):
            capacity = capacities.get(level) or self._capacity(dtree, level, demand, base)
            pack = capacity.pack
            ids = np.arange(pack.shape[0])
            above = previous[dtree.levels[level].parent] if previous is not None else ids * 0
            order = np.lexsort((ids, -pack, above))
            rank = np.empty_like(ids)
            rank[order] = ids
            ranks[level] = previous = rank
        return ranks

    @staticmethod
    def _subsets(
        dtree: DomainTree, base: ep.Mask, pairs: list[tuple[int, int]]
    ) -> Iterator[tuple[int, ep.Mask]]:
        """Each candidate's nodes, built only when tried; a coarser domain holding exactly the
        nodes of one tried before (the parent's domain, seen from a subgroup) is skipped."""
        seen: set[bytes] = set()
        for level, domain in pairs:
            if len(seen) >= MAX_DOMAIN_TRIES:
                return
            subset = base & dtree.domain_mask(level, domain)
            packed = np.packbits(subset).tobytes()
            if packed in seen or not subset.any():
                continue
            seen.add(packed)
            yield level, subset

    @staticmethod
    def _ancestors(dtree: DomainTree, level: int, top: int) -> np.ndarray:
        """Each domain of ``level``'s ancestor at level ``top`` (itself when equal)."""
        ancestors = np.arange(len(dtree.levels[level]))
        for depth in range(level, top, -1):
            ancestors = dtree.levels[depth].parent[ancestors]
        return ancestors

    def _no_room(
        self,
        dtree: DomainTree,
        top: int,
        demand: _Demand,
        capacity: _Capacity,
        pinned: set[int] | None,
    ) -> str:
        what = "node set" if top == ROOT else level_name(dtree.levels[top].label)
        domains = np.arange(capacity.ratio.shape[0])
        if pinned is not None and top != ROOT:
            domains = np.array(sorted(pinned), dtype=np.intp)
        best = int(domains[np.argmin(capacity.ratio[domains])])
        columns = capacity.columns
        with np.errstate(divide="ignore", invalid="ignore"):
            parts = demand.need[columns] / capacity.free[:, best]
        row = int(np.argmax(np.nan_to_num(parts, nan=0.0, posinf=math.inf)))
        column = int(columns[row])
        free = _amount(column, float(capacity.free[row, best]))
        need = _amount(column, float(demand.need[column]))
        held = "" if capacity.held is None else f", room for {int(capacity.held[best])} pods"
        subject = (
            f"the {what} already holding its running pods ({dtree.domain_id(top, best)})"
            if pinned is not None and top != ROOT
            else f"no {what} of topology {dtree.topology.name}"
        )
        if pinned is not None and top != ROOT:
            return (
                f"{subject} of topology {dtree.topology.name} has no room for {demand.count}"
                f" more pods: it has {free} free{held}, needs {need}"
            )
        return (
            f"{subject} has room for {demand.count} pods: best"
            f" ({dtree.domain_id(top, best)}) has {free} free{held}, needs {need}"
        )

    @staticmethod
    def _preferred_score(
        dtree: DomainTree,
        level: int,
        preferred: int | None,
        subset: ep.Mask,
        base: ep.Mask,
        ranks: dict[int, np.ndarray],
    ) -> ep.Scores | None:
        """``floor((i+1)/n*10) * 10000`` per node of ``subset``, ``i`` its preferred-level
        domain's place in the packing order among the ``n`` of the group's node set (KAI)."""
        if preferred is None or preferred == level:
            return None
        rank = ranks[preferred]
        of_node = dtree.levels[preferred].of_node
        present = np.unique(of_node[base & (of_node >= 0)])
        ordered = sorted(present.tolist(), key=lambda d: rank[d])
        n = len(ordered)
        by_domain = np.zeros(len(dtree.levels[preferred]), dtype=np.float64)
        for i, domain in enumerate(ordered):
            by_domain[domain] = math.floor((i + 1) / n * 10) * SCORE_STEP
        score: ep.Scores = np.where(subset, by_domain[np.maximum(of_node, 0)], 0.0)
        return score

    @staticmethod
    def _describe(dtree: DomainTree, level: int, subset: ep.Mask) -> str:
        """``rack zone-a/rack-1`` for the candidate ``subset`` at ``level``."""
        if level == ROOT:
            return f"topology {dtree.topology.name}"
        first = int(np.argmax(subset))
        domain = int(dtree.levels[level].of_node[first])
        return f"{level_name(dtree.levels[level].label)} {dtree.domain_id(level, domain)}"


def _pack(demand: _Demand, columns: np.ndarray, summed: np.ndarray) -> np.ndarray:
    """KAI's packing ratio per domain: the dominant ratio of the summed request to the
    domain's free resources, pod slots left out, 1000 for a resource with nothing free;
    0 when nothing but pod slots is requested."""
    keep = columns != PODS
    if not keep.any():
        return np.zeros(summed.shape[1], dtype=np.float64)
    free = summed[keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = np.where(free > 0, demand.need[columns[keep], None] / free, NOTHING_FREE)
    pack: np.ndarray = parts.max(axis=0)
    return pack
