"""Reclaim rules: may a job reclaim, and is a victim set fair (docs/semantics.md §5.2, §5.5).

Why: reclaim is where fairness is enforced by force, so its rules must be
exactly KAI's. ``reclaim_gate``: the reclaiming queue must stay within its fair
share (and a non-preemptible job within deserved). ``validate``: each victim
bundle is compared at the two children of the lowest common ancestor of the
reclaimer and the victim; the victim side must stay above its allocatable
share (MaintainFairShare) or the reclaimer be under deserved while the victim
is above it (GuaranteeDeservedQuota); and the saturation order
(allocated / fair share, times the multiplier) may not flip. ``could_give``: KAI's
victim filter, which decides which queues' jobs are victim candidates at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.api.queues import UNLIMITED, QueueTree
from scheduler.framework import extension_points as ep
from scheduler.plugins.proportion.state import QueueState, pod_amounts

Amounts = list[float]
_R = range(3)


def _add(a: Amounts, b: Sequence[float], sign: float = 1.0) -> Amounts:
    return [a[r] + sign * b[r] for r in _R]


def reclaim_gate(
    states: dict[str, QueueState],
    job: PodGroupInfo,
    tasks: Sequence[PodInfo],
    path: Sequence[str],
) -> str | None:
    """The leaf queue stays within fair share; a non-preemptible job within deserved at
    every queue on ``path`` (leaf to root).

    The second part is §5.5 step 4, checked here, before any search: victims are
    preemptible, so no eviction lowers a queue's non-preemptible allocation.
    """
    state = states[job.queue]
    wanted = [0.0, 0.0, 0.0]
    for task in tasks:
        wanted = _add(wanted, pod_amounts(task))
    after = _add(state.used, wanted)
    if any(after[r] > state.fair[r] + 1e-9 for r in _R):
        return f"queue {job.queue} would go over its fair share by reclaiming"
    if not job.preemptible:
        for name in path:
            on_path = states[name]
            after_np = _add(on_path.used_non_preemptible, wanted)
            if any(on_path.quota[r] != UNLIMITED and after_np[r] > on_path.quota[r] for r in _R):
                return f"non-preemptible job would take queue {name} over its deserved quota"
    return None


def _by_job(
    scenario: ep.Scenario,
) -> list[tuple[PodGroupInfo, list[PodInfo]]]:
    """Each victim job with every pod the scenario evicted of it, in the order taken;
    the jobs queue by queue (KAI gathers a victim job's pods into one entry and its
    bundles per queue, in map order; here in the order the victims were taken)."""
    queues: dict[str, dict[str, tuple[PodGroupInfo, list[PodInfo]]]] = {}
    for victim, pods in scenario.taken or scenario.victims:
        jobs = queues.setdefault(victim.queue, {})
        entry = jobs.get(victim.key)
        if entry is None:
            entry = jobs[victim.key] = (victim, [])
        entry[1].extend(pods)
    return [entry for jobs in queues.values() for entry in jobs.values()]


def _bundles(victim: PodGroupInfo, pods: Sequence[PodInfo], counted: set[int]) -> list[Amounts]:
    """KAI's bundles of one victim job (proportion.go getVictimResources): per pod set,
    the first ``min_available`` of its evicted ``pods`` go into the job's one core
    bundle, each further pod is a bundle of its own; the single pods come first, the
    core bundle last. A pod not in ``counted`` (placed again where it ran) counts
    towards the split but adds nothing; a bundle with nothing counted is dropped."""
    pod_set_of = {id(pod): pod_set for pod_set in victim.pod_sets for pod in pod_set.pods}
    per_set: dict[str, list[PodInfo]] = {pod_set.name: [] for pod_set in victim.pod_sets}
    for pod in pods:
        per_set[pod_set_of[id(pod)].name].append(pod)
    minimum = {pod_set.name: max(pod_set.min_available, 0) for pod_set in victim.pod_sets}
    bundles: list[Amounts] = []
    core: Amounts | None = None
    for name, members in per_set.items():
        for pod in members[minimum[name] :]:
            if id(pod) in counted:
                bundles.append(pod_amounts(pod))
        for pod in members[: minimum[name]]:
            if id(pod) in counted:
                core = _add(core or [0.0, 0.0, 0.0], pod_amounts(pod))
    if core is not None:
        bundles.append(core)
    return bundles


def _ratio(value: float, fair: float) -> float:
    if fair <= 0:
        return math.inf if value > 0 else 0.0
    return value / fair


def validate(
    states: dict[str, QueueState],
    start: dict[str, Amounts],
    tree: QueueTree,
    scenario: ep.Scenario,
    multiplier: float,
) -> str | None:
    """None when the scenario keeps reclaim fair (§5.5), else the rule it breaks."""
    job = scenario.preemptor
    wanted = [0.0, 0.0, 0.0]
    for task in scenario.preemptor_tasks:
        wanted = _add(wanted, pod_amounts(task))
    reclaimer_path = list(reversed(tree.path_to_root(job.queue)))
    remaining = {name: list(amounts) for name, amounts in start.items()}
    lost: set[str] = set()
    counted = {id(pod) for _, pods in scenario.victims for pod in pods}
    for victim, evicted in _by_job(scenario):
        bundles = _bundles(victim, evicted, counted)
        if not bundles:
            continue
        victim_path = list(reversed(tree.path_to_root(victim.queue)))
        pair = tree.lca_children(job.queue, victim.queue)
        if pair is None:
            return f"victim queue {victim.queue} is on the reclaimer's own path"
        rq, vq = states[pair[0]], states[pair[1]]
        for bundle in bundles:
            left = remaining[vq.info.name]
            maintain = _above_share(vq, left)
            reclaimer_after = _add(start[rq.info.name], wanted)
            guarantee = _within_deserved(rq, reclaimer_after) and _above_deserved(vq, left)
            if not (maintain or guarantee):
                return (
                    f"reclaim would take queue {vq.info.name} below its fair share for queue "
                    f"{rq.info.name} (neither MaintainFairShare nor GuaranteeDeservedQuota holds)"
                )
            for name in victim_path:
                remaining[name] = _add(remaining[name], bundle, -1.0)
                lost.add(name)
    return _saturation_problem(
        states, start, remaining, lost, tree, reclaimer_path, wanted, multiplier
    )


def _saturation_problem(
    states: dict[str, QueueState],
    start: dict[str, Amounts],
    remaining: dict[str, Amounts],
    lost: set[str],
    tree: QueueTree,
    reclaimer_path: list[str],
    wanted: Amounts,
    multiplier: float,
) -> str | None:
    for name in reversed(reclaimer_path):
        parent = tree.queues[name].parent
        siblings = tree.queues[parent].children if parent else tree.roots
        value = _add(remaining[name] if name in lost else start[name], wanted)
        for sibling in siblings:
            if sibling == name or sibling not in lost:
                continue
            involved = [r for r in _R if wanted[r] > 0 or remaining[sibling][r] < start[sibling][r]]
            for r in involved:
                fair_p, fair_s = states[name].fair[r], states[sibling].fair[r]
                if fair_p == UNLIMITED and fair_s == UNLIMITED:
                    continue
                ratio_p = _ratio(value[r], fair_p)
                ratio_s = _ratio(remaining[sibling][r], fair_s)
                if ratio_p > 1 and fair_s > 0 and ratio_p * multiplier >= ratio_s:
                    return (
                        f"reclaim would leave queue {name} more saturated than queue {sibling} "
                        f"(allocated/fair share {ratio_p:.2f} vs {ratio_s:.2f})"
                    )
    return None


def could_give(
    states: dict[str, QueueState],
    start: dict[str, Amounts],
    pair: tuple[str, str] | None,
    wanted: Sequence[float],
) -> bool:
    """KAI's reclaim victim filter: may the victim queue's jobs be victims at all.

    ``pair``: the reclaimer's and the victim queue's :meth:`QueueTree.lca_children`,
    read at the values of the job's solve start. When the reclaimer side would stay
    within its deserved quota with the request, the victim side must be above its
    deserved in some resource the reclaimer asks for, or else below it in none of
    them (unlimited deserved is passed over); otherwise the victim side must be above
    its allocatable share in some resource (MaintainFairShare at its allocation). A
    queue this admits may still fail the §5.5 checks in every scenario: such a queue
    is left out too, since every scenario taking one of
    its jobs is refused; searching them only spends the bounded search on scenarios
    that cannot pass.
    """
    if pair is None:
        return False
    rq, vq = states[pair[0]], states[pair[1]]
    left = start[vq.info.name]
    reclaimer_after = _add(start[rq.info.name], wanted)
    over_share = _above_share(vq, left)
    if not _within_deserved(rq, reclaimer_after):
        return over_share
    # a first bundle must pass a strategy: allocations only shrink as bundles are taken,
    # so a queue failing both at the start fails them for every bundle
    return _filter_admits(vq, left, wanted) and (over_share or _above_deserved(vq, left))


def _above_share(vq: QueueState, left: Amounts) -> bool:
    """MaintainFairShare: the victim side above its allocatable share in some resource."""
    return any(vq.share[r] != UNLIMITED and left[r] > vq.share[r] + 1e-9 for r in _R)


def _within_deserved(rq: QueueState, after: Amounts) -> bool:
    """The reclaimer side within its deserved quota in every resource, the request added."""
    return all(rq.quota[r] == UNLIMITED or after[r] <= rq.quota[r] for r in _R)


def _above_deserved(vq: QueueState, left: Amounts) -> bool:
    """The victim side above its deserved quota in some resource (GuaranteeDeservedQuota,
    with the reclaimer within deserved)."""
    return any(vq.quota[r] != UNLIMITED and left[r] > vq.quota[r] + 1e-9 for r in _R)


def _filter_admits(vq: QueueState, left: Amounts, wanted: Sequence[float]) -> bool:
    """KAI's filter for a reclaimer within deserved: the victim side above its deserved
    in a resource asked for, or under it in none of them."""
    under = False
    for r in _R:
        if wanted[r] <= 0 or vq.quota[r] == UNLIMITED:
            continue
        if left[r] > vq.quota[r] + 1e-9:
            return True
        if left[r] < vq.quota[r] - 1e-9:
            under = True
    return not under
