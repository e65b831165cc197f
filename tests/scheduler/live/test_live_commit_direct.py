"""Committing, beyond BindRequests: direct binds (``--direct-bind``) for pods that need
nothing of the binder, PodGroup annotations set and removed by merge patch, and KAI's
annotated Evict Event on the evicted pod's PodGroup."""

from __future__ import annotations

import asyncio

from live_objects import api_with, with_informers

from kubeapi.errors import ConflictError, TransientError
from scheduler.config import SchedulerConfig
from scheduler.cycle import Bind, CycleResult, Eviction, run_cycle
from scheduler.live.committing import PARALLEL_WRITES, Committer, binder_needed
from scheduler.live.informers import Informers
from tests.kits import worlds as st

PG = ("scheduling.run.ai/v2alpha2", "PodGroup")
LAST_START = "kai.scheduler/last-start-timestamp"
STALE = "kai.scheduler/stale-podgroup-timestamp"


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def test_direct_bind_binds_plain_pods_and_keeps_bind_requests_for_the_rest() -> None:
    fake = api_with(
        [
            st.node("n1", gpus=4),
            st.queue("q", gpu_quota=4),
            st.job("plain", "q", tasks=2),
            st.job("shared", "q", annotations={"gpu-fraction": "0.5"}),
        ]
    )

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        report = await committer.commit(cycle(informers))
        assert (report.bound, report.bind_requests) == (2, 1)
        assert cycle(informers).binds == []  # bound pods are in the cache at once

    with_informers(fake, scenario)
    for name in ("plain-0", "plain-1"):
        pod = fake.stored("v1", "Pod", "default", name)
        assert pod is not None
        assert pod["spec"]["nodeName"] == "n1"
    (request,) = fake.of_kind("BindRequest")
    assert request["spec"]["podName"] == "shared-0"
    assert request["spec"]["receivedResourceType"] == "Fraction"


def test_without_direct_bind_every_bind_is_a_bind_request() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("plain", "q", tasks=2)])

    async def scenario(informers: Informers) -> None:
        report = await Committer(fake, informers).commit(cycle(informers))
        assert (report.bound, report.bind_requests) == (0, 2)

    with_informers(fake, scenario)
    assert not [verb for verb, _ in fake.calls if verb == "bind"]


def test_a_failed_direct_bind_is_decided_again_next_cycle() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q")])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers, direct_bind=True)
        fake.fail("bind", TransientError("Pod default/a-0", "connection reset"))
        first = await committer.commit(cycle(informers))
        assert (first.bound, first.failed) == (0, 1)
        again = cycle(informers)
        assert again.binds == [Bind("default/a-0", "n1")]
        fake.fail("bind", ConflictError("Pod default/a-0", "already assigned", 409))
        second = await committer.commit(again)
        assert second.already_binding == 1

    with_informers(fake, scenario)


def test_binder_needed_names_what_the_binder_does() -> None:
    def pod(**spec: object) -> dict[str, object]:
        return {"metadata": {"annotations": {}}, "spec": spec}

    assert binder_needed(pod(containers=[])) is None
    assert binder_needed(pod(volumes=[{"name": "v", "emptyDir": {}}])) is None
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "data"}}
    assert binder_needed(pod(volumes=[claim])) == "volume claims"
    assert binder_needed(pod(volumes=[{"name": "e", "ephemeral": {}}])) == "volume claims"
    assert binder_needed(pod(resourceClaims=[{"name": "gpu"}])) == "resource claims"
    shared = {"metadata": {"annotations": {"gpu-memory": "2000"}}, "spec": {}}
    assert binder_needed(shared) == "GPU sharing"


def test_pod_group_annotations_are_merge_patched_set_and_removed() -> None:
    group = st.pod_group("a", "q")
    group["metadata"]["annotations"] = {STALE: "2026-12-02T10:00:00Z", "keep": "me"}
    fake = api_with([st.node("n1"), st.queue("q"), group, st.pod("a-0", "a")])
    changes = {"default/a": {LAST_START: "2026-12-02T11:00:00Z", STALE: None}}

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(CycleResult(annotations=changes))
        # The cache has the change at once; the write waits for flush (after the binds).
        assert not [v for v, ref in fake.calls if ref.kind == "PodGroup" and v == "patch"]
        cached = informers.cache.snapshot(0).snapshot.jobs["default/a"]
        assert cached.last_start is not None
        assert cached.stale_since is None
        assert committer.pending_annotations == changes
        late = await committer.flush(0.0)  # no time left before the next cycle
        assert (late.annotated, committer.pending_annotations) == (0, changes)
        report = await committer.flush()
        assert (report.annotated, committer.pending_annotations) == (1, {})
        # The same changes again are already true: nothing queued, nothing written.
        await committer.commit(CycleResult(annotations=changes))
        assert (await committer.flush()).annotated == 0
        await committer.commit(CycleResult(annotations={"default/nope": {STALE: None}}))
        assert committer.pending_annotations == {}

    with_informers(fake, scenario)
    stored = fake.stored(*PG, "default", "a")
    assert stored is not None
    assert stored["metadata"]["annotations"] == {
        LAST_START: "2026-12-02T11:00:00Z",
        "keep": "me",
    }
    assert [verb for verb, ref in fake.calls if ref.kind == "PodGroup"].count("patch") == 1


