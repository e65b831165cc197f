"""Small builders and waits for the objects the smoke tests make.

Pods name a scheduler that does not run (``UNSCHEDULED``) so that, on a kind
cluster as on the local plane, only the test decides where they go.
"""

from __future__ import annotations

import json
from typing import Any

from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for

UNSCHEDULED = "podmuster-e2e-nobody"
COMPLETE_ANNOTATION = "podmuster.io/e2e-complete"
IMAGE = "registry.invalid/podmuster/e2e:none"
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}


def pod_template(labels: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"labels": labels or {}},
        "spec": {
            "schedulerName": UNSCHEDULED,
            "restartPolicy": "Never",
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def pod(name: str, namespace: str) -> Obj:
    tpl = pod_template({"app": name})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, **tpl["metadata"]},
        "spec": tpl["spec"],
    }


def bind(cluster: Cluster, namespace: str, pod_name: str, node: str) -> None:
    """POST pods/binding, as a scheduler does."""
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod_name, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    cluster.kubectl.run(
        "create", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod_name}/binding", "-f", "-",
        stdin=json.dumps(binding),
    )  # fmt: skip


def phase(cluster: Cluster, namespace: str, pod_name: str) -> str:
    status: dict[str, Any] = cluster.kubectl.get("pod", pod_name, "-n", namespace)["status"]
    return str(status.get("phase", ""))


def wait_phase(
    cluster: Cluster, namespace: str, pod_name: str, want: str, timeout: float = 60
) -> None:
    wait_for(
        f"pod {namespace}/{pod_name} {want}",
        lambda: phase(cluster, namespace, pod_name) == want,
        timeout=timeout,
    )


def request_completion(cluster: Cluster, namespace: str, pod_name: str) -> None:
    """Ask kwok (through our stage) to finish a Running pod with exit code 0."""
    cluster.kubectl.run(
        "annotate", "pod", pod_name, "-n", namespace, f"{COMPLETE_ANNOTATION}=true", "--overwrite"
    )


# --- The pipeline tests' workloads: pods for podmuster (kai-scheduler) ---------------

KAI_SCHEDULER = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
PRIORITY_LABEL = "priorityClassName"
POOL_LABEL = "podmuster.io/e2e-pool"
GPU = "nvidia.com/gpu"
PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}


def ensure_priority_classes(cluster: Cluster) -> None:
    """KAI's four PriorityClasses (the podgrouper resolves a class only if it exists)."""
    for name, value in PRIORITY_CLASSES.items():
        if not cluster.kubectl.exists("priorityclass", name):
            cluster.kubectl.apply(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )


def kai_queue(
    name: str, gpu_quota: float = 0, parent: str = "", gpu_weight: float = 1, gpu_limit: float = -1
) -> Obj:
    """A Queue with the given GPU quota and unlimited CPU and memory."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": gpu_weight},
            "cpu": unlimited,
            "memory": unlimited,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def kai_template(
    pool: str,
    cpu: str = "100m",
    gpus: int = 0,
    container: str = "main",
    labels: dict[str, str] | None = None,
    node: str = "",
    restart: str = "Never",
    extended: dict[str, str] | None = None,
) -> Obj:
    """A pod template for podmuster, kept on the test's own nodes (label ``POOL_LABEL``).

    ``extended``: more extended resources (e.g. MIG slices), as requests and limits.
    """
    requests: dict[str, str] = {"cpu": cpu, "memory": "64Mi"}
    resources: dict[str, Any] = {"requests": requests}
    limits = dict(extended or {})
    if gpus:
        limits[GPU] = str(gpus)
    if limits:
        requests.update(limits)
        resources["limits"] = limits
    selector = {POOL_LABEL: pool}
    if node:
        selector["kubernetes.io/hostname"] = node
    return {
        "metadata": {"labels": dict(labels or {})},
        "spec": {
            "schedulerName": KAI_SCHEDULER,
            "restartPolicy": restart,
            "nodeSelector": selector,
            "tolerations": [KWOK_TOLERATION],
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": container, "image": IMAGE, "resources": resources}],
        },
    }


def batch_job(
    name: str, namespace: str, queue: str, template: Obj, parallelism: int = 1, priority: str = ""
) -> Obj:
    """A batch/v1 Job in ``queue`` (label on the Job, as KAI users write it)."""
    labels = {QUEUE_LABEL: queue}
    if priority:
        labels[PRIORITY_LABEL] = priority
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 20,
            "template": template,
        },
    }


def replica_set(name: str, namespace: str, queue: str, template: Obj, replicas: int = 1) -> Obj:
    """An apps/v1 ReplicaSet in ``queue``: it re-creates a deleted pod at once."""
    selector = {"podmuster.io/e2e-rs": name}
    tpl = {**template, "metadata": {"labels": {**template["metadata"]["labels"], **selector}}}
    tpl["spec"] = {**template["spec"], "restartPolicy": "Always"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: queue, PRIORITY_LABEL: "train"},
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": selector}, "template": tpl},
    }


def kai_bare_pod(name: str, namespace: str, queue: str, template: Obj, priority: str = "") -> Obj:
    """A pod with no owner: the podgrouper gives it a PodGroup of its own."""
    labels = {**template["metadata"]["labels"], QUEUE_LABEL: queue}
    if priority:
        labels[PRIORITY_LABEL] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": template["spec"],
    }


def live_pods(cluster: Cluster, namespace: str, selector: str = "") -> list[Obj]:
    """The namespace's pods (matching ``selector``) that are not being deleted."""
    args = ["pods", "-n", namespace, *(["-l", selector] if selector else [])]
    return [p for p in cluster.kubectl.items(*args) if not p["metadata"].get("deletionTimestamp")]


