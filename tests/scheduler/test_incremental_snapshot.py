"""The cache's incremental snapshot equals a snapshot built afresh from the same objects.

The cache keeps what it derived (pod groups with their pods, queue problems,
priority notes, the node table) between snapshots and re-derives only what
changed. Property: after any sequence of adds, updates and deletes of nodes,
pods, PodGroups, Queues, PriorityClasses and BindRequests, with snapshots (and
cycles that move pods about inside them) taken in between, the next snapshot is
the one a fresh cache builds from the objects as they are now: the same nodes
and usage, pods and their states, pod groups in the same order with the same
pods in each pod set (the current records, not replaced ones), problems, notes
and ungrouped pods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from crds.documents import SourcedObject
from crds.names import STALE_ANNOTATION
from scheduler.actions import allocate, disrupting, pending
from scheduler.actions.stale_gangs import is_stale
from scheduler.api.podgroups import PodGroupInfo
from scheduler.api.pods import PodInfo
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.cache.cluster_cache import ClusterCache, SnapshotResult
from scheduler.config import SchedulerConfig
from scheduler.cycle import open_session, run_cycle
from scheduler.framework import gang
from scheduler.framework.session import JOB_KEY, Session
from scheduler.framework.shapes import allocation_shape
from scheduler.plugins.proportion import plugin as proportion
from tests.kits.worlds import bind_request, node, pod, pod_group, queue

Obj = dict[str, Any]
Key = tuple[str, str]

NODES = ["n0", "n1"]
GROUPS = ["g0", "g1", "g2"]
PODS = [f"p{i}" for i in range(6)]
QUEUES = ["dept", "qa", "qb", "missing"]
CLASSES = ["high", "low"]
STATES = ["Pending", "Running", "Releasing", "Bound", "Succeeded", "Gated"]


def _priority_class(name: str, value: int, default: bool) -> Obj:
    body: Obj = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    if default:
        body["globalDefault"] = True
    return body


_node = st.builds(
    lambda name, gpus, zone, health, heartbeat: _with_health(
        _with_status(
            node(
                name,
                gpus=gpus,
                labels={"zone": zone},
                ready=health != "not-ready",
                unschedulable=health == "cordoned",
            ),
            heartbeat,
        ),
        health,
    ),
    st.sampled_from(NODES),
    st.sampled_from([0, 2, 8]),
    st.sampled_from(["a", "b"]),
    # the node check (fair-share total, placement): each way to fail it, and passing
    st.sampled_from(["ok", "ok", "not-ready", "cordoned", "pressure"]),
    st.integers(0, 3),
)


def _with_health(body: Obj, health: str) -> Obj:
    """With ``pressure``, a node reporting MemoryPressure (out of the total, no pods)."""
    if health == "pressure":
        body["status"]["conditions"].append({"type": "MemoryPressure", "status": "True"})
    return body


def _with_status(body: Obj, heartbeat: int) -> Obj:
    """A node copy whose only difference is a status field the engine does not read."""
    body["status"]["conditions"].append({"type": "Heartbeat", "status": str(heartbeat)})
    return body


def _pod(
    name: str,
    group: str | None,
    sub_group: str | None,
    state: str,
    where: str,
    ours: bool,
    gpus: int,
) -> Obj:
    on_node = state in ("Running", "Releasing", "Bound")
    return pod(
        name,
        group,
        gpus=gpus,
        state=state,
        node=where if on_node else None,
        sub_group=sub_group,
        scheduler_name="kai-scheduler" if ours else "default-scheduler",
    )[0]


_pods = st.builds(
    _pod,
    st.sampled_from(PODS),
    st.sampled_from([*GROUPS, *GROUPS, None, "nosuchgroup"]),
    st.sampled_from([None, None, None, "workers", "leader", "absent"]),
    st.sampled_from(STATES),
    st.sampled_from(NODES),
    st.sampled_from([True, True, True, False]),  # mostly ours
    st.sampled_from([0, 1, 6]),  # 6: some gangs fit nowhere, so cycles carry failure shapes
)


def _group(
    name: str,
    queue_name: str,
    minimum: int,
    klass: str | None,
    subgroups: bool,
    stamped: bool = False,
) -> Obj:
    subs = [("workers", minimum), ("leader", 1)] if subgroups else ()
    body = pod_group(
        name,
        queue_name,
        min_member=None if subgroups else minimum,
        priority_class=klass,
        sub_groups=subs,
    )
    if stamped:  # found stale by an earlier cycle
        body["metadata"]["annotations"] = {STALE_ANNOTATION: "2026-01-01T00:00:00Z"}
    return body


def _broken_group(name: str) -> Obj:
    body = pod_group(name, "qa", min_member=1)
    body["spec"]["minSubGroup"] = 1  # without subgroups: refused, naming the field
    return body


_groups = st.builds(
    _group,
    st.sampled_from(GROUPS),
    st.sampled_from(QUEUES),
    st.integers(1, 2),
    st.sampled_from([None, *CLASSES, "unknown-class"]),
    st.booleans(),
    st.sampled_from([False, False, True]),
)
_queues = st.one_of(
    st.builds(lambda: queue("dept", gpu_quota=4)),
    st.builds(
        lambda name, parent, quota: queue(name, parent=parent, gpu_quota=quota),
        st.sampled_from(["qa", "qb"]),
        st.sampled_from(["dept", None, "qa", "gone"]),
        st.sampled_from([0, 2]),
    ),
)
_classes = st.builds(
    _priority_class, st.sampled_from(CLASSES), st.sampled_from([10, 100]), st.booleans()
)
_binds = st.builds(
    lambda name, where: bind_request(name, where), st.sampled_from(PODS), st.sampled_from(NODES)
)

_UPSERTS = {
    "node": _node,
    "pod": _pods,
    "group": _groups,
    "queue": _queues,
    "class": _classes,
    "bind": _binds,
    "broken group": st.builds(_broken_group, st.sampled_from(GROUPS)),
}
_WEIGHTS = ["pod"] * 6 + ["group"] * 3 + ["node", "queue", "class", "bind", "broken group"]
_upserts = st.sampled_from(_WEIGHTS).flatmap(_UPSERTS.__getitem__)
_deletes = st.tuples(
    st.sampled_from(["Pod", "Pod", "PodGroup", "Node", "Queue", "PriorityClass", "BindRequest"]),
    st.integers(0, 5),
)
_operation = st.sampled_from(["upsert"] * 5 + ["delete", "snapshot", "snapshot"]).flatmap(
    lambda op: st.tuples(
        st.just(op),
        {"upsert": _upserts, "delete": _deletes, "snapshot": st.booleans()}[op],
    )
)  # ("snapshot", True): run a cycle on that snapshot too
_operations = st.lists(_operation, min_size=8, max_size=40)


def _seed() -> list[Obj]:
    """A small cluster every example starts from: queues, groups with pods, nodes."""
    return [
        queue("dept", gpu_quota=4),
        queue("qa", parent="dept", gpu_quota=2),
        queue("qb", parent="dept", gpu_quota=2),
        *(node(name, gpus=8) for name in NODES),
        _group("g0", "qa", 2, None, False),
        _group("g1", "qb", 1, "high", True),
        _group("g2", "qa", 1, None, False),
        *(_pod(name, GROUPS[i % 3], None, "Pending", "n0", True, 1) for i, name in enumerate(PODS)),
    ]


def _key(body: Obj) -> Key:
    meta = body["metadata"]
    namespaced = body["kind"] in ("Pod", "PodGroup", "BindRequest")
    name = f"{meta.get('namespace', 'default')}/{meta['name']}" if namespaced else meta["name"]
    return body["kind"], name


def _names(kind: str) -> list[str]:
    return {
        "Node": NODES,
        "Pod": [f"default/{p}" for p in PODS],
        "PodGroup": [f"default/{g}" for g in GROUPS],
        "Queue": QUEUES,
        "PriorityClass": CLASSES,
        "BindRequest": [f"default/{p}" for p in PODS],
    }[kind]


def _digest(result: SnapshotResult) -> dict[str, Any]:
    """Everything a cycle reads of a snapshot, in comparable form."""
    snap = result.snapshot
    table = snap.nodes
    current = {p.key: p for p in snap.pods}
    return {
        "nodes": (
            table.names,
            table.meta,
            table.allocatable.tolist(),
            table.idle.tolist(),
            table.releasing.tolist(),
            table.free.tolist(),
            table.schedulable.tolist(),
        ),
        "pods": [
            (p.key, p.status, p.node, p.job, p.pod_set, p.quota, p.gpu_groups, p.request.tolist())
            for p in snap.pods
        ],
        "jobs": [
            (
                key,
                {
                    f.name: getattr(job, f.name)
                    for f in fields(job)
                    if f.name not in ("pod_sets", "carried")  # carried: _check_carried
                },
                [
                    (ps.name, ps.min_available, [(p.key, p is current[p.key]) for p in ps.pods])
                    for ps in job.pod_sets
                ],
            )
            for key, job in snap.jobs.items()
        ],
        "problems": list(snap.job_problems.items()),
        "notes": list(snap.job_notes.items()),
        "ungrouped": [p.key for p in result.ungrouped_pods],
        "queues": (sorted(snap.queues.queues), snap.queues.roots, snap.queues.dropped),
        "total": snap.total.tolist(),
        "classes": snap.priority_classes,
        "errors": sorted(str(e) for e in result.errors),
        "maybe_stale": sorted(snap.maybe_stale or ()),
    }


def _fresh(objects: dict[Key, Obj]) -> SnapshotResult:
    cache = ClusterCache(strict=False)
    cache.upsert_all(SourcedObject(body, "test", i) for i, body in enumerate(objects.values()))
    return cache.snapshot(1000.0)


@given(_operations)
def test_an_incremental_snapshot_equals_a_fresh_one(operations: list[tuple[str, Any]]) -> None:
    cache = ClusterCache(strict=False)
    # The objects as they are now, in the order a fresh list returns them: a replaced
    # object keeps its place, a new one (or one the cache refused before) goes last.
    objects: dict[Key, Obj] = {}
    refused: set[Key] = set()
    seed: list[tuple[str, Any]] = [("upsert", body) for body in _seed()]
    for op, arg in [*seed, ("snapshot", False), *operations, ("snapshot", False)]:
        if op == "upsert":
            key = _key(arg)
            if key in refused:
                objects.pop(key, None)
                refused.discard(key)
            objects[key] = arg
            cache.upsert(SourcedObject(arg, "test", 0))
            if (key[0], key[1]) in cache.errors:
                objects.pop(key)  # refused: a later good copy is a new object to both
                objects[key] = arg
                refused.add(key)
        elif op == "delete":
            kind, index = arg
            names = _names(kind)
            name = names[index % len(names)]
            objects.pop((kind, name), None)
            refused.discard((kind, name))
            cache.delete(kind, name)
        else:
            built = cache.snapshot(1000.0)
            assert _digest(built) == _digest(_fresh(objects))
            _check_stale_candidates(built.snapshot)
            _check_carried(built.snapshot)
            _check_carried_leaves(built.snapshot)
            if arg:  # the cycle moves pods and fills nodes; the next snapshot resets them
                run_cycle(built.snapshot, CONFIG)


CONFIG = SchedulerConfig()  # one config for every cycle: answers carried with it are reused


def _check_carried(snapshot: ClusterSnapshot) -> None:
    """Every answer a job record carries from earlier cycles is the one a fresh
    computation gives at this snapshot's statuses (Session.carried_memo)."""
    session = open_session(snapshot, CONFIG)

    def first(job: PodGroupInfo) -> list[PodInfo]:
        return next(gang.task_choices(session, job), [])

    fresh: dict[str, Callable[[PodGroupInfo], object]] = {
        gang.FIRST_CHOICE: first,
        gang.READY: gang.readiness_problem,
        JOB_KEY: lambda job: session.unmemoised_job_key()(job, job.creation, job.tie),
        allocate._SHAPE: lambda job: allocation_shape(job, first(job)),
        proportion._REQUEST: lambda job: tuple(proportion.tasks_request(first(job))),
    }
    for job in snapshot.jobs.values():
        for name, (config, value) in job.carried.items():
            assert config is CONFIG
            if name.startswith(f"{disrupting._GPU_NEED}@"):  # the need on that device memory
                largest = int(name.rpartition("@")[2])
                assert value == disrupting._gpus_needed(first(job), largest), (job.key, name)
                continue
            assert value == fresh[name](job), (job.key, name)


