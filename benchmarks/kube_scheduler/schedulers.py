"""The schedulers the anchor benchmark can measure, by name.

A scheduler under test is: the processes started against the benchmark's control
plane (with the client rate limit of the run), the ``schedulerName`` its pods carry,
what it needs created before the clock starts (CRDs, a Queue, the PodGroups the
podgrouper would have made), and how a benchmark pod is marked for it. kube-scheduler
(built by tests/controlplane/build.sh) is the anchor; podmuster is measured by the same
harness in the same invocation:

* ``podmuster``: the live scheduler with ``--direct-bind`` (plain pods are bound with
  one ``pods/binding`` call, as kube-scheduler binds) plus the binder, which would
  bind any pod that needs it (none here);
* ``podmuster-bindrequest``: KAI's path, every bind a BindRequest that the binder
  binds and marks Succeeded: three API calls per pod over two clients.

Both podmuster processes get the run's QPS and burst, each on its own client, as
kube-scheduler's one client does.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from crds.names import DEFAULT_SCHEDULER_NAME, POD_GROUP_ANNOTATION, QUEUE_LABEL
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.queue import API_VERSION as QUEUE_API_VERSION
from tests.e2e.controlplane import PODMUSTER_CRDS, Cluster, http_ok
from tests.e2e.frameworks import apply_crds
from tests.e2e.kube import RestClient
from tests.e2e.procs import ManagedProcess, free_port, wait_until

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parents[2]
QUEUE = "bench"
BINDER_WORKERS = 32


@dataclass(frozen=True)
class Limits:
    """The client-side rate limit the scheduler talks to the API server with."""

    qps: float
    burst: int


Prepare = Callable[[Cluster, RestClient, str, Sequence[tuple[str, int]]], None]
"""(cluster, client, namespace, [(pod group name, min member)]) -> None, before the clock."""


@dataclass(frozen=True)
class SchedulerUnderTest:
    name: str
    scheduler_name: str  # the pods' spec.schedulerName
    start: Callable[[Cluster, Limits], ManagedProcess]
    describe: str
    gangs: bool = False  # understands PodGroups (minMember): can run the gang workload
    prepare: Prepare | None = None
    mark: Callable[[Obj, str], None] | None = None  # (pod, its group) -> None
    # (its log's text) -> when its informers had synced (UNIX seconds), None if not logged
    synced_at: Callable[[str], float | None] | None = None
    # (its log's text) -> notes for the result (podmuster: its first cycle's seconds)
    log_notes: Callable[[str], list[str]] | None = None


def start_kube_scheduler(cluster: Cluster, limits: Limits) -> ManagedProcess:
    exe = cluster.binaries.require("kube-scheduler")
    config: Path = cluster.workdir / "kube-scheduler.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "clientConnection:\n"
        f"  kubeconfig: {cluster.kubeconfig}\n"
        f"  qps: {limits.qps}\n"
        f"  burst: {limits.burst}\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
    )
    port = free_port()
    proc = cluster.spawn(
        "kube-scheduler",
        [
            str(exe),
            f"--config={config}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--authentication-kubeconfig={cluster.kubeconfig}",
            f"--authorization-kubeconfig={cluster.kubeconfig}",
            "--v=1",
        ],
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    wait_until(
        "kube-scheduler /healthz",
        lambda: http_ok(f"https://127.0.0.1:{port}/healthz", insecure),
        60,
        [proc],
    )
    return proc


def _podmuster(cluster: Cluster, name: str, component: str, flags: Sequence[str]) -> ManagedProcess:
    profile = []
    if os.environ.get("PODMUSTER_BENCH_PROFILE"):  # cProfile output next to the logs
        profile = ["-m", "cProfile", "-o", str(cluster.workdir / f"{name}.prof")]
    argv = [sys.executable, *profile, "-m", "podmuster.cli", "run", component,
            f"--kubeconfig={cluster.kubeconfig}", "--metrics-port=-1", "--log-format=json",
            *flags]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = ManagedProcess(name, argv, cluster.workdir, env=env).start()
    cluster.processes[name] = proc
    return proc


def _limit_flags(limits: Limits) -> list[str]:
    return [f"--kube-api-qps={limits.qps:g}", f"--kube-api-burst={limits.burst}"]


def _started(proc: ManagedProcess, message: str) -> Callable[[], bool]:
    return lambda: f'"msg": "{message}"' in proc.tail(200)


def start_podmuster(cluster: Cluster, limits: Limits, *, direct: bool = True) -> ManagedProcess:
    """The binder and the scheduler (returned), started together; both ready on return."""
    workers = f"--workers={BINDER_WORKERS}"
    binder = _podmuster(cluster, "podmuster-binder", "binder", [*_limit_flags(limits), workers])
    flags = [*_limit_flags(limits), *(["--direct-bind"] if direct else [])]
    name = "podmuster" if direct else "podmuster-bindrequest"
    scheduler = _podmuster(cluster, name, "scheduler", flags)
    wait_until("podmuster binder started", _started(binder, "started"), 60, [binder, scheduler])
    wait_until(
        "podmuster scheduler informers synced",
        _started(scheduler, "informers synced"),
        120,
        [scheduler, binder],
    )
    return scheduler


def prepare_podmuster(
    cluster: Cluster, rest: RestClient, namespace: str, groups: Sequence[tuple[str, int]]
) -> None:
    """CRDs, one unlimited Queue, and the PodGroups the podgrouper would have created."""
    apply_crds(cluster.kubectl, sorted(PODMUSTER_CRDS.glob("*.yaml")))
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    rest.post(
        "/apis/scheduling.run.ai/v2/queues",
        {
            "apiVersion": QUEUE_API_VERSION,
            "kind": "Queue",
            "metadata": {"name": QUEUE},
            "spec": {"resources": {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}},
        },
    )

    def create(group: tuple[str, int]) -> None:
        rest.post(
            f"/apis/scheduling.run.ai/v2alpha2/namespaces/{namespace}/podgroups",
            {
                "apiVersion": PODGROUP_API_VERSION,
                "kind": "PodGroup",
                "metadata": {"name": group[0], "namespace": namespace},
                "spec": {"queue": QUEUE, "minMember": group[1]},
            },
        )

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, groups))


def podmuster_synced_at(log_text: str) -> float | None:
    """The ``ts`` of the scheduler's ``informers synced`` JSON log line, as UNIX seconds."""
    for line in log_text.splitlines():
        if '"msg": "informers synced"' in line:
            stamp = json.loads(line)["ts"]
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return None


