"""Lease leader election: acquire a free lease, wait while another holds it, take it over
once expired, renew, lose it when renewals fail past the deadline, release on shutdown."""

from __future__ import annotations

import asyncio

from kubeapi import TransientError
from kubeapi.testing import FakeKube
from scheduler.live.leader import LEASE_API, LeaderElector


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def lease(fake: FakeKube) -> dict[str, object]:
    stored = fake.stored(LEASE_API, "Lease", "ns", "podmuster-scheduler")
    assert stored is not None
    return dict(stored["spec"])


def test_acquire_wait_take_over_and_release() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        a = LeaderElector(fake, "ns", "a", clock=clock)
        b = LeaderElector(fake, "ns", "b", clock=clock)
        assert await a.try_acquire_or_renew()
        assert lease(fake)["holderIdentity"] == "a"
        assert lease(fake)["leaseDurationSeconds"] == 15
        clock.now += 10
        assert not await b.try_acquire_or_renew()
        assert await a.try_acquire_or_renew()  # renewal
        clock.now += 16
        assert await b.try_acquire_or_renew()  # a stopped renewing: expired
        assert (lease(fake)["holderIdentity"], lease(fake)["leaseTransitions"]) == ("b", 1)
        await b.release()
        assert lease(fake)["holderIdentity"] == ""
        assert await a.try_acquire_or_renew()  # released: free at once

    asyncio.run(main())


def test_hold_returns_when_renewals_fail_past_the_deadline() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        elector = LeaderElector(fake, "ns", "a", clock=clock, retry=0.001)
        assert await elector.acquire(asyncio.Event())
        for _ in range(50):
            fake.fail("get", TransientError("Lease ns/podmuster-scheduler", "down", 503))
        clock.now += 11
        await asyncio.wait_for(elector.hold(asyncio.Event()), 2)  # returns: lost

    asyncio.run(main())


def test_acquire_gives_up_when_stopped() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        assert await LeaderElector(fake, "ns", "other", clock=clock).try_acquire_or_renew()
        stop = asyncio.Event()
        waiting = asyncio.create_task(
            LeaderElector(fake, "ns", "a", clock=clock, retry=0.01).acquire(stop)
        )
        await asyncio.sleep(0.05)
        stop.set()
        assert await asyncio.wait_for(waiting, 1) is False

    asyncio.run(main())
