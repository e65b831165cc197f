"""The client rate limit: a token bucket full at start, refilled at QPS, capped at burst,
reserving in arrival order (with a fake clock); the flags; KubeHttp waits per request."""

from __future__ import annotations

import argparse
import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kubeapi import credentials, ratelimit
from kubeapi.http import KubeHttp
from kubeapi.ratelimit import RateLimit, RateLimiter, TokenBucket
from tests.kits.fake_kube import FakeClock


def test_burst_goes_at_once_then_one_token_per_interval() -> None:
    clock = FakeClock(100.0)
    bucket = TokenBucket(RateLimit(qps=10, burst=3), clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    # Reservations queue up behind each other: 0.1 s, 0.2 s, 0.3 s.
    assert [round(bucket.reserve(), 9) for _ in range(3)] == [0.1, 0.2, 0.3]
    clock.now += 0.3  # the three owed tokens are paid back; nothing saved up
    assert bucket.tokens == pytest.approx(0.0)
    assert bucket.reserve() == pytest.approx(0.1)


def test_idle_time_refills_up_to_burst_only() -> None:
    clock = FakeClock(100.0)
    bucket = TokenBucket(RateLimit(qps=2, burst=4), clock)
    for _ in range(4):
        bucket.reserve()
    clock.now += 1.0
    assert bucket.tokens == pytest.approx(2.0)
    clock.now += 3600.0
    assert bucket.tokens == pytest.approx(4.0)


def test_long_run_rate_is_qps() -> None:
    clock = FakeClock(100.0)
    bucket = TokenBucket(RateLimit(qps=50, burst=100), clock)
    started = clock.now
    for _ in range(1100):  # each caller sleeps its delay, as RateLimiter does
        clock.now += bucket.reserve()
    # 100 from the burst, the other 1,000 at 50 a second.
    assert clock.now - started == pytest.approx(20.0, abs=0.03)


def test_limiter_sleeps_the_reserved_delay() -> None:
    clock = FakeClock(100.0)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limiter = RateLimiter(RateLimit(qps=4, burst=1), clock, sleep)

    async def three() -> None:
        for _ in range(3):
            await limiter.wait()

    asyncio.run(three())
    assert slept == pytest.approx([0.25, 0.5])
    assert limiter.waited == pytest.approx(0.75)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ratelimit.RateLimitError, match="qps"):
        RateLimit(0, 10)
    with pytest.raises(ratelimit.RateLimitError, match="burst"):
        RateLimit(5, 0)


def test_flags_default_to_kai_and_zero_means_unlimited() -> None:
    parser = argparse.ArgumentParser()
    ratelimit.add_arguments(parser)
    assert ratelimit.from_arguments(parser.parse_args([])) == RateLimit(50, 300)
    args = parser.parse_args(["--kube-api-qps", "1000", "--kube-api-burst", "2000"])
    assert ratelimit.from_arguments(args) == RateLimit(1000, 2000)
    assert ratelimit.from_arguments(parser.parse_args(["--kube-api-qps", "0"])) is None
    assert ratelimit.from_arguments(argparse.Namespace()) is None


def test_kube_http_takes_a_token_per_request() -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.json_response({"metadata": {"name": "p"}})

    async def main() -> list[float]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        server = TestServer(app)
        await server.start_server()
        creds = credentials.Credentials(server=str(server.make_url("")).rstrip("/"))
        client = KubeHttp(creds, rate_limit=RateLimit(qps=1000, burst=2))
        assert client.limiter is not None
        # A frozen clock: no token comes back however slow the machine is, so the
        # third and fourth requests must each wait (recorded, not slept).
        slept: list[float] = []

        async def record(delay: float) -> None:
            slept.append(delay)

        client.limiter = ratelimit.RateLimiter(
            RateLimit(qps=1000, burst=2), clock=lambda: 100.0, sleep=record
        )
        try:
            for _ in range(4):
                await client.get("v1", "Pod", "ns", "p")
            return slept
        finally:
            await client.close()
            await server.close()

    assert asyncio.run(main()) == pytest.approx([0.001, 0.002])
    unlimited = KubeHttp(credentials.Credentials(server="https://127.0.0.1:1"))
    assert unlimited.limiter is None
