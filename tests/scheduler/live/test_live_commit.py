"""Committing a cycle: BindRequest shape, no duplicate on the next cycle, failed requests
replaced, evictions delete the pod, no BindRequest for a pod placed and then preempted in
the same cycle, pending gangs get PodScheduled=False and a PodGroup
scheduling condition (written once), Warning/Pipelined/InvalidObject Events."""

from __future__ import annotations

from live_objects import api_with, until, with_informers

from crds.names import CREATED_BY_LABEL
from scheduler.config import SchedulerConfig
from scheduler.cycle import Bind, CycleResult, Eviction, PodGroupOutcome, run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from scheduler.live.statuses import reason_code
from tests.kits import worlds as st

BR = ("scheduling.run.ai/v1alpha2", "BindRequest")


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def test_bind_requests_have_kai_shape_and_are_not_duplicated() -> None:
    fake = api_with([st.node("n1", gpus=2), st.queue("q", gpu_quota=2), st.job("a", "q", gpus=1)])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        first = await committer.commit(cycle(informers))
        assert first.bind_requests == 1
        again = cycle(informers)  # our write was fed to the cache: the pod is Binding
        assert again.binds == []
        repeat = await committer.commit(CycleResult(binds=[Bind("default/a-0", "n1")]))
        assert (repeat.bind_requests, repeat.already_binding) == (0, 1)

    with_informers(fake, scenario)
    (request,) = fake.of_kind("BindRequest")
    pod = fake.stored("v1", "Pod", "default", "a-0")
    assert pod is not None
    assert request["metadata"]["name"] == "a-0"
    # KAI's label, and ours for the chart's cleanup hook
    assert request["metadata"]["labels"] == {"selected-node": "n1", CREATED_BY_LABEL: "scheduler"}
    owner = request["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "a-0", pod["metadata"]["uid"])
    assert request["spec"] == {
        "podName": "a-0",
        "selectedNode": "n1",
        "receivedResourceType": "Regular",
        "receivedGPU": {"count": 1, "portion": "1.00"},  # KAI: a whole GPU is portion 1
        "backoffLimit": 3,
    }


def test_a_finally_failed_request_is_replaced() -> None:
    failed = st.bind_request("a-0", "n9")
    failed["spec"]["backoffLimit"] = 1
    failed["status"] = {"phase": "Failed", "failedAttempts": 1}
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q"), failed])

    async def scenario(informers: Informers) -> None:
        report = await Committer(fake, informers).commit(cycle(informers))
        assert report.bind_requests == 1

    with_informers(fake, scenario)
    (request,) = fake.of_kind("BindRequest")
    assert request["spec"]["selectedNode"] == "n1"
    assert "status" not in request


def test_eviction_deletes_the_pod_and_pipelined_gets_one_event() -> None:
    fake = api_with(
        [st.node("n1"), st.queue("q"), st.job("a", "q", states=["Running"], nodes=["n1"])]
    )

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        decided = CycleResult(
            evictions=[Eviction("default/a-0", "reclaim", "default/b")],
            pipelined=[Bind("default/a-0", "n1")],
        )
        report = await committer.commit(decided)
        assert report.evicted == 1
        await committer.commit(CycleResult(pipelined=[Bind("default/a-0", "n1")]))

    with_informers(fake, scenario)
    assert fake.stored("v1", "Pod", "default", "a-0") is None
    reasons = [e["reason"] for e in fake.events]
    assert reasons.count("Pipelined") == 1
    assert "Evict" in reasons


def test_a_pod_placed_then_preempted_in_one_cycle_gets_no_bind_request_and_stays() -> None:
    """Allocate places j next to r, preempt evicts both for h: the commit binds nothing,
    deletes r only, and j is told why it waits."""
    fake = api_with(
        [
            st.node("n0", gpus=4),
            st.queue("q", gpu_quota=8),
            st.job("r", "q", gpus=2, states=["Running"], nodes=["n0"]),
            st.job("h", "q", gpus=4, priority_class="build"),
            st.job("j", "q", gpus=2),
        ]
    )

    async def scenario(informers: Informers) -> None:
        report = await Committer(fake, informers).commit(cycle(informers))
        assert (report.bind_requests, report.bound, report.evicted) == (0, 0, 1)

    with_informers(fake, scenario)
    assert fake.of_kind("BindRequest") == []
    assert fake.stored("v1", "Pod", "default", "r-0") is None
    j = fake.stored("v1", "Pod", "default", "j-0")
    assert j is not None
    assert not j["spec"].get("nodeName")
    (condition,) = [c for c in j["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert "placed earlier in this cycle, then evicted" in condition["message"]


def test_pending_gang_gets_conditions_once_and_a_warning() -> None:
    fake = api_with([st.node("n1", cpu="2"), st.queue("q"), st.job("big", "q", tasks=3)])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        result = cycle(informers)
        assert [o.outcome for o in result.pod_groups] == ["pending"]
        first = await committer.commit(result)
        assert first.conditions == 4  # the PodGroup and its three pods
        second = await committer.commit(cycle(informers))
        assert second.conditions == 0

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "big")
    assert group is not None
    (condition,) = group["status"]["schedulingConditions"]
    assert (condition["type"], condition["nodePool"], condition["status"]) == (
        "UnschedulableOnNodePool",
        "default",
        "True",
    )
    assert condition["reasons"]
    assert condition["reasons"][0]["reason"] == "Unschedulable"
    pod = fake.stored("v1", "Pod", "default", "big-0")
    assert pod is not None
    (scheduled,) = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert scheduled["message"] == condition["message"]
    warnings = [e for e in fake.events if e["reason"] == "Unschedulable"]
    assert len(warnings) == 1
    assert warnings[0]["involvedObject"]["kind"] == "PodGroup"


def test_mark_unschedulable_false_keeps_podscheduled_off_the_pods() -> None:
    """KAI's ``spec.markUnschedulable: false``: autoscalers act on PodScheduled=False, so
    the pods do not get it; the PodGroup's condition and Event still say why."""
    gang = st.job("big", "q", tasks=3)
    for obj in gang:
        if obj["kind"] == "PodGroup":
            obj["spec"]["markUnschedulable"] = False
    fake = api_with([st.node("n1", cpu="2"), st.queue("q"), *gang])

    async def scenario(informers: Informers) -> None:
        first = await Committer(fake, informers).commit(cycle(informers))
        assert first.conditions == 1  # the PodGroup only

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "big")
    assert group is not None
    assert group["status"]["schedulingConditions"]
    for name in ("big-0", "big-1", "big-2"):
        pod = fake.stored("v1", "Pod", "default", name)
        assert pod is not None
        conditions = (pod.get("status") or {}).get("conditions") or []
        assert not [c for c in conditions if c["type"] == "PodScheduled"], name


def test_missing_queue_reason_code_and_invalid_object_event() -> None:
    broken = st.queue("broken")
    broken["spec"]["resources"]["gpu"]["quota"] = "lots"
    fake = api_with([st.node("n1"), broken, st.job("a", "nowhere")])

    async def scenario(informers: Informers) -> None:
        await Committer(fake, informers).commit(cycle(informers))

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "a")
    assert group is not None
    codes = [r["reason"] for r in group["status"]["schedulingConditions"][0]["reasons"]]
    assert codes[0] == "QueueDoesNotExist"
    invalid = [e for e in fake.events if e["reason"] == "InvalidObject"]
    assert [e["involvedObject"]["name"] for e in invalid] == ["broken"]
    assert "spec.resources.gpu.quota" in invalid[0]["message"]


