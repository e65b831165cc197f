"""Placement of fractional-GPU pods: which node, which shared devices, allocate or pipeline.

Why: a fractional pod does not fit by comparing its request with the node's
free column alone; it needs, on one node, ``devices`` entries among the groups
it fits into and the whole devices still free (docs/semantics.md §6). Kept apart
from ``Session.place`` so pods that do not share GPUs keep the vectorised path
untouched; the session calls :func:`place_shared` for shared pods only, and the
Statement calls :func:`join` / :func:`release` / :func:`undo` around its own
bookkeeping.

Candidate order on a node (the GPU placement strategy): ``binpack`` puts the
fullest fitting group first and whole devices last; ``spread`` puts whole
devices first, then the emptiest group. Ties go to devices that need no
waiting, then group id, so the same input always gives the same choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.api import gpu_sharing
from scheduler.api.gpu_sharing import ShareUndo
from scheduler.api.pods import PodInfo, PodStatus
from scheduler.api.resources import GPU, GPU_UNIT, PODS
from scheduler.framework import extension_points as ep

if TYPE_CHECKING:
    from scheduler.framework.session import Session

RESERVATION_SLOTS = 2
"""Free pod slots needed to open a new group: the pod plus its reservation pod."""


@dataclass(frozen=True, slots=True)
class SharePlan:
    """The devices chosen for one pod on one node."""

    groups: tuple[str, ...]
    new: tuple[bool, ...]  # opens a new group (takes a whole device)
    waits: tuple[bool, ...]  # the entry needs releasing capacity
    portion: int
    memory: int
    pipeline: bool


def _whole(row: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    out: npt.NDArray[np.int64] = np.maximum(row, 0) // GPU_UNIT
    return out


def place_shared(
    session: Session, pod: PodInfo, static: ep.Mask, pipeline_only: bool
) -> tuple[int, bool] | None:
    """(node, on idle) for a fractional pod among the ``static`` nodes, or None if none has room."""
    share = pod.gpu_share
    assert share is not None
    nodes = session.snapshot.nodes
    shared = nodes.shared
    wanted = pod.request[:, None]
    feasible = (nodes.free >= wanted).all(axis=0)
    feasible &= static
    # too few devices, or more memory than one device has, fits no device of that node
    feasible &= gpu_sharing.devices_host(
        share, nodes.allocatable[GPU] // GPU_UNIT, shared.memory, shared.synced
    )
    if not feasible.any():
        return None
    if share.by_memory:  # the portion on each node: ceil(memory / device memory, hundredths)
        hundredths = -((-share.memory * 100) // np.maximum(shared.memory, 1))
        fitting, fitting_now = shared.fitting(hundredths * (GPU_UNIT // 100))
    else:
        fitting, fitting_now = shared.fitting(share.portion)
    devices = share.devices
    whole_idle = _whole(nodes.idle[GPU])
    opens = fitting < devices
    feasible &= whole_idle + _whole(nodes.releasing[GPU]) + fitting >= devices
    feasible &= ~opens | (nodes.free[PODS] >= RESERVATION_SLOTS)
    if not feasible.any():
        return None
    fits_idle = feasible & (nodes.idle >= wanted).all(axis=0)
    fits_idle &= whole_idle + fitting_now >= devices
    fits_idle &= (fitting_now >= devices) | (nodes.idle[PODS] >= RESERVATION_SLOTS)
    context = ep.TaskContext(pod, feasible, fits_idle, True, None, fitting > 0)
    total = session.score(context)
    ranked = np.where(feasible, 0.0 if total is None else total, -np.inf)
    node = int(np.argmax(ranked))
    plan = plan_on(session, pod, node, pipeline_only)
    if plan is None:
        return None
    return node, not (plan.pipeline or pipeline_only)


def device_failures(
    session: Session, pod: PodInfo, candidates: ep.Mask
) -> list[tuple[str, ep.Mask]]:
    """Why nodes that pass the filters and resources still cannot take the fractional pod."""
    share = pod.gpu_share
    assert share is not None
    nodes = session.snapshot.nodes
    room = np.zeros(len(nodes), dtype=bool)
    slots = np.zeros(len(nodes), dtype=bool)
    for found in np.flatnonzero(candidates):
        node = int(found)
        if plan_on(session, pod, node, True) is None:
            continue
        room[node] = True
        portion = share.portion_on(int(nodes.shared.memory[node]))
        fitting = [g for g in nodes.shared.groups(node).values() if g.fits(portion)]
        slots[node] = len(fitting) >= share.devices or nodes.free[PODS, node] >= RESERVATION_SLOTS
    amount = f"{share.portion / GPU_UNIT:g} GPU" if share.portion else f"{share.memory} MiB"
    no_room = candidates & ~room
    no_slot = candidates & room & ~slots
    return [
        (f"Insufficient shared GPU (needs {share.devices} device(s) with {amount} free)", no_room),
        ("Too many pods (a new shared GPU group needs a slot for its reservation pod)", no_slot),
    ]


def plan_on(session: Session, pod: PodInfo, node: int, pipeline_only: bool) -> SharePlan | None:
    """The devices ``pod`` takes on ``node`` (§6 candidate list), or None if too few."""
    share = pod.gpu_share
    assert share is not None
    nodes = session.snapshot.nodes
    shared = nodes.shared
    device_memory = int(shared.memory[node])
    portion = share.portion_on(device_memory)
    if portion > GPU_UNIT:
        return None
    spread = session.config.gpu_placement == "spread"
    own = set(pod.gpu_groups) if pod.node == node else set()
    # whole devices being given back and not promised yet: each can be taken once
    releasing_devices = int(_whole(nodes.releasing[GPU, node : node + 1])[0])
    entries: list[tuple[int, int, str, bool]] = []  # (sort score, waits, group id, new)
    for gid, group in shared.groups(node).items():
        if gid in own:  # a victim placed back where it runs: its own device first,
            # unless the device is being given back and was promised to someone else
            if group.portion - group.releasing + portion > GPU_UNIT:
                continue
            if group.all_releasing:
                if releasing_devices <= 0:
                    continue
                releasing_devices -= 1
            entries.append((-2 * GPU_UNIT, 1, gid, False))
            continue
        if group.fits(portion):
            score = GPU_UNIT - group.portion if spread else group.portion
            entries.append((-score, 0 if group.fits_now(portion) else 1, gid, False))
    devices = share.devices
    whole_score = -GPU_UNIT if spread else 0
    idle_whole = min(int(_whole(nodes.idle[GPU, node : node + 1])[0]), devices)
    releasing_whole = min(releasing_devices, devices)
    entries += [(whole_score, 0, "", True)] * idle_whole
    entries += [(whole_score, 1, "", True)] * releasing_whole
    if len(entries) < devices:
        return None
    entries.sort(key=lambda entry: entry[:3])
    chosen = entries[:devices]
    taken = set(shared.groups(node))
    groups = []
    for index, (_, _, gid, new) in enumerate(chosen):
        if new:
            gid = gpu_sharing.group_id(nodes.names[node], pod.uid, index)
            while gid in taken:
                gid = gpu_sharing.group_id(nodes.names[node], gid, index)
            taken.add(gid)
        groups.append(gid)
    waits = tuple(bool(entry[1]) for entry in chosen)
    fits_idle = bool((nodes.idle[:, node] >= pod.request).all())
    return SharePlan(
        groups=tuple(groups),
        new=tuple(entry[3] for entry in chosen),
        waits=waits,
        portion=portion,
        memory=share.memory_on(device_memory),
        pipeline=pipeline_only or not fits_idle or any(waits),
    )


def fits_on(session: Session, pod: PodInfo, node: int) -> bool:
    """Whether a fractional pod fits on ``node`` now (its filters, resources and devices)."""
    nodes = session.snapshot.nodes
    allowed = session.allowed_mask(pod)
    if not allowed[node] or not bool((nodes.free[:, node] >= pod.request).all()):
        return False
    return plan_on(session, pod, node, True) is not None


def join(session: Session, pod: PodInfo, node: int, *, pipelined: bool) -> ShareUndo:
    """Put ``pod`` into its planned groups on ``node``; sets its groups, portion and quota."""
    share = pod.gpu_share
    assert share is not None
    nodes = session.snapshot.nodes
    shared = nodes.shared
    undo = ShareUndo(node, prev_groups=pod.gpu_groups, prev_portion=pod.gpu_portion)
    undo.prev_quota_gpu = pod.quota[0]
    plan = plan_on(session, pod, node, pipelined)
    if plan is None:  # the caller placed it without asking: open devices on credit
        device_memory = int(shared.memory[node])
        plan = SharePlan(
            tuple(
                gpu_sharing.group_id(nodes.names[node], pod.uid, i) for i in range(share.devices)
            ),
            (True,) * share.devices,
            (False,) * share.devices,
            share.portion_on(device_memory),
            share.memory_on(device_memory),
            pipelined,
        )
    for gid, new, waits in zip(plan.groups, plan.new, plan.waits, strict=True):
        shared.join(
            undo,
            gid,
            plan.portion,
            plan.memory,
            pipelined=pipelined,
            device_from_releasing=pipelined and new and waits,
            idle=nodes.idle,
            releasing=nodes.releasing,
            free=nodes.free,
        )
    if undo.releasing_delta:
        nodes.releasing_changed()
    pod.gpu_groups = plan.groups
    pod.gpu_portion = plan.portion
    pod.quota[0] = gpu_sharing.share_quota(share, int(shared.memory[node]), shared.min_memory)
    return undo


def release(session: Session, pod: PodInfo) -> ShareUndo:
    """Mark ``pod``'s memberships releasing (it is being evicted)."""
    nodes = session.snapshot.nodes
    undo = ShareUndo(pod.node, prev_groups=pod.gpu_groups, prev_portion=pod.gpu_portion)
    undo.prev_quota_gpu = pod.quota[0]
    for gid in pod.gpu_groups:
        nodes.shared.release(
            undo,
            gid,
            pod.gpu_portion,
            pipelined=pod.status == PodStatus.PIPELINED,
            releasing=nodes.releasing,
            free=nodes.free,
        )
    if undo.releasing_delta:
        nodes.releasing_changed()
    return undo


def settle_kept(session: Session, pod: PodInfo) -> None:
    """``pod`` was evicted and put back into its own groups: it simply keeps running."""
    share = pod.gpu_share
    assert share is not None
    shared = session.snapshot.nodes.shared
    device_memory = int(shared.memory[pod.node])
    for gid in pod.gpu_groups:
        shared.settle_kept(pod.node, gid, pod.gpu_portion, share.memory_on(device_memory))


def undo(session: Session, pod: PodInfo, record: ShareUndo) -> None:
    """Reverse :func:`join` or :func:`release` exactly (groups, GPU columns, pod fields)."""
    nodes = session.snapshot.nodes
    nodes.shared.undo(record, nodes.idle, nodes.releasing, nodes.free)
    if record.releasing_delta:
        nodes.releasing_changed()
    pod.gpu_groups = record.prev_groups
    pod.gpu_portion = record.prev_portion
    pod.quota[0] = record.prev_quota_gpu
