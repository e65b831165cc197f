"""Counts of placed pods per node for the selectors inter-pod rules ask about.

Why: inter-pod affinity and topology spread ask, for every candidate node,
"how many pods matching S are in this node's domain?". Scanning every pod per
question would cost the whole pod list per placement; instead each distinct
question (a :class:`Tally`) keeps a per-node count, built once from the pods
carrying one of its selector's anchor labels (a label index over the
snapshot's pods) and then moved by the session's allocate/deallocate events,
so a placement, an eviction and their rollbacks update exactly the tallies
the pod matches. Domain counts are one ``bincount`` over the per-node counts
(none at all for ``kubernetes.io/hostname``-like keys, where every node is its
own domain).

A pod counts where the session currently has it: bound, running, binding,
allocated or pipelined in this cycle, and Releasing pods that were already
being deleted when the cycle started (kube-scheduler still sees them on their
node; spread tallies leave them out, as kube-scheduler's spread does). A pod
this cycle evicts stops counting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.api.labels import Selector
from scheduler.api.pods import ACTIVE_ALLOCATED, PodInfo, PodStatus
from scheduler.framework.domains import Counts

__all__ = ["Anchor", "PodTallies", "Tally"]

Anchor = tuple[str, str | None]


@dataclass(eq=False, slots=True)
class Tally:
    """Placed pods that ``matches`` accepts, counted per node."""

    matches: Callable[[PodInfo], bool]
    anchors: tuple[Anchor, ...]  # empty: every pod must be tried
    skip_releasing: bool  # spread: pods being deleted do not count
    per_node: Counts = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    total: int = 0

    def add(self, node: int, step: int) -> None:
        self.per_node[node] += step
        self.total += step


class PodTallies:
    """Every tally of one session, kept in step with its placements and evictions."""

    def __init__(self, pods: Sequence[PodInfo], node_count: int, anchors: Iterable[Anchor]) -> None:
        """``anchors``: every anchor of the selectors the session's tallies will use; only
        pods carrying one of them are indexed (a label every pod has, such as ``app``,
        costs one lookup per pod, not one entry per pod)."""
        self._pods = pods
        self._node_count = node_count
        wanted = frozenset(anchors)
        self._wanted = wanted
        self._keys = frozenset(key for key, _ in wanted)
        # Pods being deleted when the cycle began: they count for affinity until gone.
        self._releasing_at_open = {
            pod.uid for pod in pods if pod.status == PodStatus.RELEASING and pod.node >= 0
        }
        self._by_anchor: dict[Anchor, list[PodInfo]] = {}
        for pod in pods:
            labels = pod.labels
            if not labels:
                continue
            for key in self._keys:
                value = labels.get(key)
                if value is None:
                    continue
                if (key, value) in wanted:
                    self._by_anchor.setdefault((key, value), []).append(pod)
                if (key, None) in wanted:
                    self._by_anchor.setdefault((key, None), []).append(pod)
        self._tallies: dict[object, Tally] = {}
        self._anchored: dict[Anchor, list[Tally]] = {}
        self._unanchored: list[Tally] = []

    @property
    def keys(self) -> frozenset[str]:
        return self._keys

    def counted(self, pod: PodInfo, *, skip_releasing: bool = False) -> bool:
        """Whether ``pod`` occupies its node as the cycle stands."""
        if pod.node < 0:
            return False
        if pod.status in ACTIVE_ALLOCATED:
            return True
        return (
            not skip_releasing
            and pod.status == PodStatus.RELEASING
            and pod.uid in self._releasing_at_open
        )

    def tally(
        self,
        key: object,
        matches: Callable[[PodInfo], bool],
        selector: Selector | None,
        *,
        skip_releasing: bool = False,
    ) -> Tally:
        """The tally for ``key`` (built on first use from the pods placed now)."""
        found = self._tallies.get(key)
        if found is not None:
            return found
        anchors = selector.anchors() if selector is not None else ()
        if any(anchor not in self._wanted for anchor in anchors):
            anchors = ()  # not indexed: try every pod (never happens for collected anchors)
        made = Tally(matches, anchors, skip_releasing, np.zeros(self._node_count, dtype=np.int64))
        if selector is not None:  # a null selector matches nothing: the tally stays empty
            candidates: Iterable[PodInfo] = (
                _unique(self._by_anchor.get(anchor, ()) for anchor in anchors)
                if anchors
                else self._pods
            )
            for pod in candidates:
                if self.counted(pod, skip_releasing=skip_releasing) and matches(pod):
                    made.add(pod.node, 1)
            if anchors:
                for anchor in anchors:
                    self._anchored.setdefault(anchor, []).append(made)
            else:
                self._unanchored.append(made)
        self._tallies[key] = made
        return made

    def moved(self, pod: PodInfo, step: int) -> None:
        """``pod`` was placed (+1) or left its node (-1): update every tally it matches."""
        if pod.node < 0:
            return
        seen: set[int] = set()
        for tally in self._candidates(pod):
            if id(tally) in seen:
                continue
            seen.add(id(tally))
            if tally.matches(pod):
                tally.add(pod.node, step)

    def _candidates(self, pod: PodInfo) -> Iterable[Tally]:
        yield from self._unanchored
        labels = pod.labels
        if not labels or not self._anchored:
            return
        for key in self._keys:
            value = labels.get(key)
            if value is None:
                continue
            yield from self._anchored.get((key, value), ())
            yield from self._anchored.get((key, None), ())


def _unique(groups: Iterable[Iterable[PodInfo]]) -> list[PodInfo]:
    seen: set[str] = set()
    out: list[PodInfo] = []
    for group in groups:
        for pod in group:
            if pod.uid not in seen:
                seen.add(pod.uid)
                out.append(pod)
    return out
