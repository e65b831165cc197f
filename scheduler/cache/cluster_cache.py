"""The cluster cache: objects parsed once as they arrive, snapshots assembled cheaply per cycle.

Why: KAI spends seconds per cycle deep-copying its cache into a snapshot at
4,000 nodes. Here every object is parsed once when it is added or updated
(from files offline, from watch events live); ``snapshot()`` then only resets
each pod's cycle state and recomputes node usage with one vectorised
scatter-add. What is derived from several objects is kept between snapshots
and re-derived only where something changed since the last one: a pod group
(its record, pod sets, queue problem and priority note) when the PodGroup or
one of the pods naming it changed; the node table when a node's scheduling
fields changed (a status-only update, such as a heartbeat, changes nothing);
a node's shared GPU groups when one of its fractional pods changed or a session
changed them (:mod:`scheduler.cache.shared_groups`);
every pod group only when a PriorityClass changed, and every group's queue problem
only when the queue tree's shape changed. The result equals a snapshot built
afresh from the same objects (tests/scheduler/test_incremental_snapshot.py).
The snapshot shares the cache's pod records: it is valid until the next
``snapshot()`` call, which is how a scheduling loop uses it (one session at a
time).

A bad object never stops the others: with ``strict=False`` its error is kept
(and reported) while the rest is served; with ``strict=True`` (the CLI) the
first error is raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crds import errors, names, queue
from crds.documents import SourcedObject, gc_paused
from crds.errors import InputError
from crds.gpusharing import GPU_GROUP_LABEL
from crds.podgroup import REASON_QUEUE_DOES_NOT_EXIST
from crds.rules import DEFAULT_PRIORITY
from scheduler.api.dra import Device, DeviceClassInfo, DraState, ResourceClaimInfo
from scheduler.api.nodes import NodeMeta, NodeTable
from scheduler.api.numa import NumaNode
from scheduler.api.podgroups import PodGroupInfo, PodSetInfo
from scheduler.api.pods import (
    ACTIVE_USED,
    PodInfo,
    PodStatus,
    frees_room,
    is_reservation_pod,
    is_utility_pod,
)
from scheduler.api.queues import QueueInfo, QueueTree
from scheduler.api.resources import GPU, GPU_UNIT, QUEUE_COLUMNS, ResourceSpace, Vector, widen
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.topology import TopologyInfo
from scheduler.api.volumes import ClaimInfo, StorageClassInfo, VolumeInfo, VolumeState
from scheduler.cache import (
    dra_reading,
    numa_reading,
    parsing,
    queue_tree,
    reading,
    shared_groups,
    topologies,
    volume_reading,
)
from scheduler.cache.parsing import FieldError
from scheduler.config import STUCK_IN_RELEASING_S

KINDS: dict[names.GroupKind, str] = {
    group_kind: kind for kind, group_kind in {**names.CORE_KINDS, **names.KINDS}.items()
}
"""The kinds the cache reads, by API group and kind: a Volcano ``PodGroup`` is not one."""
_BY_KIND = {kind: group_kind for group_kind, kind in KINDS.items()}
_BY_LOWER_KIND = {kind.lower(): kind for kind in _BY_KIND}
_SUBGROUP_LABEL = names.SUBGROUP_LABEL
_DEFAULT_POD_SET = reading.DEFAULT_POD_SET


def _classify(body: Mapping[str, Any]) -> tuple[str, str]:
    """``(kind the cache stores it as, "")``, or ``("", how the ignored kind is named)``."""
    raw_kind = body.get("kind")
    assumed = _BY_KIND.get(raw_kind) if isinstance(raw_kind, str) else None
    group, kind_name = names.group_kind(body, assumed=assumed)
    known = KINDS.get((group, kind_name))
    if known is not None:
        return known, ""
    # a look-alike of one of ours (Volcano's PodGroup) is named with its group
    if assumed:
        return "", f"{kind_name} ({group})"
    cased = _BY_LOWER_KIND.get(kind_name.lower())
    if cased:  # `kind: queue`: kinds are case-sensitive, so say which one was meant
        return "", f"{kind_name} (kinds are case-sensitive: did you mean {cased}?)"
    return "", kind_name


_CLASSIFIED: dict[tuple[Any, Any], tuple[str, str]] = {}
""":func:`_classify` by ``(apiVersion, kind)``: asked for every object, with few answers."""
_CLASSIFIED_MAX = 4096


@dataclass(slots=True)
class SnapshotResult:
    snapshot: ClusterSnapshot
    errors: list[InputError] = field(default_factory=list)
    ignored_kinds: set[str] = field(default_factory=set)
    ungrouped_pods: list[PodInfo] = field(default_factory=list)


class ClusterCache:
    """Parsed cluster objects keyed by kind and name; see the module docstring."""

    def __init__(
        self, scheduler_name: str = names.DEFAULT_SCHEDULER_NAME, *, strict: bool = True
    ) -> None:
        self.scheduler_name = scheduler_name
        self.strict = strict
        self.space = ResourceSpace()
        self._requests: parsing.RequestMemo = {}  # pod requests read, by resources as written
        self.errors: dict[tuple[str, str], InputError] = {}
        self.ignored_kinds: set[str] = set()
        self._nodes: dict[str, tuple[NodeMeta, Vector]] = {}
        self._pods: dict[str, PodInfo] = {}
        self._groups: dict[str, reading.PodGroupRecord] = {}
        self._queues: dict[str, QueueInfo] = {}
        self._binds: dict[str, tuple[str, str]] = {}  # BindRequest key -> (pod key, node)
        self._bind_groups: dict[str, tuple[str, ...]] = {}  # BindRequest key -> GPU groups
        self._classes: dict[str, tuple[int, bool]] = {}
        self._topologies: dict[str, TopologyInfo] = {}
        self._claims: dict[str, ClaimInfo] = {}
        self._volumes: dict[str, VolumeInfo] = {}
        self._storage_classes: dict[str, StorageClassInfo] = {}
        self._namespaces: dict[str, Mapping[str, str]] = {}  # name -> labels
        self._numa: dict[str, NumaNode] = {}  # node name -> its NodeResourceTopology zones
        self._resource_claims: dict[str, ResourceClaimInfo] = {}
        self._slices: dict[str, tuple[Device, ...]] = {}
        self._device_classes: dict[str, DeviceClassInfo] = {}
        self._dra_quota: dict[str, int] = {}  # pod key -> DRA GPUs added to its quota
        self._table: NodeTable | None = None
        self._shared: shared_groups.SharedGroups | None = None  # the table's shared GPU groups
        self._ready: npt.NDArray[np.bool_] | None = None  # per node table
        self._ready_rows: list[bool] = []  # the same, for one look-up per foreign pod
        self._tree: QueueTree | None = None
        self._tree_shape: object = None  # what queue problems read of the last tree
        # Derived pod groups, kept between snapshots (see the module docstring):
        self._order: dict[str, int] = {}  # pod key -> when it entered _pods (its position)
        self._inserted = 0
        self._naming: dict[str, str] = {}  # pod key -> the PodGroup key it names (ours)
        self._members: dict[str, dict[str, None]] = {}  # PodGroup key -> pods naming it
        self._jobs: dict[str, PodGroupInfo] = {}
        self._problems: dict[str, list[str]] = {}  # PodGroup key -> queue problem
        self._notes: dict[str, list[str]] = {}  # PodGroup key -> priority_note
        self._stale: set[str] = set()  # PodGroup keys to re-derive at the next snapshot
        # PodGroup keys stamped stale, or short of their requirement with every pod active:
        # with the jobs that have a pod active and one not, the only ones that can be stale
        self._maybe_stale: set[str] = set()
        self._carry: dict[str, Any] = {}  # ClusterSnapshot.carry, the same for every snapshot
        self._reorder = False  # a PodGroup came or went: _jobs follows _groups' order again
        self._relink_all = True  # a PriorityClass changed: every group's priority may have

    # --- ingest -------------------------------------------------------------------
    def upsert(self, raw: SourcedObject) -> None:
        """Add or replace one object; a bad object is raised (strict) or recorded."""
        body = raw.obj
        type_key = (body.get("apiVersion"), body.get("kind"))
        try:
            kind, ignored = _CLASSIFIED[type_key]
        except KeyError:
            kind, ignored = _classify(body)
            if len(_CLASSIFIED) < _CLASSIFIED_MAX:
                _CLASSIFIED[type_key] = (kind, ignored)
        except TypeError:  # an unhashable apiVersion or kind: bad input, not memoized
            kind, ignored = _classify(body)
        if not kind:
            self.ignored_kinds.add(ignored)
            return
        key = reading.key_of(body)
        try:
            self._store(kind, key, raw)
        except FieldError as exc:
            error = errors.object_error(raw.source, body, exc.field, exc.message)
            if self.strict:
                raise error from None
            self.errors[(kind, key)] = error
            self.delete(kind, key, keep_error=True)
            if kind == "Queue":  # its jobs are told it is invalid (queue_problem)
                self._tree = None
            return
        self.errors.pop((kind, key), None)

    def _store(self, kind: str, key: str, raw: SourcedObject) -> None:
        body = raw.obj
        if kind == "Node":
            row = reading.read_node(body, self.space)
            if not _same_node(self._nodes.get(key), row):
                self._table = None
            self._nodes[key] = row
        elif kind == "Pod":
            pod = reading.read_pod(body, self.space, self.scheduler_name, self._requests)
            spec = body.get("spec") or {}
            if pod.is_ours and spec.get("resourceClaims"):
                pod.resource_claims = dra_reading.pod_resource_claims(
                    spec, body.get("status") or {}
                )
            self._dra_quota.pop(key, None)  # a fresh record: no DRA GPUs added yet
            if key not in self._pods:
                self._order[key] = self._inserted
                self._inserted += 1
            self._pods[key] = pod
            self._pod_changed(key, pod)
        elif kind == "PodGroup":
            record = reading.read_pod_group(body)
            self._reorder = self._reorder or key not in self._groups
            self._groups[key] = record
            self._stale.add(key)
        elif kind == "Queue":
            parsing.validated(queue.Queue, body)
            creation, uid = reading.creation_of(body), reading.uid_of(body)
            self._queues[key] = queue_tree.queue_info(body, creation, uid)
            self._tree = None
        elif kind == "BindRequest":
            bind = reading.read_bind_request(body)
            groups = reading.bind_request_gpu_groups(body)
            self._bind_groups.pop(key, None)
            if bind is None:
                self._binds.pop(key, None)
            else:
                self._binds[key] = bind
                if groups:
                    self._bind_groups[key] = groups
        elif kind == "PriorityClass":
            name, value, is_default = reading.read_priority_class(body)
            self._classes[name] = (value, is_default)
            self._relink_all = True
        elif kind == "Topology":
            self._topologies[key] = topologies.read_topology(body)
        elif kind == "PersistentVolumeClaim":
            self._claims[key] = volume_reading.read_claim(body)
        elif kind == "PersistentVolume":
            self._volumes[key] = volume_reading.read_volume(body)
        elif kind == "StorageClass":
            self._storage_classes[key] = volume_reading.read_storage_class(body)
        elif kind == "NodeResourceTopology":
            zones = numa_reading.read_node_resource_topology(body, self.space)
            if zones is None:
                self._numa.pop(key, None)
            else:
                self._numa[key] = zones
        elif kind == "ResourceClaim":
            self._resource_claims[key] = dra_reading.read_resource_claim(body)
        elif kind == "ResourceSlice":
            self._slices[key] = dra_reading.read_resource_slice(body)
        elif kind == "DeviceClass":
            self._device_classes[key] = dra_reading.read_device_class(body)
        elif kind == "Namespace":
            meta = reading.meta_of(body)
            self._namespaces[key] = parsing.string_map(meta.get("labels"), "metadata.labels")

    def delete(self, kind: str, key: str, *, keep_error: bool = False) -> None:
        """Forget one object (a watch DELETED event, or a replacement that failed to parse)."""
        store: dict[str, object] = {
            "Node": self._nodes,
            "Pod": self._pods,
            "PodGroup": self._groups,
            "Queue": self._queues,
            "BindRequest": self._binds,
            "PriorityClass": self._classes,
            "Topology": self._topologies,
            "PersistentVolumeClaim": self._claims,
            "PersistentVolume": self._volumes,
            "StorageClass": self._storage_classes,
            "Namespace": self._namespaces,
            "NodeResourceTopology": self._numa,
            "ResourceClaim": self._resource_claims,
            "ResourceSlice": self._slices,
            "DeviceClass": self._device_classes,
        }.get(kind, {})  # type: ignore[assignment]
        if kind == "BindRequest":
            self._bind_groups.pop(key, None)
        elif kind == "Pod":
            self._dra_quota.pop(key, None)
        if store.pop(key, None) is not None:
            if kind == "Node":
                self._table = None
            elif kind == "Queue":
                self._tree = None
            elif kind == "Pod":
                del self._order[key]
                self._pod_changed(key, None)
            elif kind == "PodGroup":
                self._stale.add(key)
                self._reorder = True
            elif kind == "PriorityClass":
                self._relink_all = True
        if not keep_error and self.errors.pop((kind, key), None) is not None and kind == "Queue":
            self._tree = None

    def _pod_changed(self, key: str, pod: PodInfo | None) -> None:
        """Pod ``key`` is now ``pod`` (None: gone): the groups it named and names go stale."""
        before = self._naming.pop(key, None)
        if before is not None:
            members = self._members[before]
            del members[key]
            if not members:
                del self._members[before]
            self._stale.add(before)
        if pod is None or not pod.is_ours:
            return
        name = pod.annotations.get(names.POD_GROUP_ANNOTATION)
        if name:
            group = f"{pod.namespace}/{name}"
            self._naming[key] = group
            self._members.setdefault(group, {})[key] = None
            self._stale.add(group)

    def upsert_all(self, objects: Iterable[SourcedObject]) -> None:
        """Ingest many objects (an initial list), with the cyclic GC paused: nothing here cycles."""
        with gc_paused():
            for raw in objects:
                self.upsert(raw)

    # --- snapshot -----------------------------------------------------------------
    def _node_table(self) -> NodeTable:
        width = self.space.width
        if self._table is None:
            rows = sorted(self._nodes.values(), key=lambda row: row[0].name)
            allocatable = (
                np.stack([widen(row[1], width) for row in rows], axis=1)
                if rows
                else np.zeros((width, 0), dtype=np.int64)
            )
            self._table = NodeTable([row[0] for row in rows], allocatable)
            self._ready = None
        self._table.widen(width)
        return self._table

    def snapshot(
        self, now: float = 0.0, stuck_after: float = STUCK_IN_RELEASING_S
    ) -> SnapshotResult:
        """A snapshot for one cycle, sharing this cache's records (see module docstring).

        A Running pod deleted more than ``stuck_after`` seconds before ``now`` is stuck
        in Releasing: its room counts as used, not releasing (:func:`frees_room`).
        """
        width = self.space.width
        table = self._node_table()
        index = table.index
        if self._ready is None or len(self._ready) != len(table):
            # KAI's one node check (CheckNodeConditionPredicate): the nodes that may take
            # pods are the ones the fair-share total counts (§5.4)
            self._ready = table.schedulable
            self._ready_rows = self._ready.tolist()
        ready, ready_rows = self._ready, self._ready_rows
        bound_to = {pod_key: node for pod_key, node in self._binds.values()}
        bind_groups = {
            self._binds[key][0]: groups
            for key, groups in self._bind_groups.items()
            if key in self._binds
        }
        used_rows: list[int] = []
        used: list[Vector] = []
        releasing_rows: list[int] = []
        releasing: list[Vector] = []
        foreign = np.zeros(width, dtype=np.int64)
        pods = list(self._pods.values())
        if self._tree is None:
            invalid = {
                key: f"it is invalid ({error.field}: {error.message})"
                for (kind, key), error in self.errors.items()
                if kind == "Queue"
            }
            self._tree = queue_tree.build_tree(list(self._queues.values()), invalid)
        classes = dict(names.BUILTIN_PRIORITY_CLASSES)
        default_priority = DEFAULT_PRIORITY
        for name, (value, is_default) in self._classes.items():
            classes[name] = value
            if is_default:
                default_priority = value
        with gc_paused():
            self._link_jobs(classes, default_priority, self._tree)
        maybe_stale = set(self._maybe_stale)
        # jobs with a pod holding resources, and with one not: only those may be short now
        holding: set[str] = set()
        waiting: set[str] = set()
        jobs = self._jobs
        sharing: list[PodInfo] = []
        reservations: list[PodInfo] = []
        ungrouped: list[PodInfo] = []
        for pod in pods:
            if pod.job is None and pod.is_ours and self._naming.get(pod.key) not in self._jobs:
                ungrouped.append(pod)  # naming no PodGroup, or one that does not exist
            if pod.request.shape[0] != width:
                pod.request = widen(pod.request, width)
            status = pod.base_status
            node_name = pod.node_name
            if status == PodStatus.PENDING and pod.key in bound_to:
                status = PodStatus.BINDING
                node_name = bound_to[pod.key]
            pod.status = status
            if status is not pod.snapshot_status:  # answers carried at the old one are stale
                pod.snapshot_status = status
                linked = jobs.get(pod.job) if pod.job is not None else None
                if linked is not None:
                    linked.carried.clear()
            if pod.job is not None:
                (holding if status in ACTIVE_USED else waiting).add(pod.job)
            pod.node = index.get(node_name, -1) if node_name else -1
            since = pod.releasing_since
            pod.stuck_releasing = since is not None and now - since > stuck_after
            if pod.gpu_share is not None:
                sharing.append(pod)
            if pod.nominated_node and status == PodStatus.PENDING and not pod.is_ours:
                # another scheduler's preemptor: the room it freed is held for it (§5.10)
                nominated = index.get(pod.nominated_node, -1)
                if nominated >= 0:
                    if ready_rows[nominated] and not is_utility_pod(pod):
                        foreign += pod.request
                    used_rows.append(nominated)
                    used.append(pod.request)
                continue
            if status in ACTIVE_USED:
                # the two rules asked only where they can hold (a reservation pod is bound
                # and not ours; only a Releasing pod frees room): 80,000 pods a cycle
                if not pod.is_ours and pod.node >= 0 and is_reservation_pod(pod):
                    reservations.append(pod)  # counted below, once groups are known
                    continue
                # taken off the total only on a node the total counts
                counted = not pod.is_ours and pod.node >= 0 and ready_rows[pod.node]
                if counted and not is_utility_pod(pod):
                    foreign += pod.request
                if pod.node >= 0:
                    if status == PodStatus.RELEASING and frees_room(pod):
                        releasing_rows.append(pod.node)
                        releasing.append(pod.request)
                    else:
                        used_rows.append(pod.node)
                        used.append(pod.request)
        in_use = np.zeros((len(table), width), dtype=np.int64)
        being_released = np.zeros((len(table), width), dtype=np.int64)
        if self._shared is None or self._shared.table is not table:
            self._shared = shared_groups.SharedGroups(table)
        self._shared.update(sharing, bind_groups)
        self._shared.add_gpus(in_use, being_released)
        if reservations:
            shared = table.shared
            for pod in reservations:
                request = pod.request
                if pod.labels.get(GPU_GROUP_LABEL) in shared.groups(pod.node):
                    request = request.copy()
                    request[GPU] = 0  # the group's device is counted once, by its fraction pods
                rows = releasing_rows if frees_room(pod) else used_rows
                vectors = releasing if frees_room(pod) else used
                rows.append(pod.node)
                vectors.append(request)
        # every vector is ``width`` long (widened above): one concatenation, not np.stack's
        # Python-level pass over 80,000 arrays at 5,000 nodes
        if used:
            rows_used = np.concatenate(used).reshape(len(used), width)
            np.add.at(in_use, np.array(used_rows), rows_used)
        if releasing:
            rows_releasing = np.concatenate(releasing).reshape(len(releasing), width)
            np.add.at(being_released, np.array(releasing_rows), rows_releasing)
        table.releasing = np.ascontiguousarray(being_released.T)
        table.idle = table.allocatable - in_use.T - table.releasing
        table.free = table.idle + table.releasing
        total = table.allocatable[:, ready].sum(axis=1) - foreign if len(table) else -foreign
        dra = DraState(dict(self._resource_claims), dict(self._slices), dict(self._device_classes))
        if self._resource_claims or self._dra_quota:
            self._count_dra_gpus(pods, dra)
        snapshot = ClusterSnapshot(
            space=self.space,
            nodes=table,
            pods=pods,
            jobs=self._jobs,
            queues=self._tree,
            total=np.maximum(total[list(QUEUE_COLUMNS)].astype(np.float64), 0.0),
            priority_classes=classes,
            now=now,
            job_problems=self._problems,
            job_notes=self._notes,
            topologies=dict(self._topologies),
            numa=dict(self._numa),
            volumes=VolumeState(
                dict(self._claims), dict(self._volumes), dict(self._storage_classes)
            ),
            namespace_labels=dict(self._namespaces),
            dra=dra,
            maybe_stale=maybe_stale | (holding & waiting),
            carry=self._carry,
        )
        return SnapshotResult(
            snapshot, list(self.errors.values()), set(self.ignored_kinds), ungrouped
        )

    def _count_dra_gpus(self, pods: list[PodInfo], dra: DraState) -> None:
        """Add each pod's DRA GPUs to its queue quota (docs/dra.md): a claim counts once,
        for the first pod (by creation, uid) that references it."""
        counted: set[str] = set()
        claimed = sorted((p for p in pods if p.resource_claims), key=lambda p: (p.creation, p.uid))
        for pod in claimed:
            gpus = 0
            for _, name in pod.resource_claims:
                claim = dra.claims.get(f"{pod.namespace}/{name}") if name else None
                if claim is not None and claim.key not in counted:
                    counted.add(claim.key)
                    gpus += dra.gpu_devices(claim)
            # a shared-GPU pod's quota was set afresh by this snapshot (shared_groups)
            before = 0 if pod.gpu_share is not None else self._dra_quota.get(pod.key, 0)
            if gpus != before:
                pod.quota[0] += float((gpus - before) * GPU_UNIT)
                self._dra_quota[pod.key] = gpus

    def _link_jobs(self, classes: dict[str, int], default_priority: int, tree: QueueTree) -> None:
        """Re-derive the stale pod groups: record, pod sets with their pods, problem, note.

        A group's pods are linked in the order they entered the cache, and ``_jobs``,
        its problems and notes keep ``_groups``' order, as a fresh build has them.
        """
        everything = self._relink_all
        if everything:
            if self._jobs:  # linked before: unlink every pod (new records start unlinked)
                for pod in self._pods.values():
                    pod.job = pod.pod_set = None
            self._jobs, self._problems, self._notes = {}, {}, {}
            self._maybe_stale = set()
            self._relink_all = False
        shape = (tree.dropped, {name: q.is_leaf for name, q in tree.queues.items()})
        reshaped = shape != self._tree_shape  # what queue_problem reads of the tree
        self._tree_shape = shape
        if not (everything or self._stale or reshaped or self._reorder):
            return
        stale: Iterable[str] = self._groups if everything else self._stale
        records = self._groups.items() if everything else ((k, self._groups.get(k)) for k in stale)
        jobs, problems, notes = self._jobs, self._problems, self._notes
        maybe_stale = self._maybe_stale
        added = everything  # a key added to problems or notes: relist them in job order
        for key, record in records:
            before = None if everything else jobs.get(key)
            if before is not None:  # its pods are linked anew below, or stay ungrouped
                for pod_set in before.pod_sets:
                    for pod in pod_set.pods:
                        pod.job = pod.pod_set = None
            if record is None:
                jobs.pop(key, None)
                notes.pop(key, None)
                maybe_stale.discard(key)
                continue
            job = record.info(classes, default_priority)
            jobs[key] = job
            members = self._members.get(key)
            if members:
                self._link_pods(key, job, members)
            if job.stale_since is not None or job.short_with_every_pod():
                maybe_stale.add(key)
            else:
                maybe_stale.discard(key)
            found = list(record.notes)
            note = priority_note(job, classes) if job.priority_class not in classes else None
            if note:
                found.append(note)
            if found:
                added = added or key not in notes
                notes[key] = found
            elif key in notes:
                del notes[key]
        by_queue: dict[str, str | None] = {}
        for key in self._groups if reshaped else stale:
            linked = jobs.get(key)
            if linked is None:
                problems.pop(key, None)
                continue
            queue_name = linked.queue
            if queue_name in by_queue:
                reason = by_queue[queue_name]
            else:
                reason = by_queue[queue_name] = queue_problem(queue_name, tree)
            if reason:
                added = added or key not in problems
                problems[key] = [reason]
            elif key in problems:
                del problems[key]
        self._stale = set()
        if self._reorder and not everything:  # a group came or went
            self._jobs = jobs = {key: jobs[key] for key in self._groups}
            added = True
        self._reorder = False
        if added and problems:
            self._problems = {key: problems[key] for key in jobs if key in problems}
        if added and notes:
            self._notes = {key: notes[key] for key in jobs if key in notes}

    def _link_pods(self, key: str, job: PodGroupInfo, members: dict[str, None]) -> None:
        """Put the pods naming ``job`` into its pod sets (by their subgroup label)."""
        pods = self._pods
        keys = sorted(members, key=self._order.__getitem__) if len(members) > 1 else members
        if len(job.pod_sets) == 1:  # the plain gang: one set, usually "default"
            only = job.pod_sets[0]
            for pod_key in keys:
                pod = pods[pod_key]
                if pod.labels.get(_SUBGROUP_LABEL, _DEFAULT_POD_SET) == only.name:
                    only.pods.append(pod)
                    pod.job = key
                    pod.pod_set = only.name
            return
        pod_sets: dict[str, PodSetInfo] = {}
        for pod_set in job.pod_sets:
            pod_sets.setdefault(pod_set.name, pod_set)
        for pod_key in keys:
            pod = pods[pod_key]
            wanted = pod_sets.get(pod.labels.get(_SUBGROUP_LABEL, _DEFAULT_POD_SET))
            if wanted is not None:
                wanted.pods.append(pod)
                pod.job = key
                pod.pod_set = wanted.name


def _same_node(before: tuple[NodeMeta, Vector] | None, after: tuple[NodeMeta, Vector]) -> bool:
    """Whether a node's new copy changes nothing the engine reads (a status-only update)."""
    if before is None or before[0] != after[0]:
        return False
    width = max(before[1].shape[0], after[1].shape[0])
    return bool(np.array_equal(widen(before[1], width), widen(after[1], width)))


