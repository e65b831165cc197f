"""Properties of the disruption actions over random snapshots (docs/semantics.md §5.2, §5.5, §5.7).

Random clusters: one to three GPU nodes; queues in one or two levels with random
GPU quotas and over-quota weights (CPU and memory unlimited, so GPU decides);
running jobs of every priority class (gangs and elastic jobs, some with a
recent last start under a queue minimum runtime) placed where they fit, and
pending jobs of every priority class. Two variants bias the draw: "sparse"
worlds have free but scattered GPUs and whole-node pending jobs (consolidation),
"queued" worlds one queue with many small pending jobs (several reclaims from
the same queues in one cycle). One cycle runs the five actions, or a single
disruptive one. Then:

- (a) no non-preemptible pod is evicted by reclaim, preempt or consolidation
  (stale-gang eviction may evict non-preemptible gangs, as in KAI, and is not
  part of this property; these worlds hold no stale gang anyway);
- (b) every eviction serves a placement in the same cycle: the job it was made
  for has a pod pipelined or bound, and a pod moved by consolidation is itself
  pipelined elsewhere; preempt victims are in the preemptor's leaf queue with
  strictly lower priority, reclaim victims in another queue;
- (c) reclaim pushes no queue below its deserved share: the queue the §5.5
  rules compare (the victim-side child of the lowest common ancestor) holds,
  after the cycle, more than its deserved GPUs minus one victim job's GPUs (a
  bundle is taken only while the queue is above deserved, so the last bundle
  may cross it, never more); checked with reclaim as the only action;
- (e) disruption never leaves a victim partly running below its requirement:
  after the cycle each victim still meets it (subgroup rule: a pod set with
  pods keeps at least its minimum, the group at least ``minSubGroup`` sets)
  or has no pod left; running jobs here include minMember 0 and two-subgroup
  jobs needing one or both subgroups;
- (d) every pod gets one final decision: an action may evict a pod an earlier
  action of the cycle placed or moved (Allocated and Pipelined pods are
  victims too), and the result then describes where the pod ends up, never
  "bind" and "evict" together, never one pod twice in a list
  (``tests.kits.worlds.conflicting_decisions``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crds.names import SUBGROUP_LABEL
from scheduler.cache.reading import LAST_START_ANNOTATION
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult
from tests.kits.worlds import (
    NOW,
    conflicting_decisions,
    job,
    node,
    queue,
    queue_path,
    run_objects,
)

PRIORITIES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
DISRUPTIVE = ("consolidation", "reclaim", "preempt")


@dataclass
class JobModel:
    name: str
    queue: str
    priority: int
    preemptible: bool
    gpus: dict[str, int]  # pod key -> GPUs
    running: bool
    minimum: int = 1
    settled: frozenset[str] = frozenset()  # pod keys Running before the cycle (not Releasing)
    sets: dict[str, str] = field(default_factory=dict)  # pod key -> subgroup, when it has them
    set_mins: dict[str, int] = field(default_factory=dict)
    min_sub_group: int | None = None

    def meets_whole(self, kept: set[str]) -> bool:
        """The subgroup rule for running pods: every subgroup with a pod at its minimum,
        enough subgroups at theirs (the engine's rule, written out independently)."""
        if not self.sets:
            return len(kept) >= self.minimum
        counts = {name: 0 for name in self.set_mins}
        for key in kept:
            counts[self.sets[key]] += 1
        if any(0 < counts[n] < minimum for n, minimum in self.set_mins.items()):
            return False
        met = sum(1 for n, minimum in self.set_mins.items() if counts[n] >= minimum)
        return met >= (len(self.set_mins) if self.min_sub_group is None else self.min_sub_group)


@dataclass
class World:
    objects: list[Any]
    parents: dict[str, str | None]
    quota: dict[str, float]  # GPU devices, -1 unlimited
    jobs: dict[str, JobModel] = field(default_factory=dict)

    def path(self, leaf: str) -> list[str]:
        """Top-level queue first, the leaf last."""
        return queue_path(self.parents, leaf)[::-1]

    def victim_side(self, reclaimer: str, victim: str) -> str:
        """The victim-side child of the lowest common ancestor of two leaves."""
        a, b = self.path(reclaimer), self.path(victim)
        depth = 0
        while depth < min(len(a), len(b)) and a[depth] == b[depth]:
            depth += 1
        return b[depth]

    def job_of(self, pod_key: str) -> JobModel:
        return self.jobs[pod_key.split("/", 1)[1].rsplit("-", 1)[0]]


@st.composite
def worlds(
    draw: st.DrawFn, *, sparse: bool = False, queued: bool = False, releasing: bool = False
) -> World:
    """A random world; ``sparse`` ones have free but scattered GPUs (consolidation's case),
    ``queued`` ones many small pending jobs (several reclaimers from one queue per cycle),
    ``releasing`` ones some running pods already terminating (pipelining's case)."""
    objects: list[Any] = []
    free: dict[str, int] = {}
    for i in range(draw(st.integers(2 if sparse else 1, 3))):
        gpus = 4 if sparse else draw(st.sampled_from([2, 4, 4]))
        free[f"n{i}"] = gpus
        objects.append(node(f"n{i}", gpus=gpus, cpu="64", memory="256G"))
    parents: dict[str, str | None] = {}
    quota: dict[str, float] = {}
    leaves: list[str] = []
    two_levels = draw(st.booleans())
    runtimes = st.sampled_from([None, None, "0s", "5m", "1h"])

    def add_queue(name: str, parent: str | None) -> None:
        gpu_quota = draw(st.sampled_from([0, 0, 1, 2, 4]))
        spec_queue = queue(
            name,
            parent,
            gpu_quota=gpu_quota,
            gpu_weight=draw(st.sampled_from([0, 1, 2])),
            priority=draw(st.sampled_from([None, None, 50, 200])),
        )
        for key in ("preemptMinRuntime", "reclaimMinRuntime"):
            runtime = draw(runtimes)
            if runtime is not None:
                spec_queue["spec"][key] = runtime
        objects.append(spec_queue)
        parents[name] = parent
        quota[name] = float(gpu_quota)

    if two_levels:
        for d in range(draw(st.integers(1, 2))):
            add_queue(f"d{d}", None)
            for leaf in range(draw(st.integers(1, 2))):
                add_queue(f"d{d}-q{leaf}", f"d{d}")
                leaves.append(f"d{d}-q{leaf}")
    else:
        for leaf in range(draw(st.integers(2, 3))):
            add_queue(f"q{leaf}", None)
            leaves.append(f"q{leaf}")
    world = World(objects, parents, quota)

    def add_job(name: str, is_running: bool) -> None:
        if queued:  # one reclaiming queue, the others running
            leaf = leaves[0] if not is_running else draw(st.sampled_from(leaves[1:] or leaves))
        else:
            leaf = draw(st.sampled_from(leaves))
        classes = ["train", "train", "build-preemptible"] if sparse else sorted(PRIORITIES)
        priority_class = draw(st.sampled_from(classes))
        if sparse:  # small scattered running jobs, whole-node pending ones
            per_pod = draw(st.sampled_from([1, 2] if is_running else [3, 4]))
            size = 1
        elif queued and not is_running:
            per_pod, size = 1, 1
        else:
            per_pod = draw(st.sampled_from([1, 1, 2] if is_running else [1, 2, 4]))
            size = draw(st.integers(1, 3 if is_running else 2))
        nodes: list[str] = []
        if is_running:
            for _ in range(size):
                room = [n for n, left in sorted(free.items()) if left >= per_pod]
                if not room:
                    break
                where = draw(st.sampled_from(room))
                free[where] -= per_pod
                nodes.append(where)
            if not nodes:
                return
            size = len(nodes)
        min_member = draw(st.integers(0, size))
        states = ["Running"] * size
        if is_running and releasing:
            states = [draw(st.sampled_from(["Running", "Running", "Releasing"])) for _ in nodes]
        objs = job(
            name,
            leaf,
            size,
            gpus=per_pod,
            states=states if is_running else None,
            nodes=nodes if is_running else None,
            min_member=min_member,
            priority_class=priority_class,
        )
        started = draw(st.sampled_from([None, None, 60, 7200])) if is_running else None
        if started is not None:
            group = objs[0]
            stamp = NOW.timestamp() - started
            group["metadata"]["annotations"] = {
                LAST_START_ANNOTATION: _rfc3339(stamp),
            }
        sets: dict[str, str] = {}
        set_mins: dict[str, int] = {}
        min_sub_group = None
        if is_running and size >= 2 and draw(st.booleans()):
            # two subgroups a (first half) and b, each with its own minimum (0 allowed)
            for i, pod_obj in enumerate(objs[1:]):
                sets[f"default/{name}-{i}"] = sub = "a" if i < size // 2 else "b"
                pod_obj["metadata"].setdefault("labels", {})[SUBGROUP_LABEL] = sub
            for sub in ("a", "b"):
                set_mins[sub] = draw(st.integers(0, sum(1 for v in sets.values() if v == sub)))
            min_sub_group = draw(st.sampled_from([None, 1, 2]))
            spec = objs[0]["spec"]
            del spec["minMember"]
            spec["subGroups"] = [{"name": n, "minMember": m} for n, m in set_mins.items()]
            if min_sub_group is not None:
                spec["minSubGroup"] = min_sub_group
        objects.extend(objs)
        world.jobs[name] = JobModel(
            name,
            leaf,
            PRIORITIES[priority_class],
            PRIORITIES[priority_class] < 100,
            {f"default/{name}-{i}": per_pod for i in range(size)},
            is_running,
            max(min_member, 1),  # KAI's floor without subgroups
            frozenset(
                f"default/{name}-{i}" for i in range(size) if is_running and states[i] == "Running"
            ),
            sets,
            set_mins,
            min_sub_group,
        )

    for j in range(draw(st.integers(2, 4) if sparse else st.integers(2, 10))):
        add_job(f"r{j}", True)
    for j in range(draw(st.integers(3, 6) if queued else st.integers(1, 4))):
        add_job(f"p{j}", False)
    return world


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


ACTION_SETS = st.sampled_from(
    [("allocate", *DISRUPTIVE, "stalegangeviction"), ("reclaim",), ("preempt",), ("consolidation",)]
)
CONFIGS = st.builds(
    lambda actions, cap: SchedulerConfig(actions=actions, max_consolidation_preemptees=cap),
    ACTION_SETS,
    st.sampled_from([-1, 16]),
)
FAST = settings(deadline=None)
WORLDS = st.one_of(worlds(), worlds(sparse=True))


def _disruptive(result: CycleResult) -> list[Any]:
    return [e for e in result.evictions if e.action in DISRUPTIVE]


@FAST
@given(WORLDS, CONFIGS)
def test_non_preemptible_pods_are_never_disruption_victims(
    world: World, config: SchedulerConfig
) -> None:
    result = run_objects(world.objects, config)
    for eviction in _disruptive(result):
        victim = world.job_of(eviction.pod)
        assert victim.preemptible, (eviction, victim)


@FAST
@given(WORLDS, CONFIGS)
def test_every_eviction_serves_a_placement_in_the_same_cycle(
    world: World, config: SchedulerConfig
) -> None:
    result = run_objects(world.objects, config)
    placed = {b.pod for b in result.pipelined} | {b.pod for b in result.binds}
    pipelined = {b.pod for b in result.pipelined}
    for eviction in _disruptive(result):
        assert eviction.for_job is not None, eviction
        served = world.jobs[eviction.for_job.split("/", 1)[1]]
        assert not served.running, (eviction, "made room for a job that was not pending")
        # ... unless a later action of the cycle took the served job's room back again
        outcome = next(o for o in result.pod_groups if o.pod_group == eviction.for_job)
        cancelled = any("placed earlier in this cycle" in r for r in outcome.reasons)
        assert cancelled or placed & set(served.gpus), (eviction, "the served job got nothing")
        victim = world.job_of(eviction.pod)
        if eviction.action == "consolidation":
            assert eviction.pod in pipelined, (eviction, "a moved pod must land elsewhere")
        elif eviction.action == "preempt":
            assert victim.queue == served.queue, eviction
            assert victim.priority < served.priority, eviction
        else:
            assert victim.queue != served.queue, eviction


def _ancestors(world: World, name: str) -> set[str]:
    parent = world.parents[name]
    return set() if parent is None else {parent} | _ancestors(world, parent)


@FAST
@given(st.one_of(WORLDS, worlds(queued=True)), st.sampled_from([-1, 16]))
def test_reclaim_keeps_victim_queues_at_deserved(world: World, cap: int) -> None:
    config = SchedulerConfig(actions=("reclaim",), max_consolidation_preemptees=cap)
    result = run_objects(world.objects, config)
    evicted = {e.pod: e for e in result.evictions}
    if not evicted:
        return
    pipelined = {b.pod for b in result.pipelined}
    compared: dict[str, int] = {}  # victim-side queue -> GPUs of its largest victim job
    for key, eviction in evicted.items():
        assert eviction.for_job is not None
        reclaimer = world.jobs[eviction.for_job.split("/", 1)[1]]
        victim = world.job_of(key)
        side = world.victim_side(reclaimer.queue, victim.queue)
        taken = sum(g for pod, g in victim.gpus.items() if pod in evicted)
        compared[side] = max(compared.get(side, 0), taken)
    for side, largest in compared.items():
        if any(other in _ancestors(world, side) for other in compared):
            continue  # also compared higher up, where a deeper queue's deserved is not the rule
        if world.quota[side] < 0:
            continue
        held = 0
        for model in world.jobs.values():
            if side not in world.path(model.queue):
                continue
            for pod, gpus in model.gpus.items():
                still_running = model.running and pod not in evicted
                if still_running or pod in pipelined:
                    held += gpus
        assert held + largest > world.quota[side], (side, held, largest, world.quota[side])


@settings(deadline=None)
@given(st.one_of(WORLDS, worlds(queued=True)), st.sampled_from([-1, 16]))
def test_every_pod_gets_one_final_decision(world: World, cap: int) -> None:
    result = run_objects(world.objects, SchedulerConfig(max_consolidation_preemptees=cap))
    assert conflicting_decisions(world.objects, result) == []


@settings(deadline=None)
@given(
    st.one_of(worlds(releasing=True), worlds(sparse=True, releasing=True)),
    st.sampled_from([-1, 16]),
)
def test_a_gang_pipelined_in_part_binds_nothing(world: World, cap: int) -> None:
    """A job binds only if it ends the cycle with at least its minimum settled (kai §5.2).

    Settled: running before the cycle and not evicted, or bound now. So a gang
    with any pod pipelined below its minimum binds nothing: KAI converts all
    of a job's allocations to pipelined then, and no later action of the cycle
    may undo part of that.
    """
    result = run_objects(world.objects, SchedulerConfig(max_consolidation_preemptees=cap))
    binds = {b.pod for b in result.binds}
    pipelined = {b.pod for b in result.pipelined}
    evicted = {e.pod for e in result.evictions}
    for model in world.jobs.values():
        bound = sorted(binds & set(model.gpus))
        if not bound:
            continue
        settled = len(model.settled - evicted) + len(bound)
        waiting = sorted(pipelined & set(model.gpus))
        assert settled >= model.minimum, (model.name, bound, waiting, model.minimum)


@FAST
@given(WORLDS, CONFIGS)
def test_victims_keep_their_requirement_or_go_whole(world: World, config: SchedulerConfig) -> None:
    result = run_objects(world.objects, config)
    evicted = {e.pod for e in _disruptive(result)}
    landed = {b.pod for b in result.pipelined} | {b.pod for b in result.binds}
    for model in world.jobs.values():
        if not model.running or not evicted & set(model.gpus):
            continue
        if not model.meets_whole(set(model.settled)):
            continue  # already below its requirement: stale-gang eviction's business
        kept = {key for key in model.settled if key not in evicted or key in landed}
        assert not kept or model.meets_whole(kept), (model, sorted(evicted & set(model.gpus)))
