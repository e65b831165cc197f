"""Inter-pod affinity terms and topology spread constraints as the engine sees them.

Why: a pod's ``spec.affinity.podAffinity``/``podAntiAffinity`` and its
``spec.topologySpreadConstraints`` are parsed once by the cache
(:mod:`scheduler.cache.affinity_reading`) into these frozen, hashable records:
``matchLabelKeys`` and ``mismatchLabelKeys`` are already folded into the
selector with the owner pod's values, and a term's namespaces are resolved
(none given: the owner's own). Equal terms of many pods (a Deployment's
replicas) are then one key for the plugin's per-domain counts
(docs/semantics.md §14).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from scheduler.api.labels import Selector

DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
HONOR: Final = "Honor"
IGNORE: Final = "Ignore"
# kube-scheduler's hardPodAffinityWeight: an existing pod's required affinity to the
# incoming pod counts as a preference of this weight.
HARD_POD_AFFINITY_WEIGHT: Final = 1

NamespaceLabels = Callable[[str], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class PodTerm:
    """One pod (anti-)affinity term: which pods, in which namespaces, at which topology key."""

    selector: Selector | None  # None (a null labelSelector) matches no pod
    namespaces: frozenset[str]
    namespace_selector: Selector | None  # None: not set; Selector(()) : every namespace
    topology_key: str

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: NamespaceLabels
    ) -> bool:
        """Whether a pod in ``namespace`` with ``labels`` is one this term is about."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None
            or not self.namespace_selector.matches(ns_labels(namespace))
        ):
            return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    """A preferred term: ``weight`` > 0 for affinity, < 0 for anti-affinity."""

    weight: int
    term: PodTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    """A pod's inter-pod affinity: required terms (filters) and preferred ones (a score)."""

    affinity: tuple[PodTerm, ...] = ()
    anti_affinity: tuple[PodTerm, ...] = ()
    preferred: tuple[WeightedTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One ``topologySpreadConstraints`` entry; ``hard`` is ``DoNotSchedule``."""

    max_skew: int
    topology_key: str
    hard: bool
    selector: Selector | None  # None: matches no pod
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_taints: bool = False