def priority_note(job: PodGroupInfo, classes: Mapping[str, int]) -> str | None:
    """The note on a PodGroup whose ``priorityClassName`` names no PriorityClass, or None.

    Not a reason to leave it pending: it is scheduled with the fallback priority of
    :func:`crds.rules.priority_of`, and the note says which.
    """
    if not job.priority_class or job.priority_class in classes:
        return None
    return (
        f"PriorityClassNotFound: priority class {job.priority_class!r} does not exist; "
        f"priority {job.priority} is used"
    )


def queue_problem(queue: str, tree: QueueTree) -> str | None:
    """Why a PodGroup's queue cannot take jobs (QueueDoesNotExist, non-leaf), or None."""
    if not queue:
        return f"{REASON_QUEUE_DOES_NOT_EXIST}: the PodGroup names no queue (spec.queue is empty)"
    if queue in tree.dropped:
        why = tree.dropped[queue]
        return f"{REASON_QUEUE_DOES_NOT_EXIST}: queue {queue!r} is not usable: {why}"
    if queue not in tree.queues:
        return f"{REASON_QUEUE_DOES_NOT_EXIST}: queue {queue!r} does not exist"
    if not tree.queues[queue].is_leaf:
        return f"queue {queue!r} is not a leaf queue; only leaf queues accept jobs"
    return None
