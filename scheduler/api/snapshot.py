"""The cluster snapshot: everything one scheduling cycle decides over.

Why: actions and plugins need one value that holds nodes, pods, pod groups,
queues and the cluster total; building it once per cycle (incrementally in the
live scheduler) and mutating only the accounting arrays inside a Statement
avoids per-cycle deep copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.dra import DraState
from scheduler.api.nodes import NodeTable
from scheduler.api.numa import NumaNode
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.api.queues import QueueTree, QueueVector
from scheduler.api.resources import ResourceSpace
from scheduler.api.topology import TopologyInfo
from scheduler.api.volumes import VolumeState


@dataclass(slots=True)
class ClusterSnapshot:
    """Nodes, pods, pod groups and queues of one cycle."""

    space: ResourceSpace
    nodes: NodeTable
    pods: list[PodInfo]
    jobs: dict[str, PodGroupInfo]
    queues: QueueTree
    total: QueueVector  # fair-share capacity per queue resource
    priority_classes: dict[str, int] = field(default_factory=dict)
    now: float = 0.0
    # pod group key -> why it cannot be scheduled before any action runs
    # (missing queue, non-leaf queue, unknown pod set, ...)
    job_problems: dict[str, list[str]] = field(default_factory=dict)
    # pod group key -> what the cache noted without blocking it (an unknown priority class)
    job_notes: dict[str, list[str]] = field(default_factory=dict)
    # Topology CRs by name (topology-aware placement, §2.5)
    topologies: dict[str, TopologyInfo] = field(default_factory=dict)
    # PersistentVolumeClaims, PersistentVolumes and StorageClasses (volume binding)
    volumes: VolumeState = field(default_factory=VolumeState)
    # ResourceClaims, ResourceSlices' devices and DeviceClasses (resource.k8s.io, DRA)
    dra: DraState = field(default_factory=DraState)
    # Namespace name -> its labels (namespace selectors of pod affinity terms)
    namespace_labels: dict[str, Mapping[str, str]] = field(default_factory=dict)
    # Queue name -> its usage over the configured window as a share of the cluster's
    # capacity (GPU, CPU, memory), time-based fair share's u; a missing queue used nothing
    queue_usage: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    # Node name -> its NUMA zones from its NodeResourceTopology (NUMA-aware placement)
    numa: dict[str, NumaNode] = field(default_factory=dict)
    # Pod group keys that may be stale as the cycle starts (stale-gang eviction asks
    # only these, and those whose pods change status in the session): stamped, short of
    # their requirement with every pod active, or with a pod active and one not (a group
    # holding nothing is not stale); None: ask all
    maybe_stale: set[str] | None = None
    # Pod keys whose bind the last commit could not write (its BindRequest create, or
    # its direct binding, refused by the API server: an admission policy, a quota):
    # placed again this cycle, such a pod does not count to its gang's requirement for
    # stale-gang eviction, as KAI unallocates a pod whose bind fails (docs/semantics.md
    # §5.2). The live loop fills it from the previous commit's report.
    bind_failed: frozenset[str] = frozenset()
    # What a cycle leaves for the next that spans jobs (the sorted pending leaves:
    # scheduler.actions.pending), handed from snapshot to snapshot by the cache. Every
    # entry is checked against this snapshot before it is used, so a snapshot built on
    # its own starts with none and loses only time.
    carry: dict[str, Any] = field(default_factory=dict)
