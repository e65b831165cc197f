"""One benchmark run: N fake nodes, M single-pod jobs (or G gangs of S pods), time
from creation to bound.

The harness starts its own etcd + kube-apiserver (no controller manager, no
kwok: nothing but the scheduler under test writes to pods), creates plain
Node objects with allocatable resources and no taints, starts the scheduler,
then creates the pods from a thread pool while a watch records the moment
each pod is first seen with ``spec.nodeName`` set. Bound pods stay Pending
(no kubelet), which is all a scheduler's throughput needs.

A scheduler that reads PodGroups (podmuster) gets, before the clock starts, what
the podgrouper would have created: one PodGroup per job (minMember 1, or the gang
size), in one Queue; its pods carry the ``pod-group-name`` annotation. Every run
has a fresh control plane, so no run sees another's objects.
"""

from __future__ import annotations

import http.client
import os
import shutil
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import Binaries, LocalControlPlane
from tests.e2e.kube import ApiError, Obj, RestClient

from .schedulers import Limits, SchedulerUnderTest

NAMESPACE = "bench"


@dataclass(frozen=True)
class Workload:
    """``gangs`` groups of ``gang_size`` pods (1: single-pod jobs)."""

    gangs: int
    gang_size: int = 1

    @property
    def pods(self) -> int:
        return self.gangs * self.gang_size

    def describe(self) -> str:
        if self.gang_size == 1:
            return f"{self.gangs} single-pod jobs"
        return f"{self.gangs} gangs of {self.gang_size} pods (minMember {self.gang_size})"

    def members(self) -> list[tuple[str, str]]:
        """(pod name, its job / PodGroup name) in creation order."""
        if self.gang_size == 1:
            return [(f"job-{i:05d}", f"pg-job-{i:05d}") for i in range(self.gangs)]
        return [
            (f"gang-{g:03d}-{m:02d}", f"gang-{g:03d}")
            for g in range(self.gangs)
            for m in range(self.gang_size)
        ]


@dataclass
class Result:
    scheduler: str
    mode: str  # "stream": pods created while the scheduler runs; "backlog": before it starts
    nodes: int
    pods: int
    qps: float
    burst: int
    workload: str = ""
    describe: str = ""
    bound: int = 0
    create_seconds: float = 0.0
    create_rate: float = 0.0  # pods created per second
    span_seconds: float = 0.0  # first pod created (backlog: scheduler start) -> last bound
    pods_per_second: float = 0.0  # pods / span_seconds: the headline number
    steady_pods_per_second: float = 0.0  # between 10% and 90% bound
    first_bound_seconds: float = 0.0  # clock start -> first pod bound (backlog: start-up)
    # the scheduler's own log: clock start -> its informers synced, and synced -> first bind
    synced_seconds: float | None = None
    first_bound_after_sync: float | None = None
    latency_p50: float = 0.0  # per pod, created -> bound
    latency_p99: float = 0.0
    gangs: int = 0  # gang workload only: gangs fully bound
    gang_p50: float = 0.0  # per gang: first pod created -> last pod bound
    gang_p99: float = 0.0
    load_average: list[float] = field(default_factory=list)  # 1-minute, at start and end
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def node(i: int) -> Obj:
    name = f"bench-node-{i:04d}"
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"z{i % 4}"},
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod(name: str, job: str, sut: SchedulerUnderTest) -> Obj:
    body = _pod(name, job, sut.scheduler_name)
    if sut.mark is not None:
        sut.mark(body, job)
    return body


