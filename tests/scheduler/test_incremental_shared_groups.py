"""The cache's shared GPU groups, rebuilt only where they changed, equal a rebuild from scratch.

The cache keeps each node's shared groups between snapshots and rebuilds a node's
only when one of its fractional pods changed (added, replaced, deleted, bound,
releasing, stuck releasing, its BindRequest's groups) or a session changed its
groups (scheduler.cache.shared_groups). Property: after any sequence of such
changes, with snapshots in between (some followed by a cycle that places, evicts
and pipelines fractional pods in the snapshot, changing its groups and the pods'
groups, portions and quotas), the next snapshot's groups, GPU columns and every
pod's groups, portion and quota are those of a cache built afresh from the same
objects.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crds.documents import SourcedObject
from scheduler.api.nodes import NodeTable
from scheduler.cache.cluster_cache import ClusterCache, SnapshotResult
from scheduler.config import SchedulerConfig
from scheduler.cycle import run_cycle
from tests.kits.worlds import EPOCH, NOW, bind_request, job, node, queue

Obj = dict[str, Any]
Key = tuple[str, str]

NODES = ["n0", "n1", "n2"]
PODS = [f"p{i}" for i in range(8)]
GROUPS = ["ga", "gb", "gc"]
STATES = ["Pending", "Running", "Running", "Releasing", "Bound", "Binding", "Succeeded"]
# the deletion timestamp of a Releasing pod is NOW: a minute later it still frees its
# room; an hour later it is stuck in Releasing (its room counts as used)
TIMES = [(NOW - EPOCH).total_seconds() + later for later in (60.0, 3600.0)]
_EPOCH_S = EPOCH.timestamp()
CONFIG = SchedulerConfig()


def _node(name: str, gpus: int, device_memory: int | None) -> Obj:
    labels = {"nvidia.com/gpu.memory": str(device_memory)} if device_memory else {}
    return node(name, gpus=gpus, cpu="64", memory="256G", labels=labels)


def _pod(
    name: str,
    state: str,
    where: str,
    request: tuple[str, float],
    devices: int,
    groups: tuple[str, ...],
    priority: str,
) -> list[Obj]:
    """A one-pod job asking a fraction (or memory) of ``devices`` devices; ``groups``: the
    ``runai-gpu-group`` label(s) a bound pod carries (none: ids derived from the pod)."""
    kind, value = request
    annotations = {"gpu-fraction": f"{value:g}"} if kind == "fraction" else {"gpu-memory": "8000"}
    if devices > 1:
        annotations["gpu-fraction-num-devices"] = str(devices)
    on_node = state not in ("Pending", "Succeeded")
    labels: dict[str, str] = {}
    if on_node and state != "Binding" and groups:
        if len(groups) == 1:
            labels["runai-gpu-group"] = groups[0]
        else:
            labels.update({f"runai-gpu-group/{g}": g for g in groups})
    return job(
        name,
        "qa",
        annotations=annotations,
        labels=labels,
        states=[state],
        nodes=[where if on_node else None],
        priority_class=priority,
    )


def _bind(name: str, where: str, groups: tuple[str, ...]) -> Obj:
    body = bind_request(f"{name}-0", where)
    if groups:
        body["spec"]["selectedGPUGroups"] = list(groups)
    return body


def _reservation(group: str, where: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"gpu-reservation-{group}",
            "namespace": "kai-resource-reservation",
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
            "creationTimestamp": EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "nodeName": where,
            "containers": [{"name": "main", "resources": {"requests": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


_groups = st.lists(st.sampled_from(GROUPS), min_size=0, max_size=2, unique=True).map(tuple)
_pods = st.builds(
    _pod,
    st.sampled_from(PODS),
    st.sampled_from(STATES),
    st.sampled_from(NODES),
    st.one_of(
        st.tuples(st.just("fraction"), st.sampled_from([0.25, 0.5, 0.75])),
        st.just(("memory", 0.0)),
    ),
    st.sampled_from([1, 1, 2]),
    _groups,
    st.sampled_from(["train", "build-preemptible"]),
)
_nodes = st.builds(
    _node, st.sampled_from(NODES), st.sampled_from([2, 4]), st.sampled_from([None, 40000, 80000])
)
_binds = st.builds(_bind, st.sampled_from(PODS), st.sampled_from(NODES), _groups)
_reservations = st.builds(_reservation, st.sampled_from(GROUPS), st.sampled_from(NODES))
_upserts = st.one_of(
    _pods, _pods, _pods, _binds, _nodes, _reservations.map(lambda body: [body])
).map(lambda item: item if isinstance(item, list) else [item])
_deletes = st.tuples(st.sampled_from(["Pod", "Pod", "BindRequest", "Node"]), st.integers(0, 7))
_operation = st.sampled_from(["upsert"] * 4 + ["delete", "snapshot", "snapshot"]).flatmap(
    lambda op: st.tuples(
        st.just(op),
        {
            "upsert": _upserts,
            "delete": _deletes,
            # (when, run a cycle on it)
            "snapshot": st.tuples(st.sampled_from(TIMES), st.booleans()),
        }[op],
    )
)
_operations = st.lists(_operation, min_size=6, max_size=30)


def _seed() -> list[Obj]:
    return [
        queue("qa", gpu_quota=3),
        _node("n0", 4, 40000),
        _node("n1", 2, 80000),
        _node("n2", 2, None),
        *_pod("p0", "Running", "n0", ("fraction", 0.5), 1, ("ga",), "build-preemptible"),
        *_pod("p1", "Running", "n0", ("fraction", 0.25), 1, ("ga",), "train"),
        *_pod("p2", "Pending", "n0", ("fraction", 0.5), 1, (), "train"),
        *_pod("p3", "Releasing", "n1", ("memory", 0.0), 2, (), "build-preemptible"),
    ]


def _key(body: Obj) -> Key:
    meta = body["metadata"]
    if body["kind"] in ("Node", "Queue"):
        return body["kind"], meta["name"]
    return body["kind"], f"{meta.get('namespace', 'default')}/{meta['name']}"


def _deleted(kind: str, index: int) -> str:
    if kind == "Node":
        return NODES[index % len(NODES)]
    return f"default/{PODS[index % len(PODS)]}-0"


def _groups_digest(table: NodeTable) -> dict[str, Any]:
    """The node table's groups, slots and room as a build from scratch has them: room
    columns past the ones in use hold -1 (none), however many a node had before."""
    shared = table.shared
    width = max((len(slots) for slots in shared.slots.values()), default=0)
    assert (shared.room[:, width:] == -1).all()
    assert (shared.room_now[:, width:] == -1).all()
    return {
        "by_node": sorted((node, list(groups.items())) for node, groups in shared.by_node.items()),
        "slots": sorted((node, list(slots)) for node, slots in shared.slots.items()),
        "room": shared.room[:, :width].tolist(),
        "room_now": shared.room_now[:, :width].tolist(),
        "fitting": [a.tolist() for p in (100, 250, 500, 750) for a in shared.fitting(p)],
        "free_parts": shared.free_parts(),
    }


def _digest(result: SnapshotResult) -> dict[str, Any]:
    """What the snapshot says of shared GPUs, copied (a cycle changes the snapshot after)."""
    snap = result.snapshot
    table = snap.nodes
    return {
        "groups": _groups_digest(table),
        "columns": (
            table.names,
            table.idle.tolist(),
            table.releasing.tolist(),
            table.free.tolist(),
            snap.total.tolist(),
        ),
        "pods": sorted(
            (p.key, p.status, p.node, p.gpu_groups, p.gpu_portion, list(p.quota)) for p in snap.pods
        ),
    }


def _fresh(objects: dict[Key, Obj], now: float) -> SnapshotResult:
    cache = ClusterCache(strict=False)
    cache.upsert_all(SourcedObject(body, "test", i) for i, body in enumerate(objects.values()))
    return cache.snapshot(_EPOCH_S + now)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_operations)
def test_incremental_shared_groups_equal_a_rebuild(operations: list[tuple[str, Any]]) -> None:
    cache = ClusterCache(strict=False)
    objects: dict[Key, Obj] = {}
    seed = [("upsert", [body]) for body in _seed()]
    end = ("snapshot", (TIMES[0], False))
    for op, arg in [*seed, ("snapshot", (TIMES[0], True)), *operations, end]:
        if op == "upsert":
            for body in arg:
                objects[_key(body)] = body
                cache.upsert(SourcedObject(body, "test", 0))
        elif op == "delete":
            kind, index = arg
            name = _deleted(kind, index)
            objects.pop((kind, name), None)
            cache.delete(kind, name)
        else:
            now, cycle = arg
            built = cache.snapshot(_EPOCH_S + now)
            assert _digest(built) == _digest(_fresh(objects, now))
            if cycle:  # places, evicts and pipelines: groups and pod fields change
                run_cycle(built.snapshot, CONFIG)


def test_a_cycle_changes_the_groups_the_next_snapshot_restores() -> None:
    """The property's cycles do change groups and pod fields (else it tests little)."""
    cache = ClusterCache(strict=False)
    for body in _seed():
        cache.upsert(SourcedObject(body, "test", 0))
    built = cache.snapshot(_EPOCH_S + TIMES[0])
    before = _digest(built)
    result = run_cycle(built.snapshot, CONFIG)
    assert result.binds or result.pipelined
    assert _digest(built) != before
    assert _digest(cache.snapshot(_EPOCH_S + TIMES[0])) == before
