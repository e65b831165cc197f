"""NUMA-aware placement against a real API server (docs/gpu-scheduling.md, semantics.md §5.12).

The scheduler runs with ``plugins.numa.enabled`` and watches NodeResourceTopology objects
(the test installs a minimal CRD of that group and kind, as NFD's topology updater would,
and publishes the objects itself, standing in for the exporter); the binder binds and
kwok runs the pods. Node ``split`` has 8 CPUs in two NUMA zones of 4 under
``single-numa-node``; node ``big`` has 16 CPUs and publishes nothing. A Guaranteed 6-CPU
pod fits ``split`` by node accounting, and bin-packing would choose it, but no zone holds
it: it must run on ``big``. A Guaranteed 3-CPU pod fits a zone of ``split`` and runs there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .frameworks import apply_crds
from .live import PIPELINE_FLAGS, component
from .objects import (
    ensure_priority_classes,
    kai_gang,
    kai_template,
    schemaless_crd,
    wait_running,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

CRD = schemaless_crd(
    "topology.node.k8s.io",
    "NodeResourceTopology",
    "noderesourcetopologies",
    version="v1alpha2",
    scope="Cluster",
    # a *.k8s.io group: the API server wants this annotation on any CRD of it
    annotations={"api-approved.kubernetes.io": "unapproved, e2e stand-in"},
)


@pytest.fixture(scope="module")
def numa_scheduler(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The NodeResourceTopology CRD, then the scheduler (NUMA on) and the binder."""
    ensure_priority_classes(cluster)
    folder = tmp_path_factory.mktemp("numa")
    crd = folder / "nrt-crd.json"
    crd.write_text(json.dumps(CRD))
    apply_crds(cluster.kubectl, [crd])
    config = folder / "scheduler.yaml"
    config.write_text(json.dumps({"plugins": {"numa": {"enabled": True}}}))
    scheduler_flags = [*PIPELINE_FLAGS["scheduler"], f"--config={config}"]
    with (
        component(cluster, "scheduler", scheduler_flags) as scheduler,
        component(cluster, "binder", PIPELINE_FLAGS["binder"]) as binder,
    ):
        yield
        scheduler.check_alive()
        binder.check_alive()


def _zones(node: str, cpus: tuple[int, ...]) -> dict[str, object]:
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "pod"},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {"name": "cpu", "capacity": str(c), "allocatable": str(c), "available": str(c)},
                ],
            }
            for i, c in enumerate(cpus)
        ],
    }


def _guaranteed_gang(name: str, namespace: str, queue: str, pool: str, cpu: str) -> list[dict]:
    template = kai_template(pool, cpu=cpu, labels={"app": name})
    for container in template["spec"]["containers"]:
        resources = container["resources"]
        resources["limits"] = dict(resources["requests"])  # Guaranteed QoS
    return kai_gang(name, namespace, queue, template, 1)


def test_pod_no_zone_holds_goes_where_it_is_not_rejected(
    cluster: Cluster,
    numa_scheduler: None,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    split = kwok_nodes.add(cpu="8", memory="64Gi")
    big = kwok_nodes.add(cpu="16", memory="64Gi")
    cluster.kubectl.create(_zones(split, (4, 4)))
    try:
        queue = kai_queues.add(f"numa-{uuid.uuid4().hex[:4]}")
        for obj in _guaranteed_gang("wide", namespace, queue, kwok_nodes.pool, "6"):
            cluster.kubectl.create(obj)
        (wide,) = wait_running(cluster, namespace, "app=wide", 1, timeout=60)
        assert wide["spec"]["nodeName"] == big
        assert wide["status"]["qosClass"] == "Guaranteed"
        for obj in _guaranteed_gang("local", namespace, queue, kwok_nodes.pool, "3"):
            cluster.kubectl.create(obj)
        (local,) = wait_running(cluster, namespace, "app=local", 1, timeout=60)
        assert local["spec"]["nodeName"] == split
    finally:
        cluster.kubectl.run("delete", "noderesourcetopology", split, "--ignore-not-found")
