"""Shared helpers for the live-scheduler unit tests: a FakeKube holding tests.kits.worlds
objects, and a way to run informers until a condition holds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from kubeapi.backoff import Backoff
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.live.informers import Informers
from tests.kits import worlds as st
from tests.kits.fake_kube import FakeKube


def api_with(objects: Iterable[Any]) -> FakeKube:
    fake = FakeKube()
    for obj in st.stamp(st.flatten(objects)):
        fake.add(obj)
    return fake


def informers_for(fake: FakeKube) -> Informers:
    return Informers(fake, ClusterCache(strict=False), backoff=Backoff(base=0.001, cap=0.01))


async def until(check: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.005)


def with_informers(fake: FakeKube, scenario: Callable[[Informers], Awaitable[None]]) -> Informers:
    informers = informers_for(fake)

    async def main() -> None:
        task = asyncio.create_task(informers.run())
        try:
            await asyncio.wait_for(informers.wait_synced(), 2)
            await scenario(informers)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(main())
    return informers


@contextlib.contextmanager
def scheduler_log(records: list[logging.LogRecord]) -> Iterator[None]:
    """Collect the live scheduler's INFO (and higher) log records in ``records``."""

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(logging.makeLogRecord(dict(record.__dict__)))  # as emitted

    handler, logger = Capture(), logging.getLogger("podmuster.scheduler")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