def _check_carried_leaves(snapshot: ClusterSnapshot) -> None:
    """The sorted pending leaves a session starts from what the last cycle left
    (ClusterSnapshot.carry) are the ones it sorts afresh, reasons for the jobs left out
    included. Read on a copy of the carry: the cycle that follows starts from the last
    cycle's, as it would without this check."""
    carried = open_session(replace(snapshot, carry=dict(snapshot.carry)), CONFIG)
    fresh = open_session(replace(snapshot, carry={}), CONFIG)

    def leaves(session: Session) -> dict[str, list[tuple[Any, int, str]]]:
        return {
            leaf: [(key, rank, job.key) for key, rank, job in entries]
            for leaf, entries in pending.leaf_entries(session)[0].items()
        }

    assert leaves(carried) == leaves(fresh)
    assert carried.job_reasons == fresh.job_reasons
    assert carried.considered == fresh.considered


def _check_stale_candidates(snapshot: ClusterSnapshot) -> None:
    """Every job stale or stamped is among those the snapshot says may be (the stale-gang
    action asks only those)."""
    assert snapshot.maybe_stale is not None
    needing = {k for k, j in snapshot.jobs.items() if j.stale_since is not None or is_stale(j)}
    assert needing <= snapshot.maybe_stale


def test_a_status_only_node_update_keeps_the_node_table() -> None:
    """A node heartbeat (a condition other than Ready changing) re-derives nothing."""
    cache = ClusterCache()
    cache.upsert(SourcedObject(_with_status(node("n0", gpus=8), 0), "test", 0))
    table = cache.snapshot().snapshot.nodes
    cache.upsert(SourcedObject(_with_status(node("n0", gpus=8), 1), "test", 0))
    assert cache.snapshot().snapshot.nodes is table
    cache.upsert(SourcedObject(node("n0", gpus=8, labels={"zone": "b"}), "test", 0))
    assert cache.snapshot().snapshot.nodes is not table


