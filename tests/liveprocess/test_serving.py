"""``/metrics``, ``/healthz`` and ``/readyz`` as a component serves them."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request

import pytest
from prometheus_client import Counter

from liveprocess import serving


def get(port: int | None, path: str) -> tuple[int, str, str]:
    assert port is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers["Content-Type"], exc.read().decode()


def run(coro_fn):  # type: ignore[no-untyped-def]
    return asyncio.run(coro_fn())


def test_metrics_and_health_on_one_port() -> None:
    registry = serving.new_registry()
    Counter("demo_things_total", "Things", registry=registry).inc(3)
    readiness = serving.Readiness()

    async def main() -> None:
        endpoints = serving.start(registry, 0, readiness=readiness, host="127.0.0.1")
        try:
            port = endpoints.port
            assert endpoints.health_port == port
            status, ctype, body = await asyncio.to_thread(get, port, "/metrics")
            assert (status, ctype.split(";")[0]) == (200, "text/plain")
            assert "# TYPE demo_things_total counter" in body
            assert "demo_things_total 3.0" in body
            assert "process_cpu_seconds_total" in body
            assert (await asyncio.to_thread(get, port, "/healthz"))[::2] == (200, "ok\n")
            assert (await asyncio.to_thread(get, port, "/readyz"))[::2] == (200, "ok\n")
            token = readiness.waiting("informers", "not synced")
            readiness.add("leader election", lambda: None)
            assert (await asyncio.to_thread(get, port, "/readyz"))[::2] == (
                503,
                "informers: not synced\n",
            )
            readiness.remove(token)
            assert (await asyncio.to_thread(get, port, "/readyz"))[0] == 200
            assert (await asyncio.to_thread(get, port, "/nope"))[0] == 404
        finally:
            await endpoints.stop()

    run(main)


def test_a_separate_health_port_serves_no_metrics() -> None:
    async def main() -> None:
        endpoints = serving.start(serving.new_registry(), 0, 0, host="127.0.0.1")
        try:
            assert endpoints.health_port not in (None, endpoints.port)
            assert (await asyncio.to_thread(get, endpoints.health_port, "/healthz"))[0] == 200
            assert (await asyncio.to_thread(get, endpoints.health_port, "/metrics"))[0] == 404
            assert (await asyncio.to_thread(get, endpoints.port, "/metrics"))[0] == 200
        finally:
            await endpoints.stop()

    run(main)


def test_off_and_busy_ports_are_logged_and_the_component_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = taken.getsockname()[1]
            endpoints = serving.start(serving.new_registry(), busy, host="127.0.0.1")
            off = serving.start(serving.new_registry(), -1)
        assert (endpoints.port, off.port, off.health_port) == (None, None, None)
        await endpoints.stop()
        await off.stop()

    run(main)
    assert "metrics endpoint on port" in caplog.text


def test_only_get_and_head() -> None:
    async def main() -> None:
        endpoints = serving.start(serving.new_registry(), 0, host="127.0.0.1")
        try:
            request = urllib.request.Request(
                f"http://127.0.0.1:{endpoints.port}/healthz", data=b"x", method="POST"
            )
            with pytest.raises(urllib.error.HTTPError) as failed:
                await asyncio.to_thread(urllib.request.urlopen, request, timeout=10)
            assert failed.value.code == 405
            failed.value.close()
        finally:
            await endpoints.stop()

    run(main)
