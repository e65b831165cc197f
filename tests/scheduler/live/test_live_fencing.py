"""Fenced writes: the loop and the leader-elected components write nothing once the lease
may be lost; the cycle runs off the event loop, so the lease is renewed during it;
``/readyz`` follows informer sync and leadership; the config file's schedulerName holds."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest
from live_objects import api_with, until

from kubeapi.objects import ObjectRef
from liveprocess.fencing import FencedWrites, NotLeaderError
from liveprocess.leader import LEASE_API, LeaderElector
from liveprocess.serving import Readiness, app
from podmuster.cli import build_parser
from scheduler.config import ConfigError, SchedulerConfig
from scheduler.cycle import CycleResult
from scheduler.live import loop
from scheduler.live.main import config_from
from tests.kits import worlds as st
from tests.kits.fake_kube import FakeClock, FakeKube


def readyz(checks: Readiness) -> tuple[int, bytes]:
    """``GET /readyz`` of the endpoint's WSGI app."""
    seen: dict[str, str] = {}
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/readyz"}
    body = b"".join(app(None, checks)(environ, lambda status, _: seen.update(status=status)))
    return int(seen["status"].split()[0]), body


def pending_cluster() -> FakeKube:
    return api_with([st.node("n1"), st.queue("q"), st.job("a", "q", tasks=2)])


def test_fenced_writes_refuse_once_not_leading_and_pass_reads() -> None:
    async def main() -> None:
        fake = pending_cluster()
        leading = [True]
        api = FencedWrites(fake, lambda: leading[0])
        pod = fake.of_kind("Pod")[0]
        meta = pod["metadata"]
        await api.create_event(pod, "Normal", "Test", "while leading")
        leading[0] = False
        writes: list[Any] = [
            api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
            api.replace(pod),
            api.merge_patch("v1", "Pod", meta["namespace"], meta["name"], {}),
            api.patch("v1", "Pod", meta["namespace"], meta["name"], {}, subresource="status"),
            api.delete("v1", "Pod", meta["namespace"], meta["name"]),
            api.bind(meta["namespace"], meta["name"], "n1"),
            api.create_event(pod, "Normal", "Test", "after"),
        ]
        for write in writes:
            with pytest.raises(NotLeaderError, match="lease may have been lost"):
                await write
        assert await api.get("v1", "Pod", meta["namespace"], meta["name"])
        assert len((await api.list_all("v1", "Pod")).items) == 2
        assert len(fake.events) == 1

    asyncio.run(main())


def test_the_cycle_runs_off_the_event_loop_so_the_lease_is_renewed_during_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cycle waits (in its thread) until the loop renewed the lease: on the loop it
    would wait forever (nothing else could run), so the test would fail."""
    fake = pending_cluster()
    renewed = threading.Event()
    real_cycle = loop.run_cycle

    def slow_cycle(*args: Any, **kwargs: Any) -> CycleResult:
        assert renewed.wait(timeout=10), "the lease was not renewed while the cycle ran"
        return real_cycle(*args, **kwargs)

    monkeypatch.setattr(loop, "run_cycle", slow_cycle)
    lease_ref = ObjectRef(LEASE_API, "Lease", "default", "podmuster-scheduler")

    async def main() -> int:
        elector = LeaderElector(fake, "default", "me", lease=3, renew_deadline=2, retry=0.01)
        stop = asyncio.Event()
        running = asyncio.create_task(
            loop.run(fake, loop.Options(SchedulerConfig(), 0.01), stop, elector=elector)
        )
        await until(lambda: fake.calls.count(("replace", lease_ref)) >= 3, timeout=10)
        renewed.set()
        await until(lambda: len(fake.of_kind("BindRequest")) == 2, timeout=10)
        stop.set()
        return await asyncio.wait_for(running, 5)

    assert asyncio.run(main()) == 0


def test_a_cycle_decided_past_the_renew_deadline_is_not_committed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The replica "pauses" during its cycle (its monotonic clock jumps past the renew
    deadline): it writes no BindRequest and ends with 1, as a lost lease does."""
    fake, clock = pending_cluster(), FakeClock(1_000.0)
    real_cycle = loop.run_cycle

    def paused_cycle(*args: Any, **kwargs: Any) -> CycleResult:
        result = real_cycle(*args, **kwargs)
        assert len(result.binds) == 2
        clock.now += 11
        return result

    monkeypatch.setattr(loop, "run_cycle", paused_cycle)

    async def main() -> int:
        elector = LeaderElector(fake, "default", "me", clock=clock)
        options = loop.Options(SchedulerConfig(), 0.01)
        return await asyncio.wait_for(loop.run(fake, options, asyncio.Event(), elector=elector), 5)

    assert asyncio.run(main()) == 1
    assert fake.of_kind("BindRequest") == []


