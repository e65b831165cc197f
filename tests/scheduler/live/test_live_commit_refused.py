"""A bind the API server refuses for one pod of a gang (an admission policy, a quota on
BindRequests): the next cycle's stale-gang eviction does not count the pod, so the gang
is stamped stale and evicted after the grace period (as in KAI, which unallocates a pod
whose bind fails); the pod says why once (PodScheduled=False/BindingError and a Warning
FailedBinding Event), not every cycle it is refused again."""

from __future__ import annotations

from live_objects import api_with, with_informers

from crds.names import STALE_ANNOTATION
from kubeapi.errors import ForbiddenError
from scheduler.config import SchedulerConfig
from scheduler.cycle import Bind, CycleResult, PodGroupOutcome, run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st

REFUSAL = 'admission webhook "deny-vg-3" denied the request: no'


def cycle(informers: Informers, now: float, bind_failed: frozenset[str]) -> CycleResult:
    snapshot = informers.cache.snapshot(now).snapshot
    snapshot.bind_failed = bind_failed
    return run_cycle(snapshot, SchedulerConfig(), explain=True)


def test_a_refused_bind_makes_the_gang_stale_and_says_why_once() -> None:
    running = ["Running"] * 3 + ["Pending"]
    fake = api_with(
        [
            st.node("n1", gpus=8),
            st.queue("q", gpu_quota=8),
            st.job("g", "q", 4, gpus=1, states=running, nodes=["n1"] * 3 + [None]),
        ]
    )
    seen: list[CycleResult] = []

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        failed: frozenset[str] = frozenset()
        for now in (0.0, 1.0, 2.0, 70.0):
            refusal = ForbiddenError("BindRequest default/g-3", REFUSAL, 403)
            fake.fail("create", refusal, kind="BindRequest")
            result = cycle(informers, now, failed)
            seen.append(result)
            report = await committer.commit(result)
            await committer.flush()
            failed = frozenset(report.bind_failures)
            if now < 70:
                assert list(report.bind_failures) == ["default/g-3"]
                assert REFUSAL in report.bind_failures["default/g-3"]

    with_informers(fake, scenario)
    first, second, third, late = seen
    # the first cycle cannot know: it places g-3 and the gang looks complete
    assert [b.pod for b in first.binds] == ["default/g-3"]
    assert first.annotations == {}
    # the next cycles place g-3 again (the refusal may have passed) but the gang is stale
    assert [b.pod for b in second.binds] == ["default/g-3"]
    assert STALE_ANNOTATION in second.annotations["default/g"]
    assert [b.pod for b in third.binds] == ["default/g-3"]
    assert third.annotations == {}
    # past the grace period (60 s) the gang is evicted, the refused pod's bind with it
    assert sorted(e.pod for e in late.evictions) == ["default/g-0", "default/g-1", "default/g-2"]
    assert late.binds == []
    # one Warning FailedBinding Event and the pod's condition, though refused three times
    refused = [e for e in fake.events if e["reason"] == "FailedBinding"]
    assert len(refused) == 1
    assert refused[0]["type"] == "Warning"
    assert refused[0]["involvedObject"]["name"] == "g-3"
    assert "Failed to bind pod default/g-3 to node n1." in refused[0]["message"]
    assert REFUSAL in refused[0]["message"]
    pod = fake.stored("v1", "Pod", "default", "g-3")
    assert pod is not None
    (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (condition["status"], condition["reason"]) == ("False", "BindingError")
    assert REFUSAL in condition["message"]
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "g")
    assert group is not None
    assert STALE_ANNOTATION in group["metadata"]["annotations"]


def test_a_refused_direct_bind_is_reported_and_said_again_once_its_condition_was_replaced() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q")])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        for _ in range(2):
            fake.fail("bind", ForbiddenError("Pod default/a-0", REFUSAL, 403))
            report = await committer.commit(CycleResult(binds=[Bind("default/a-0", "n1")]))
            assert list(report.bind_failures) == ["default/a-0"]
        assert [e["reason"] for e in fake.events] == ["FailedBinding"]
        # the next cycle says why the pod waits (Unschedulable) and the bind is refused again
        pending = PodGroupOutcome("default/a", "q", "pending", ("no node fits",))
        await committer.commit(CycleResult(pod_groups=[pending]))
        fake.fail("bind", ForbiddenError("Pod default/a-0", REFUSAL, 403))
        report = await committer.commit(CycleResult(binds=[Bind("default/a-0", "n1")]))
        assert list(report.bind_failures) == ["default/a-0"]
        # and a bind that goes through is not reported
        report = await committer.commit(CycleResult(binds=[Bind("default/a-0", "n1")]))
        assert report.bind_failures == {}
        assert report.bound == 1

    with_informers(fake, scenario)
    assert [e["reason"] for e in fake.events if e["reason"] != "Unschedulable"] == [
        "FailedBinding",
        "FailedBinding",
    ]