def running_on(pod_obj: Obj) -> str:
    """The pod's node if it is bound and Running, else ''."""
    if pod_obj.get("status", {}).get("phase") != "Running":
        return ""
    return str(pod_obj["spec"].get("nodeName") or "")


def wait_running(
    cluster: Cluster, namespace: str, selector: str, count: int, timeout: float = 90
) -> list[Obj]:
    """Wait until ``count`` live pods match ``selector`` and all of them are Running."""

    def probe() -> list[Obj] | NotYet:
        found = live_pods(cluster, namespace, selector)
        if len(found) == count and all(running_on(p) for p in found):
            return found
        states = [f"{p['metadata']['name']}:{p['status'].get('phase')}@{p['spec'].get('nodeName')}"
                  for p in found]  # fmt: skip
        return NotYet(", ".join(states) or "no pods")

    found: list[Obj] = wait_for(
        f"{count} Running pods {selector or '(all)'} in {namespace}", probe, timeout=timeout
    )
    return found


def bind_requests(cluster: Cluster, namespace: str) -> dict[str, Obj]:
    """The namespace's BindRequests by name (= pod name)."""
    items = cluster.kubectl.items("bindrequests.scheduling.run.ai", "-n", namespace)
    return {item["metadata"]["name"]: item for item in items}


def events(cluster: Cluster, namespace: str, kind: str = "", name: str = "") -> list[Obj]:
    """Events in ``namespace``, about the object ``kind``/``name`` when given."""
    found = cluster.kubectl.items("events", "-n", namespace)
    return [
        e
        for e in found
        if (not kind or e["involvedObject"].get("kind") == kind)
        and (not name or e["involvedObject"].get("name") == name)
    ]


def pod_group(cluster: Cluster, namespace: str, name: str) -> Obj:
    return cluster.kubectl.get("podgroups.scheduling.run.ai", name, "-n", namespace)


def group_of(pod_obj: Obj) -> str:
    """The PodGroup the podgrouper gave the pod (its ``pod-group-name`` annotation)."""
    return str((pod_obj["metadata"].get("annotations") or {}).get("pod-group-name", ""))


def kai_gang(
    name: str, namespace: str, queue: str, template: Obj, pods: int, **spec: Any
) -> list[Obj]:
    """A user-managed PodGroup ``name`` (minMember ``pods``) and its owner-less pods
    ``<name>-<i>`` (annotation ``pod-group-name``: the podgrouper leaves them alone).

    ``spec`` adds PodGroup spec fields, e.g. ``topologyConstraint``.
    """
    group: Obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue, "minMember": pods, **spec},
    }
    members = []
    for index in range(pods):
        member = kai_bare_pod(f"{name}-{index}", namespace, queue, template)
        member["metadata"]["annotations"] = {"pod-group-name": name}
        members.append(member)
    return [group, *members]


def scheduling_reasons(cluster: Cluster, namespace: str, group: str) -> list[Any] | NotYet:
    """The reasons of the PodGroup's scheduling condition, once the scheduler wrote one."""
    status = pod_group(cluster, namespace, group).get("status") or {}
    conditions = status.get("schedulingConditions") or []
    return conditions[0]["reasons"] if conditions else NotYet(f"no condition on {group}")


def unschedulable(cluster: Cluster, namespace: str, pod_name: str) -> Obj | NotYet:
    """The pod's ``PodScheduled=False`` condition, once the scheduler wrote one."""
    pod_obj = cluster.kubectl.get("pod", pod_name, "-n", namespace)
    for condition in pod_obj.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return dict(condition)
    return NotYet(f"no PodScheduled=False on {pod_name}")


def kai_topology(name: str, levels: list[str]) -> Obj:
    """A Topology (kai.scheduler/v1alpha1, cluster-scoped) with node-label ``levels``."""
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def schemaless_crd(
    group: str,
    kind: str,
    plural: str,
    *,
    version: str = "v1alpha1",
    scope: str = "Namespaced",
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A CRD serving ``kind`` at ``version`` with no schema (any fields kept)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "annotations": dict(annotations or {})},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
