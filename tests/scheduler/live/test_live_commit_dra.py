"""Committing DRA decisions: the BindRequest carries the chosen devices, and the next
cycle holds them for the Binding pod (its binder has not written the claim yet)."""

from __future__ import annotations

from live_objects import api_with, with_informers

from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from scheduler.live.committing import Committer
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.dra import GPU_DRIVER, claim, device_class, dra_job, resource_slice
from tests.kits.volumes import host


def cycle(informers: Informers) -> CycleResult:
    return run_cycle(informers.cache.snapshot(0).snapshot, SchedulerConfig(), explain=True)


def test_bind_request_carries_the_allocation_and_the_device_stays_held() -> None:
    fake = api_with(
        [
            st.queue("q"),
            device_class(),
            host("n1"),
            resource_slice("n1", "gpu-0"),
            claim("ca"),
            dra_job("a", "q", ["ca"]),
        ]
    )

    async def scenario(informers: Informers) -> None:
        committer = Committer(fake, informers)
        assert (await committer.commit(cycle(informers))).bind_requests == 1
        fake.add(claim("cb"))  # a second claim wanting the only device
        for obj in dra_job("b", "q", ["cb"]):
            fake.add(obj)
        informers.observe("ADDED", claim("cb"))
        for obj in dra_job("b", "q", ["cb"]):
            informers.observe("ADDED", obj)
        later = cycle(informers)
        assert later.binds == []  # a-0 is Binding and holds gpu-0
        reasons = {o.pod_group: o.reasons for o in later.pod_groups}
        assert any("free devices" in r for r in reasons["default/b"])

    with_informers(fake, scenario)
    (request,) = fake.of_kind("BindRequest")
    (entry,) = request["spec"]["resourceClaimAllocations"]
    assert entry["name"] == "c0"
    assert entry["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": GPU_DRIVER, "pool": "n1", "device": "gpu-0"}
    ]
