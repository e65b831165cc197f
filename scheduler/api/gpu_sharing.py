"""Shared GPUs: a pod's fractional request, and each node's shared GPU groups.

Why: a fractional-GPU pod (annotation ``gpu-fraction`` or ``gpu-memory``,
docs/semantics.md §6) does not take whole devices from the node's GPU column; it
joins a *group*, one physical device shared by several pods. The first member
of a group takes one whole GPU (``GPU_UNIT``) from the node, the last one to
leave gives it back. Groups are kept per node in a small map beside the
node table (only nodes that have groups appear), so pods that do not share
GPUs never pay for them. Every change returns an :class:`ShareUndo` holding
the exact previous group records and GPU-column deltas, so the Statement can
roll back without copying anything.

Units: portions are thousandths of a device (as the GPU column), memory is MiB.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crds.gpusharing import GPU_GROUP_LABEL
from crds.rules import UNSYNCED_GPU_MEMORY, gpu_memory_portion
from scheduler.api.resources import GPU, GPU_UNIT

"""MiB per device assumed for a node without the memory label (gpu-memory pods refused there)."""


MIG_ENABLED_LABEL = "node-role.kubernetes.io/mig-enabled"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb$")

# uuid5 namespace for group ids: same node, pod and device index -> same id (deterministic).
_GROUP_NAMESPACE = uuid.UUID("6f1c2a0e-5b7d-4c1e-9a55-0c9d3e7f2b41")


# A pod's GPU kind leads its constraint key: node filters differ per kind, and the
# session caches filter results per constraint key.
SHARED_KIND = "gpu-share"
MIG_KIND = "gpu-mig"
WHOLE_KIND = "gpu-whole"


def gpu_kind(constraint_key: object) -> str | None:
    """The GPU kind a pod's constraint key starts with (``SHARED_KIND``...), or None."""
    if isinstance(constraint_key, tuple) and constraint_key:
        kind = constraint_key[0]
        if kind in (SHARED_KIND, MIG_KIND, WHOLE_KIND):
            return str(kind)
    return None


def mig_slice_gpus(resource_name: str) -> int:
    """X for ``nvidia.com/mig-<X>g.<Y>gb`` (the GPUs one slice counts in quota), else 0."""
    match = _MIG_RESOURCE.match(resource_name)
    return int(match.group(1)) if match else 0


def is_mig_resource(resource_name: str) -> bool:
    return _MIG_RESOURCE.match(resource_name) is not None


@dataclass(frozen=True, slots=True)
class GpuShare:
    """A pod's fractional request: a portion *or* an amount of memory, on ``devices`` devices."""

    portion: int  # thousandths of a device; 0 when the request is memory
    memory: int  # MiB per device; 0 when the request is a portion
    devices: int = 1
    container: str = ""

    @property
    def by_memory(self) -> bool:
        return self.portion == 0

    def portion_on(self, device_memory: int) -> int:
        """Thousandths of one device on a node with ``device_memory`` MiB per device.

        A memory request becomes ceil(memory / device memory, to hundredths) (§6).
        """
        if self.portion:
            return self.portion
        return round(gpu_memory_portion(self.memory, max(device_memory, 1)) * GPU_UNIT)

    def memory_on(self, device_memory: int) -> int:
        """MiB of one device this request uses on a node with ``device_memory`` MiB per device."""
        if self.memory:
            return self.memory
        return self.portion * device_memory // GPU_UNIT


def devices_host(
    share: GpuShare,
    devices: npt.NDArray[np.int64],
    device_memory: npt.NDArray[np.int64],
    synced: npt.NDArray[np.bool_],
) -> npt.NDArray[np.bool_]:
    """Per node (or node shape), whether its devices could ever host ``share``, empty: at
    least ``share.devices`` devices and, for a memory request, a ``nvidia.com/gpu.memory``
    label (``synced``) of at least the request per device; a portion never exceeds one
    device (admission refuses more). What is free is another question."""
    fits: npt.NDArray[np.bool_] = devices >= share.devices
    if share.by_memory:
        fits = fits & synced & (device_memory >= share.memory)
    return fits


def group_id(node: str, pod_uid: str, device: int) -> str:
    """A new group's id: deterministic for (node, pod, device index), unique across pods."""
    return str(uuid.uuid5(_GROUP_NAMESPACE, f"{node}/{pod_uid}/{device}"))