def test_readiness_follows_informer_sync_and_the_lease() -> None:
    fake = pending_cluster()
    checks = Readiness()
    seen: list[tuple[int, bytes]] = []
    clock = FakeClock(1_000.0)

    def ready() -> tuple[int, bytes]:
        return readyz(checks)

    async def main() -> int:
        other = LeaderElector(fake, "default", "other", clock=clock)
        assert await other.try_acquire_or_renew()
        elector = LeaderElector(fake, "default", "me", clock=clock, retry=0.01)
        stop = asyncio.Event()
        options = loop.Options(SchedulerConfig(), 0.01)
        running = asyncio.create_task(
            loop.run(fake, options, stop, elector=elector, readiness=checks)
        )
        await asyncio.sleep(0.05)
        seen.append(ready())  # a standby: ready, not leading
        assert not elector.leading()
        await other.release()
        await until(lambda: len(fake.of_kind("BindRequest")) == 2)
        seen.append(ready())  # leading, synced
        clock.now += 11  # no renewal within the deadline
        seen.append(ready())
        return await asyncio.wait_for(running, 5)

    assert asyncio.run(main()) == 1
    assert seen[0] == (200, b"ok\n")
    assert seen[1] == (200, b"ok\n")
    assert seen[2][0] == 503
    assert b"leader election: lease lost" in seen[2][1]
    assert ready() == (200, b"ok\n")  # the loop removed its checks when it ended


def test_readiness_waits_for_the_informers() -> None:
    checks = Readiness()

    class Unlisted(FakeKube):
        async def list_all(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

    async def main() -> None:
        stop = asyncio.Event()
        options = loop.Options(SchedulerConfig(), 0.01)
        running = asyncio.create_task(loop.run(Unlisted(), options, stop, readiness=checks))
        await asyncio.sleep(0.02)
        assert readyz(checks) == (503, b"informers: not synced\n")
        stop.set()
        assert await asyncio.wait_for(running, 5) == 0

    asyncio.run(main())


def config_args(tmp_path: Path, text: str, *flags: str) -> Any:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return build_parser().parse_args(["run", "scheduler", f"--config={path}", *flags])


def test_the_config_files_scheduler_name_holds_unless_the_flag_is_given(tmp_path: Path) -> None:
    assert config_from(config_args(tmp_path, "schedulerName: mine\n")).scheduler_name == "mine"
    given = config_args(tmp_path, "schedulerName: mine\n", "--scheduler-name=flag")
    assert config_from(given).scheduler_name == "flag"
    assert config_from(config_args(tmp_path, "{}\n")).scheduler_name == "kai-scheduler"


def test_a_config_file_that_is_not_yaml_is_one_line_naming_the_file(tmp_path: Path) -> None:
    args = config_args(tmp_path, "actions: allocate\n bad: [\n")
    with pytest.raises(ConfigError) as caught:
        config_from(args)
    assert str(caught.value) == (
        f"{args.config}: line 2 column 5: invalid YAML: mapping values are not allowed here"
    )


def test_run_all_takes_the_config_files_scheduler_name_for_every_component(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("schedulerName: mine\n")
    args = build_parser().parse_args(["run", "all", f"--config={path}"])
    assert args.scheduler_name == "kai-scheduler"  # the podgrouper's flag, at its default
    assert config_from(args).scheduler_name == "mine"


def test_a_components_watch_is_not_ready_until_listed() -> None:
    from scheduler.component.watching import Store, watch_kind

    checks = Readiness()
    fake = pending_cluster()

    def ignore(old: object, new: object) -> None:
        pass

    async def main() -> None:
        listed = asyncio.Event()
        gate = asyncio.Event()
        real_list = fake.list_all

        async def gated_list(*args: Any, **kwargs: Any) -> Any:
            await gate.wait()
            return await real_list(*args, **kwargs)

        fake.list_all = gated_list  # type: ignore[method-assign]
        watching = asyncio.create_task(
            watch_kind(fake, "v1", "Pod", Store(), ignore, synced=listed, readiness=checks)
        )
        await asyncio.sleep(0)
        assert checks.failing() == ["Pod informer: not listed"]
        gate.set()
        await asyncio.wait_for(listed.wait(), 5)
        assert checks.failing() == []
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching

    asyncio.run(main())


def test_a_leader_elected_component_writes_through_the_fence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``controllers.runtime.serve`` (binder, controllers, scale adjuster) hands its body
    a fenced client while it holds the lease, and ``/readyz`` then carries the lease."""
    import argparse

    import kubeapi.http
    from liveprocess.serving import READINESS
    from scheduler.component import runtime

    fake = FakeKube()
    monkeypatch.setattr(runtime, "load_credentials", lambda *args: object())
    monkeypatch.setattr(kubeapi.http, "KubeHttp", lambda *args, **kwargs: _Closing(fake))
    seen: list[Any] = []

    async def body(api: Any) -> None:
        seen.append((type(api), READINESS.failing()))
        await api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})

    args = argparse.Namespace(kubeconfig="", context="", kube_api_qps=None, kube_api_burst=None,
                              leader_elect=True, leader_elect_namespace="ns", metrics_port=-1)  # fmt: skip
    monkeypatch.setattr(runtime.ratelimit, "from_arguments", lambda args: None)
    assert asyncio.run(runtime.serve("binder", body, args)) == 1  # the body ended
    assert seen == [(FencedWrites, [])]
    assert fake.stored("v1", "ConfigMap", "", "x") is not None
    assert fake.stored(LEASE_API, "Lease", "ns", "podmuster-binder") is not None


class _Closing:
    """A FakeKube with the ``close()`` a real client has."""

    def __init__(self, fake: FakeKube) -> None:
        self.fake = fake

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fake, name)

    async def close(self) -> None:
        pass
