"""The node-scale-adjuster's live edge on an in-memory API server: a scaling pod is
created with PodScheduled=False, deleted when its original goes, no new one during the
cool-down, and creation resumes after it; a failed create is retried."""

from __future__ import annotations

import asyncio
import contextlib

from scale_objects import user_pod

from kubeapi.errors import TransientError
from scheduler.scale_adjuster.deciding import Settings
from scheduler.scale_adjuster.reconciler import ScaleAdjuster
from tests.kits.fake_kube import FakeKube

NS = "kai-scale-adjust"


def scaling_pods(fake: FakeKube) -> dict[str, dict]:  # type: ignore[type-arg]
    return {
        p["metadata"]["name"]: p for p in fake.of_kind("Pod") if p["metadata"]["namespace"] == NS
    }


async def until(check, timeout: float = 3.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def run(fake: FakeKube, scenario, cool_down: float = 0.5) -> None:  # type: ignore[no-untyped-def]
    adjuster = ScaleAdjuster(fake, Settings(cool_down=cool_down), debounce=0.01)

    async def main() -> None:
        task = asyncio.create_task(adjuster.run())
        try:
            await scenario(adjuster)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    asyncio.run(main())


def test_create_delete_cool_down() -> None:
    fake = FakeKube()
    fake.add({"apiVersion": "v1", "kind": "Pod", **user_pod("a")})

    async def scenario(adjuster: ScaleAdjuster) -> None:
        await until(lambda: "team-a" in scaling_pods(fake))
        pod = scaling_pods(fake)["team-a"]
        (condition,) = pod["status"]["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        )
        fake.remove("v1", "Pod", "team", "a")
        await until(lambda: not scaling_pods(fake))
        # a new pending pod during the cool-down waits for it to end
        fake.add({"apiVersion": "v1", "kind": "Pod", **user_pod("b")})
        await asyncio.sleep(0.2)
        assert not scaling_pods(fake)
        await until(lambda: "team-b" in scaling_pods(fake))

    run(fake, scenario)


def test_failed_create_is_retried() -> None:
    fake = FakeKube()
    fake.add({"apiVersion": "v1", "kind": "Pod", **user_pod("a")})
    fake.fail("create", TransientError("pods", "server busy", 503), kind="Pod")

    async def scenario(adjuster: ScaleAdjuster) -> None:
        await until(lambda: "team-a" in scaling_pods(fake), timeout=4.0)

    run(fake, scenario)
