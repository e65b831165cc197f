"""Fixtures for the end-to-end suite: one control plane per session.

``cluster`` starts etcd, kube-apiserver, kube-controller-manager and kwok from
the binaries tests/controlplane/build.sh caches (or adopts the cluster named
by KUBECONFIG when PODMUSTER_E2E_EXISTING_CLUSTER=1), applies podmuster's CRDs
from crds/*.yaml, and stops every process when the session ends, however it
ends. When a test fails, its report gets each component's log path and tail,
and the logs are kept on disk.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .controlplane import (
    KWOK_NODE_ANNOTATION,
    PODMUSTER_CRDS,
    Binaries,
    Cluster,
    LocalControlPlane,
    existing_cluster,
)
from .frameworks import apply_crds, start_operator
from .kube import wait_for
from .live import pipeline
from .objects import GPU, POOL_LABEL, ensure_priority_classes, kai_queue
from .procs import ManagedProcess

EXISTING_ENV = "PODMUSTER_E2E_EXISTING_CLUSTER"

_cluster: Cluster | None = None


def podmuster_crd_files() -> list[Path]:
    return sorted(PODMUSTER_CRDS.glob("*.yaml"))


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    return Binaries.default()


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest, binaries: Binaries) -> Iterator[Cluster]:
    """A running cluster with podmuster's CRDs installed."""
    global _cluster
    if os.environ.get(EXISTING_ENV) == "1":
        c = existing_cluster(binaries)
        if binaries.path("kwok") is not None and os.environ.get("PODMUSTER_E2E_KWOK", "1") == "1":
            c.start_kwok()
    else:
        if binaries.path("kube-apiserver") is None:
            pytest.fail(
                f"no control plane binaries in {binaries.root}:"
                " run bash tests/controlplane/build.sh (make e2e does)"
            )
        c = LocalControlPlane(binaries).start()
    _cluster = c
    try:
        crds = podmuster_crd_files()
        if crds:
            apply_crds(c.kubectl, crds)
        yield c
    finally:
        _cluster = None
        c.stop()
        failed = request.session.testsfailed > 0
        if failed:
            print(f"\npodmuster e2e: component logs kept in {c.workdir}")
        else:
            c.cleanup()


@pytest.fixture
def namespace(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[str]:
    """A fresh namespace with its default ServiceAccount, deleted afterwards."""
    stem = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"e2e-{stem}-{uuid.uuid4().hex[:5]}"
    cluster.kubectl.run("create", "namespace", name)
    wait_for(
        f"ServiceAccount default in {name}",
        lambda: cluster.kubectl.exists("serviceaccount", "default", "-n", name),
        timeout=60,
    )
    yield name
    cluster.kubectl.run("delete", "namespace", name, "--wait=false", "--ignore-not-found")


def create_kwok_node(
    cluster: Cluster, name: str, allocatable: dict[str, str], labels: dict[str, str]
) -> str:
    """Create a fake node that kwok keeps Ready, and wait until it is Ready."""
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": name, **labels},
        },
        # Keeps a real cluster's own pods (kind's) off the fake node.
        "spec": {
            "taints": [{"key": KWOK_NODE_ANNOTATION, "value": "fake", "effect": "NoSchedule"}]
        },
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }
    cluster.kubectl.create(node)

    def ready() -> bool:
        conds = cluster.kubectl.get("node", name).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    wait_for(f"node {name} Ready", ready, timeout=60)
    return name


def require_kwok(cluster: Cluster) -> None:
    if "kwok" not in cluster.processes:
        pytest.skip("kwok is not running" + cluster.binaries.failure("kwok"))


