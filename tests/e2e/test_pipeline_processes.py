"""The pipeline as separate processes, and a scheduler that crashes mid-run.

The podgrouper, the binder and the status controllers run as one process each for
the module; each test starts its own scheduler, so one can be killed (SIGKILL: no
clean-up, no last commit) while it is creating BindRequests, and started again. In
the end every pod is bound exactly once, to the node its one BindRequest names, and
no node holds more than it can.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .live import PIPELINE_FLAGS, component, kill, pipeline
from .objects import (
    batch_job,
    bind_requests,
    ensure_priority_classes,
    group_of,
    kai_bare_pod,
    kai_template,
    live_pods,
    pod_group,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SCHEDULER_FLAGS = PIPELINE_FLAGS["scheduler"]


@pytest.fixture(scope="module")
def services(cluster: Cluster) -> Iterator[dict[str, ManagedProcess]]:
    """podgrouper, binder and controllers, one process each (no scheduler)."""
    ensure_priority_classes(cluster)
    with pipeline(cluster, separate=True, skip=("scheduler",)) as procs:
        yield procs
        for proc in procs.values():
            proc.check_alive()


def test_batch_job_with_one_process_per_component(
    cluster: Cluster,
    services: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    node = kwok_nodes.add(cpu="8")
    queue = kai_queues.add("batch")
    template = kai_template(kwok_nodes.pool, cpu="500m")
    with component(cluster, "scheduler", SCHEDULER_FLAGS):
        cluster.kubectl.create(batch_job("work", namespace, queue, template, parallelism=2))
        found = wait_running(cluster, namespace, "job-name=work", 2)
    assert {p["spec"]["nodeName"] for p in found} == {node}

    def queue_allocated() -> str:
        status = cluster.kubectl.get("queues.scheduling.run.ai", queue).get("status") or {}
        return str((status.get("allocated") or {}).get("cpu", ""))

    wait_for(f"Queue {queue} allocated 1 CPU", lambda: queue_allocated() == "1000")
    for member in found:
        group = pod_group(cluster, namespace, group_of(member))
        assert group["spec"]["queue"] == queue


def log_size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def wait_log(path: Path, text: str, timeout: float, offset: int = 0) -> None:
    """Poll a log file every 10 ms until ``text`` appears in it after byte ``offset``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with path.open("rb") as log:
            log.seek(offset)
            if text.encode() in log.read():
                return
        time.sleep(0.01)
    raise TimeoutError(f"{text!r} not in {path} after {timeout:.0f}s")


def cpu_millis(pod: Obj) -> int:
    total = 0
    for container in pod["spec"]["containers"]:
        cpu = str(container["resources"]["requests"]["cpu"])
        total += int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
    return total


def test_scheduler_killed_mid_run_binds_every_pod_exactly_once(
    cluster: Cluster,
    services: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    """Three 3-CPU nodes take 36 pods of 250m; 40 are submitted, half before the crash."""
    nodes = [kwok_nodes.add(cpu="3") for _ in range(3)]
    queue = kai_queues.add("crash")
    template = kai_template(kwok_nodes.pool, cpu="250m")
    pods = [kai_bare_pod(f"p-{i:02d}", namespace, queue, template) for i in range(40)]

    def submit(batch: list[Obj]) -> None:
        cluster.kubectl.create({"apiVersion": "v1", "kind": "List", "items": batch})

    start = log_size(cluster.workdir / "podmuster-scheduler.log")
    submit(pods[:20])
    wait_for(
        "the first 20 pods in PodGroups",
        lambda: sum(bool(group_of(p)) for p in live_pods(cluster, namespace)) == 20,
    )
    with component(cluster, "scheduler", SCHEDULER_FLAGS) as first:
        # The log file is shared with earlier schedulers: read only what this one writes.
        wait_log(first.log_path, "bind request created", timeout=60, offset=start)
        kill(first)  # while its first commit is still writing BindRequests
    before = len(bind_requests(cluster, namespace))
    print(f"the killed scheduler left {before} of 20 BindRequests")
    assert before > 0
    submit(pods[20:])
    with component(cluster, "scheduler", SCHEDULER_FLAGS) as second:

        def settled() -> list[Obj] | NotYet:
            current = live_pods(cluster, namespace)
            running = [p for p in current if p["status"].get("phase") == "Running"]
            waiting = [p for p in current if _unschedulable(p)]
            if len(running) == 36 and len(waiting) == 4:
                return current
            return NotYet(f"{len(running)} Running, {len(waiting)} explained as unschedulable")

        current = wait_for("36 pods Running and 4 unschedulable", settled, timeout=120)
        second.check_alive()

    requests = bind_requests(cluster, namespace)
    bound = [p for p in current if p["spec"].get("nodeName")]
    assert len(bound) == 36
    assert set(requests) == {p["metadata"]["name"] for p in bound}, "one BindRequest per bound pod"
    used: dict[str, int] = dict.fromkeys(nodes, 0)
    for member in bound:
        request = requests[member["metadata"]["name"]]
        assert request["spec"]["selectedNode"] == member["spec"]["nodeName"]
        assert request["status"]["phase"] == "Succeeded", request["status"]
        assert not request["status"].get("failedAttempts"), request["status"]
        used[member["spec"]["nodeName"]] += cpu_millis(member)
    assert used == dict.fromkeys(nodes, 3000), used  # full, and not one millicore over


def _unschedulable(pod: Obj) -> bool:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return not pod["spec"].get("nodeName")
    return False