def test_an_invalid_pod_of_ours_says_why_on_its_own_condition() -> None:
    """Found on a real cluster without the webhook: a pod with gpu-fraction 1.5 waited with
    no PodScheduled condition, and its Event began with the cache's 'apiserver:' label."""
    objects = st.job("frac", "q", gpus=0)
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["metadata"].setdefault("annotations", {})["gpu-fraction"] = "1.5"
    fake = api_with([st.node("n1"), st.queue("q"), *objects])

    async def scenario(informers: Informers) -> None:
        await Committer(fake, informers).commit(cycle(informers))

    with_informers(fake, scenario)
    (event,) = [e for e in fake.events if e["reason"] == "InvalidObject"]
    assert event["message"].startswith("metadata.annotations[gpu-fraction]: ")
    name = pod["metadata"]["name"]
    stored = fake.stored("v1", "Pod", "default", name)
    assert stored is not None
    (scheduled,) = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "InvalidObject")
    assert scheduled["message"].startswith("InvalidObject: metadata.annotations[gpu-fraction]")


def test_the_pods_of_an_invalid_podgroup_say_why() -> None:
    """Found on a real cluster: a PodGroup setting both minMember and minSubGroup got its
    InvalidObject Event, but its pods waited with no PodScheduled condition at all."""
    objects = st.job("both", "q", tasks=2)
    group = next(o for o in objects if o["kind"] == "PodGroup")
    group["spec"]["minSubGroup"] = 1
    group["spec"]["subGroups"] = [{"name": "a", "minMember": 1}]
    fake = api_with([st.node("n1"), st.queue("q"), *objects])

    async def scenario(informers: Informers) -> None:
        await Committer(fake, informers).commit(cycle(informers))

    with_informers(fake, scenario)
    (event,) = [e for e in fake.events if e["reason"] == "InvalidObject"]
    assert event["involvedObject"]["kind"] == "PodGroup"
    for name in ("both-0", "both-1"):
        stored = fake.stored("v1", "Pod", "default", name)
        assert stored is not None
        (said,) = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert said["message"].startswith("InvalidObject: PodGroup default/both: "), said
        # not Unschedulable: autoscalers and the scale adjuster act on that, no node helps
        assert said["reason"] == "InvalidObject"


