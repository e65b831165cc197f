"""kube-scheduler and podmuster on the same nodes (docs/semantics.md §5.10).

The real kube-scheduler (profile ``default-scheduler``) and ``podmuster run scheduler``
with ``podmuster run binder`` share four kwok nodes of 8 CPUs. A mixed stream of
2-CPU pods, half of them kube-scheduler's, half podmuster's (gangs of two and
singles, in one queue), asks for 48 CPUs where there are 32. kwok starts whatever
is bound and never refuses a pod, so the kubelet's ``OutOfcpu`` is checked as what
would cause it: a watch of every pod change finds, at any moment of the run, the pod
whose bind took a node's requests over its allocatable (the pod a kubelet refuses),
and notes each pod's bind revision (the resourceVersion of the event its nodeName
first appeared in).

podmuster's promise is that none of its binds goes over a node judged by the
consistent read of the node's pods it made just before the bind (with its own binds
in flight): each bind logs that read's revision (``checked_at``, the binder's or the
scheduler's ``bound`` line). One of podmuster's pods P taking node N over is the race
§5.10 "Limits" documents, and is reported, iff P's ``checked_at`` is logged and N's
pods fit without the kube-scheduler pods bound on N after ``checked_at`` and before P
(podmuster's own pods stay counted: its checks count its binds in flight); anything
else fails the test. kube-scheduler's own late binds over a node, which podmuster
cannot prevent, are reported too. At the end every pod was bound at most once (no pod
ever changed node; each of podmuster's pods through one Succeeded BindRequest to its
node), no pod failed with an ``OutOf*`` reason, and every pod that fits is bound (each
node is full or nothing is pending).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from benchmarks.kube_scheduler.schedulers import Limits, start_kube_scheduler
from scheduler.cache.room import held_on

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, RestClient, wait_for
from .live import PIPELINE_FLAGS, component
from .objects import bind_requests, kai_gang, kai_template
from .procs import ManagedProcess

pytestmark = pytest.mark.e2e

NODES = 4
NODE_CPU = 8000  # millicores
POD_CPU = 2000
DEFAULT_PODS = 12  # kube-scheduler's: 24 CPUs
KAI_GANGS = 4  # 4 gangs of two and 4 singles of podmuster's: 24 CPUs


@pytest.fixture
def kube_scheduler(cluster: Cluster) -> Iterator[ManagedProcess]:
    proc = start_kube_scheduler(cluster, Limits(qps=50, burst=100))
    try:
        yield proc
    finally:
        proc.stop()
        cluster.processes.pop("kube-scheduler", None)


@pytest.fixture
def rest(cluster: Cluster) -> Iterator[RestClient]:
    """The local control plane's admin client (fast: no kubectl process per call)."""
    if cluster.local is None:
        pytest.skip("needs the local control plane's admin client")
    client = cluster.local.rest()
    yield client
    client.close()


@pytest.fixture
def podmuster_procs(
    request: pytest.FixtureRequest, cluster: Cluster
) -> Iterator[tuple[ManagedProcess, ManagedProcess]]:
    """The binder, then the scheduler: BindRequests (KAI's path), or with the parameter
    ``True`` the scheduler's ``--direct-bind``. Yields (binder, scheduler)."""
    direct = ["--direct-bind"] if getattr(request, "param", False) else []
    with (
        component(cluster, "binder", PIPELINE_FLAGS["binder"]) as binder,
        component(cluster, "scheduler", [*PIPELINE_FLAGS["scheduler"], *direct]) as scheduler,
    ):
        yield binder, scheduler


@pytest.fixture
def both_schedulers(
    kube_scheduler: ManagedProcess, podmuster_procs: tuple[ManagedProcess, ManagedProcess]
) -> tuple[ManagedProcess, ManagedProcess]:
    """kube-scheduler, podmuster's binder and scheduler, all running."""
    return podmuster_procs


def default_pod(name: str, namespace: str, pool: str) -> Obj:
    spec = kai_template(pool, cpu="2")["spec"]  # on the pool's nodes, tolerating kwok
    spec["schedulerName"] = "default-scheduler"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "mixed"}},
        "spec": spec,
    }


