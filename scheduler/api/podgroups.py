"""Pod groups (jobs), their pod sets and subgroup tree: the gang units of the engine.

Why: the gang rules (readiness, tasks to allocate, elastic order, staleness,
which pods may be evicted alone) are all questions about how many pods of each
pod set are in which status, judged against the PodGroup's subgroup tree. The
tree and its one rule (:meth:`PodGroupInfo.requirement_met`) live here; every
action asks it rather than reading ``min_available`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler.api.pods import ACTIVE_ALLOCATED, ACTIVE_USED, ALIVE, PodInfo, PodStatus
from scheduler.api.topology import TopologyTree


@dataclass(slots=True)
class PodSetInfo:
    """A leaf sub-group (or the implicit ``default`` set): a gang of ``min_available`` pods."""

    name: str
    min_available: int
    pods: list[PodInfo] = field(default_factory=list)

    def count(self, statuses: frozenset[PodStatus]) -> int:
        return len([pod for pod in self.pods if pod.status in statuses])

    def active_allocated(self) -> int:
        return self.count(ACTIVE_ALLOCATED)

    def active_used(self) -> int:
        return self.count(ACTIVE_USED)

    def alive_not_gated(self) -> int:
        return sum(1 for pod in self.pods if pod.status in ALIVE and pod.status != PodStatus.GATED)

    def is_ready(self) -> bool:
        """Enough non-gated alive pods exist for the gang (docs/semantics.md §5.1 "Ready")."""
        return self.alive_not_gated() >= self.min_available


@dataclass(frozen=True, slots=True)
class SubGroupNode:
    """A mid-level subgroup (or the PodGroup root): schedulable when enough members are.

    ``members`` are child nodes and leaf pod-set names. ``min_sub_group`` is how
    many members must be schedulable; ``None`` means all of them (KAI's default).
    """

    name: str
    min_sub_group: int | None
    members: tuple[SubGroupNode | str, ...]

    def required(self) -> int:
        return len(self.members) if self.min_sub_group is None else self.min_sub_group


Count = Callable[[PodSetInfo], int]


@dataclass(slots=True)
class PodGroupInfo:
    """A PodGroup: queue, priority, preemptibility, its pod sets and their subgroup tree."""

    namespace: str
    name: str
    uid: str
    queue: str
    priority: int
    preemptible: bool
    creation: float
    pod_sets: list[PodSetInfo]
    priority_class: str = ""
    last_start: float | None = None
    stale_since: float | None = None
    topology: str = ""
    scale_up_hint: str = ""  # the kai.scheduler/scale-up-hint annotation as stored
    # topology constraints of the group and its subgroups; None when it has none (§5.8)
    topology_tree: TopologyTree | None = None
    # the subgroup tree; None: every pod set is required directly under the root
    shape: SubGroupNode | None = None
    last_eviction: float | None = None  # the kai.scheduler/last-eviction-timestamp annotation
    preemption_delay: float | None = None  # spec.preemptionDelay in seconds
    staleness_grace: float | None = None  # spec.stalenessGracePeriod in seconds
    # "namespace/name", formed once: every action and plugin indexes by it many times a cycle
    key: str = field(init=False, repr=False, compare=False)
    # The job order's last tie, after creation time: KAI's PodGroupInfo UID is the
    # PodGroup's name, so the name decides; the namespace then settles what KAI leaves
    # open (it keys PodGroups by name alone). "name NUL namespace": one string compare
    # orders by name first (no name holds a NUL), cheaper than a tuple per key.
    tie: str = field(init=False, repr=False, compare=False)
    # Answers about this group at its snapshot's pod statuses, kept from cycle to cycle
    # (Session.carried_memo): the cache builds a new record when the PodGroup or a pod
    # changes, and empties this when a snapshot gives one of its pods another status.
    carried: dict[str, tuple[object, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.key = f"{self.namespace}/{self.name}"
        self.tie = f"{self.name}\0{self.namespace}"

    def iter_pods(self) -> list[PodInfo]:
        return [pod for pod_set in self.pod_sets for pod in pod_set.pods]

    def has_pending(self) -> bool:
        for pod_set in self.pod_sets:  # loops, not a generator: asked for every pending job
            for pod in pod_set.pods:  # by each action
                if pod.status == PodStatus.PENDING:
                    return True
        return False

    def short_with_every_pod(self) -> bool:
        """Whether the gang, with every pod it has active and none succeeded, would still
        miss its requirement while holding something: stale for want of pods, not of
        statuses. The stale-gang rule with that count (the cache keeps the jobs this
        holds for, so the action need not ask it of every job each cycle)."""
        if self.shape is None and len(self.pod_sets) == 1:
            only = self.pod_sets[0]
            return 0 < len(only.pods) < only.min_available
        counts = {pod_set.name: len(pod_set.pods) for pod_set in self.pod_sets}
        return any(counts.values()) and not self.counts_meet(counts)

    def root(self) -> SubGroupNode:
        """The subgroup tree: :attr:`shape`, or a root requiring every pod set."""
        if self.shape is not None:
            return self.shape
        return SubGroupNode("", None, tuple(pod_set.name for pod_set in self.pod_sets))

    def requirement_met(self, count: Count, *, whole: bool = True) -> bool:
        """The gang rule (docs/semantics.md §2.1), pods per pod set counted by ``count``.

        A pod set is schedulable when ``count`` reaches its ``min_available``; a
        node when at least ``required()`` of its members are. With ``whole``
        (judging pods that run or will), a member with any counted pod must
        itself be schedulable: no subgroup runs partly, even an optional one.
        """
        if self.shape is None:
            # the same rule when every pod set is required directly (stale-gang checks call
            # this for every job of the cluster)
            return all(count(pod_set) >= pod_set.min_available for pod_set in self.pod_sets)
        by_name = {pod_set.name: pod_set for pod_set in self.pod_sets}
        counts = {n: count(ps) for n, ps in by_name.items()}
        return meets(self.root(), counts, by_name, whole=whole)

    def counts_meet(self, counts: Mapping[str, int], *, whole: bool = True) -> bool:
        """:meth:`requirement_met` with the counts given per pod-set name (absent: 0)."""
        if self.shape is None:
            return all(counts.get(ps.name, 0) >= ps.min_available for ps in self.pod_sets)
        by_name = {pod_set.name: pod_set for pod_set in self.pod_sets}
        return meets(self.root(), counts, by_name, whole=whole)

    def is_ready(self) -> bool:
        return self.requirement_met(PodSetInfo.alive_not_gated, whole=False)

    def elastic_state(self) -> int:
        """0 = below its requirement, 1 = exactly at it, 2 = above: a pod or member to spare."""
        if self.shape is None:
            # the same rule when every pod set is required (job order calls this often, for
            # every victim candidate: the count inline, about half the cost of the calls)
            state = 1
            for pod_set in self.pod_sets:
                active = 0
                for pod in pod_set.pods:
                    if pod.status in ACTIVE_ALLOCATED:
                        active += 1
                if active < pod_set.min_available:
                    return 0
                if active > pod_set.min_available:
                    state = 2
            return state
        counts = {pod_set.name: pod_set.active_allocated() for pod_set in self.pod_sets}
        if not self.counts_meet(counts):
            return 0
        return 2 if self.has_surplus(counts) else 1

    def has_surplus(self, counts: Mapping[str, int]) -> bool:
        """Some pod, or some optional subgroup, could go and the requirement still be met
        (the job is above its minimum). Without a tree every pod set is required, so
        only single pods are tried."""
        for name, value in counts.items():
            if value and self.counts_meet({**counts, name: value - 1}):
                return True
        units = self.member_pod_sets() if self.shape is not None else []
        return any(
            self.counts_meet({**counts, **dict.fromkeys(names, 0)})
            for names in units
            if any(counts.get(n, 0) for n in names)
        )

    def eviction_chunks(self, remaining: dict[str, list[PodInfo]]) -> Iterator[list[PodInfo]]:
        """Pods to evict chunk by chunk, each chunk leaving the requirement met, then the rest.

        ``remaining`` holds each pod set's active pods, the one to go first last;
        it is emptied as chunks are taken. A chunk is one pod (from the pod set
        ranked first by :func:`_surplus_rank`, then by name) while some pod can go
        alone; then a whole optional member (a subgroup ``minSubGroup`` does not
        need, smallest first); then all the rest together: a gang never runs partly.
        """
        by_name = {pod_set.name: pod_set for pod_set in self.pod_sets}
        units = self.member_pod_sets() if self.shape is not None else []
        while True:
            counts = {name: len(pods) for name, pods in remaining.items()}
            alone = [
                (_surplus_rank(count, by_name[name].min_available), name)
                for name, count in counts.items()
                if count and self.counts_meet({**counts, name: count - 1})
            ]
            if alone:
                _, name = max(alone)
                yield [remaining[name].pop()]
                continue
            optional = [
                (sum(counts.get(n, 0) for n in names), names)
                for names in units
                if any(counts.get(n, 0) for n in names)
                and self.counts_meet({**counts, **dict.fromkeys(names, 0)})
            ]
            if optional:
                _, names = min(optional)
                chunk = [pod for n in names for pod in remaining.get(n, ())]
                for n in names:
                    if n in remaining:
                        remaining[n] = []
                yield chunk
                continue
            rest = [pod for pods in remaining.values() for pod in pods]
            if rest:
                for pods in remaining.values():
                    pods.clear()
                yield rest
            return

    def member_pod_sets(self) -> list[tuple[str, ...]]:
        """The pod-set names under each member of each node (each optional unit), leaves first."""
        units: list[tuple[str, ...]] = []

        def walk(node: SubGroupNode | str) -> tuple[str, ...]:
            if isinstance(node, str):
                units.append((node,))
                return (node,)
            names = tuple(n for member in node.members for n in walk(member))
            units.append(names)
            return names

        walk(self.root())
        units.pop()  # the root itself is not a member
        return units


def _surplus_rank(count: int, min_available: int) -> tuple[int, Fraction]:
    """Which pod set gives a surplus pod first, highest first: KAI's subgroup order inverted.

    An optional pod set (minimum 0) before a required one, the one with more
    pods first; among required ones the highest ratio of pods to minimum.
    """
    if min_available <= 0:
        return (1, Fraction(count))
    return (0, Fraction(count, min_available))


def meets(
    node: SubGroupNode | str,
    counts: Mapping[str, int],
    pod_sets: Mapping[str, PodSetInfo],
    *,
    whole: bool,
) -> bool:
    """Whether ``node`` (a subtree or a pod-set name) is schedulable with ``counts``."""
    if isinstance(node, str):
        pod_set = pod_sets.get(node)
        return pod_set is None or counts.get(node, 0) >= pod_set.min_available
    met = 0
    for member in node.members:
        if meets(member, counts, pod_sets, whole=whole):
            met += 1
        elif whole and _any_counted(member, counts):
            return False
    return met >= node.required()


def _any_counted(node: SubGroupNode | str, counts: Mapping[str, int]) -> bool:
    if isinstance(node, str):
        return counts.get(node, 0) > 0
    return any(_any_counted(member, counts) for member in node.members)