def _pod(name: str, job: str, scheduler_name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"job": job}},
        "spec": {
            "schedulerName": scheduler_name,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/bench:none",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


class BoundWatcher:
    """Records, from a pod watch, when each pod was first seen bound.

    kube-apiserver drops a watcher that falls behind (its buffer fills while
    this process is busy creating pods); like an informer, the watcher then
    resumes from the last resourceVersion it saw, or relists if that is gone.
    """

    def __init__(self, rest: RestClient, resource_version: str) -> None:
        self.bound_at: dict[str, float] = {}
        self.rewatches = 0
        self.error: BaseException | None = None
        self._rest = rest
        self._rv = resource_version
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _see(self, obj: Obj, now: float) -> None:
        name = obj.get("metadata", {}).get("name")
        if name and obj.get("spec", {}).get("nodeName") and name not in self.bound_at:
            self.bound_at[name] = now

    def _run(self) -> None:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        try:
            while not self._done.is_set():
                try:
                    for event in self._rest.watch(path, self._rv, timeout_s=3600):
                        if event.get("type") == "ERROR":
                            raise ApiError("WATCH", path, 410, str(event.get("object")))
                        obj = event.get("object", {})
                        self._see(obj, time.monotonic())
                        self._rv = obj.get("metadata", {}).get("resourceVersion", self._rv)
                        if self._done.is_set():
                            return
                except ApiError as err:
                    if err.status != 410:
                        raise
                    listed = self._rest.get(path)  # too old: relist
                    now = time.monotonic()
                    for obj in listed.get("items", []):
                        self._see(obj, now)
                    self._rv = listed["metadata"]["resourceVersion"]
                except (http.client.HTTPException, OSError):
                    pass
                self.rewatches += 1
        except BaseException as err:  # surfaced by the caller
            self.error = err

    def stop(self) -> None:
        self._done.set()


def run(
    sut: SchedulerUnderTest,
    binaries: Binaries,
    *,
    nodes: int,
    workload: Workload,
    limits: Limits,
    workers: int,
    timeout: float,
    backlog: bool = False,
    log: Any = print,
) -> Result:
    pods = workload.pods
    mode = "backlog" if backlog else "stream"
    result = Result(sut.name, mode, nodes, pods, limits.qps, limits.burst)
    result.workload, result.describe = workload.describe(), sut.describe
    result.load_average.append(os.getloadavg()[0])
    plane = LocalControlPlane(
        binaries,
        controller_manager=False,
        kwok=False,
        disable_admission=["ServiceAccount", "TaintNodesByCondition"],
        apiserver_args=["--max-requests-inflight=1000", "--max-mutating-requests-inflight=500"],
    )
    cluster = plane.start()
    log(f"control plane up at {plane.server}; logs in {plane.workdir}")
    try:
        rest = plane.rest()
        rest.post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        t = time.monotonic()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda i: rest.post("/api/v1/nodes", node(i)), range(nodes)))
        log(f"{nodes} nodes created in {time.monotonic() - t:.1f}s")
        members = workload.members()
        if sut.prepare is not None:
            t = time.monotonic()
            groups = sorted({job for _, job in members})
            sut.prepare(cluster, rest, NAMESPACE, [(g, workload.gang_size) for g in groups])
            log(f"{len(groups)} PodGroups (and CRDs, a Queue) in {time.monotonic() - t:.1f}s")

        created_at: dict[str, float] = {}

        def create_all() -> float:
            def create(member: tuple[str, str]) -> None:
                body = pod(member[0], member[1], sut)
                created_at[member[0]] = time.monotonic()
                rest.post(f"/api/v1/namespaces/{NAMESPACE}/pods", body)

            t = time.monotonic()
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(create, members))
            result.create_seconds = time.monotonic() - t
            result.create_rate = pods / result.create_seconds
            log(f"{pods} pods created in {result.create_seconds:.1f}s ({result.create_rate:.0f}/s)")
            return t

        if backlog:
            create_all()
        rv = rest.get(f"/api/v1/namespaces/{NAMESPACE}/pods?limit=1")["metadata"]["resourceVersion"]
        watcher = BoundWatcher(rest, rv)
        watcher.start()
        t_sched = time.monotonic()
        sut.start(cluster, limits)
        log(f"{sut.name} started (client QPS {limits.qps}, burst {limits.burst})")
        # Stream: the clock starts at the first creation, with the scheduler running.
        # Backlog: it starts when the scheduler process is spawned, with all pods waiting.
        t0 = t_sched if backlog else create_all()

        deadline = t0 + timeout
        last_report = 0.0
        while len(watcher.bound_at) < pods and time.monotonic() < deadline:
            if watcher.error is not None:
                raise watcher.error
            cluster.processes[sut.name].check_alive()
            if time.monotonic() - last_report > 10:
                log(f"  {len(watcher.bound_at)}/{pods} bound at {time.monotonic() - t0:.0f}s")
                last_report = time.monotonic()
            time.sleep(0.2)
        watcher.stop()
        if watcher.rewatches:
            result.notes.append(f"pod watch resumed {watcher.rewatches} times")
        result.timed_out = len(watcher.bound_at) < pods
        summarize(result, t0, created_at, watcher.bound_at)
        log_text = cluster.processes[sut.name].tail(100_000)
        if sut.log_notes is not None:
            # the scheduler logs its cycle once the writes are done: maybe just after the
            # watch saw the last bind
            notes_deadline = time.monotonic() + 10
            while not sut.log_notes(log_text) and time.monotonic() < notes_deadline:
                time.sleep(0.5)
                log_text = cluster.processes[sut.name].tail(100_000)
            result.notes += sut.log_notes(log_text)
        if sut.synced_at is not None:
            synced = sut.synced_at(log_text)
            if synced is not None:
                # the log's wall clock on the harness's monotonic one (one machine)
                synced_mono = synced - (time.time() - time.monotonic())
                result.synced_seconds = synced_mono - t0
                if watcher.bound_at:
                    result.first_bound_after_sync = min(watcher.bound_at.values()) - synced_mono
        if workload.gang_size > 1:
            summarize_gangs(result, members, created_at, watcher.bound_at)
        result.load_average.append(os.getloadavg()[0])
        return result
    finally:
        cluster.stop()
        _keep_logs(cluster.workdir, f"{sut.name}-{mode}-{limits.qps:g}")
        plane.cleanup()


