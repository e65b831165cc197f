"""Leader election on a real API server: skewed clocks, and a replica paused past its lease.

Two scheduler replicas whose wall clocks are five minutes apart (the clock their
``renewTime`` writes come from) share one Lease: exactly one leads over time, and the
standby takes over only once the leader gives the lease up. A replica paused (SIGSTOP)
past its lease while another takes over writes nothing after it resumes, and exits 1.
Both replicas schedule only the pods of a scheduler name of this test, set in the
``--config`` file (no ``--scheduler-name``), so the file's name is what the live path uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeapi.credentials import load as load_credentials
from kubeapi.http import KubeHttp
from liveprocess.leader import LEASE_API, LeaderElector
from scheduler.config import SchedulerConfig
from scheduler.live import loop

from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import REPO
from .objects import KWOK_TOLERATION
from .procs import ManagedProcess

pytestmark = pytest.mark.e2e

SKEW = 300.0
"""Seconds each replica's wall clock is off: the first leader behind, the standby ahead
(so that, compared with its own clock, the leader's renewTime looks five minutes old)."""


@pytest.fixture
def queue_name(cluster: Cluster) -> Iterator[str]:
    name = f"q-{uuid.uuid4().hex[:6]}"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    cluster.kubectl.create({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
                            "metadata": {"name": name}, "spec": {"resources": resources}})  # fmt: skip
    yield name
    cluster.kubectl.run("delete", "queue.scheduling.run.ai", name, "--ignore-not-found")


def create_gang(cluster: Cluster, namespace: str, *, name: str, queue: str, scheduler: str,
                node: str, pods: int = 1) -> None:  # fmt: skip
    cluster.kubectl.create({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                            "metadata": {"name": name, "namespace": namespace},
                            "spec": {"queue": queue, "minMember": pods}})  # fmt: skip
    for index in range(pods):
        spec: dict[str, Any] = {
            "schedulerName": scheduler,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [KWOK_TOLERATION],
            "containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        }  # fmt: skip
        meta = {"name": f"{name}-{index}", "namespace": namespace,
                "annotations": {"pod-group-name": name}, "labels": {"kai.scheduler/queue": queue}}  # fmt: skip
        cluster.kubectl.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def bind_requests(cluster: Cluster, namespace: str) -> set[str]:
    items = cluster.kubectl.items("bindrequests.scheduling.run.ai", "-n", namespace)
    return {item["metadata"]["name"] for item in items}


def holder(cluster: Cluster, namespace: str, name: str) -> str:
    if not cluster.kubectl.exists("lease", name, "-n", namespace):
        return ""
    lease: Obj = cluster.kubectl.get("lease", name, "-n", namespace)
    return str(lease["spec"].get("holderIdentity") or "")


def test_replicas_with_clocks_minutes_apart_have_one_leader(
    cluster: Cluster, namespace: str, kwok_node: str, queue_name: str
) -> None:
    scheduler = f"leader-e2e-{uuid.uuid4().hex[:6]}"
    config = SchedulerConfig(scheduler_name=scheduler)
    options = loop.Options(config, schedule_period=0.2)
    creds = load_credentials(str(cluster.kubeconfig), "")
    lease = "podmuster-scheduler"
    samples: list[tuple[bool, bool, str]] = []
    gang = functools.partial(create_gang, cluster, namespace, queue=queue_name,
                             scheduler=scheduler, node=kwok_node)  # fmt: skip

    async def main() -> tuple[int, int]:
        apis = [KubeHttp(creds, component=f"podmuster-scheduler-{n}") for n in "ab"]
        a, b = (
            LeaderElector(api, namespace, who, name=lease, lease=4, renew_deadline=3, retry=0.5,
                          wall=lambda skew=skew: time.time() + skew)  # type: ignore[misc]
            for api, who, skew in zip(apis, ("a", "b"), (-SKEW, SKEW), strict=True)
        )  # fmt: skip
        stops = [asyncio.Event(), asyncio.Event()]
        first = asyncio.create_task(loop.run(apis[0], options, stops[0], elector=a))
        while not a.leading():
            await asyncio.sleep(0.05)
        second = asyncio.create_task(loop.run(apis[1], options, stops[1], elector=b))

        async def sample(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                record = await apis[1].get(LEASE_API, "Lease", namespace, lease)
                samples.append((a.leading(), b.leading(), record["spec"]["holderIdentity"]))
                await asyncio.sleep(0.1)

        try:
            await sample(12)  # twelve seconds, three lease durations: a keeps it
            await asyncio.to_thread(gang, name="g1")
            await sample(3)
            stops[0].set()  # a stops and releases the lease: b takes over at once
            code_a = await asyncio.wait_for(first, 30)
            await sample(3)
            await asyncio.to_thread(gang, name="g2")
            await sample(3)
        finally:
            for stop in stops:
                stop.set()
            code_b = await asyncio.wait_for(second, 30)
            for api in apis:
                await api.close()
        return code_a, code_b

    assert asyncio.run(main()) == (0, 0)
    assert all(not (a_leads and b_leads) for a_leads, b_leads, _ in samples), "two leaders"
    holders = [h for _, _, h in samples]
    assert holders[: 15 * 9] == ["a"] * 15 * 9  # nine samples a second at least, all a's
    transitions = [h for i, h in enumerate(holders) if i == 0 or holders[i - 1] != h]
    assert transitions in (["a", "b"], ["a", "", "b"])
    assert any(b_leads for _, b_leads, _ in samples)
    assert bind_requests(cluster, namespace) == {"g1-0", "g2-0"}


@contextlib.contextmanager
def replica(cluster: Cluster, name: str, flags: list[str]) -> Iterator[ManagedProcess]:
    """``podmuster run scheduler`` as a process with a log of its own (``name``)."""
    argv = [sys.executable, "-m", "podmuster.cli", "run", "scheduler",
            f"--kubeconfig={cluster.kubeconfig}", *flags]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = ManagedProcess(name, argv, cluster.workdir, env=env).start()
    cluster.processes[proc.name] = proc
    try:
        yield proc
    finally:
        if proc.alive():
            os.killpg(proc.pid, signal.SIGCONT)
        proc.stop()
        cluster.processes.pop(proc.name, None)


def test_a_replica_paused_past_its_lease_writes_nothing_after_it_resumes(
    cluster: Cluster, namespace: str, kwok_node: str, queue_name: str, tmp_path: Path
) -> None:
    scheduler = f"leader-e2e-{uuid.uuid4().hex[:6]}"
    config = tmp_path / "config.yaml"
    config.write_text(f"schedulerName: {scheduler}\n")
    flags = ["--leader-elect", f"--leader-elect-namespace={namespace}", f"--config={config}",
             "--schedule-period=0.5", "--log-format=json", "--metrics-port=-1"]  # fmt: skip
    lease = "podmuster-scheduler"

    def leads(proc: ManagedProcess) -> bool:
        return holder(cluster, namespace, lease) == f"{socket.gethostname()}_{proc.pid}"

    def bound(pod: str) -> bool:
        return pod in bind_requests(cluster, namespace)

    gang = functools.partial(create_gang, cluster, namespace, queue=queue_name,
                             scheduler=scheduler, node=kwok_node)  # fmt: skip
    with replica(cluster, f"leader-a-{namespace}", flags) as first:
        wait_for("replica a leads", lambda: leads(first), 60)
        gang(name="before")
        wait_for("a binds before-0", lambda: bound("before-0"), 30)
        with replica(cluster, f"leader-b-{namespace}", flags) as second:
            time.sleep(3)
            second.check_alive()
            assert leads(first)  # b waits as a standby
            os.killpg(first.pid, signal.SIGSTOP)
            paused_at = len(first.log_path.read_text().splitlines())
            gang(name="during")
            wait_for("replica b takes over", lambda: leads(second), 60)
            wait_for("b binds during-0", lambda: bound("during-0"), 30)
            gang(name="after")
            os.killpg(first.pid, signal.SIGCONT)
            wait_for("a exits", lambda: first.returncode is not None, 30)
            assert first.returncode == 1  # it lost the lease
            wait_for("b binds after-0", lambda: bound("after-0"), 30)
            assert leads(second)
    lines = first.log_path.read_text().splitlines()[paused_at:]
    resumed = [json.loads(line) for line in lines if line.startswith("{")]
    messages = [entry["msg"] for entry in resumed]
    assert "bind request created" not in messages
    assert all(e.get("bind_requests", 0) == 0 for e in resumed if e["msg"] == "cycle")
    assert {"lost the lease", "cycle not committed: the lease may have been lost"} & set(messages)
