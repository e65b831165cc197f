"""Two queues that ask for more GPUs than the cluster holds, for the time-based fair-share
e2e tests (:mod:`.test_time_based_fairshare_live`, :mod:`.test_time_based_fairshare_builtin`).

Why: both tests give the running scheduler a usage record in which ``PREFIX-heavy`` held
every GPU and ``PREFIX-light`` none, then read the fair shares it publishes; the cluster
they do it on (one 8-GPU kwok node, the two queues, a 64-GPU pod waiting in each) and
the wait for the shares are the same, so they are here once.
"""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import Iterator

from .conftest import QueueFactory, create_kwok_node, require_kwok
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .objects import GPU, KWOK_TOLERATION, QUEUE_LABEL


@contextlib.contextmanager
def heavy_and_light_fair_shares(
    cluster: Cluster, namespace: str, kai_queues: QueueFactory, prefix: str, metrics_port: int
) -> Iterator[dict[str, float]]:
    """Queues ``PREFIX-heavy`` and ``PREFIX-light``, each with one 64-GPU pod waiting on an
    8-GPU node; yields the GPU fair shares of the scheduler serving /metrics on
    ``metrics_port`` once it publishes both (light's above 0). The node goes at the end."""
    require_kwok(cluster)
    heavy, light = f"{prefix}-heavy", f"{prefix}-light"
    node = create_kwok_node(
        cluster, f"{prefix}-gpu", {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: "8"}, {}
    )
    try:
        kai_queues.prefix = prefix
        kai_queues.add("heavy")
        kai_queues.add("light")
        for queue in (heavy, light):
            # one pod of 64 GPUs: more than the cluster holds, so each queue asks for more
            # than any share from its first pod on, whatever else the cluster runs
            for obj in waiting_gang(namespace, f"{queue}-job", queue, 1, 64):
                cluster.kubectl.create(obj)

        def shares() -> dict[str, float] | NotYet:
            try:
                seen = fair_shares(metrics_port)
            except OSError as exc:
                return NotYet(f"/metrics: {exc}")
            if heavy not in seen or light not in seen or seen[light] <= 0:
                return NotYet(f"fair shares so far: {seen}")
            return seen

        yield wait_for("fair shares of heavy and light", shares, timeout=120)
    finally:
        cluster.kubectl.run("delete", "node", node, "--ignore-not-found", "--wait=false")


def waiting_gang(namespace: str, name: str, queue: str, pods: int, gpus: int) -> list[Obj]:
    """A PodGroup and its pods of ``gpus`` GPUs, kept pending by a selector nothing matches."""
    group: Obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue, "minMember": pods},
    }
    members: list[Obj] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": namespace,
                "annotations": {"pod-group-name": name},
                "labels": {QUEUE_LABEL: queue},
            },
            "spec": {
                "schedulerName": "kai-scheduler",
                "nodeSelector": {"e2e.podmuster.io/nowhere": "true"},
                "tolerations": [KWOK_TOLERATION],
                "containers": [
                    {"name": "main", "image": "busybox", "resources": {"limits": {GPU: str(gpus)}}}
                ],
            },
        }
        for i in range(pods)
    ]
    return [group, *members]


def fair_shares(port: int) -> dict[str, float]:
    """``kai_queue_fair_share_gpu`` by queue, as the scheduler on ``port`` publishes it."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    pattern = re.compile(r'^kai_queue_fair_share_gpu\{queue_name="([^"]+)"\} (\S+)$', re.M)
    return {queue: float(value) for queue, value in pattern.findall(text)}