def _cpu_milli(pod: Obj) -> int:
    total = 0
    for container in pod["spec"].get("containers") or ():
        raw = str(((container.get("resources") or {}).get("requests") or {}).get("cpu", "0"))
        total += int(raw[:-1]) if raw.endswith("m") else int(float(raw) * 1000)
    return total


@dataclass(frozen=True)
class Holder:
    """A pod holding room on a node at some moment of the run."""

    name: str
    scheduler: str
    cpu: int
    bound_at: int | None  # its bind revision (None: it holds room without a nodeName)


@dataclass(frozen=True)
class Takeover:
    """One of podmuster's pods took a node over its allocatable, as the watch saw it."""

    node: str
    pod: str
    used: int
    bound_at: int | None  # the pod's bind revision
    seen_at: int  # the revision of the event that took the node over
    holders: tuple[Holder, ...]  # every pod holding room on the node then, the pod included

    def __str__(self) -> str:
        return f"{self.node}: {self.used}m of {NODE_CPU}m after {self.pod}"

    def detail(self) -> str:
        """The event and the node's holders then: name, scheduler, bind revision."""
        holders = ", ".join(f"{h.name} {h.scheduler} @{h.bound_at}" for h in self.holders)
        return f"seen at {self.seen_at}; holders {holders}"

    def unseen(self, checked_at: int) -> list[Holder]:
        """kube-scheduler's pods bound on the node after the pod's check (revision
        ``checked_at``) and before its bind: the binds the check could not see."""
        return [
            h
            for h in self.holders
            if h.scheduler == "default-scheduler"
            and h.bound_at is not None
            and self.bound_at is not None
            and checked_at < h.bound_at < self.bound_at
        ]

    def raced(self, checked_at: int) -> bool:
        """The race of docs/semantics.md §5.10 "Limits": without :meth:`unseen`, the
        node's pods fit. podmuster's own pods stay counted whenever they were bound: a
        check counts the binds in flight beside it (and a sibling bound in between that
        checked later counted this pod), so only the other scheduler's binds after the
        read are beyond the check."""
        if self.bound_at is None:
            return False
        return self.used - sum(h.cpu for h in self.unseen(checked_at)) <= NODE_CPU


def checked_at(procs: Iterable[ManagedProcess], namespace: str) -> dict[str, int | None]:
    """Pod name -> the revision its bind's room check read (``checked_at``), for each pod
    of ``namespace`` with a ``bound`` line in the components' JSON logs: the scheduler's
    direct binds name the pod, the binder names the BindRequest (named after its pod).
    None: the bind logged no revision (its read failed, or no check ran)."""
    found: dict[str, int | None] = {}
    for proc in procs:
        for line in proc.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                entry: dict[str, Any] = json.loads(line)
                where = str(entry.get("pod") or entry.get("bindrequest") or "")
                if entry.get("msg") == "bound" and where.startswith(f"{namespace}/"):
                    revision = entry.get("checked_at")
                    found[where.split("/", 1)[1]] = int(revision) if revision else None
    return found


