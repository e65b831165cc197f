"""Each node's shared GPU groups, rebuilt at a snapshot only on the nodes where they changed.

A fractional pod's groups come from its ``runai-gpu-group`` label(s), else
(Binding, not labelled yet) from its BindRequest's ``selectedGPUGroups``, else
one id per device derived from the pod. Each group holds one whole device: in
use, or releasing when all its members are. A snapshot sets every shared pod's
groups, portion and queue quota, and the node table's groups.

Why incremental: with thousands of fractional pods that never end, rebuilding
every group at every snapshot was a quarter of a long replay's time, though a
cycle changes a few nodes. What a pod contributes depends only on its record,
its node and whether it is placed and releasing (``_Entry``): the groups are
kept between snapshots and a node's are rebuilt when one of its pods' entries
changed, or when a session changed its groups (:attr:`SharedGpus.touched`:
every change goes through one method there). A session also sets the groups,
portion and quota of the pods it places or evicts; those three fields are put
back on every shared pod at every snapshot from its entry (three assignments,
not a rebuild). The result equals a rebuild from scratch
(tests/scheduler/test_incremental_shared_groups.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.api import gpu_sharing
from scheduler.api.nodes import NodeTable
from scheduler.api.pods import ACTIVE_USED, PodInfo, frees_room
from scheduler.api.resources import GPU, GPU_UNIT


@dataclass(frozen=True, slots=True)
class _Entry:
    """What one fractional pod contributes to its node's groups, and the fields it gets."""

    pod: PodInfo  # the record it was computed for (a new record is a new entry)
    node: int  # -1: not holding a device (not placed, or not in ACTIVE_USED)
    releasing: bool  # frees_room: its portion counts as releasing
    bound_groups: tuple[str, ...]  # its BindRequest's selectedGPUGroups
    groups: tuple[str, ...]
    portion: int
    memory: int
    quota: float


class SharedGroups:
    """The shared-GPU groups of one node table, kept between snapshots (module docstring)."""

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self._entries: dict[str, _Entry] = {}  # pod key -> its entry at the last snapshot
        self._on_node: dict[int, dict[str, _Entry]] = {}  # node -> placed entries there
        # Per node, GPU thousandths its groups hold: in use, and releasing (all members are)
        self.in_use = np.zeros(len(table), dtype=np.int64)
        self.releasing = np.zeros(len(table), dtype=np.int64)
        table.shared.reset()

    def update(
        self,
        sharing: Sequence[PodInfo],
        bind_groups: dict[str, tuple[str, ...]],
    ) -> None:
        """Bring the groups and ``sharing``'s pod fields to what the pods say now.

        ``sharing`` is every fractional pod, with this snapshot's status and node.
        """
        table = self.table
        shared = table.shared
        dirty = set(shared.touched)
        before = self._entries
        entries: dict[str, _Entry] = {}
        on_node = self._on_node
        for pod in sharing:
            key = pod.key
            node = pod.node if pod.status in ACTIVE_USED else -1
            releasing = frees_room(pod)
            bound = bind_groups.get(key, ())
            entry = before.pop(key, None)
            if (
                entry is None
                or entry.pod is not pod
                or entry.node != node
                or entry.releasing != releasing
                or entry.bound_groups != bound
            ):
                if entry is not None and entry.node >= 0:
                    del on_node[entry.node][key]
                    dirty.add(entry.node)
                entry = _entry(table, pod, node, releasing, bound)
                if node >= 0:
                    on_node.setdefault(node, {})[key] = entry
                    dirty.add(node)
            entries[key] = entry
            pod.gpu_groups = entry.groups
            pod.gpu_portion = entry.portion
            pod.quota[0] = entry.quota
        for key, gone in before.items():  # no longer a fractional pod (or no longer here)
            if gone.node >= 0:
                del on_node[gone.node][key]
                dirty.add(gone.node)
        self._entries = entries
        for node in sorted(dirty):
            self._rebuild(node)
        shared.touched.clear()

    def _rebuild(self, node: int) -> None:
        """Node ``node``'s groups from its placed entries, as a build from scratch puts them."""
        shared = self.table.shared
        shared.clear(node)
        placed = self._on_node.get(node)
        if placed is not None and not placed:
            del self._on_node[node]
        members: dict[str, list[_Entry]] = {}
        for entry in (placed or {}).values():
            for gid in entry.groups:
                members.setdefault(gid, []).append(entry)
        in_use = releasing = 0
        for gid, group_entries in sorted(members.items()):
            group = gpu_sharing.Group(
                portion=sum(e.portion for e in group_entries),
                memory=sum(e.memory for e in group_entries),
                releasing=sum(e.portion for e in group_entries if e.releasing),
                members=len(group_entries),
                releasing_members=sum(1 for e in group_entries if e.releasing),
            )
            shared.put(node, gid, group)
            if group.all_releasing:
                releasing += GPU_UNIT
            else:
                in_use += GPU_UNIT
        self.in_use[node] = in_use
        self.releasing[node] = releasing

    def add_gpus(
        self, in_use: npt.NDArray[np.int64], being_released: npt.NDArray[np.int64]
    ) -> None:
        """Add the groups' devices to the snapshot's per-node usage (rows: nodes)."""
        in_use[:, GPU] += self.in_use
        being_released[:, GPU] += self.releasing


def _entry(
    table: NodeTable, pod: PodInfo, node: int, releasing: bool, bound: tuple[str, ...]
) -> _Entry:
    share = pod.gpu_share
    assert share is not None
    shared = table.shared
    if node < 0:
        quota = gpu_sharing.share_quota(share, None, shared.min_memory)
        return _Entry(pod, -1, releasing, bound, (), 0, 0, quota)
    node_memory = int(shared.memory[node])
    groups = gpu_sharing.groups_from_labels(pod.labels) or bound
    names = table.names
    groups = tuple(groups[: share.devices]) + tuple(
        gpu_sharing.group_id(names[node], pod.uid, i) for i in range(len(groups), share.devices)
    )
    return _Entry(
        pod,
        node,
        releasing,
        bound,
        groups,
        share.portion_on(node_memory),
        share.memory_on(node_memory),
        gpu_sharing.share_quota(share, node_memory, shared.min_memory),
    )