def test_pods_naming_an_invalid_podgroup_after_its_error_was_reported_say_why_too() -> None:
    """The podgrouper creates the PodGroup first and names it on the pods afterwards: the
    group's error is reported once, but its pods are told in every commit that finds them."""
    objects = st.job("both", "q", tasks=2)
    group = next(o for o in objects if o["kind"] == "PodGroup")
    group["spec"]["minSubGroup"] = 1
    group["spec"]["subGroups"] = [{"name": "a", "minMember": 1}]
    pods = [o for o in objects if o["kind"] == "Pod"]
    for pod in pods:
        del pod["metadata"]["annotations"]["pod-group-name"]
    fake = api_with([st.node("n1"), st.queue("q"), *objects])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(cycle(informers))
        for pod in pods:
            name = pod["metadata"]["name"]
            patch = {"metadata": {"annotations": {"pod-group-name": "both"}}}
            await fake.patch("v1", "Pod", "default", name, patch)
        await until(
            lambda: all(
                (p["metadata"].get("annotations") or {}).get("pod-group-name") == "both"
                for k, p in informers.objects["Pod"].items()
                if k.startswith("default/both-")
            )
        )
        await committer.commit(cycle(informers))

    with_informers(fake, scenario)
    for name in ("both-0", "both-1"):
        stored = fake.stored("v1", "Pod", "default", name)
        assert stored is not None
        (said,) = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert said["reason"] == "InvalidObject", said


def test_reason_codes() -> None:
    assert reason_code("OverLimit: gpu request of 2 would take queue q over") == "OverLimit"
    assert reason_code("pod default/a-0: NonPreemptibleOverQuota: x") == "NonPreemptibleOverQuota"
    assert reason_code("pod default/a-0: no node fits") == "Unschedulable"
    assert PodGroupOutcome("a/b", "q", "pending", ()).reasons == ()