class Watcher:
    """Every pod change of a namespace, checked as it arrives (a thread of its own)."""

    def __init__(self, rest: RestClient, namespace: str) -> None:
        self.rest, self.namespace = rest, namespace
        self.pods: dict[str, Obj] = {}
        self.first_node: dict[str, str] = {}
        self.bound_at: dict[str, int] = {}  # uid -> the revision its nodeName first appeared at
        self.takeovers: list[Takeover] = []  # a node went over with one of podmuster's pods
        self.overcommits: list[str] = []  # ... not the documented race (see judge)
        self.raced: list[str] = []  # ... the documented race (see judge and the test)
        self.foreign_overcommits: list[str] = []  # ... with kube-scheduler's (see the test)
        self.rebinds: list[str] = []
        self.refused: list[str] = []
        self.peak: dict[str, int] = {}
        self.stopping = False
        self.error: Exception | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        listing = self.rest.get(f"/api/v1/namespaces/{self.namespace}/pods")
        self.version = listing["metadata"]["resourceVersion"]
        self._thread.start()

    def _run(self) -> None:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        try:
            while not self.stopping:
                for event in self.rest.watch(path, self.version, timeout_s=5):
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"pod watch ended: {obj}")
                    self.version = obj["metadata"]["resourceVersion"]
                    self._seen(event["type"], obj)
                    if self.stopping:
                        return
        except Exception as exc:  # reported by the test (Watcher.stop), not the thread
            self.error = exc
        finally:
            self.rest.close()

    def stop(self) -> None:
        """Stop watching (within the watch's 5 s timeout); raise what broke the watch."""
        self.stopping = True
        self._thread.join(10)
        if self.error is not None:
            raise AssertionError(f"the pod watch failed: {self.error!r}")

    def _seen(self, event_type: str, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        name = pod["metadata"]["name"]
        node = str(pod["spec"].get("nodeName") or "")
        rv = int(pod["metadata"]["resourceVersion"])
        with self._lock:
            before = self.usage()
            if event_type == "DELETED":
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = pod
            if node:
                first = self.first_node.setdefault(uid, node)
                if first != node:
                    self.rebinds.append(f"{name}: {first} then {node}")
                self.bound_at.setdefault(uid, rv)
            reason = str(pod.get("status", {}).get("reason") or "")
            if reason.startswith("OutOf"):
                self.refused.append(f"{name}: {reason}")
            for where, used in self.usage().items():
                self.peak[where] = max(self.peak.get(where, 0), used)
                if used > NODE_CPU and used > before.get(where, 0):  # this pod went over
                    if pod["spec"].get("schedulerName") == "kai-scheduler":
                        holders = tuple(self._holders(where))
                        self.takeovers.append(
                            Takeover(where, name, used, self.bound_at.get(uid), rv, holders)
                        )
                    else:
                        went_over = f"{where}: {used}m of {NODE_CPU}m after {name}"
                        self.foreign_overcommits.append(went_over)

    def _holders(self, node: str) -> Iterator[Holder]:
        """The pods holding room on ``node`` now (caller holds lock)."""
        for uid, pod in self.pods.items():
            if held_on(pod) == node:
                scheduler = str(pod["spec"].get("schedulerName") or "")
                name = pod["metadata"]["name"]
                yield Holder(name, scheduler, _cpu_milli(pod), self.bound_at.get(uid))

    def judge(self, checked: dict[str, int | None]) -> bool:
        """Sort the takeovers into :attr:`raced` and :attr:`overcommits` by the revisions
        their binds checked at (``checked``, from :func:`checked_at`); a takeover whose
        pod logged no revision is an overcommit. True if an overcommit is certain: its
        pod's ``bound`` line is in ``checked`` (one not logged yet may still be)."""
        with self._lock:
            takeovers = list(self.takeovers)
        self.raced, self.overcommits = [], []
        certain = False
        for takeover in takeovers:
            at = checked.get(takeover.pod)
            if at is not None and takeover.raced(at):
                unseen = ", ".join(f"{h.name} @{h.bound_at}" for h in takeover.unseen(at))
                said = f"checked at {at}, bound at {takeover.bound_at}, unseen {unseen}"
                self.raced.append(f"{takeover} ({said})")
                continue
            logged = "no bound line" if takeover.pod not in checked else f"checked at {at}"
            said = f"{logged}, bound at {takeover.bound_at}, {takeover.detail()}"
            self.overcommits.append(f"{takeover} ({said})")
            certain = certain or takeover.pod in checked
        return certain

    def usage(self) -> dict[str, int]:
        """Millicores requested per node by the pods holding room there (caller holds lock)."""
        used: dict[str, int] = {}
        for pod in self.pods.values():
            node = held_on(pod)
            if node:
                used[node] = used.get(node, 0) + _cpu_milli(pod)
        return used

    def snapshot(self) -> tuple[dict[str, int], list[Obj]]:
        with self._lock:
            return self.usage(), list(self.pods.values())


@pytest.mark.parametrize(
    "podmuster_procs", [False, True], indirect=True, ids=["bind-requests", "direct-bind"]
)
def test_kube_scheduler_and_podmuster_share_nodes_without_overcommit(
    cluster: Cluster,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    rest: RestClient,
    both_schedulers: tuple[ManagedProcess, ManagedProcess],
) -> None:
    nodes = [kwok_nodes.add(cpu="8", memory="64Gi") for _ in range(NODES)]
    queue = kai_queues.add("mixed")
    watcher = Watcher(rest, namespace)
    watcher.start()
    template = kai_template(kwok_nodes.pool, cpu="2")
    kai: list[Obj] = []
    for g in range(KAI_GANGS):
        kai.append(kai_gang(f"gang{g}", namespace, queue, template, 2))
        kai.append(kai_gang(f"single{g}", namespace, queue, template, 1))
    stream: list[Obj] = []
    for i in range(DEFAULT_PODS):  # interleaved: both schedulers race for the same room
        stream.append(default_pod(f"web{i}", namespace, kwok_nodes.pool))
        if i < len(kai):
            stream.extend(kai[i])
    for obj in stream:
        if obj["kind"] == "PodGroup":
            path = f"/apis/scheduling.run.ai/v2alpha2/namespaces/{namespace}/podgroups"
        else:
            path = f"/api/v1/namespaces/{namespace}/pods"
        rest.post(path, obj)
        time.sleep(0.05)

    def settled() -> tuple[dict[str, int], list[Obj]] | NotYet:
        used, pods = watcher.snapshot()
        pending = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")]
        room = {n: NODE_CPU - used.get(n, 0) for n in nodes}
        # a certain failure ends the wait (one whose bind has not logged yet is not)
        failed = watcher.judge(checked_at(both_schedulers, namespace))
        if pending and any(free >= POD_CPU for free in room.values()) and not failed:
            return NotYet(f"pending {pending}, free {room}")
        return used, pods

    wait_for("every pod that fits bound", settled, timeout=120)
    time.sleep(3)  # late binds (a refused BindRequest decided again) would show now
    used, pods = watcher.snapshot()
    watcher.stop()
    watcher.judge(checked_at(both_schedulers, namespace))

    # The pod whose bind takes a node over its allocatable is the one the kubelet would
    # refuse. podmuster lists the node's pods (a consistent read) just before each bind
    # and logs the read's revision (checked_at): judged by that read (and its own binds
    # in flight), none of its binds may go over. Kubernetes has no bind conditioned on a
    # node's pods, so another scheduler's bind between the read and ours can still
    # overfill the node (docs/semantics.md §5.10, Limits). A takeover by one of
    # podmuster's pods P is that race, and reported (watcher.raced), iff P's checked_at is
    # logged and the node's pods fit without the kube-scheduler pods bound there after
    # checked_at and before P (podmuster's own pods stay counted, whenever bound);
    # anything else is a failure (watcher.overcommits).
    # kube-scheduler binds from its own watch and does not look again: bound moments
    # after one of podmuster's pods, before its watch shows it, its pod would be the
    # refused one. podmuster cannot prevent that either; it is reported below.
    assert not watcher.overcommits, watcher.overcommits
    assert not watcher.rebinds, watcher.rebinds
    assert not watcher.refused, watcher.refused
    if not watcher.foreign_overcommits and not watcher.raced:
        assert all(watcher.peak.get(n, 0) <= NODE_CPU for n in nodes), watcher.peak
    pending = [p for p in pods if not p["spec"].get("nodeName")]
    room = {n: NODE_CPU - used.get(n, 0) for n in nodes}
    assert not pending or all(free < POD_CPU for free in room.values()), (pending, room)
    bound = [p for p in pods if p["spec"].get("nodeName")]
    assert {p["spec"]["nodeName"] for p in bound} <= set(nodes)
    by_scheduler = {
        name: [p for p in bound if p["spec"]["schedulerName"] == name]
        for name in ("default-scheduler", "kai-scheduler")
    }
    assert by_scheduler["default-scheduler"], "kube-scheduler bound nothing"
    assert by_scheduler["kai-scheduler"], "podmuster bound nothing"
    requests = bind_requests(cluster, namespace)
    direct = "--direct-bind" in both_schedulers[1].argv
    for pod in by_scheduler["kai-scheduler"]:
        name = pod["metadata"]["name"]
        if direct:  # bound by the scheduler itself, with no BindRequest
            assert name not in requests, name
            continue
        request: dict[str, Any] = requests[name]
        assert request["status"]["phase"] == "Succeeded", (name, request.get("status"))
        assert request["spec"]["selectedNode"] == pod["spec"]["nodeName"], name
    print(
        "bound:",
        {k: len(v) for k, v in by_scheduler.items()},
        "pending:",
        len(pending),
        "peak:",
        watcher.peak,
        "kube-scheduler's late binds over a node's room:",
        watcher.foreign_overcommits,
        "podmuster's binds over a node's room, kube-scheduler having bound there after "
        "their check (§5.10 Limits):",
        watcher.raced,
        "binds refused for room:",
        sum(proc.tail(5000).count("has no room for pod") for proc in both_schedulers),
    )


def _request(namespace: str, pod: Obj, node: str) -> Obj:
    """A BindRequest as the scheduler writes it (owned by ``pod``, 3 attempts)."""
    meta = pod["metadata"]
    owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": meta["name"], "namespace": namespace, "ownerReferences": [owner]},
        "spec": {"podName": meta["name"], "selectedNode": node, "backoffLimit": 3},
    }


