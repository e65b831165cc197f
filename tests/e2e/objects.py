"""Small builders and waits for the objects the smoke tests make.

Pods name a scheduler that does not run (``UNSCHEDULED``) so that, on a kind
cluster as on the local plane, only the test decides where they go.
"""

from __future__ import annotations

import json
from typing import Any

from .controlplane import Cluster
from .kube import Obj, wait_for

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
