"""Benchmark snapshots: nodes, a 3-level queue tree, running and pending gangs.

Why: the engine's performance targets are stated for clusters far larger than
any test fixture (5,000 nodes, 100,000 pods); this module builds such
snapshots deterministically (seeded) as the raw objects a cluster would hold,
so the benchmark measures snapshot building too. Issue 15's target compares
allocate with and without inter-pod rules on one cluster, so the rules are given
to gangs drawn by a random stream of their own, leaving every other object as it is.
"""

from __future__ import annotations

import random
from typing import Any

from crds.names import DEFAULT_SCHEDULER_NAME, POD_GROUP_ANNOTATION
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.queue import API_VERSION as QUEUE_API_VERSION
from crds.topology import HOSTNAME_LABEL

GPUS_PER_NODE = 8
NODE_CPU = 96
NODE_MEMORY_GI = 768
START = "2026-01-01T00:00:00Z"


def _ts(seconds: int) -> str:
    minutes, sec = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"2026-01-{1 + days:02d}T{hours:02d}:{minutes:02d}:{sec:02d}Z"


def queue_object(
    name: str, parent: str | None, gpu_quota: float, weight: float, created: int
) -> dict[str, Any]:
    """A Queue with a GPU quota and over-quota weight; CPU and memory unlimited."""
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": weight},
            "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": weight},
            "memory": {"quota": -1, "limit": -1, "overQuotaWeight": weight},
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": QUEUE_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": _ts(created)},
        "spec": spec,
    }


def queues(leaves: int = 50) -> list[dict[str, Any]]:
    """5 divisions > 10 departments > ``leaves`` teams, quotas that add up below the cluster."""
    out: list[dict[str, Any]] = []

    def queue(name: str, parent: str | None, gpu_quota: float, weight: float) -> dict[str, Any]:
        return queue_object(name, parent, gpu_quota, weight, len(out))

    per_department = max(1, leaves // 10)
    for d in range(5):
        out.append(queue(f"div-{d}", None, -1, 1))
        for e in range(2):
            dept = f"dept-{d}-{e}"
            out.append(queue(dept, f"div-{d}", -1, 1))
            for t in range(per_department):
                out.append(queue(f"team-{d}-{e}-{t}", dept, 8 * (t + 1), 1 + t % 3))
    return out


def leaf_names(leaves: int = 50) -> list[str]:
    per_department = max(1, leaves // 10)
    return [f"team-{d}-{e}-{t}" for d in range(5) for e in range(2) for t in range(per_department)]


ZONE = "topology.kubernetes.io/zone"
ZONES = 3
APP_LABEL = "app"
"""The job label inter-pod rules select on; its value is the pod's PodGroup."""


def node(i: int) -> dict[str, Any]:
    """A node labelled as the kubelet and a cloud provider label it: hostname and zone."""
    name = f"node-{i:05d}"
    labels = {"pool": f"pool-{i % 4}", HOSTNAME_LABEL: name, ZONE: f"zone-{i % ZONES}"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {
                "cpu": str(NODE_CPU),
                "memory": f"{NODE_MEMORY_GI}Gi",
                "nvidia.com/gpu": str(GPUS_PER_NODE),
                "pods": "110",
            }
        },
    }


def pod_object(
    name: str,
    group: str,
    ns: str,
    gpus: int,
    cpu: str,
    memory: str,
    created: int,
    node_name: str | None,
) -> dict[str, Any]:
    limits: dict[str, str] = {"cpu": cpu, "memory": memory}
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-{ns}-{name}",
            "creationTimestamp": _ts(created),
            "annotations": {POD_GROUP_ANNOTATION: group},
        },
        "spec": {
            "schedulerName": DEFAULT_SCHEDULER_NAME,
            "containers": [{"name": "main", "resources": {"requests": limits, "limits": limits}}],
        },
        "status": {"phase": "Pending"},
    }
    if node_name:
        pod["spec"]["nodeName"] = node_name
        pod["status"]["phase"] = "Running"
    return pod


def group_object(
    name: str, ns: str, queue: str, size: int, created: int, priority: str
) -> dict[str, Any]:
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"uid-pg-{ns}-{name}",
            "creationTimestamp": _ts(created),
        },
        "spec": {"minMember": size, "queue": queue, "priorityClassName": priority},
    }


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {APP_LABEL: app}}, "topologyKey": key}