def podmuster_first_cycle(log_text: str) -> list[str]:
    """The first ``cycle`` log line's seconds: deciding, and deciding plus committing."""
    for line in log_text.splitlines():
        if '"msg": "cycle"' in line:
            cycle = json.loads(line)
            return [f"first cycle {cycle['seconds']:.2f}s, deciding {cycle['decide_seconds']:.2f}s"]
    return []


def mark_podmuster(pod: Obj, group: str) -> None:
    pod["metadata"].setdefault("annotations", {})[POD_GROUP_ANNOTATION] = group
    pod["metadata"]["labels"][QUEUE_LABEL] = QUEUE


SCHEDULERS: dict[str, SchedulerUnderTest] = {
    "kube-scheduler": SchedulerUnderTest(
        name="kube-scheduler",
        scheduler_name="default-scheduler",
        start=start_kube_scheduler,
        describe="upstream kube-scheduler, default plugins, one profile",
    ),
    "podmuster": SchedulerUnderTest(
        name="podmuster",
        scheduler_name=DEFAULT_SCHEDULER_NAME,
        start=start_podmuster,
        describe="podmuster run scheduler --direct-bind + run binder, default five actions",
        gangs=True,
        prepare=prepare_podmuster,
        mark=mark_podmuster,
        synced_at=podmuster_synced_at,
        log_notes=podmuster_first_cycle,
    ),
    "podmuster-bindrequest": SchedulerUnderTest(
        name="podmuster-bindrequest",
        scheduler_name=DEFAULT_SCHEDULER_NAME,
        start=lambda cluster, limits: start_podmuster(cluster, limits, direct=False),
        describe="podmuster run scheduler (a BindRequest per pod, as KAI) + run binder",
        gangs=True,
        prepare=prepare_podmuster,
        mark=mark_podmuster,
        synced_at=podmuster_synced_at,
        log_notes=podmuster_first_cycle,
    ),
}
