"""Dynamic Resource Allocation against a real API server (``resource.k8s.io/v1``).

The scheduler, the binder and the status controllers run (no podgrouper: the gang is
named on its pods); kwok stands in for the kubelets and no DRA driver runs: the test
publishes the ResourceSlices a driver would, for its kwok nodes. kube-controller-manager's
ResourceClaim controller makes each pod's claim from its template; podmuster chooses the
devices, the binder writes the claim's ``status.allocation`` and ``reservedFor``, then
binds the pod on the node of the devices.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .objects import kai_gang, kai_template, scheduling_reasons, wait_running
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

API = "resource.k8s.io/v1"


@dataclass
class Devices:
    """This test's DeviceClass and ResourceSlices (cluster-scoped, deleted at the end)."""

    cluster: Cluster
    driver: str = field(default_factory=lambda: f"gpu-{uuid.uuid4().hex[:6]}.example.com")
    slices: list[str] = field(default_factory=list)

    @property
    def device_class(self) -> str:
        return f"a100.{self.driver}"

    def create_class(self) -> None:
        """A class of this driver's A100s, chosen by a CEL selector."""
        expression = (
            f'device.driver == "{self.driver}" && '
            f'device.attributes["{self.driver}"].model == "A100"'
        )
        self.cluster.kubectl.create(
            {
                "apiVersion": API,
                "kind": "DeviceClass",
                "metadata": {"name": self.device_class},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
        )

    def publish(self, node: str, model: str, count: int) -> None:
        """The ResourceSlice a driver on ``node`` would publish: ``count`` GPUs of ``model``."""
        name = f"{node}-{self.driver}"
        devices = [
            {"name": f"gpu-{i}", "attributes": {"model": {"string": model}}} for i in range(count)
        ]
        self.cluster.kubectl.create(
            {
                "apiVersion": API,
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": self.driver,
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
        self.slices.append(name)

    def delete_all(self) -> None:
        kubectl = self.cluster.kubectl
        if self.slices:
            kubectl.run("delete", "resourceslice", *self.slices, "--ignore-not-found")
        kubectl.run("delete", "deviceclass", self.device_class, "--ignore-not-found")


@pytest.fixture
def devices(cluster: Cluster) -> Iterator[Devices]:
    found = Devices(cluster)
    found.create_class()
    yield found
    found.delete_all()


def claim_template(cluster: Cluster, namespace: str, name: str, device_class: str) -> None:
    cluster.kubectl.create(
        {
            "apiVersion": API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]
                    }
                }
            },
        }
    )


def with_template(pod: Obj, template: str) -> Obj:
    spec = pod["spec"]
    spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": "gpu"}]
    return pod


def claim_of(pod: Obj) -> str:
    statuses = pod.get("status", {}).get("resourceClaimStatuses") or []
    return str(statuses[0]["resourceClaimName"]) if statuses else ""


def test_resource_api_is_served(cluster: Cluster) -> None:
    """Kubernetes 1.37 serves resource.k8s.io/v1 without extra flags."""
    found = cluster.kubectl.run("api-resources", "--api-group=resource.k8s.io", "-o", "name")
    for kind in ("resourceclaims", "resourceclaimtemplates", "resourceslices", "deviceclasses"):
        assert f"{kind}.resource.k8s.io" in found


def test_gang_with_claim_templates_gets_devices_of_the_matching_node(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    devices: Devices,
) -> None:
    nodes = [kwok_nodes.add(cpu="4") for _ in range(3)]
    devices.publish(nodes[0], "T4", 2)  # not of the class: the CEL selector rules it out
    devices.publish(nodes[1], "A100", 2)  # the gang's two pods fit only here
    claim_template(cluster, namespace, "one-a100", devices.device_class)
    queue = kai_queues.add("team")
    template = kai_template(kwok_nodes.pool, labels={"app": "dra"})
    gang = kai_gang("dra", namespace, queue, template, 2)
    for pod in gang[1:]:
        with_template(pod, "one-a100")
    for obj in gang:
        cluster.kubectl.create(obj)
    running = wait_running(cluster, namespace, "app=dra", 2, timeout=150)
    assert {p["spec"]["nodeName"] for p in running} == {nodes[1]}
    taken = []
    for pod in running:
        claim = cluster.kubectl.get("resourceclaim", claim_of(pod), "-n", namespace)
        status = claim.get("status") or {}
        (result,) = status["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["request"]) == (
            devices.driver,
            nodes[1],
            "gpu",
        )
        taken.append(result["device"])
        assert [r["uid"] for r in status["reservedFor"]] == [pod["metadata"]["uid"]]
    assert sorted(taken) == ["gpu-0", "gpu-1"]  # no device given twice


def test_claim_no_node_can_serve_is_named_in_the_reasons(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    devices: Devices,
) -> None:
    node = kwok_nodes.add(cpu="4")
    devices.publish(node, "T4", 1)  # no A100 anywhere
    claim_template(cluster, namespace, "one-a100", devices.device_class)
    queue = kai_queues.add("team")
    gang = kai_gang("nogpu", namespace, queue, kai_template(kwok_nodes.pool), 1)
    with_template(gang[1], "one-a100")
    for obj in gang:
        cluster.kubectl.create(obj)

    def reasons() -> list[str] | NotYet:
        found = scheduling_reasons(cluster, namespace, "nogpu")
        if isinstance(found, NotYet):
            return found
        text = [str(r.get("message") or r) for r in found]
        if any("free devices for resourceclaim" in t for t in text):
            return text
        return NotYet(f"reasons so far: {text}")

    wait_for("the claim named in the PodGroup's reasons", reasons, timeout=120)
    pod = cluster.kubectl.get("pod", "nogpu-0", "-n", namespace)
    assert not pod["spec"].get("nodeName")


def test_a_claim_shared_by_a_gang_is_allocated_once_and_reserved_for_both(
    cluster: Cluster,
    podmuster_own_groups: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    devices: Devices,
) -> None:
    nodes = [kwok_nodes.add(cpu="4") for _ in range(2)]
    devices.publish(nodes[0], "T4", 1)
    devices.publish(nodes[1], "A100", 1)  # one device for the two pods: they share it
    cluster.kubectl.create(
        {
            "apiVersion": API,
            "kind": "ResourceClaim",
            "metadata": {"name": "shared", "namespace": namespace},
            "spec": {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": devices.device_class}}
                    ]
                }
            },
        }
    )
    queue = kai_queues.add("team")
    gang = kai_gang(
        "pair", namespace, queue, kai_template(kwok_nodes.pool, labels={"app": "pair"}), 2
    )
    for pod in gang[1:]:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    for obj in gang:
        cluster.kubectl.create(obj)
    running = wait_running(cluster, namespace, "app=pair", 2, timeout=150)
    assert {p["spec"]["nodeName"] for p in running} == {nodes[1]}
    status = cluster.kubectl.get("resourceclaim", "shared", "-n", namespace)["status"]
    (result,) = status["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == (nodes[1], "gpu-0")
    assert sorted(r["uid"] for r in status["reservedFor"]) == sorted(
        p["metadata"]["uid"] for p in running
    )
