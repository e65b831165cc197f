"""One final decision per pod from a cycle's decision log: where the session leaves each pod.

Why: the actions of a cycle share one session and commit one statement at a
time, and Allocated and Pipelined pods are active-allocated, so a later
action may take as a victim a pod an earlier one placed or moved
(docs/semantics.md §1.3, §5.2). The log then says both "bind" and "evict" about
one pod. Whoever carries the cycle out (the live committer, ``podmuster
schedule``, rounds, the simulator) needs one answer per pod, the outcome of
replaying the log in order, as KAI's session does:

* a pod placed this cycle and evicted later is neither bound nor pipelined:
  it never ran, nothing is deleted, and it stays pending (``cancelled``);
* a pod that held its node before the cycle (Binding, Bound, Running) and
  ends Releasing is one eviction, by the last action that evicted it;
* such a pod that ends Pipelined elsewhere moved: one eviction and one
  pipelined reservation; back on its own node (and GPU groups) it just stays.

The pods' statuses after the last action are the final states; only pods
the log says were evicted need a closer look, so a cycle without evictions
costs nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.api.pods import PodInfo, PodStatus

if TYPE_CHECKING:
    from scheduler.framework.session import Decisions

LoggedEviction = tuple[PodInfo, str, str | None]  # pod, action, the job it made room for


@dataclass(slots=True)
class Outcome:
    """The cycle's decisions, at most one per pod (a move is an eviction plus a reservation)."""

    binds: list[tuple[PodInfo, int]] = field(default_factory=list)
    pipelined: list[tuple[PodInfo, int]] = field(default_factory=list)
    evictions: list[LoggedEviction] = field(default_factory=list)
    # pods placed this cycle, then evicted by a later action: nothing happens to them
    cancelled: list[LoggedEviction] = field(default_factory=list)


_HELD_NODE = frozenset({PodStatus.BINDING, PodStatus.BOUND, PodStatus.RUNNING})


def _left_its_place(decisions: Decisions, key: int, pod: PodInfo) -> bool:
    """The evicted pod is not back on the node (and GPU groups) it held before its eviction."""
    _, node, groups = decisions.evicted_from[key]
    return pod.node != node or pod.gpu_groups != groups


def final_outcome(decisions: Decisions) -> Outcome:
    """Replay ``decisions`` to each pod's final state (see the module docstring)."""
    if not decisions.evictions:  # nothing undoes a committed placement: the log is final
        return Outcome(list(decisions.binds), list(decisions.pipelined))
    bound = {id(pod) for pod, _ in decisions.binds}
    last: dict[int, LoggedEviction] = {}
    for eviction in decisions.evictions:
        last[id(eviction[0])] = eviction  # first eviction's place, last eviction's reason
    held: dict[int, bool] = {}  # evicted pod -> it held its node before the cycle
    for key, (status, _, _) in decisions.evicted_from.items():
        # Binding is also what a placement committed this cycle leaves; a pod that
        # held its node before the cycle cannot have been allocated in it.
        held[key] = status in _HELD_NODE and not (status == PodStatus.BINDING and key in bound)
    out = Outcome()
    out.binds = [(pod, pod.node) for pod, _ in decisions.binds if pod.status == PodStatus.BINDING]
    seen: set[int] = set()
    for pod, _ in decisions.pipelined:
        key = id(pod)
        if pod.status != PodStatus.PIPELINED or key in seen:
            continue
        seen.add(key)
        if held.get(key, False) and not _left_its_place(decisions, key, pod):
            continue  # re-placed where it runs: it stays
        out.pipelined.append((pod, pod.node))
    for key, eviction in last.items():
        pod = eviction[0]
        if pod.status == PodStatus.RELEASING:
            (out.evictions if held[key] else out.cancelled).append(eviction)
        elif (
            pod.status == PodStatus.PIPELINED and held[key] and _left_its_place(decisions, key, pod)
        ):
            out.evictions.append(eviction)
    return out


__all__ = ["LoggedEviction", "Outcome", "final_outcome"]