def _keep_logs(workdir: Path, label: str) -> None:
    """With PODMUSTER_BENCH_LOGS set, copy the run's logs (and profiles) there first."""
    target = os.environ.get("PODMUSTER_BENCH_LOGS")
    if not target:
        return
    dest = Path(target) / f"{time.strftime('%H%M%S')}-{label}"
    dest.mkdir(parents=True, exist_ok=True)
    for path in workdir.glob("*"):
        if path.is_file() and path.suffix in (".log", ".prof"):
            shutil.copy2(path, dest / path.name)


def summarize(
    result: Result, t0: float, created_at: dict[str, float], bound_at: dict[str, float]
) -> None:
    result.bound = len(bound_at)
    if not bound_at:
        return
    times = sorted(bound_at.values())
    result.span_seconds = times[-1] - t0
    result.first_bound_seconds = times[0] - t0
    result.pods_per_second = result.bound / result.span_seconds
    lo, hi = times[len(times) // 10], times[(len(times) * 9) // 10]
    if hi > lo:
        result.steady_pods_per_second = (len(times) * 8 // 10) / (hi - lo)
    latencies = sorted(bound_at[n] - created_at[n] for n in bound_at if n in created_at)
    if latencies:
        result.latency_p50 = statistics.median(latencies)
        result.latency_p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]


def summarize_gangs(
    result: Result,
    members: list[tuple[str, str]],
    created_at: dict[str, float],
    bound_at: dict[str, float],
) -> None:
    """Per gang: from its first pod's creation to its last pod's binding."""
    gangs: dict[str, list[str]] = {}
    for name, job in members:
        gangs.setdefault(job, []).append(name)
    spans = sorted(
        max(bound_at[n] for n in names) - min(created_at[n] for n in names)
        for names in gangs.values()
        if all(n in bound_at for n in names) and all(n in created_at for n in names)
    )
    result.gangs = len(spans)
    if spans:
        result.gang_p50 = statistics.median(spans)
        result.gang_p99 = spans[min(len(spans) - 1, int(len(spans) * 0.99))]
