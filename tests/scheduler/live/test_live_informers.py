"""Informers: list then watch into the cache, resume, relist on 410 with deletions
reconciled, back off on errors, keep serving around a bad object (queued for an Event)."""

from __future__ import annotations

from typing import Any

from live_objects import api_with, informers_for, until, with_informers

from kubeapi.errors import TransientError
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.fake_kube import FakeKube

PODGROUP = ("scheduling.run.ai/v2alpha2", "PodGroup")


def test_list_then_watch_feeds_the_cache() -> None:
    fake = api_with([st.node("n1"), st.queue("q"), st.job("a", "q")])

    async def scenario(informers: Informers) -> None:
        assert informers.synced
        fake.add(st.node("n2"))
        fake.remove("v1", "Node", "", "n1")
        await until(lambda: set(informers.objects["Node"]) == {"n2"})

    informers = with_informers(fake, scenario)
    snap = informers.cache.snapshot(0).snapshot
    assert snap.nodes.names == ["n2"]
    assert set(snap.jobs) == {"default/a"}


def test_gone_relists_and_reconciles_deletions() -> None:
    fake = api_with([st.node("n1"), st.node("n2"), st.queue("q")])

    async def scenario(informers: Informers) -> None:
        fake.compact()
        fake.remove("v1", "Node", "", "n1")  # the DELETED event is lost with the history
        fake.compact()
        fake.end_watches()  # the stream ends; resuming from the old version gets 410
        await until(lambda: informers.relists["Node"] == 2)
        await until(lambda: set(informers.objects["Node"]) == {"n2"})

    informers = with_informers(fake, scenario)
    assert informers.cache.snapshot(0).snapshot.nodes.names == ["n2"]


def test_errors_back_off_and_recover() -> None:
    fake = api_with([st.node("n1")])
    for _ in range(3):
        fake.fail("list", TransientError("Node", "unavailable", 503), kind="Node")

    async def scenario(informers: Informers) -> None:
        assert set(informers.objects["Node"]) == {"n1"}

    with_informers(fake, scenario)
    lists = [ref for verb, ref in fake.calls if verb == "list" and ref.kind == "Node"]
    assert len(lists) == 4


def test_a_bad_object_is_queued_once_and_the_rest_is_served() -> None:
    broken = st.queue("broken")
    broken["spec"]["resources"]["gpu"]["quota"] = "lots"
    fake = api_with([st.node("n1"), st.queue("q"), broken])

    async def scenario(informers: Informers) -> None:
        fake.add({**fake.of_kind("Node")[0], "metadata": {"name": "n2"}})
        await until(lambda: "n2" in informers.objects["Node"])

    informers = with_informers(fake, scenario)
    assert [obj["metadata"]["name"] for obj, _ in informers.invalid] == ["broken"]
    assert "spec.resources.gpu.quota" in str(informers.invalid[0][1])
    result = informers.cache.snapshot(0)
    assert "q" in result.snapshot.queues.queues
    assert len(result.errors) == 1
    # its jobs are told it is invalid; the Queue is not reported a second time as left
    # out of the tree (under another field)
    assert "broken" in result.snapshot.queues.dropped
    informers.note_dropped_queues(result.snapshot.queues.dropped)
    assert [obj["metadata"]["name"] for obj, _ in informers.invalid] == ["broken"]


def test_a_queue_left_out_of_the_tree_is_reported_on_the_queue_once_per_reason() -> None:
    fake = api_with([st.queue("ok"), st.queue("orphan", "missing"), st.queue("a", "b"),
                     st.queue("b", "a")])  # fmt: skip

    async def scenario(informers: Informers) -> None:
        return None

    informers = with_informers(fake, scenario)
    dropped = informers.cache.snapshot(0).snapshot.queues.dropped
    assert set(dropped) == {"orphan", "a", "b"}
    informers.note_dropped_queues(dropped)
    informers.note_dropped_queues(dropped)  # the next cycle: nothing new to say
    reported = {obj["metadata"]["name"]: str(error) for obj, error in informers.invalid}
    assert set(reported) == {"orphan", "a", "b"}
    assert "spec.parentQueue" in reported["orphan"]
    assert "its parent queue 'missing' does not exist" in reported["orphan"]
    assert "parent cycle" in reported["a"]
    informers.invalid.clear()
    informers.note_dropped_queues({})  # repaired: forgotten, so a relapse is reported again
    informers.note_dropped_queues(dropped)
    assert len(informers.invalid) == 3


def _versioned(obj: dict[str, Any], version: int) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(version)}}


def test_deferred_changes_wait_for_the_block_and_keep_the_newest_copy() -> None:
    informers = informers_for(FakeKube())
    n1, n2 = (_versioned(st.node(name), 1) for name in ("n1", "n2"))
    informers.observe("ADDED", n1)
    with informers.deferred():
        informers.observe("ADDED", n2)
        informers.observe("MODIFIED", _versioned(n1, 5))
        informers.observe("MODIFIED", _versioned(n1, 3))  # our older write, seen late
        informers.observe("DELETED", _versioned(n2, 6))
        informers.observe("MODIFIED", n2)  # older than its deletion
        assert informers.held == 2
        assert set(informers.objects["Node"]) == {"n1"}
        assert informers.objects["Node"]["n1"]["metadata"]["resourceVersion"] == "1"
    assert informers.held == 0
    assert set(informers.objects["Node"]) == {"n1"}
    assert informers.objects["Node"]["n1"]["metadata"]["resourceVersion"] == "5"
    assert informers.cache.snapshot(0).snapshot.nodes.names == ["n1"]


def test_a_relist_while_deferred_deletes_what_was_added_meanwhile_and_is_gone() -> None:
    fake = api_with([st.node("n1"), st.queue("q")])

    async def scenario(informers: Informers) -> None:
        with informers.deferred():
            fake.add(st.node("n2"))
            await until(lambda: informers.held == 1)
            fake.compact()
            fake.remove("v1", "Node", "", "n2")  # its DELETED event is lost with the history
            fake.compact()
            fake.end_watches()
            await until(lambda: informers.relists["Node"] == 2)
            assert set(informers.objects["Node"]) == {"n1"}  # n2 was never applied
        assert set(informers.objects["Node"]) == {"n1"}

    with_informers(fake, scenario)
