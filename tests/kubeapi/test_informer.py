"""The one list-then-watch loop: list with its pages, events without bookmarks, resume
after a stream ends, relist on 410 Gone, back off (and start over) on other errors."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable

from kubeapi.backoff import Backoff
from kubeapi.errors import TransientError
from kubeapi.informer import list_and_watch
from kubeapi.objects import Object
from kubeapi.protocol import Listing
from tests.kits.fake_kube import FakeKube


def config_map(name: str) -> Object:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


class Recorder:
    def __init__(self) -> None:
        self.pages: list[list[str]] = []
        self.lists: list[list[str]] = []
        self.events: list[tuple[str, str]] = []

    def page(self, items: list[Object]) -> None:
        self.pages.append([obj["metadata"]["name"] for obj in items])

    def listed(self, listing: Listing) -> None:
        self.lists.append([obj["metadata"]["name"] for obj in listing.items])

    def event(self, event_type: str, obj: Object) -> None:
        self.events.append((event_type, obj["metadata"]["name"]))


async def until(check: Callable[[], bool]) -> None:
    for _ in range(2000):
        if check():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


def run(fake: FakeKube, recorder: Recorder, scenario: Callable[[], object], **kw: object) -> None:
    async def main() -> None:
        task = asyncio.create_task(list_and_watch(fake, "v1", "ConfigMap", recorder, **kw))  # type: ignore[arg-type]
        try:
            await scenario()  # type: ignore[misc]
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(main())


def test_list_then_events_resume_and_relist_on_gone() -> None:
    fake, recorder = FakeKube(), Recorder()
    fake.add(config_map("a"))

    async def scenario() -> None:
        await until(lambda: recorder.lists == [["a"]])
        assert recorder.pages == [["a"]]
        fake.add(config_map("b"))
        await until(lambda: recorder.events == [("ADDED", "b")])
        fake.end_watches()  # the server ends the stream: resume, no relist
        fake.add(config_map("c"))
        await until(lambda: ("ADDED", "c") in recorder.events)
        assert len(recorder.lists) == 1
        fake.remove("v1", "ConfigMap", "ns", "a")  # its DELETED event is lost with the history
        fake.compact()
        fake.end_watches()  # resuming from the version seen gets 410 Gone: list again
        await until(lambda: len(recorder.lists) == 2)
        assert recorder.lists[1] == ["b", "c"]
        assert ("DELETED", "a") not in recorder.events

    run(fake, recorder, scenario)


def test_errors_back_off_and_a_good_stream_starts_the_schedule_over() -> None:
    fake, recorder = FakeKube(), Recorder()
    backoff = Backoff(base=0.001, cap=0.004, rng=random.Random(0))
    for _ in range(3):
        fake.fail("list", TransientError("ConfigMap", "down", 503), kind="ConfigMap")

    async def scenario() -> None:
        await until(lambda: recorder.lists == [[]])
        assert backoff.attempts == 3
        fake.end_watches()
        fake.add(config_map("a"))
        await until(lambda: recorder.events == [("ADDED", "a")])
        assert backoff.attempts == 0

    run(fake, recorder, scenario, backoff=backoff)
