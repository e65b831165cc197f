"""Committing queue admission (docs/semantics.md §5.11): the cycle's ``ungated`` pods lose
our scheduling gate and keep any other; a pod replaced meanwhile is left alone; a gated
pod never gets our PodScheduled condition (the API server reports SchedulingGated)."""

from __future__ import annotations

from live_objects import api_with, with_informers

from crds.names import ADMISSION_GATE
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st

OTHER = "example.com/wait"


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def gates(fake: object, name: str) -> list[str]:
    pod = fake.stored("v1", "Pod", "default", name)  # type: ignore[attr-defined]
    return [g["name"] for g in pod["spec"].get("schedulingGates") or ()]


def test_only_our_gate_comes_off() -> None:
    both = st.job("b", "q", 2, gpus=1, states=["AdmissionGated"] * 2)
    both[1]["spec"]["schedulingGates"] = [{"name": OTHER}, {"name": ADMISSION_GATE}]
    fake = api_with([st.node("n1", gpus=4), st.queue("q", admission_gate=True), both])

    async def scenario(informers: Informers) -> None:
        result = cycle(informers)
        assert result.ungated == ["default/b-0", "default/b-1"]
        report = await Committer(fake, informers).commit(result)
        assert report.ungated == 2
        again = cycle(informers)  # our writes were fed to the cache
        assert again.ungated == []

    with_informers(fake, scenario)
    assert gates(fake, "b-0") == [OTHER]
    assert gates(fake, "b-1") == []


def test_a_pod_replaced_meanwhile_keeps_its_gate() -> None:
    fake = api_with(
        [st.node("n1", gpus=4), st.queue("q"), st.job("b", "q", 1, states=["AdmissionGated"])]
    )

    async def scenario(informers: Informers) -> None:
        result = cycle(informers)
        pod = fake.stored("v1", "Pod", "default", "b-0")
        assert pod is not None
        with informers.deferred():  # as in the loop: the cache still has the old pod
            fake.remove("v1", "Pod", "default", "b-0")
            fake.add({**pod, "metadata": {**pod["metadata"], "uid": "another"}})
            report = await Committer(fake, informers).commit(result)
        assert (report.ungated, report.failed) == (0, 0)

    with_informers(fake, scenario)
    assert gates(fake, "b-0") == [ADMISSION_GATE]


def test_gated_pods_of_a_pending_gang_get_no_condition() -> None:
    """A gang with one pod admitted and one held stays pending: only the admitted pod's
    PodScheduled condition is ours to write."""
    mixed = st.job("g", "q", 2, gpus=1, states=["Pending", "AdmissionGated"])
    fake = api_with([st.node("n1", gpus=4), st.queue("q", gpu_limit=1, admission_gate=True), mixed])

    async def scenario(informers: Informers) -> None:
        result = cycle(informers)
        assert [o.outcome for o in result.pod_groups] == ["pending"]
        assert result.ungated == []
        await Committer(fake, informers).commit(result)

    with_informers(fake, scenario)
    admitted = fake.stored("v1", "Pod", "default", "g-0")
    held = fake.stored("v1", "Pod", "default", "g-1")
    assert admitted is not None
    assert held is not None
    assert [c["type"] for c in admitted["status"].get("conditions") or ()] == ["PodScheduled"]
    assert not held.get("status", {}).get("conditions")


def test_a_held_gang_says_why_on_its_pod_group_only() -> None:
    fake = api_with(
        [
            st.node("n1", gpus=4),
            st.queue("q", gpu_limit=1, admission_gate=True),
            st.job("run", "q", 1, gpus=1, states=["Running"], nodes=["n1"]),
            st.job("b", "q", 1, gpus=1, states=["AdmissionGated"]),
        ]
    )

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(cycle(informers))
        again = await committer.commit(cycle(informers))
        assert again.conditions == 0  # written once, not every cycle

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "b")
    assert group is not None
    (condition,) = group["status"]["schedulingConditions"]
    assert [r["reason"] for r in condition["reasons"]] == ["AdmissionGated"]
    assert "OverLimit" in condition["message"]
    pod = fake.stored("v1", "Pod", "default", "b-0")
    assert pod is not None
    assert not pod.get("status", {}).get("conditions")
    assert gates(fake, "b-0") == [ADMISSION_GATE]
