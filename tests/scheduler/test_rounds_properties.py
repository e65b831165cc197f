"""Properties of ten rounds in a row (``scheduler.rounds.play``) over random snapshots.

Random clusters: 1-4 GPU nodes, a 2-level queue tree with random GPU quotas,
limits and over-quota weights, and running and pending jobs (gangs and
elastic jobs, and gangs that lost a pod) of mixed priorities in random leaf
queues; all five actions
enabled, stale-gang grace 0 s or 60 s. Each round's decisions are carried out
before the next. Over the ten rounds:

- quiet stays quiet: once a round decides nothing, no later round decides
  anything (no oscillation);
- no cycle of states: the cluster never comes back to an earlier state
  unless it has stopped changing, and no round evicts exactly the pods an
  earlier round evicted (a victim is not re-placed only to be evicted again);
- no node is over-committed in GPU, CPU or memory after any round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crds.documents import SourcedObject
from scheduler.config import SchedulerConfig
from scheduler.rounds import made_decisions, play
from tests.kits.worlds import NOW, job, node, queue, sourced

ROUNDS = 10
PRIORITIES = ("train", "build-preemptible", "build", "inference")
CPU_PER_NODE, MEMORY_GB_PER_NODE = 32, 256
CPU_PER_POD, MEMORY_GB_PER_POD = 2, 8


@dataclass(frozen=True)
class World:
    objects: list[Any]
    config: SchedulerConfig
    gpus: dict[str, int]  # node -> GPUs


@st.composite
def worlds(draw: st.DrawFn) -> World:
    gpus = {
        f"node{i}": draw(st.sampled_from((2, 4, 8)))
        for i in range(draw(st.integers(min_value=1, max_value=4)))
    }
    objects: list[Any] = [
        node(name, gpus=count, cpu=str(CPU_PER_NODE), memory=f"{MEMORY_GB_PER_NODE}G")
        for name, count in gpus.items()
    ]
    leaves = []
    for d in range(draw(st.integers(min_value=1, max_value=2))):
        teams = []
        for t in range(draw(st.integers(min_value=1, max_value=2))):
            quota = draw(st.integers(min_value=0, max_value=8))
            limit = draw(st.sampled_from((-1, -1, quota + 4)))
            weight = draw(st.integers(min_value=0, max_value=3))
            name = f"team{d}{t}"
            teams.append(
                queue(name, f"dept{d}", gpu_quota=quota, gpu_limit=limit, gpu_weight=weight)
            )
            leaves.append(name)
        dept_quota = draw(
            st.sampled_from((-1, sum(t["spec"]["resources"]["gpu"]["quota"] for t in teams)))
        )
        objects += [queue(f"dept{d}", gpu_quota=dept_quota, gpu_weight=1), *teams]
    free = dict(gpus)
    for j in range(draw(st.integers(min_value=1, max_value=7))):
        tasks = draw(st.integers(min_value=1, max_value=3))
        per_pod = draw(st.sampled_from((1, 1, 2, 4)))
        shape = draw(st.sampled_from(("pending", "pending", "running", "running", "lost a pod")))
        running = shape != "pending"
        nodes: list[str | None] = []
        if running:  # first fit, or pending when it does not fit whole
            trial = dict(free)
            for _ in range(tasks):
                spot = next((n for n, g in trial.items() if g >= per_pod), None)
                if spot is None:
                    break
                trial[spot] -= per_pod
                nodes.append(spot)
            running = len(nodes) == tasks
            if running:
                free = trial
        states = ["Running" if running else "Pending"] * tasks
        if running and shape == "lost a pod" and tasks > 1:  # a stale gang
            states[-1], nodes[-1] = "Failed", None
        objects.append(
            job(
                f"job{j}",
                draw(st.sampled_from(leaves)),
                tasks,
                gpus=per_pod,
                cpu=str(CPU_PER_POD),
                memory=f"{MEMORY_GB_PER_POD}G",
                min_member=tasks if shape == "lost a pod" else draw(st.sampled_from((1, tasks))),
                priority_class=draw(st.sampled_from(PRIORITIES)),
                states=states,
                nodes=nodes if running else None,
            )
        )
    grace = draw(st.sampled_from((0.0, 60.0)))
    return World(objects, SchedulerConfig(staleness_grace_period_s=grace), gpus)


def _state(objects: Sequence[SourcedObject]) -> frozenset[tuple[str, str | None, str]]:
    return frozenset(
        (f"{o.namespace}/{o.name}", o.obj["spec"].get("nodeName"), o.obj["status"]["phase"])
        for o in objects
        if o.obj["kind"] == "Pod"
    )


def _overcommitted(objects: Sequence[SourcedObject], gpus: dict[str, int]) -> list[str]:
    used: dict[str, list[int]] = {name: [0, 0, 0] for name in gpus}
    for o in objects:
        where = o.obj["kind"] == "Pod" and o.obj["spec"].get("nodeName")
        if where and o.obj["status"]["phase"] not in ("Succeeded", "Failed"):
            request = o.obj["spec"]["containers"][0]["resources"]["requests"]
            used[where][0] += int(request.get("nvidia.com/gpu", "0"))
            used[where][1] += CPU_PER_POD
            used[where][2] += MEMORY_GB_PER_POD
    capacity = {name: (count, CPU_PER_NODE, MEMORY_GB_PER_NODE) for name, count in gpus.items()}
    return [
        f"{name}: {use} > {capacity[name]}"
        for name, use in used.items()
        if any(u > c for u, c in zip(use, capacity[name], strict=True))
    ]


@settings(deadline=None)
@given(worlds())
def test_ten_rounds_converge_without_oscillation_or_overcommit(world: World) -> None:
    played = list(play(sourced(world.objects), world.config, now=NOW.timestamp(), rounds=ROUNDS))
    trace = [
        f"round {r.number}: binds {[b.pod for b in r.result.binds]} "
        f"pipelined {[b.pod for b in r.result.pipelined]} "
        f"evictions {[(e.pod, e.action) for e in r.result.evictions]}"
        for r in played
    ]
    quiet_since: int | None = None
    states = [_state(r.objects) for r in played]
    evicted: list[frozenset[str]] = []
    for i, r in enumerate(played):
        decided = made_decisions(r.result)
        assert not (quiet_since is not None and decided), (
            f"round {r.number} decided after quiet round {quiet_since}\n" + "\n".join(trace)
        )
        if not decided and quiet_since is None:
            quiet_since = r.number
        assert _overcommitted(r.objects, world.gpus) == [], "\n".join(trace)
        for j in range(i):
            if states[j] == states[i]:
                assert all(s == states[i] for s in states[j : i + 1]), (
                    f"state after round {r.number} repeats round {j + 1}\n" + "\n".join(trace)
                )
        victims = frozenset(e.pod for e in r.result.evictions)
        assert not victims or victims not in evicted, (
            f"round {r.number} evicts the same pods again\n" + "\n".join(trace)
        )
        evicted.append(victims)