def one_per_node(pods: list[dict[str, Any]], app: str) -> None:
    """Label ``pods`` ``app`` and make them anti-affine per hostname to that label, as a
    Deployment or a training job that wants one replica per node writes it."""
    term = _term(app, HOSTNAME_LABEL)
    for pod in pods:
        pod["metadata"]["labels"] = {APP_LABEL: app}
        pod["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }


def spread_over_zones(pods: list[dict[str, Any]], app: str, hard: bool) -> None:
    """Label ``pods`` ``app`` and spread them over zones: a DoNotSchedule topology spread
    constraint (``hard``) or a preferred anti-affinity per zone to that label."""
    term = _term(app, ZONE)
    for pod in pods:
        pod["metadata"]["labels"] = {APP_LABEL: app}
        if hard:
            pod["spec"]["topologySpreadConstraints"] = [
                {"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", **term}
            ]
        else:
            preferred = {"weight": 100, "podAffinityTerm": term}
            pod["spec"]["affinity"] = {
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [preferred]}
            }


def cluster(
    nodes: int,
    pods: int,
    pending: int,
    seed: int = 7,
    anti_affinity: float = 0.0,
    zone_spread: float = 0.0,
    label_every_pod: bool = False,
) -> list[dict[str, Any]]:
    """Nodes, queues, running pods packed onto nodes, and pending gangs of 1-16 pods.

    ``anti_affinity``: the share of pending pods, whole gangs drawn at random, whose pods
    are anti-affine to each other per hostname (the rest of the cluster is unchanged).
    ``zone_spread``: the share of pending pods, of other gangs, spread over zones
    (:func:`spread_over_zones`, every other gang hard). ``label_every_pod``: every pod
    carries ``app: <its PodGroup>``, as real workloads' pods carry their app's label, so
    the selectors' index covers every pod, not only those with rules.
    """
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [node(i) for i in range(nodes)]
    objects += queues()
    leaves = leaf_names()
    free_gpu = [GPUS_PER_NODE] * nodes
    free_cpu = [NODE_CPU] * nodes
    running = pods - pending
    created = 0
    # Running pods: one-pod groups, 60% of GPUs used, the rest CPU-only pods.
    gpu_target = int(nodes * GPUS_PER_NODE * 0.6)
    cursor = 0
    for i in range(running):
        queue = leaves[i % len(leaves)]
        ns = f"ns-{queue}"
        gpus = 1 if i < gpu_target else 0
        cpu = 2 if gpus else 1
        for _ in range(nodes):
            if free_cpu[cursor] >= cpu and free_gpu[cursor] >= gpus:
                break
            cursor = (cursor + 1) % nodes
        free_cpu[cursor] -= cpu
        free_gpu[cursor] -= gpus
        group = f"run-{i}"
        objects.append(group_object(group, ns, queue, 1, created, "train"))
        objects.append(
            pod_object(
                f"run-{i}-0", group, ns, gpus, str(cpu), "4Gi", created, f"node-{cursor:05d}"
            )
        )
        cursor = (cursor + 1) % nodes
        created += 1
    made = 0
    job = 0
    gangs: list[list[dict[str, Any]]] = []
    while made < pending:
        size = min(rng.randint(1, 16), pending - made)
        queue = leaves[rng.randrange(len(leaves))]
        ns = f"ns-{queue}"
        group = f"gang-{job}"
        gpus = rng.choice((1, 1, 1, 2, 4, 0))
        priority = rng.choice(("train", "train", "train", "build", "inference"))
        objects.append(group_object(group, ns, queue, size, created, priority))
        members = [
            pod_object(f"gang-{job}-{k}", group, ns, gpus, "4", "16Gi", created, None)
            for k in range(size)
        ]
        objects += members
        gangs.append(members)
        made += size
        job += 1
        created += 1
    if label_every_pod:
        for obj in objects:
            if obj["kind"] == "Pod":
                obj["metadata"]["labels"] = {APP_LABEL: _group_of(obj)}
    chooser = random.Random(seed + 1)  # its own stream: the cluster above stays the same
    chooser.shuffle(gangs)
    anti_wanted, spread_wanted = anti_affinity * pending, zone_spread * pending
    marked = spread = spread_gangs = 0
    for members in gangs:
        if marked < anti_wanted:
            one_per_node(members, _group_of(members[0]))
            marked += len(members)
        elif spread < spread_wanted:
            spread_over_zones(members, _group_of(members[0]), hard=spread_gangs % 2 == 0)
            spread += len(members)
            spread_gangs += 1
        else:
            break
    return objects


def _group_of(pod: dict[str, Any]) -> str:
    group: str = pod["metadata"]["annotations"][POD_GROUP_ANNOTATION]
    return group
