"""The live scheduler writes a pending gang's scale-up hint: the PodGroup annotation
``kai.scheduler/scale-up-hint`` (through the annotation flush), one more reason in the
PodGroup's Unschedulable condition and Event; and removes the annotation once the gang
is scheduled."""

from __future__ import annotations

import json

from live_objects import api_with, until, with_informers

from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st

PG = ("scheduling.run.ai/v2alpha2", "PodGroup")
HINT = "kai.scheduler/scale-up-hint"


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def test_hint_written_then_cleared_when_the_gang_fits() -> None:
    fake = api_with([st.node("n0", gpus=8), st.queue("q"), st.job("g", "q", 12, gpus=1)])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(cycle(informers))
        assert (await committer.flush()).annotated == 1
        stored = fake.stored(*PG, "default", "g")
        assert stored is not None
        hint = json.loads(stored["metadata"]["annotations"][HINT])
        assert (hint["nodes"], hint["pods"], hint["shape"]["nvidia.com/gpu"]) == (1, 4, "8")
        (condition,) = stored["status"]["schedulingConditions"]
        assert "ScaleUpHint: 1 more node(s)" in condition["message"]
        assert any("ScaleUpHint" in r["message"] for r in condition["reasons"])
        (event,) = [e for e in fake.events if e["reason"] == "Unschedulable"]
        assert "ScaleUpHint" in event["message"]
        # The same hint next cycle: no annotation write.
        await committer.commit(cycle(informers))
        assert (await committer.flush()).annotated == 0
        # The autoscaler added the node: the gang is scheduled and the hint removed.
        fake.add(st.node("n1", gpus=8))
        await until(lambda: len(informers.cache.snapshot(0).snapshot.nodes) == 2)
        result = cycle(informers)
        assert len(result.binds) == 12
        await committer.commit(result)
        assert (await committer.flush()).annotated == 1

    with_informers(fake, scenario)
    stored = fake.stored(*PG, "default", "g")
    assert stored is not None
    assert HINT not in (stored["metadata"].get("annotations") or {})
