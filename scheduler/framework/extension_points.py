"""Callback types a plugin may register, and how several registrations combine.

Extension points and their combine rules:

- node_filter (pod) -> [(node mask, reason)]: all must pass; the first failing
  reason is reported per node.
- dynamic_constraint (pod) -> DynamicConstraint or None: filters and a score
  that depend on what the cycle has placed so far (inter-pod affinity, spread,
  volumes reserved in the session). Asked on every placement of the pod, never
  cached; the plugin follows placements through the allocate/deallocate events.
  Masks are ANDed with the static filters (their reasons reported like theirs),
  scores added to the plugins' scores. A pod with a dynamic constraint is
  always evaluated in full (its scores need not be order-stable); a plugin
  must return None for a pod it does not constrain, cheaply, since it is asked
  for every pod.
- node_score (task context) -> score per node: summed over plugins. Scores
  must be order-stable: which of two nodes ranks higher may depend only on
  those two nodes (and static data), and scores of different tiers must not
  cross (KAI's tiers: 1,000,000 / 100 / 10 / 0..9, and NUMA's 100 / span, which
  as in KAI may fall below 10 + 9 on nodes of six zones or more; while a topology-constrained
  gang is placed the session adds the preferred-level tier, multiples of 10,000,
  fixed for the gang's domain; a fractional-GPU pod gets 1,000 on nodes with a
  shared GPU group it fits into, and such pods are always evaluated in full).
  Then a gang's identical tasks can be placed incrementally: only nodes changed
  since the last full evaluation and the best unchanged node are re-scored
  (``context.nodes``).
- job_order (job) -> sort key, task_order (pod) -> sort key: keys concatenated,
  the first difference wins, then creation time and a last tie (a job's name
  then namespace, ``PodGroupInfo.tie``, as KAI; a pod's uid). A job key may depend
  only on the job and its pods' statuses (the session memoises it until a
  status changes); a task key only on the pod's fixed fields.
- queue_order (queue a, queue b, job a, job b) -> int: first non-zero wins.
  best_queue (candidates) -> name: an optional fast path that must pick the
  same queue as repeated queue_order comparisons (the proportion plugin sorts
  by a key of rules 1-6 and compares only the tied candidates).
- job_capacity (job, tasks) -> reason or None: all must allow; the first
  refusal is reported.
- victim_queue_filter (action, preemptor, queue) and victim_filter (action,
  preemptor, victim) -> bool: all must allow (queue-level rules are asked once
  per queue, job-level rules once per job).
- scenario_validator (scenario) -> reason or None: all must accept; the first
  refusal is reported.
- victim_order () -> a ranker: one registration (the last wins); which leaf
  queue gives the next victim chunk, told each chunk taken. Without one the
  leaves are taken in name order.
- reclaim_gate (job, tasks) -> reason or None: all must allow (KAI uses only
  the first registered; here every registration counts, and says so).
- allocate / deallocate events (pod) -> None: all called in registration
  order; they must be exact inverses so rollback restores state.

Why: the combine rule of each extension point is written once, here, rather
than hidden in loops (a KAI anti-pattern); node filters and scores work on
whole-node arrays so a plugin costs one vectorised expression per task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo

Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]

NodeFilterFn = Callable[[PodInfo], Sequence[tuple[Mask, str]]]


@dataclass(frozen=True, slots=True)
class TaskContext:
    """What node scorers see for one task: the pod and per-node fit arrays."""

    pod: PodInfo
    feasible: Mask  # passes every filter and fits on idle + releasing
    fits_idle: Mask  # fits on idle resources alone
    # False when no node has releasing resources: then fits_idle is feasible itself.
    any_releasing: bool = True
    # When set, the arrays above and the scores returned cover only these node
    # indices (ascending); see "order-stable" in the module docstring.
    nodes: npt.NDArray[np.intp] | None = None
    # For a fractional-GPU pod: nodes having a shared GPU group the pod fits into.
    shared_fit: Mask | None = None


NodeScoreFn = Callable[[TaskContext], Scores | None]


@dataclass(frozen=True, slots=True)
class DynamicConstraint:
    """A pod's placement-dependent filters (mask, reason) and score, over all nodes."""

    parts: Sequence[tuple[Mask, str]] = ()
    score: Scores | None = None


