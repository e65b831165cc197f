"""What the GPU-sharing end-to-end tests share: a stand-in for the GPU device plugin,
sharing pods as the admission mutation leaves them, and reservation pod look-ups.

Why: on kwok nodes there is no GPU, no device plugin and no reservation image. On a real
node, the reservation pod's process finds the GPU the device plugin gave it and writes
its UUID on its own pod; :class:`FakeDevicePlugin` does that from the test, for every
Running reservation pod, with a fake UUID ``GPU-<hash of node and pod>``.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from typing import Any

from crds.gpusharing import FRACTION_RUNTIME_CLASS
from webhooks.podenv import mutate_pod

from .controlplane import Cluster
from .kube import KubectlError, Obj, wait_for
from .objects import KWOK_TOLERATION

RESERVATIONS = "kai-resource-reservation"
RESERVED_GPU = "run.ai/reserve_for_gpu_index"


class FakeDevicePlugin:
    """Annotates Running reservation pods with a fake GPU UUID; nodes in ``broken``
    never report (their reservation pods wait forever)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.broken: set[str] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="fake-device-plugin", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.3):
            try:
                self._report()
            except KubectlError:
                continue  # a pod deleted meanwhile: look again next round

    def _report(self) -> None:
        for pod in self.cluster.kubectl.items("pods", "-n", RESERVATIONS):
            meta, node = pod["metadata"], pod["spec"].get("nodeName", "")
            if RESERVED_GPU in (meta.get("annotations") or {}) or node in self.broken:
                continue
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            fake = "GPU-" + hashlib.sha256(f"{node}/{meta['name']}".encode()).hexdigest()[:12]
            self.cluster.kubectl.run(
                "annotate", "pod", meta["name"], "-n", RESERVATIONS, f"{RESERVED_GPU}={fake}"
            )


def ensure_nvidia_runtime_class(cluster: Cluster) -> None:
    """The RuntimeClass ``nvidia`` the GPU operator makes, which the admission mutation
    gives sharing pods by default (the API server refuses a pod naming a RuntimeClass
    that does not exist; kwok runs no container, so its handler is never used)."""
    if not cluster.kubectl.exists("runtimeclass", FRACTION_RUNTIME_CLASS):
        runtime_class = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": FRACTION_RUNTIME_CLASS},
            "handler": FRACTION_RUNTIME_CLASS,
        }
        try:
            cluster.kubectl.create(runtime_class)
        except KubectlError as exc:
            if "AlreadyExists" not in exc.stderr:
                raise


@contextlib.contextmanager
def fake_device_plugin(cluster: Cluster) -> Iterator[FakeDevicePlugin]:
    """The reservation namespace and ServiceAccount (the chart makes them), the
    RuntimeClass sharing pods get (:func:`ensure_nvidia_runtime_class`), and the fake
    device plugin running until the block ends."""
    ensure_nvidia_runtime_class(cluster)
    if not cluster.kubectl.exists("namespace", RESERVATIONS):
        cluster.kubectl.run("create", "namespace", RESERVATIONS)
    wait_for(
        "the default ServiceAccount of the reservation namespace",
        lambda: cluster.kubectl.exists("serviceaccount", "default", "-n", RESERVATIONS),
    )
    if not cluster.kubectl.exists("serviceaccount", RESERVATIONS, "-n", RESERVATIONS):
        cluster.kubectl.run("create", "serviceaccount", RESERVATIONS, "-n", RESERVATIONS)
    plugin = FakeDevicePlugin(cluster)
    plugin.thread.start()
    try:
        yield plugin
    finally:
        plugin.stop.set()
        plugin.thread.join(timeout=10)


def mutated(pod: Obj) -> Obj:
    """``pod`` as the admission mutation leaves it (its GPU env read from its ConfigMap,
    RuntimeClass ``nvidia`` as the webhook's default)."""
    for op in mutate_pod(pod, "kai-scheduler", "e2e"):
        *parents, last = (p.replace("~1", "/") for p in op["path"][1:].split("/"))
        target: Any = pod
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[last] = op["value"]
    return pod


def sharing_pod(namespace: str, name: str, fraction: str = "0.5") -> Obj:
    """A bare pod asking for ``fraction`` of a GPU, mutated as at admission."""
    return mutated(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "annotations": {"gpu-fraction": fraction}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "restartPolicy": "Never",
                "tolerations": [KWOK_TOLERATION],
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "registry.invalid/x:none",
                                "resources": {"requests": {"cpu": "100m"}}}],
            },
        }
    )  # fmt: skip


def reservations_of(cluster: Cluster, group: str = "") -> list[Obj]:
    """Reservation pods (of ``group``, if given)."""
    selector = f"runai-gpu-group={group}" if group else "app=kai-resource-reservation"
    return cluster.kubectl.items("pods", "-n", RESERVATIONS, "-l", selector)