def groups_from_labels(labels: Mapping[str, str]) -> tuple[str, ...]:
    """Group ids a bound pod carries: ``runai-gpu-group`` or ``runai-gpu-group/<id>`` keys."""
    found = []
    single = labels.get(GPU_GROUP_LABEL)
    if single:
        found.append(single)
    prefix = GPU_GROUP_LABEL + "/"
    for key, value in labels.items():
        if key.startswith(prefix):
            found.append(key[len(prefix) :] or value)
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True, slots=True)
class Group:
    """One shared device on a node: what its members hold (replaced, never mutated)."""

    portion: int  # thousandths held by all members, releasing ones included
    memory: int  # MiB held by all members
    releasing: int  # thousandths held by releasing members
    members: int
    releasing_members: int = 0
    pipelined_members: int = 0

    @property
    def all_releasing(self) -> bool:
        return self.releasing_members >= self.members

    @property
    def only_pipelined(self) -> bool:
        return self.pipelined_members >= self.members

    def fits(self, portion: int) -> bool:
        """The request fits once the releasing members are gone (a candidate group, §6)."""
        return not self.all_releasing and self.portion - self.releasing + portion <= GPU_UNIT

    def fits_now(self, portion: int) -> bool:
        """The request fits without waiting for anyone (no pipelining needed)."""
        return not self.only_pipelined and self.portion + portion <= GPU_UNIT


@dataclass(slots=True)
class ShareUndo:
    """What one Statement operation changed: previous groups and the GPU-column deltas."""

    node: int
    groups: list[tuple[str, Group | None]] = field(default_factory=list)
    idle_delta: int = 0
    releasing_delta: int = 0
    prev_groups: tuple[str, ...] = ()
    prev_portion: int = 0
    prev_quota_gpu: float = 0.0