@pytest.fixture
def kwok_node(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[str]:
    """A fake node that kwok keeps Ready; pods bound to it turn Running."""
    require_kwok(cluster)
    name = f"kwok-{uuid.uuid4().hex[:6]}"
    create_kwok_node(cluster, name, {"cpu": "32", "memory": "256Gi", "pods": "110"}, {})
    yield name
    cluster.kubectl.run("delete", "node", name, "--ignore-not-found", "--wait=false")


class NodeFactory:
    """Fake nodes for one test, all labelled with one pool (``POOL_LABEL``: ``pool``).

    ``add(cpu=..., gpus=..., labels=...)`` makes a node and waits until it is Ready; every node
    is deleted when the test ends.
    """

    def __init__(self, cluster: Cluster, pool: str) -> None:
        self.cluster = cluster
        self.pool = pool
        self.names: list[str] = []

    def add(
        self,
        cpu: str = "32",
        gpus: int = 0,
        memory: str = "256Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> str:
        """One more node; ``labels`` are added to the pool label, ``extra`` to allocatable
        (other extended resources, e.g. MIG profiles)."""
        name = f"{self.pool}-n{len(self.names)}"
        allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
        if gpus:
            allocatable[GPU] = str(gpus)
        self.names.append(name)
        node_labels = {**(labels or {}), POOL_LABEL: self.pool}
        return create_kwok_node(self.cluster, name, allocatable, node_labels)

    def delete_all(self) -> None:
        if self.names:
            self.cluster.kubectl.run("delete", "node", *self.names, "--ignore-not-found")


@pytest.fixture
def kwok_nodes(cluster: Cluster) -> Iterator[NodeFactory]:
    """A factory of fake nodes in a pool of this test's own (see :class:`NodeFactory`)."""
    require_kwok(cluster)
    factory = NodeFactory(cluster, f"pool-{uuid.uuid4().hex[:6]}")
    yield factory
    factory.delete_all()


class QueueFactory:
    """Queues for one test, named ``<prefix>-<name>``; deleted when the test ends."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.prefix = f"q{uuid.uuid4().hex[:5]}"
        self.names: list[str] = []

    def add(self, name: str, gpu_quota: float = 0, parent: str = "", **spec: Any) -> str:
        """Create Queue ``<prefix>-<name>``; ``parent`` is a full queue name."""
        full = f"{self.prefix}-{name}"
        self.names.append(full)
        self.cluster.kubectl.create(kai_queue(full, gpu_quota, parent, **spec))
        return full

    def delete_all(self) -> None:
        if self.names:
            self.cluster.kubectl.run(
                "delete", "queues.scheduling.run.ai", *self.names, "--ignore-not-found",
                "--wait=false",
            )  # fmt: skip


@pytest.fixture
def kai_queues(cluster: Cluster) -> Iterator[QueueFactory]:
    """A factory of Queues private to this test (see :class:`QueueFactory`)."""
    factory = QueueFactory(cluster)
    yield factory
    factory.delete_all()


@pytest.fixture(scope="module")
def podmuster(cluster: Cluster) -> Iterator[dict[str, ManagedProcess]]:
    """The whole pipeline (podgrouper, scheduler, binder, controllers) for one module.

    One ``podmuster run all`` process where the tree has it (see ``live.pipeline``);
    KAI's four PriorityClasses exist first. Yields the processes by component name.
    """
    ensure_priority_classes(cluster)
    with pipeline(cluster) as procs:
        yield procs
        for proc in procs.values():
            proc.check_alive()


@pytest.fixture(scope="module")
def podmuster_own_groups(cluster: Cluster) -> Iterator[dict[str, ManagedProcess]]:
    """The scheduler, binder and status controllers, without the podgrouper, for one module:
    for tests that name each pod's PodGroup themselves (a StatefulSet's pods then stay in
    the gang the test made)."""
    ensure_priority_classes(cluster)
    with pipeline(cluster, skip=("podgrouper",)) as procs:
        yield procs
        for proc in procs.values():
            proc.check_alive()


@pytest.fixture(scope="session")
def kuberay(cluster: Cluster) -> str:
    """The KubeRay operator, running against the cluster (or already installed there)."""
    return start_operator(cluster, "kuberay")


@pytest.fixture(scope="session")
def training_operator(cluster: Cluster) -> str:
    """The Kubeflow training operator (v1: PyTorchJob, TFJob, ...)."""
    return start_operator(cluster, "training-operator")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """Attach every component's log path and tail to a failed test's report."""
    excinfo = call.excinfo
    if excinfo is None or _cluster is None or call.when not in ("setup", "call"):
        return
    if not excinfo.errisinstance(pytest.skip.Exception):
        item.add_report_section(call.when, "control plane logs", _cluster.log_report())