def test_a_pod_update_re_derives_only_its_group() -> None:
    """Another group's record is kept as it was; the changed one is built anew."""
    cache = ClusterCache()
    for body in [
        queue("qa", gpu_quota=2),
        pod_group("g0", "qa"),
        pod_group("g1", "qa"),
        *pod("p0", "g0"),
        *pod("p1", "g1"),
    ]:
        cache.upsert(SourcedObject(body, "test", 0))
    jobs = dict(cache.snapshot().snapshot.jobs)
    cache.upsert(SourcedObject(pod("p1", "g1", state="Running", node="n0")[0], "test", 0))
    after = cache.snapshot().snapshot.jobs
    assert after["default/g0"] is jobs["default/g0"]
    assert after["default/g1"] is not jobs["default/g1"]
    assert [p.node_name for p in after["default/g1"].pod_sets[0].pods] == ["n0"]


def test_a_queue_going_invalid_and_back_renews_its_jobs_reason() -> None:
    """A watch update that breaks a Queue tells its jobs at the next snapshot that it is
    invalid (not missing); the fixed Queue serves them again."""
    from tests.kits import worlds as w

    cache = ClusterCache(strict=False)
    good = w.queue("q")
    broken = {**good, "spec": {**good["spec"], "preemptMinRuntime": "forever"}}
    for obj in [w.node("n1"), *w.job("a", "q")]:
        cache.upsert(SourcedObject(obj, "test", 0))
    assert cache.snapshot().snapshot.job_problems["default/a"] == [
        "QueueDoesNotExist: queue 'q' does not exist"
    ]
    for obj, invalid in [(broken, True), (good, False), (broken, True), (good, False)]:
        cache.upsert(SourcedObject(obj, "test", 0))
        problems = cache.snapshot().snapshot.job_problems
        if invalid:
            (problem,) = problems["default/a"]
            assert problem.startswith("QueueDoesNotExist: queue 'q' is not usable: it is invalid (")
        else:
            assert problems == {}