class SharedGpus:
    """Shared GPU groups of every node, plus each node's device memory (see module docstring)."""

    __slots__ = (
        "by_node",
        "max_memory",
        "memory",
        "min_memory",
        "room",
        "room_now",
        "slots",
        "synced",
        "touched",
    )

    def __init__(self, memory: npt.NDArray[np.int64], synced: npt.NDArray[np.bool_]) -> None:
        self.memory = memory
        self.synced = synced
        labelled = memory[synced & (memory > UNSYNCED_GPU_MEMORY)]
        self.min_memory = int(labelled.min()) if labelled.size else UNSYNCED_GPU_MEMORY
        # the largest labelled device memory; 0 when no node is labelled (KAI: nil)
        self.max_memory = int(labelled.max()) if labelled.size else 0
        self.by_node: dict[int, dict[str, Group]] = {}
        # Per node and group slot, the room a request may take (thousandths; -1: no
        # candidate): ``room`` once releasing members are gone (Group.fits), ``room_now``
        # without waiting (Group.fits_now). One comparison per pod then counts the
        # fitting groups of every node.
        self.room = np.full((memory.shape[0], 0), -1, dtype=np.int64)
        self.room_now = self.room.copy()
        self.slots: dict[int, list[str | None]] = {}
        # Nodes whose groups changed since the snapshot last rebuilt what changed
        # (scheduler.cache.shared_groups): every change goes through _set
        self.touched: set[int] = set()

    def reset(self) -> None:
        """Forget every group (the snapshot rebuilds them from the pods)."""
        self.by_node = {}
        self.slots = {}
        self.room = np.full((self.memory.shape[0], 0), -1, dtype=np.int64)
        self.room_now = self.room.copy()
        self.touched = set()

    def clear(self, node: int) -> None:
        """Forget node ``node``'s groups, leaving it as :meth:`reset` does (rebuilt next)."""
        self.by_node.pop(node, None)
        if self.slots.pop(node, None) is not None:
            self.room[node] = self.room_now[node] = -1

    def groups(self, node: int) -> Mapping[str, Group]:
        return self.by_node.get(node, {})

    def fitting(
        self, portion: int | npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per node, how many groups fit ``portion`` (a number or one per node): eventually,
        and without waiting."""
        wanted = portion if isinstance(portion, int) else portion[:, None]
        fits: npt.NDArray[np.int64] = (self.room >= wanted).sum(axis=1)
        now: npt.NDArray[np.int64] = (self.room_now >= wanted).sum(axis=1)
        return fits, now

    def free_parts(self, on: npt.NDArray[np.bool_] | None = None) -> int:
        """Thousandths of a device free on shared devices, all nodes together (or the nodes
        ``on`` marks): what each group's members do not hold, plus what its releasing
        members give back (a device all of whose members are releasing is counted in the
        GPU column instead)."""
        room = self.room if on is None else self.room[on]
        return int(np.maximum(room, 0).sum())

    def put(self, node: int, gid: str, group: Group | None) -> None:
        """Set (or, with None or no members, remove) one group record."""
        self._set(node, gid, group)

    def _slot(self, node: int, gid: str, create: bool) -> int:
        slots = self.slots.setdefault(node, [])
        if gid in slots:
            return slots.index(gid)
        if not create:
            return -1
        if None in slots:
            index = slots.index(None)
            slots[index] = gid
            return index
        slots.append(gid)
        if len(slots) > self.room.shape[1]:
            pad = np.full((self.room.shape[0], len(slots) - self.room.shape[1]), -1, np.int64)
            self.room = np.hstack([self.room, pad])
            self.room_now = np.hstack([self.room_now, pad])
        return len(slots) - 1

    def _set(self, node: int, gid: str, group: Group | None) -> None:
        self.touched.add(node)
        groups = self.by_node.setdefault(node, {})
        if group is None or group.members == 0:
            groups.pop(gid, None)
            if not groups:
                del self.by_node[node]
            slot = self._slot(node, gid, create=False)
            if slot >= 0:
                self.slots[node][slot] = None
                self.room[node, slot] = self.room_now[node, slot] = -1
        else:
            groups[gid] = group
            slot = self._slot(node, gid, create=True)
            self.room[node, slot] = (
                -1 if group.all_releasing else GPU_UNIT - group.portion + group.releasing
            )
            self.room_now[node, slot] = -1 if group.only_pipelined else GPU_UNIT - group.portion

    def join(
        self,
        undo: ShareUndo,
        gid: str,
        portion: int,
        memory: int,
        *,
        pipelined: bool,
        device_from_releasing: bool,
        idle: npt.NDArray[np.int64],
        releasing: npt.NDArray[np.int64],
        free: npt.NDArray[np.int64],
    ) -> None:
        """Add one member to group ``gid`` on ``undo.node``, opening it if new."""
        node = undo.node
        old = self.groups(node).get(gid)
        undo.groups.append((gid, old))
        if old is None:
            if device_from_releasing:
                releasing[GPU, node] -= GPU_UNIT
                undo.releasing_delta -= GPU_UNIT
            else:
                idle[GPU, node] -= GPU_UNIT
                undo.idle_delta -= GPU_UNIT
            free[GPU, node] -= GPU_UNIT
            old = Group(0, 0, 0, 0)
        elif old.all_releasing:
            # a member joins a device that was being given back: it is in use again
            releasing[GPU, node] -= GPU_UNIT
            free[GPU, node] -= GPU_UNIT
            undo.releasing_delta -= GPU_UNIT
        self._set(
            node,
            gid,
            Group(
                old.portion + portion,
                old.memory + memory,
                old.releasing,
                old.members + 1,
                old.releasing_members,
                old.pipelined_members + (1 if pipelined else 0),
            ),
        )

    def release(
        self,
        undo: ShareUndo,
        gid: str,
        portion: int,
        *,
        pipelined: bool,
        releasing: npt.NDArray[np.int64],
        free: npt.NDArray[np.int64],
    ) -> None:
        """Mark one member of ``gid`` releasing; its device is releasing once all members are."""
        node = undo.node
        old = self.groups(node).get(gid)
        if old is None:
            return
        undo.groups.append((gid, old))
        new = Group(
            old.portion,
            old.memory,
            old.releasing + portion,
            old.members,
            old.releasing_members + 1,
            old.pipelined_members - (1 if pipelined else 0),
        )
        if new.all_releasing and not old.all_releasing:
            releasing[GPU, node] += GPU_UNIT
            free[GPU, node] += GPU_UNIT
            undo.releasing_delta += GPU_UNIT
        self._set(node, gid, new)

    def settle_kept(self, node: int, gid: str, portion: int, memory: int) -> None:
        """A victim put back on its own device stays: drop its releasing copy and its
        pipelined copy, leaving the group as before the eviction (committed, no undo)."""
        old = self.groups(node).get(gid)
        if old is None or old.releasing_members == 0:
            return
        self._set(
            node,
            gid,
            Group(
                old.portion - portion,
                old.memory - memory,
                old.releasing - portion,
                old.members - 1,
                old.releasing_members - 1,
                max(old.pipelined_members - 1, 0),
            ),
        )

    def undo(
        self,
        undo: ShareUndo,
        idle: npt.NDArray[np.int64],
        releasing: npt.NDArray[np.int64],
        free: npt.NDArray[np.int64],
    ) -> None:
        """Restore the groups and GPU columns exactly as they were before the operation."""
        node = undo.node
        for gid, old in reversed(undo.groups):
            self._set(node, gid, old)
        idle[GPU, node] -= undo.idle_delta
        releasing[GPU, node] -= undo.releasing_delta
        free[GPU, node] -= undo.idle_delta + undo.releasing_delta


def share_quota(share: GpuShare, node_memory: int | None, min_memory: int) -> float:
    """GPU thousandths a shared pod counts in its queue (§6 quota accounting).

    A portion counts devices x portion; a memory request counts its portion on
    its node once placed (``node_memory``), and devices x memory / the
    smallest labelled device memory in the cluster while pending.
    """
    if not share.by_memory:
        return float(share.devices * share.portion)
    if node_memory is not None:
        return float(share.devices * share.portion_on(node_memory))
    return share.devices * share.memory * GPU_UNIT / max(min_memory, 1)


def capacity_quota(share: GpuShare, max_memory: int) -> float:
    """GPU thousandths a shared pod counts in the job-level capacity check (§5.2).

    As a pending pod's :func:`share_quota`, except that a memory request counts
    devices x memory / the *largest* labelled device memory in the cluster (the
    smallest portion it can get anywhere), and nothing when no node is labelled.
    """
    if not share.by_memory:
        return float(share.devices * share.portion)
    if max_memory <= 0:
        return 0.0
    return share.devices * share.memory * GPU_UNIT / max_memory