def test_a_gang_member_alternating_in_the_reasons_sends_no_patch() -> None:
    """The engine names the member it tried (``pod default/big-2: ...``); when the next
    cycles try big-1, then big-2 again, for the same failure, nothing is patched and no
    Event is sent again. A new cause is written, once."""
    fake = api_with([st.node("n1", cpu="2"), st.queue("q"), st.job("big", "q", tasks=3)])

    def pending(*reasons: str) -> CycleResult:
        return CycleResult(pod_groups=[PodGroupOutcome("default/big", "q", "pending", reasons)])

    def status_patches() -> int:
        return sum(1 for verb, _ in fake.calls if verb == "patch/status")

    def tried(member: str) -> CycleResult:
        return pending(
            "gang of 3 pods: only 2 could be placed; "
            f"pod default/{member}: 0/1 nodes are available: 1 Insufficient cpu"
        )

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        assert (await committer.commit(tried("big-2"))).conditions == 4
        patches = status_patches()
        for member in ("big-1", "big-2", "big-0", "big-1"):
            assert (await committer.commit(tried(member))).conditions == 0
        assert status_patches() == patches
        assert (
            await committer.commit(pending("OverLimit: queue q is over its limit"))
        ).conditions == 4
        assert status_patches() == patches + 4

    with_informers(fake, scenario)
    warnings = [e for e in fake.events if e["reason"] == "Unschedulable"]
    assert len(warnings) == 2
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "big")
    assert group is not None
    (condition,) = group["status"]["schedulingConditions"]
    assert condition["transitionID"] == "1"


def test_an_elastic_gang_running_at_its_minimum_gets_no_pod_group_condition() -> None:
    """KAI writes no UnschedulableOnNodePool while a pod of the group is allocated: its
    extras waiting for room say why on their own pods, not as a stuck group."""
    fake = api_with(
        [
            st.node("n1", cpu="1"),
            st.queue("q"),
            st.job(
                "el",
                "q",
                tasks=3,
                min_member=1,
                states=["Running", "Pending", "Pending"],
                nodes=["n1", None, None],
            ),
        ]
    )

    async def scenario(informers: Informers) -> None:
        result = cycle(informers)
        assert [o.outcome for o in result.pod_groups] == ["pending"]
        report = await Committer(fake, informers).commit(result)
        assert report.conditions == 2  # the two waiting pods only

    with_informers(fake, scenario)
    group = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "el")
    assert group is not None
    assert not (group.get("status") or {}).get("schedulingConditions")
    assert not [e for e in fake.events if e["involvedObject"]["kind"] == "PodGroup"]
    waiting = fake.stored("v1", "Pod", "default", "el-1")
    assert waiting is not None
    assert [
        c["status"] for c in waiting["status"]["conditions"] if c["type"] == "PodScheduled"
    ] == ["False"]


def test_a_condition_is_removed_once_no_pod_of_the_group_waits() -> None:
    """A gang that waited and now runs whole loses its condition (KAI clears it when nothing
    is pending or awaiting its bind), also one written before this process started; another
    node pool's condition stays."""
    objects = st.flatten(
        [
            st.node("n1", cpu="4"),
            st.queue("q"),
            st.job("ran", "q", tasks=2, states=["Running"] * 2, nodes=["n1", "n1"]),
        ]
    )
    (group,) = [o for o in objects if o["kind"] == "PodGroup"]
    other_pool = {"type": "UnschedulableOnNodePool", "nodePool": "other", "status": "True"}
    ours = {
        "type": "UnschedulableOnNodePool",
        "nodePool": "default",
        "status": "True",
        "reasons": [{"reason": "Unschedulable", "message": "was short"}],
    }
    group["status"] = {"schedulingConditions": [other_pool, ours]}
    fake = api_with(objects)

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        first = await committer.commit(cycle(informers))
        assert first.conditions == 1
        assert (await committer.commit(cycle(informers))).conditions == 0  # said once

    with_informers(fake, scenario)
    stored = fake.stored("scheduling.run.ai/v2alpha2", "PodGroup", "default", "ran")
    assert stored is not None
    assert stored["status"]["schedulingConditions"] == [other_pool]