DynamicConstraintFn = Callable[[PodInfo], DynamicConstraint | None]
JobOrderFn = Callable[[PodGroupInfo], Any]
TaskOrderFn = Callable[[PodInfo], Any]
QueueOrderFn = Callable[[str, str, PodGroupInfo | None, PodGroupInfo | None], int]
BestQueueFn = Callable[[list[tuple[str, PodGroupInfo | None]]], str]


@dataclass(frozen=True, slots=True)
class QueueKeys:
    """Sort keys that stand in for the best-queue choice while nothing is committed.

    ``key(queue, its best job)`` is a sort key, or None when it cannot be sorted; when
    the smallest of the candidates' keys and the next one are not ``may_tie``, the
    best-queue function picks the smallest's queue. A pass that pops every job (a drain)
    then merges the leaves' streams by key and asks the best-queue function only at
    possible ties.
    """

    key: Callable[[str, PodGroupInfo | None], Any]
    may_tie: Callable[[Any, Any], bool]


JobCapacityFn = Callable[[PodGroupInfo, Sequence[PodInfo]], str | None]
EventFn = Callable[[PodInfo], None]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A disruption a solver proposes: who is placed, and which pods are really evicted."""

    action: str  # reclaim | preempt | consolidation
    preemptor: PodGroupInfo
    preemptor_tasks: Sequence[PodInfo]
    victims: Sequence[tuple[PodGroupInfo, Sequence[PodInfo]]]  # evicted, not re-placed in place
    # every chunk the scenario evicted, in the order taken, pods placed again included
    # (reclaim bundles count them, docs/semantics.md §5.5); empty: the same as ``victims``
    taken: Sequence[tuple[PodGroupInfo, Sequence[PodInfo]]] = ()


# (action, preemptor, victim leaf queue) -> may any job of this queue be a victim
VictimQueueFilterFn = Callable[[str, PodGroupInfo, str], bool]
# (action, preemptor, victim job) -> may this job be a victim at all
VictimFilterFn = Callable[[str, PodGroupInfo, PodGroupInfo], bool]
# (action, preemptor, victim job) -> why its VictimFilterFn refuses the job (for reasons)
VictimFilterWhyFn = Callable[[str, PodGroupInfo, PodGroupInfo], str]
# (scenario) -> reason it is invalid, or None
ScenarioValidatorFn = Callable[[Scenario], str | None]


class VictimRanker(Protocol):
    """Which leaf queue gives the next victim chunk (KAI's victim queue order, per solve).

    ``pick`` gets each leaf that still has candidates with the pods its next
    victim job still runs; ``took`` is told each chunk taken, so the ranking
    can count what has gone already.
    """

    def pick(self, heads: Mapping[str, tuple[PodGroupInfo, Sequence[PodInfo]]]) -> str: ...

    def took(self, leaf: str, pods: Sequence[PodInfo]) -> None: ...


# () -> a fresh ranker for one preemptor's victims
VictimOrderFn = Callable[[], VictimRanker]
# (job, tasks) -> reason the job may not reclaim, or None
ReclaimGateFn = Callable[[PodGroupInfo, Sequence[PodInfo]], str | None]


def combined_key(fns: Sequence[Callable[[Any], Any]], item: Any, fallback: Any) -> tuple[Any, ...]:
    """A lexicographic sort key: each plugin's key in order, then the fallback."""
    return tuple([fn(item) for fn in fns]) + tuple(fallback)


KeyFn = Callable[[Any, Any, Any], tuple[Any, ...]]


def key_function(fns: Sequence[Callable[[Any], Any]]) -> KeyFn:
    """``combined_key`` for fixed ``fns``, called as ``(item, creation, tie)``: the same key
    (``tie``: a job's :attr:`PodGroupInfo.tie`, a pod's uid).

    Why: the session forms a job order key for every victim candidate (about
    80,000 at 5,000 nodes); with up to three registrations the tuple is built
    directly, without a list and two tuple copies per key.
    """
    fixed = tuple(fns)
    if len(fixed) == 1:
        (first,) = fixed
        return lambda item, creation, tie: (first(item), creation, tie)
    if len(fixed) == 2:
        first, second = fixed
        return lambda item, creation, tie: (first(item), second(item), creation, tie)
    if len(fixed) == 3:
        first, second, third = fixed
        return lambda item, creation, tie: (first(item), second(item), third(item), creation, tie)
    return lambda item, creation, tie: combined_key(fixed, item, (creation, tie))
