"""Volume binding against a real API server and kube-controller-manager's PV controller.

The scheduler, the binder and the status controllers run (no podgrouper: every test
names its PodGroup on its pods, so a StatefulSet's pods stay in the gang the test
made); kwok stands in for the kubelets. Each test makes its own kwok nodes, a
``WaitForFirstConsumer`` StorageClass with ``kubernetes.io/no-provisioner`` and local
PVs reachable from one node each (``kubernetes.io/hostname``), as a cluster with local
disks has them. The binder writes each chosen PV's ``claimRef``; the PV controller of
kube-controller-manager then binds the claim, and only then is the pod bound.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, saying, wait_for
from .objects import (
    QUEUE_LABEL,
    kai_gang,
    kai_template,
    scheduling_reasons,
    unschedulable,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

HOSTNAME = "kubernetes.io/hostname"


@dataclass
class Storage:
    """This test's StorageClass and PVs (cluster-scoped, deleted at the end)."""

    cluster: Cluster
    name: str = field(default_factory=lambda: f"local-{uuid.uuid4().hex[:6]}")
    volumes: list[str] = field(default_factory=list)

    def create_class(self) -> None:
        self.cluster.kubectl.create(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": self.name},
                "provisioner": "kubernetes.io/no-provisioner",
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )

    def local_pv(self, node: str, size: str = "1Gi", claim: tuple[str, str] | None = None) -> str:
        name = f"{self.name}-pv{len(self.volumes)}"
        spec: dict[str, Any] = {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": self.name,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [
                            {"key": HOSTNAME, "operator": "In", "values": [node]}
                        ]}
                    ]
                }
            },
        }  # fmt: skip
        if claim is not None:
            spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
        self.cluster.kubectl.create(
            {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
             "spec": spec}
        )  # fmt: skip
        self.volumes.append(name)
        return name

    def claim(self, namespace: str, name: str, volume: str = "", size: str = "1Gi") -> Obj:
        spec: dict[str, Any] = {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": self.name,
            "resources": {"requests": {"storage": size}},
        }
        if volume:
            spec["volumeName"] = volume
        body: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
        self.cluster.kubectl.create(body)
        return body

    def node_of_volume(self, volume: str) -> str:
        pv = self.cluster.kubectl.get("pv", volume)
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        return str(term["matchExpressions"][0]["values"][0])

    def delete_all(self) -> None:
        kubectl = self.cluster.kubectl
        if self.volumes:
            kubectl.run("delete", "pv", *self.volumes, "--ignore-not-found", "--wait=false")
        kubectl.run("delete", "storageclass", self.name, "--ignore-not-found")


@pytest.fixture
def storage(cluster: Cluster) -> Iterator[Storage]:
    found = Storage(cluster)
    found.create_class()
    yield found
    found.delete_all()


def with_claim(pod: Obj, claim: str) -> Obj:
    spec = pod["spec"]
    spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return pod


def claim_phase(cluster: Cluster, namespace: str, name: str) -> tuple[str, str]:
    pvc = cluster.kubectl.get("pvc", name, "-n", namespace)
    return str(pvc.get("status", {}).get("phase")), str(pvc["spec"].get("volumeName") or "")


def test_statefulset_gang_with_local_pvs_starts_whole_each_pod_on_its_pv(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    storage: Storage,
) -> None:
    nodes = [kwok_nodes.add(cpu="4") for _ in range(3)]
    # One local PV on each of the first two nodes; the third node has none.
    for node in nodes[:2]:
        storage.local_pv(node)
    queue = kai_queues.add("team")
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"queue": queue, "minMember": 2},
        }
    )
    template = with_claim(kai_template(kwok_nodes.pool, labels={"app": "web"}), "data")
    del template["spec"]["volumes"]  # the StatefulSet adds its claim template's volume
    template["spec"]["restartPolicy"] = "Always"
    template["metadata"]["annotations"] = {"pod-group-name": "web"}
    template["metadata"]["labels"][QUEUE_LABEL] = queue
    cluster.kubectl.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
            "spec": {
                "replicas": 2,
                "podManagementPolicy": "Parallel",
                "serviceName": "web",
                "selector": {"matchLabels": {"app": "web"}},
                "template": template,
                "volumeClaimTemplates": [
                    {
                        "metadata": {"name": "data"},
                        "spec": {
                            "accessModes": ["ReadWriteOnce"],
                            "storageClassName": storage.name,
                            "resources": {"requests": {"storage": "1Gi"}},
                        },
                    }
                ],
            },
        }
    )
    running = wait_running(cluster, namespace, "app=web", 2, timeout=90)
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in running}
    for pod_name, node in placed.items():
        phase, volume = claim_phase(cluster, namespace, f"data-{pod_name}")
        assert phase == "Bound"
        assert storage.node_of_volume(volume) == node
    assert sorted(placed.values()) == sorted(nodes[:2])


def test_pod_whose_claim_is_bound_to_a_pv_of_one_node_lands_there(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    storage: Storage,
) -> None:
    nodes = [kwok_nodes.add(cpu="4") for _ in range(3)]
    target = nodes[1]
    volume = storage.local_pv(target, claim=(namespace, "pinned"))
    storage.claim(namespace, "pinned", volume=volume)
    wait_for(
        "claim pinned Bound by the PV controller",
        lambda: claim_phase(cluster, namespace, "pinned")[0] == "Bound",
        timeout=60,
    )
    queue = kai_queues.add("team")
    template = kai_template(kwok_nodes.pool, labels={"app": "pinned"})
    gang = kai_gang("pinned", namespace, queue, template, 1)
    with_claim(gang[1], "pinned")
    for obj in gang:
        cluster.kubectl.create(obj)
    running = wait_running(cluster, namespace, "app=pinned", 1, timeout=60)
    assert running[0]["spec"]["nodeName"] == target


def test_a_claim_that_cannot_be_served_is_named_in_the_reasons(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    storage: Storage,
) -> None:
    kwok_nodes.add(cpu="4")
    storage.claim(namespace, "nowhere", size="1Gi")  # no PV, and the class provisions none
    queue = kai_queues.add("team")
    template = kai_template(kwok_nodes.pool, labels={"app": "lost"})
    gang = kai_gang("lost", namespace, queue, template, 1)
    with_claim(gang[1], "nowhere")
    for obj in gang:
        cluster.kubectl.create(obj)
    words = 'persistentvolumeclaim "nowhere"'
    reasons = wait_for(
        "why lost waits", saying(words, partial(scheduling_reasons, cluster, namespace, "lost"))
    )
    assert words in str(reasons)
    condition = wait_for(
        "lost-0 unschedulable naming its claim",
        lambda: (
            c
            if not isinstance(c := unschedulable(cluster, namespace, "lost-0"), NotYet)
            and words in c.get("message", "")
            else NotYet("not yet")
        ),
    )
    assert words in condition["message"]
    assert cluster.kubectl.get("pod", "lost-0", "-n", namespace)["spec"].get("nodeName") is None
