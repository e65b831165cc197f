"""The schedulers the anchor benchmark can measure, by name.

A scheduler under test is a process started against the benchmark's control
plane plus the ``schedulerName`` its pods carry. kube-scheduler (built by
tests/controlplane/build.sh) is the anchor; podmuster's live scheduler joins
this registry when it exists, and is then measured by the same harness in the
same run.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.controlplane import Cluster, http_ok
from tests.e2e.procs import ManagedProcess, free_port, wait_until


@dataclass(frozen=True)
class Limits:
    """The client-side rate limit the scheduler talks to the API server with."""

    qps: float
    burst: int


@dataclass(frozen=True)
class SchedulerUnderTest:
    name: str
    scheduler_name: str  # the pods' spec.schedulerName
    start: Callable[[Cluster, Limits], ManagedProcess]
    describe: str


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


SCHEDULERS: dict[str, SchedulerUnderTest] = {
    "kube-scheduler": SchedulerUnderTest(
        name="kube-scheduler",
        scheduler_name="default-scheduler",
        start=start_kube_scheduler,
        describe="upstream kube-scheduler, default plugins, one profile",
    ),
}