def test_a_bind_refused_for_room_is_decided_again_and_the_gang_completes(
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    rest: RestClient,
    both_schedulers: tuple[ManagedProcess, ManagedProcess],
) -> None:
    """A stale decision, made by hand: gang ``g`` of two, member 0 sent to n1 (room),
    member 1 to n0, which kube-scheduler has filled meanwhile. The binder refuses
    member 1 (no ``OutOfcpu`` pod), member 0 is bound; once the scheduler sees the gang
    (its PodGroup is created last), it decides member 1 again, on n1, and the gang runs
    whole."""
    full, free = kwok_nodes.add(cpu="8", memory="64Gi"), kwok_nodes.add(cpu="8", memory="64Gi")
    queue = kai_queues.add("refused")
    web = default_pod("web", namespace, kwok_nodes.pool)
    web["spec"]["nodeSelector"]["kubernetes.io/hostname"] = full
    web["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "8"
    rest.post(f"/api/v1/namespaces/{namespace}/pods", web)
    pods_path = f"/api/v1/namespaces/{namespace}/pods"
    wait_for(
        "kube-scheduler binds web to the full node",
        lambda: rest.get(f"{pods_path}/web")["spec"].get("nodeName") == full,
        timeout=60,
    )
    group, *members = kai_gang("g", namespace, queue, kai_template(kwok_nodes.pool, cpu="2"), 2)
    created = [rest.post(pods_path, member) for member in members]
    requests_path = f"/apis/scheduling.run.ai/v1alpha2/namespaces/{namespace}/bindrequests"
    rest.post(requests_path, _request(namespace, created[0], free))
    rest.post(requests_path, _request(namespace, created[1], full))

    def refused() -> Obj | NotYet:
        status = rest.get(f"{requests_path}/g-1").get("status") or {}
        return status if status.get("phase") == "Failed" else NotYet(str(status))

    status = wait_for("the binder refuses g-1 on the full node", refused, timeout=60)
    assert "has no room for pod" in status["reason"], status
    assert status["failedAttempts"] == 3, status  # final: the scheduler decides again
    assert rest.get(f"{pods_path}/g-0")["spec"].get("nodeName") == free
    assert not rest.get(f"{pods_path}/g-1")["spec"].get("nodeName")

    rest.post(f"/apis/scheduling.run.ai/v2alpha2/namespaces/{namespace}/podgroups", group)
    wait_for(
        "g-1 decided again and bound to the node with room",
        lambda: rest.get(f"{pods_path}/g-1")["spec"].get("nodeName") == free,
        timeout=60,
    )
    again = rest.get(f"{requests_path}/g-1")
    assert again["spec"]["selectedNode"] == free
    assert again["status"]["phase"] == "Succeeded"
    for name in ("web", "g-0", "g-1"):
        assert not str(rest.get(f"{pods_path}/{name}").get("status", {}).get("reason") or "")
