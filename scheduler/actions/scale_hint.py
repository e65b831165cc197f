"""A gang's whole shortfall as one scale-up hint: how many more nodes of which shape.

Why this module exists: cluster-autoscaler and Karpenter react to unschedulable pods
one at a time, each pod simulated against a node template. A gang of 16 pods that
needs two more 8-GPU nodes may then get one node, wait, and get the next; while
the first waits, the gang still cannot start. Reporting the gang's shortfall as one
number ("2 more nodes like this") lets an autoscaler, or its operator, add the
nodes together. Beyond KAI (docs/semantics.md §7 stops at ``PodScheduled=False``).

The hint is pure arithmetic over the session's end state, for gangs that stayed
pending although their queue would take them:

1. the tasks to allocate are packed first-fit-decreasing onto what is free on the
   existing nodes each task may use (selectors, affinity, taints: the session's node
   filters); those that do not fit are the shortfall;
2. node *shapes* are the distinct (allocatable vector, pool labels, GPU memory) of
   existing nodes; a shape can host a task when one of its nodes passes the task's
   filters and its allocatable covers the request; the hint's labels are the shape's
   pool labels plus the node labels the tasks' node selectors name;
3. among the shapes that host every shortfall task, the most common wins, ties to
   the smallest; if none hosts them all, the one that hosts the most;
4. the shortfall tasks are packed first-fit-decreasing onto empty nodes of that
   shape; tasks no shape can host are named instead, and so are tasks that select
   one node by ``kubernetes.io/hostname`` (a new node has another name).

A shared-GPU task (``gpu-fraction`` x ``gpu-fraction-num-devices``, ``gpu-memory``) is
not a scalar GPU amount: only nodes with that many devices, each with the memory a
``gpu-memory`` request names (``nvidia.com/gpu.memory``), can ever host it
(``devices_host``), in steps 1 and 2 alike; steps 1 and 4 pack devices one by one
(distinct devices per pod, the fullest first, a pod slot per device's reservation pod;
step 1 over existing nodes' free devices and the room left in their shared ones), and a
``gpu-memory`` request is its portion of the device. Step 1 of a gang with a required
topology level or apart rules still packs such a task as its GPU amount.

A gang whose PodGroup requires a topology level fits only inside one domain of that
level, so steps 1-4 run per candidate domain (``scale_hint_domains``): its free room
only, new nodes joining it. The domain needing the fewest new nodes wins (fewest
unhostable tasks first), ties to the first domain id; the hint names it
(``topology``: name, level, domain) and its labels carry the domain's level labels.
A constraint no node can meet (its Topology or level does not exist) gets no hint, nor
does a gang with DRA ResourceClaims (a node shape says nothing of the devices a new node
would publish).

A gang whose pods must stay apart (required anti-affinity among its own pods, or
``DoNotSchedule`` spread per hostname with ``maxSkew: 1``: ``scale_hint_apart``) is
packed with that rule: step 1 uses only the free room of nodes the inter-pod rules allow
as the cycle stands, at most one member per domain of the rule's key; step 4 puts at
most one member on each new node. A new node's zone (or rack) is not known, so for keys
other than hostname the hint names the key (``apart``): each new node must be in a
different domain of it, one holding no pod the rule matches (none of the gang's).

Work is bounded: at most :data:`MAX_JOBS_PER_CYCLE` gangs per cycle, oldest first.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from crds.gpusharing import NODE_GPU_MEMORY_LABEL
from crds.names import NODE_POOL_LABEL, SCALE_UP_HINT_ANNOTATION
from crds.topology import HOSTNAME_LABEL
from scheduler.actions.scale_hint_apart import Apart, apart_rules, room_masks
from scheduler.actions.scale_hint_domains import (
    ApartColumns,
    DomainScope,
    domain_scope,
    shortfalls,
)
from scheduler.api.gpu_sharing import GpuShare, devices_host
from scheduler.api.nodes import NodeTable
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.api.resources import CPU, GPU, GPU_UNIT, MEMORY, PODS, Vector
from scheduler.framework import extension_points as ep
from scheduler.framework import gang
from scheduler.framework.node_memo import per_table
from scheduler.framework.session import Session

__all__ = [
    "MAX_JOBS_PER_CYCLE",
    "POOL_LABELS",
    "SCALE_UP_HINT_ANNOTATION",
    "ScaleUpHint",
    "scale_up_hints",
]

MAX_JOBS_PER_CYCLE = 16
"""Gangs examined per cycle; later ones keep the hint they have until their turn."""

POOL_LABELS = (
    NODE_POOL_LABEL,
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
    "nvidia.com/gpu.product",
)
"""Node labels that name the group a new node would come from (reported with the shape)."""


@dataclass(frozen=True, slots=True)
class ScaleUpHint:
    """``nodes`` more nodes of ``shape`` (with ``labels``) would host ``pods`` more pods."""

    nodes: int
    pods: int
    shape: Mapping[str, str]
    labels: Mapping[str, str]
    unhostable: tuple[str, ...] = ()
    topology: Mapping[str, str] | None = None  # name, level, domain: where the nodes go
    apart: tuple[str, ...] = ()  # keys (zone, rack): each new node in a domain of its own

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "nodes": self.nodes,
            "pods": self.pods,
            "shape": dict(self.shape),
            "labels": dict(self.labels),
        }
        if self.unhostable:
            out["unhostable"] = list(self.unhostable)
        if self.topology is not None:
            out["topology"] = dict(self.topology)
        if self.apart:
            out["apart"] = list(self.apart)
        return out

    def to_json(self) -> str:
        """The annotation value: compact, keys sorted, so equal hints are equal strings."""
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    def message(self) -> str:
        """One sentence for the PodGroup's Unschedulable condition and Event."""
        parts = []
        if self.nodes:
            shape = ", ".join(f"{k}={v}" for k, v in self.shape.items())
            labels = ", ".join(f"{k}={v}" for k, v in self.labels.items())
            where = f" ({labels})" if labels else ""
            inside = (
                f" in {self.topology['level']} {self.topology['domain']} of topology"
                f" {self.topology['name']}"
                if self.topology is not None
                else ""
            )
            apart = (
                f", each in a different {' and '.join(self.apart)} holding no pod its rules match,"
                if self.apart
                else ""
            )
            parts.append(
                f"ScaleUpHint: {self.nodes} more node(s) of shape {{{shape}}}{where}{inside}"
                f"{apart} would host the {self.pods} pod(s) that do not fit the current nodes"
            )
        if self.unhostable:
            # The scheduler knows only the shapes of nodes that exist: a node group scaled
            # to zero (the usual GPU set-up) is invisible to it, so this is no verdict.
            parts.append(
                "ScaleUpHint: pod(s) "
                + ", ".join(self.unhostable[:5])
                + (f" and {len(self.unhostable) - 5} more" if len(self.unhostable) > 5 else "")
                + " fit no shape of the existing nodes (a node group with no node now is"
                " not known to the scheduler and may still host them)"
            )
        return "; ".join(parts)


