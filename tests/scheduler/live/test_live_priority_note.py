"""The live scheduler writes an unknown priority class into the PodGroup's scheduling
condition in the same words ``podmuster schedule`` prints (one function builds them), and
drops it once the PriorityClass is created."""

from __future__ import annotations

from live_objects import api_with, with_informers

from crds.documents import SourcedObject
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st

NOTE = "PriorityClassNotFound: priority class 'gold' does not exist; priority 50 is used"


def test_pending_group_condition_carries_the_unknown_priority_class() -> None:
    fake = api_with(
        [
            st.node("n1", gpus=1),
            st.queue("q", gpu_quota=1),
            *st.job("a", "q", 2, gpus=1, priority_class="gold"),
        ]
    )
    offline: list[tuple[str, ...]] = []

    async def scenario(informers: Informers) -> None:
        result = run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig())
        offline.extend(g.reasons for g in result.pod_groups if g.pod_group == "default/a")
        await Committer(fake, informers).commit(result)

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "a")
    assert group is not None
    (condition,) = group["status"]["schedulingConditions"]
    messages = [r["message"] for r in condition["reasons"]]
    assert messages[0] == NOTE
    assert tuple(messages[: len(offline[0])]) == offline[0]  # then the scale-up hint
    assert condition["message"].startswith(NOTE)


def test_the_note_goes_when_the_priority_class_appears() -> None:
    cache = ClusterCache()
    for obj in [st.node("n1"), st.queue("q"), *st.job("a", "q", priority_class="gold")]:
        cache.upsert(SourcedObject(obj, "<watch>", 0))
    assert cache.snapshot(0).snapshot.job_notes == {"default/a": [NOTE]}
    gold = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "gold"},
        "value": 90,
    }
    cache.upsert(SourcedObject(gold, "<watch>", 0))
    snapshot = cache.snapshot(0).snapshot
    assert snapshot.job_notes == {}
    assert snapshot.jobs["default/a"].priority == 90