def test_a_failed_annotation_write_stays_queued_and_a_deleted_group_is_dropped() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q"), st.job("b", "q")])
    changes: dict[str, dict[str, str | None]] = {
        "default/a": {STALE: "2026-12-02T10:00:00Z"},
        "default/b": {STALE: "2026-12-02T10:00:00Z"},
    }

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(CycleResult(annotations=changes))
        fake.fail("patch", TransientError("PodGroup default/a", "timeout"), kind="PodGroup")
        fake.remove(*PG, "default", "b")
        first = await committer.flush()
        assert (first.annotated, first.failed) == (0, 1)
        assert list(committer.pending_annotations) == ["default/a"]
        second = await committer.flush()
        assert (second.annotated, committer.pending_annotations) == (1, {})

    with_informers(fake, scenario)
    stored = fake.stored(*PG, "default", "a")
    assert stored is not None
    assert stored["metadata"]["annotations"] == {STALE: "2026-12-02T10:00:00Z"}


def test_a_gang_that_starts_gets_its_last_start_timestamp_written() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q", tasks=2)])

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        result = cycle(informers)
        assert LAST_START in result.annotations["default/a"]
        await committer.commit(result)
        await committer.flush()

    with_informers(fake, scenario)
    stored = fake.stored(*PG, "default", "a")
    assert stored is not None
    assert LAST_START in stored["metadata"]["annotations"]


def test_eviction_records_kai_annotated_event_on_the_pod_group() -> None:
    fake = api_with(
        [
            st.node("n1"),
            st.queue("q"),
            st.job("victim", "q", tasks=2, states=["Running", "Running"], nodes=["n1", "n1"]),
        ]
    )

    async def scenario(informers: Informers) -> None:
        decided = CycleResult(
            evictions=[
                Eviction("default/victim-0", "preempt", "other/winner"),
                Eviction("default/victim-1", "preempt", "other/winner"),
            ]
        )
        report = await Committer(fake, informers).commit(decided)
        assert report.evicted == 2

    with_informers(fake, scenario)
    on_group = [e for e in fake.events if e["involvedObject"]["kind"] == "PodGroup"]
    assert len(on_group) == 2
    assert {e["reason"] for e in on_group} == {"Evict"}
    assert on_group[0]["involvedObject"]["name"] == "victim"
    assert on_group[0]["metadata"]["annotations"] == {
        "num-evicted-pods": "2",
        "evictor-action-type": "preempt",
        "evictor-pod-group-name": "winner",
        "evictor-pod-group-namespace": "other",
    }
    on_pods = [e for e in fake.events if e["involvedObject"]["kind"] == "Pod"]
    assert len(on_pods) == 2


def test_flush_of_more_groups_than_write_slots_finishes() -> None:
    jobs = [st.job(f"j{i}", "q") for i in range(PARALLEL_WRITES + 8)]
    fake = api_with([st.node("n1"), st.queue("q"), *jobs])
    changes: dict[str, dict[str, str | None]] = {
        f"default/j{i}": {STALE: "2026-12-02T10:00:00Z"} for i in range(PARALLEL_WRITES + 8)
    }

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        await committer.commit(CycleResult(annotations=changes))
        report = await asyncio.wait_for(committer.flush(), 5)  # write slots are not nested
        assert (report.annotated, committer.pending_annotations) == (len(changes), {})

    with_informers(fake, scenario)


def test_binds_go_out_first_and_all_of_them_a_few_writers_at_a_time() -> None:
    """More binds than write slots, and a gang that stays pending (a condition and
    Events to write): the first write of the commit is a bind, every pod is bound, and
    the binds are sent by a few writers, not by a task per bind all started at once."""
    count = 3 * PARALLEL_WRITES
    fake = api_with(
        [
            st.node("n1", cpu=str(count), memory=f"{count}G"),
            st.queue("q"),
            *(st.job(f"j{i}", "q") for i in range(count)),
            st.job("big", "q", tasks=2, cpu=str(count)),
        ]
    )

    async def scenario(informers: Informers) -> None:
        result = cycle(informers)
        assert [o.pod_group for o in result.pod_groups if o.outcome == "pending"] == ["default/big"]
        fake.calls.clear()
        tasks: list[int] = []
        bind = fake.bind

        async def counting_bind(namespace: str, pod: str, node: str, *, uid: str = "") -> None:
            tasks.append(len(asyncio.all_tasks()))
            await bind(namespace, pod, node, uid=uid)

        fake.bind = counting_bind  # type: ignore[method-assign]
        report = await Committer(fake, informers, direct_bind=True).commit(result)
        assert max(tasks) < count  # the informers' tasks, the commit and its writers
        assert report.bound == count
        writes = [verb for verb, _ in fake.calls if verb not in ("get", "list", "watch")]
        assert writes[0] == "bind"
        assert writes.count("bind") == count
        assert len(writes) > count  # the pending gang's condition and Events were written too

    with_informers(fake, scenario)