def _in_bytes(name: str) -> bool:
    """Resources counted in bytes besides memory: shown with binary suffixes as memory is."""
    return name == "ephemeral-storage" or name.startswith("hugepages-")


def format_quantity(column: int, amount: int, name: str = "") -> str:
    """A Kubernetes quantity string for one allocatable column (``name``: its resource)."""
    if column == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if column == GPU:
        return str(amount // GPU_UNIT) if amount % GPU_UNIT == 0 else f"{amount / GPU_UNIT:g}"
    if column == MEMORY or _in_bytes(name):
        for suffix, unit in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


@dataclass(slots=True)
class _Shape:
    capacity: Vector
    labels: tuple[tuple[str, str], ...]
    nodes: list[int]
    device_memory: int = 0  # MiB per GPU (nvidia.com/gpu.memory), as the engine reads it
    synced: bool = False  # the label is there: gpu-memory requests can be sized

    def size_key(self) -> tuple[int, ...]:
        return (int(self.capacity[GPU]), int(self.capacity[CPU]), int(self.capacity[MEMORY]))


def _shapes(session: Session) -> list[_Shape]:
    """Existing nodes grouped by (allocatable, pool labels), in first-node order: formed
    once per node table (a loop over every node, asked in every cycle that gives a hint)."""
    nodes = session.snapshot.nodes
    return per_table(nodes, _SHAPES, lambda: _node_shapes(nodes))


_SHAPES = "scale-hint.shapes"


def _node_shapes(nodes: NodeTable) -> list[_Shape]:
    """:func:`_shapes` of ``nodes``, formed afresh; each capacity read-only (shared from
    cycle to cycle while the table stays). Nodes whose GPUs differ in memory are different
    shapes: a shared-GPU request is sized per device."""
    grouped: dict[tuple[bytes, tuple[tuple[str, str], ...], int, bool], _Shape] = {}
    allocatable = nodes.allocatable
    memory, synced = nodes.shared.memory, nodes.shared.synced
    for i, meta in enumerate(nodes.meta):
        column = np.ascontiguousarray(allocatable[:, i])
        column.flags.writeable = False
        labels = tuple((k, meta.labels[k]) for k in POOL_LABELS if k in meta.labels)
        key = (column.tobytes(), labels, int(memory[i]), bool(synced[i]))
        shape = grouped.get(key)
        if shape is None:
            grouped[key] = shape = _Shape(column, labels, [], key[2], key[3])
        shape.nodes.append(i)
    return list(grouped.values())


def _eligible(session: Session, pod: PodInfo) -> ep.Mask:
    """Nodes the pod's constraints allow, whether or not they are ready or cordoned."""
    _, parts = session.static_mask(pod)
    mask = np.ones(len(session.snapshot.nodes), dtype=bool)
    for part, _reason in parts[1:]:  # parts[0] is schedulability, not a constraint
        mask &= part
    return mask


def _device_masks(session: Session, tasks: Sequence[PodInfo]) -> list[ep.Mask | None]:
    """Per shared-GPU task, the nodes whose devices could ever host it (enough devices,
    enough memory per device: ``devices_host``); None for other tasks."""
    nodes = session.snapshot.nodes
    devices = nodes.allocatable[GPU] // GPU_UNIT
    out: list[ep.Mask | None] = []
    seen: dict[GpuShare, ep.Mask] = {}
    for task in tasks:
        share = task.gpu_share
        if share is None:
            out.append(None)
            continue
        mask = seen.get(share)
        if mask is None:
            mask = devices_host(share, devices, nodes.shared.memory, nodes.shared.synced)
            seen[share] = mask
        out.append(mask)
    return out


def _need(task: PodInfo) -> Vector:
    """What the task needs of a node. A fractional-GPU pod's request holds no GPU (its
    group takes the device), so its GPUs are counted as in its queue: devices x portion."""
    if task.gpu_share is None:
        return task.request
    need = task.request.copy()
    need[GPU] = math.ceil(task.quota[0])
    return need


def _need_on(task: PodInfo, shape: _Shape) -> Vector:
    """What the task needs of an empty node of ``shape``: a shared-GPU request counts
    devices x its portion of one of the shape's devices (a memory request's portion
    depends on the device memory); whether the devices suit it is ``devices_host``."""
    share = task.gpu_share
    if share is None:
        return task.request
    need = task.request.copy()
    need[GPU] = share.devices * share.portion_on(shape.device_memory)
    return need


def _size(task: PodInfo) -> tuple[int, int, int, str]:
    """Sort key for first-fit decreasing: GPUs, then CPU, then memory, largest first."""
    request = _need(task)
    return (-int(request[GPU]), -int(request[CPU]), -int(request[MEMORY]), task.key)


def _order(tasks: Sequence[PodInfo]) -> list[int]:
    """Task indices in first-fit-decreasing order."""
    return sorted(range(len(tasks)), key=lambda i: _size(tasks[i]))


def _apart_columns(
    session: Session, rules: Sequence[Apart], order: Sequence[int], columns: npt.NDArray[np.intp]
) -> list[ApartColumns]:
    """``rules`` as ``shortfalls`` takes them: members in ``order``, key domains of ``columns``."""
    return [
        (
            np.array([i in rule.members for i in order], dtype=bool),
            rule.domain_of(session, columns),
            rule.cap,
        )
        for rule in rules
    ]


def _shortfall(
    session: Session, tasks: Sequence[PodInfo], masks: list[ep.Mask], rules: Sequence[Apart]
) -> list[int]:
    """Indices of the tasks that do not fit what is free now (first-fit decreasing)."""
    nodes = session.snapshot.nodes
    union = np.zeros(len(nodes), dtype=bool)
    for mask in masks:
        union |= mask
    columns = np.flatnonzero(union & nodes.schedulable)
    order = _order(tasks)
    if not rules and any(tasks[i].gpu_share is not None for i in order):
        return _shortfall_by_device(session, tasks, masks, order, columns)
    left = shortfalls(
        nodes.free[:, columns],
        [_need(tasks[i]) for i in order],
        [masks[i][columns] for i in order],
        np.zeros(len(columns), dtype=np.intp),
        1,
        _apart_columns(session, rules, order, columns),
    )
    return [order[t] for t in np.flatnonzero(left[0])]


def _shortfall_by_device(
    session: Session,
    tasks: Sequence[PodInfo],
    masks: list[ep.Mask],
    order: Sequence[int],
    columns: npt.NDArray[np.intp],
) -> list[int]:
    """:func:`_shortfall` for a gang with shared-GPU tasks: first fit over the free room of
    ``columns`` with each node's devices one by one, as :func:`_pack` packs a new node:
    its free whole devices, and the room left in its shared devices (those that hold pods,
    which a shared task may join)."""
    nodes = session.snapshot.nodes
    shared = nodes.shared
    free = nodes.free[:, columns].copy()
    free_gpu = free[GPU].copy()  # before packing: a superset of what stays free
    free[GPU] = 0  # the devices are packed in ``rooms``
    memory = shared.memory[columns]
    groups = shared.room[columns]
    rooms: dict[int, list[int]] = {}  # per column: thousandths left per device, when asked
    left: list[int] = []
    for i in order:
        task = tasks[i]
        share = task.gpu_share
        need = task.request.astype(free.dtype)  # a copy
        need[GPU] = 0
        whole = 0 if share is not None else -(-int(task.request[GPU]) // GPU_UNIT)
        fits = masks[i][columns] & (free >= need[:, None]).all(axis=0)
        if share is None:
            fits &= free_gpu >= whole * GPU_UNIT
        else:  # enough free devices and shared ones with room, as at the start: a superset
            portion = _portions(share, memory)
            fits &= free_gpu // GPU_UNIT + (groups >= portion[:, None]).sum(axis=1) >= share.devices
        for found in np.flatnonzero(fits):
            c = int(found)
            node = int(columns[c])
            if c not in rooms:
                rooms[c] = [GPU_UNIT] * (int(free_gpu[c]) // GPU_UNIT) + [
                    int(r) for r in shared.room[node] if r > 0
                ]
            taken = (
                None
                if share is None
                else (share.devices, share.portion_on(int(shared.memory[node])))
            )
            if _take(free[:, c], rooms[c], need, whole, taken):
                break
        else:
            left.append(i)
    return left


def _portions(share: GpuShare, memory: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per node of device ``memory``, the thousandths of a device ``share`` takes there."""
    values, inverse = np.unique(memory, return_inverse=True)
    each = np.array([share.portion_on(int(m)) for m in values], dtype=np.int64)
    out: npt.NDArray[np.int64] = each[inverse.reshape(-1)]
    return out


def _pack(
    capacity: Vector,
    requests: Sequence[Vector],
    shares: Sequence[tuple[int, int] | None] | None = None,
) -> int:
    """Empty nodes of ``capacity`` needed for ``requests`` (already in decreasing order).
    Apart rules ride along as extra entries: a cap in ``capacity``, 1 in each member's
    request (a new node is a domain of its own for every key).

    With ``shares`` (per request: (devices, thousandths of each) for a shared-GPU pod,
    else None) the GPU column is packed per device, as the scheduler places: a whole-GPU
    request takes untouched devices; a shared one takes that many distinct devices with
    room for its portion, the fullest first, and one more pod slot for the reservation
    pod of each device it is the first on."""
    if shares is None:
        bins: list[Vector] = []
        for request in requests:
            for room in bins:
                if (room >= request).all():
                    room -= request
                    break
            else:
                bins.append(capacity - request)
        return len(bins)
    devices = int(capacity[GPU]) // GPU_UNIT
    cap = capacity.copy()
    cap[GPU] = 0
    nodes: list[tuple[Vector, list[int]]] = []
    for request, share in zip(requests, shares, strict=True):
        need = request.astype(cap.dtype)  # a copy
        need[GPU] = 0
        whole = 0 if share is not None else -(-int(request[GPU]) // GPU_UNIT)
        for room, rooms in nodes:
            if _take(room, rooms, need, whole, share):
                break
        else:
            fresh = (cap.copy(), [GPU_UNIT] * devices)
            _take(*fresh, need, whole, share)  # the shape hosts it: it fits an empty node
            nodes.append(fresh)
    return len(nodes)


def _take(
    room: Vector, rooms: list[int], need: Vector, whole: int, share: tuple[int, int] | None
) -> bool:
    """Put one request on a node being packed (``room``: what is left of its non-GPU
    resources; ``rooms``: thousandths left per device), if it fits."""
    if not (room >= need).all():
        return False
    if share is None:
        untouched = [d for d, left in enumerate(rooms) if left == GPU_UNIT][:whole]
        if len(untouched) < whole:
            return False
        for d in untouched:
            rooms[d] = 0
        room -= need
        return True
    count, portion = share
    chosen = [d for _, d in sorted((left, d) for d, left in enumerate(rooms) if left >= portion)]
    chosen = chosen[:count]
    opened = sum(1 for d in chosen if rooms[d] == GPU_UNIT)
    if len(chosen) < count or room[PODS] - need[PODS] < opened:
        return False
    for d in chosen:
        rooms[d] -= portion
    room -= need
    room[PODS] -= opened
    return True


def _hint_for(
    session: Session,
    tasks: Sequence[PodInfo],
    masks: list[ep.Mask],
    left: Sequence[int],
    shapes: list[_Shape],
    rules: Sequence[Apart] = (),
) -> ScaleUpHint:
    """How many nodes of which shape would host the shortfall tasks ``left``; ``masks``
    are the static ones (a new node holds no pods), ``rules`` how its tasks stay apart."""
    space = session.snapshot.space
    # A pod that selects one node by name can use no new node: it is reported unhostable.
    movable = [i for i in left if HOSTNAME_LABEL not in tasks[i].node_selector]
    hosts: list[set[int]] = []  # per shape: indices (into tasks) of shortfall tasks it hosts
    for shape in shapes:
        members = np.array(shape.nodes, dtype=np.intp)
        known: dict[object, bool] = {}  # identical tasks (same constraints) are asked once
        hosted = set()
        for i in movable:
            task = tasks[i]
            key = (task.constraint_key, task.gpu_share)  # the masks narrow by devices too
            fits = known.get(key)
            if fits is None:
                fits = bool(masks[i][members].any())
                known[key] = fits
            if fits and (shape.capacity >= _need_on(task, shape)).all():
                hosted.add(i)
        hosts.append(hosted)
    hostable = set().union(*hosts) if hosts else set()
    unhostable = tuple(sorted(tasks[i].key for i in left if i not in hostable))
    if not hostable:
        return ScaleUpHint(0, 0, {}, {}, unhostable)
    best = max(
        range(len(shapes)),
        key=lambda s: (
            len(hosts[s]),
            len(shapes[s].nodes),
            tuple(-v for v in shapes[s].size_key()),
            -s,
        ),
    )
    chosen = shapes[best]
    first = min(hosts[best])
    example = next(n for n in chosen.nodes if masks[first][n])  # an eligible node of it
    placed = sorted(hosts[best], key=lambda i: _size(tasks[i]))
    others = tuple(sorted(tasks[i].key for i in hostable - hosts[best]))
    caps = np.array([rule.cap for rule in rules], dtype=chosen.capacity.dtype)
    shared = [tasks[i].gpu_share for i in placed]
    count = _pack(
        np.concatenate((chosen.capacity, caps)),
        [
            np.concatenate((_need_on(tasks[i], chosen), [int(i in rule.members) for rule in rules]))
            for i in placed
        ],
        [
            None if share is None else (share.devices, share.portion_on(chosen.device_memory))
            for share in shared
        ]
        if any(share is not None for share in shared)
        else None,
    )
    apart = sorted(
        {r.key for r in rules if r.key != HOSTNAME_LABEL and any(i in r.members for i in placed)}
    )
    described = {
        space.display_name(c): format_quantity(c, int(chosen.capacity[c]), space.names[c])
        for c in range(len(chosen.capacity))
        if c != PODS and chosen.capacity[c] > 0
    }
    labels = dict(chosen.labels)
    node_labels = session.snapshot.nodes.meta[example].labels
    for i in placed:  # the labels the pods select on name the pool too
        selector = tasks[i].node_selector
        labels.update({k: node_labels[k] for k in selector if k in node_labels})
    if any(share is not None and share.by_memory for share in shared):
        # gpu-memory pods were sized by the shape's device memory: name it
        labels[NODE_GPU_MEMORY_LABEL] = node_labels[NODE_GPU_MEMORY_LABEL]
    return ScaleUpHint(
        count, len(placed), described, labels, (*unhostable, *others), apart=tuple(apart)
    )


def _in_one_domain(
    session: Session,
    tasks: Sequence[PodInfo],
    masks: list[ep.Mask],
    scope: DomainScope,
    shapes: list[_Shape],
    room: list[ep.Mask],
    rules: Sequence[Apart],
) -> ScaleUpHint | None:
    """The hint for a gang that must fit one domain: per candidate domain, its free room
    and new nodes; the domain needing the fewest new nodes wins, ties by domain id.
    None when some domain holds the gang as is (or no domain qualifies)."""
    if not scope.ids:
        return None
    order = _order(tasks)
    columns = scope.columns
    left = shortfalls(
        session.snapshot.nodes.free[:, columns],
        [_need(tasks[i]) for i in order],
        [room[i][columns] for i in order],
        scope.domain_of_column,
        len(scope.ids),
        _apart_columns(session, rules, order, columns),
    )
    if not left.any(axis=1).all():
        return None  # some domain holds the whole gang now
    # Domains that lack the same tasks up to identical ones (same constraints, same
    # need) need the same nodes: each distinct shortfall is priced once.
    signatures: dict[tuple[object, bytes], int] = {}
    kinds = [
        signatures.setdefault((tasks[i].constraint_key, _need(tasks[i]).tobytes()), len(signatures))
        for i in order
    ]
    onehot = np.zeros((len(order), len(signatures)), dtype=np.int64)
    onehot[np.arange(len(order)), kinds] = 1
    _, first, inverse = np.unique(
        left.astype(np.int64) @ onehot, axis=0, return_index=True, return_inverse=True
    )
    priced = [
        _hint_for(session, tasks, masks, [order[t] for t in np.flatnonzero(left[d])], shapes, rules)
        for d in first
    ]
    ranks = np.array([(len(h.unhostable), h.nodes) for h in priced])[inverse.reshape(-1)]
    # Stable: among the domains needing the fewest nodes the first id wins, which is the
    # first domain of its shortfall kind, the one priced (with its own tasks named).
    d = int(np.lexsort((ranks[:, 1], ranks[:, 0]))[0])
    hint = priced[int(inverse.reshape(-1)[d])]
    where = {"name": scope.topology, "level": scope.level, "domain": scope.ids[d]}
    labels = {**hint.labels, **scope.labels(d)}
    return replace(hint, labels=labels, topology=where)


def scale_up_hint(
    session: Session, job: PodGroupInfo, shapes: list[_Shape] | None = None
) -> ScaleUpHint | None:
    """The hint for one pending gang, or None when its tasks fit the free room as is
    (or when new nodes cannot help: its required Topology or level does not exist)."""
    tasks = gang.tasks_to_allocate(session, job)
    if not tasks or any(task.resource_claims for task in tasks):
        return None  # DRA claims: a node shape says nothing of the devices it would publish
    devices = _device_masks(session, tasks)
    masks = [
        mask if fit is None else mask & fit
        for mask, fit in zip((_eligible(session, task) for task in tasks), devices, strict=True)
    ]
    scope = domain_scope(session, job, tasks, masks) if job.topology_tree is not None else None
    if isinstance(scope, str):
        return None
    shapes = _shapes(session) if shapes is None else shapes
    rules = apart_rules(session, tasks)
    # room_masks asks once per constraint key, which holds no device count: narrow after
    room = [
        mask if fit is None else mask & fit
        for mask, fit in zip(room_masks(session, tasks, masks), devices, strict=True)
    ]
    if scope is not None:
        return _in_one_domain(session, tasks, masks, scope, shapes, room, rules)
    left = _shortfall(session, tasks, room, rules)
    if not left:
        return None
    return _hint_for(session, tasks, masks, left, shapes, rules)


def scale_up_hints(
    session: Session, jobs: Iterable[PodGroupInfo], limit: int = MAX_JOBS_PER_CYCLE
) -> dict[str, ScaleUpHint | None]:
    """Hints for pending gangs that lack room, at most ``limit`` computed per cycle.

    A gang lacks room when its queue has it (no queue problem), it is ready (all
    pods exist) and below its minimum, and the queue's limits and quota would take
    its tasks now. Gangs that already carry a hint go first (so a stale one is
    cleared at once), then the oldest. The result maps every gang examined to its
    hint, None meaning it should carry none; gangs past the bound are left out, and
    keep what they have until a later cycle.
    """
    out: dict[str, ScaleUpHint | None] = {}
    shapes: list[_Shape] | None = None
    computed = 0
    for job in itertools.islice(_hinted_first(jobs), limit * 4):
        out[job.key] = None
        if session.snapshot.job_problems.get(job.key) or gang.ready_problem(session, job):
            continue
        if job.elastic_state() != 0:
            continue  # its gang runs: extras wait for room one at a time, no hint
        tasks = gang.tasks_to_allocate(session, job)
        if not tasks or session.job_capacity_problem(job, tasks):
            continue
        if shapes is None:
            shapes = _shapes(session)
        out[job.key] = scale_up_hint(session, job, shapes)
        computed += 1
        if computed >= limit:
            break  # before the next gang is asked for (the unhinted ones are sorted then)
    return out


def _hinted_first(jobs: Iterable[PodGroupInfo]) -> Iterator[PodGroupInfo]:
    """``jobs`` with a hint first, then the others, each part oldest first (then by key).

    Each cycle examines the gangs that carry a hint, seldom more: the others (most of a
    backlog) are sorted only when the examination reaches them.
    """
    candidates = list(jobs)
    by_age = attrgetter("creation", "key")
    yield from sorted((job for job in candidates if job.scale_up_hint), key=by_age)
    yield from sorted((job for job in candidates if not job.scale_up_hint), key=by_age)


def annotation_changes(
    session: Session, hints: Mapping[str, ScaleUpHint | None], placed: set[str | None]
) -> dict[str, str | None]:
    """The ``kai.scheduler/scale-up-hint`` writes: set where it changed, removed where it
    no longer applies (the gang examined without a hint, placed this cycle, or with
    nothing pending any more). ``placed``: gangs that got binds or pipelined pods."""
    changes: dict[str, str | None] = {}
    jobs = session.snapshot.jobs
    for key, hint in hints.items():
        wanted = hint.to_json() if hint is not None else ""
        if jobs[key].scale_up_hint != wanted:
            changes[key] = wanted or None
    for key, job in jobs.items():
        if job.scale_up_hint and key not in hints and (key in placed or not job.has_pending()):
            changes[key] = None
    return changes
