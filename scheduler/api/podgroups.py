"""Pod groups (jobs) and their pod sets: the gang units of the engine.

Why: the gang rules (readiness, tasks to allocate, elastic order) are all
questions about how many pods of each pod set are in which status; keeping the
pod sets explicit makes those questions cheap and obvious.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.api.pods import ACTIVE_ALLOCATED, ACTIVE_USED, ALIVE, PodInfo, PodStatus
from scheduler.api.topology import TopologyTree


@dataclass(slots=True)
class PodSetInfo:
    """A leaf sub-group (or the implicit ``default`` set): a gang of ``min_available`` pods."""

    name: str
    min_available: int
    pods: list[PodInfo] = field(default_factory=list)

    def count(self, statuses: frozenset[PodStatus]) -> int:
        return sum(1 for pod in self.pods if pod.status in statuses)

    def active_allocated(self) -> int:
        return self.count(ACTIVE_ALLOCATED)

    def active_used(self) -> int:
        return self.count(ACTIVE_USED)

    def is_ready(self) -> bool:
        """Enough non-gated alive pods exist for the gang (docs/semantics.md §5.1 "Ready")."""
        alive_not_gated = sum(
            1 for pod in self.pods if pod.status in ALIVE and pod.status != PodStatus.GATED
        )
        return alive_not_gated >= self.min_available


@dataclass(slots=True)
class PodGroupInfo:
    """A PodGroup: queue, priority, preemptibility and its pod sets."""

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

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def iter_pods(self) -> list[PodInfo]:
        return [pod for pod_set in self.pod_sets for pod in pod_set.pods]

    def has_pending(self) -> bool:
        return any(pod.status == PodStatus.PENDING for ps in self.pod_sets for pod in ps.pods)

    def is_ready(self) -> bool:
        return all(pod_set.is_ready() for pod_set in self.pod_sets)

    def elastic_state(self) -> int:
        """0 = some pod set below its minimum, 1 = all exactly at it, 2 = above (job order)."""
        state = 1
        for pod_set in self.pod_sets:
            active = pod_set.active_allocated()
            if active < pod_set.min_available:
                return 0
            if active > pod_set.min_available:
                state = 2
        return state

    def min_member(self) -> int:
        return sum(pod_set.min_available for pod_set in self.pod_sets)
