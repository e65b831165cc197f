"""Lease leader election, timed as client-go times it, on a fake API and fake clocks.

Expiry is measured from when a replica saw the lease record change, by its own
monotonic clock; the renewTime written is the wall clock's, and no replica compares
another's renewTime with its own clock. A leader stops leading (``leading()`` False,
``hold`` returns) once the renew deadline passed without a successful renewal.
"""

from __future__ import annotations

import asyncio

import pytest

from kubeapi.errors import TransientError
from liveprocess.leader import LEASE_API, LeaderElector
from tests.kits.fake_kube import FakeClock, FakeKube

HOUR = 3600.0


def lease(fake: FakeKube) -> dict[str, object]:
    stored = fake.stored(LEASE_API, "Lease", "ns", "podmuster-scheduler")
    assert stored is not None
    return dict(stored["spec"])


def elector(fake: FakeKube, identity: str, clock: FakeClock, wall: FakeClock | None = None,
            **timing: float) -> LeaderElector:  # fmt: skip
    return LeaderElector(fake, "ns", identity, clock=clock, wall=wall or clock, **timing)


def test_acquire_wait_take_over_and_release() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        a, b = elector(fake, "a", clock), elector(fake, "b", clock)
        assert await a.try_acquire_or_renew()
        assert (lease(fake)["holderIdentity"], lease(fake)["leaseDurationSeconds"]) == ("a", 15)
        assert not await b.try_acquire_or_renew()  # b sees a's record now
        clock.now += 14
        assert not await b.try_acquire_or_renew()  # unchanged for 14 s: still a's
        clock.now += 2
        assert await b.try_acquire_or_renew()  # unchanged for 16 s: expired
        assert (lease(fake)["holderIdentity"], lease(fake)["leaseTransitions"]) == ("b", 1)
        await b.release()
        assert lease(fake)["holderIdentity"] == ""
        assert await a.try_acquire_or_renew()  # released: free at once

    asyncio.run(main())


def test_a_renewal_restarts_the_standbys_wait() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        a, b = elector(fake, "a", clock), elector(fake, "b", clock)
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        clock.now += 10
        assert await a.try_acquire_or_renew()  # renewed: a new record
        clock.now += 6
        assert not await b.try_acquire_or_renew()  # 16 s since b first looked, but it changed
        clock.now += 14
        assert not await b.try_acquire_or_renew()  # b saw the change 14 s ago
        clock.now += 2
        assert await b.try_acquire_or_renew()

    asyncio.run(main())


def test_wall_clocks_hours_apart_neither_steal_nor_keep_a_lease() -> None:
    """renewTime is written from each replica's wall clock, never read as a deadline."""

    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        ahead, behind = FakeClock(clock.now + HOUR), FakeClock(clock.now - HOUR)
        a = elector(fake, "a", clock, wall=behind)  # its renewTimes look an hour old
        b = elector(fake, "b", clock, wall=ahead)
        assert await a.try_acquire_or_renew()
        assert str(lease(fake)["renewTime"]).startswith("1970-01-12T12:46")  # behind's time
        for _ in range(20):  # a renews every 2 s; b never takes a live lease
            assert not await b.try_acquire_or_renew()
            clock.now += 2
            assert await a.try_acquire_or_renew()
        assert lease(fake)["holderIdentity"] == "a"
        clock.now += 16  # a stopped renewing; b waits a lease duration, not an hour
        assert not await b.try_acquire_or_renew()  # sees a's last renewal only now
        clock.now += 16
        assert await b.try_acquire_or_renew()
        clock.now += 10
        assert not await a.try_acquire_or_renew()  # b's renewTime (an hour ahead) means nothing

    asyncio.run(main())


def test_a_new_candidate_waits_a_full_lease_even_for_an_old_renew_time() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        assert await elector(fake, "a", clock, wall=FakeClock(0.0)).try_acquire_or_renew()
        b = elector(fake, "b", clock)
        assert not await b.try_acquire_or_renew()  # renewTime 1970: still not expired for b
        clock.now += 15.5
        assert await b.try_acquire_or_renew()

    asyncio.run(main())


def test_leading_ends_at_the_renew_deadline_and_hold_returns() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        a = elector(fake, "a", clock, retry=0.001)
        assert await a.acquire(asyncio.Event())
        assert a.leading()
        assert a.readiness() is None
        for _ in range(50):
            fake.fail("get", TransientError("Lease ns/podmuster-scheduler", "down", 503))
        clock.now += 9.9
        assert a.leading()
        clock.now += 0.2
        assert not a.leading()  # 10.1 s since the last renewal started
        assert a.readiness() is not None
        await asyncio.wait_for(a.hold(asyncio.Event()), 2)  # returns: lost

    asyncio.run(main())


def test_a_standby_is_ready_and_not_leading() -> None:
    fake, clock = FakeKube(), FakeClock()
    standby = elector(fake, "b", clock)
    assert not standby.leading()
    assert standby.readiness() is None


def test_a_replica_that_sees_another_holder_stops_leading_at_once() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        a, b = elector(fake, "a", clock), elector(fake, "b", clock)
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        clock.now += 16  # a paused: b takes over
        assert await b.try_acquire_or_renew()
        clock.now -= 7  # (a's clock view: within its renew deadline again)
        assert not await a.try_acquire_or_renew()
        assert not a.leading()

    asyncio.run(main())


def test_a_renewal_that_hangs_is_abandoned_at_the_deadline() -> None:
    class Hanging(FakeKube):
        hang = False

        async def get(self, api_version: str, kind: str, namespace: str, name: str):  # type: ignore[no-untyped-def]
            if self.hang:
                await asyncio.Event().wait()
            return await super().get(api_version, kind, namespace, name)

    async def main() -> None:
        fake = Hanging()
        a = LeaderElector(fake, "ns", "a", lease=0.5, renew_deadline=0.2, retry=0.01)
        assert await a.acquire(asyncio.Event())
        fake.hang = True
        await asyncio.wait_for(a.hold(asyncio.Event()), 5)
        assert not a.leading()

    asyncio.run(main())


def test_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderElector(FakeKube(), "ns", "a", lease=10, renew_deadline=10)


def test_acquire_gives_up_when_stopped() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), FakeClock()
        assert await elector(fake, "other", clock).try_acquire_or_renew()
        stop = asyncio.Event()
        waiting = asyncio.create_task(elector(fake, "a", clock, retry=0.01).acquire(stop))
        await asyncio.sleep(0.05)
        stop.set()
        assert await asyncio.wait_for(waiting, 1) is False

    asyncio.run(main())
