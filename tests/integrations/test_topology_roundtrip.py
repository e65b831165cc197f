"""The scheduler reads the topology constraints the podgrouper writes (docs/semantics.md §3, §5.8).

Why: the podgrouper turns ``kai.scheduler/topology*`` and segment annotations into
``topologyConstraint`` fields on PodGroups and subgroups; a field-name or nesting
mismatch would silently drop the constraint. Workloads are grouped by the real
adapters, the PodGroup manifest is fed to one scheduling cycle, and the placement
must honour the annotations.
"""

from __future__ import annotations

from typing import Any

from adapter_builders import ctx, group, obj
from test_kubeflow_adapters import pytorch, replica, worker_pod
from test_ray_adapter import RAY, ray_pod

from tests.kits.worlds import node, pod, queue, run_objects, topology

TOPO = "cluster-topo"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


def racks(*free: int) -> list[dict[str, Any]]:
    """One node per rack, all in zone z1, with ``free`` GPUs each."""
    return [
        node(f"n{i}", gpus=gpus, labels={ZONE: "z1", RACK: f"r{i}"}) for i, gpus in enumerate(free)
    ]


def placed(objects: list[Any]) -> dict[str, str]:
    result = run_objects(objects)
    return {b.pod.split("/", 1)[1]: b.node for b in result.binds}


def test_pytorch_segments_each_land_in_one_rack() -> None:
    notes = {
        "kai.scheduler/segment-size": "2",
        "kai.scheduler/segment-topology-required-placement": RACK,
    }
    job = pytorch(
        {"pytorchReplicaSpecs": {"Worker": replica(4, notes)}},
        annotations={"kai.scheduler/topology": TOPO},
    )
    specs = [group(ctx(job, worker_pod(i, job))) for i in range(4)]
    manifest = specs[0].to_manifest()
    manifest["spec"]["queue"] = "q"
    pods = [
        pod(
            f"pt-worker-{i}",
            manifest["metadata"]["name"],
            gpus=1,
            namespace="ns",
            sub_group=specs[i].subgroup_of(f"pt-worker-{i}"),
        )
        for i in range(4)
    ]
    # Free GPUs per rack 3, 2, 1: unconstrained bin-packing would start on n2 and split a
    # segment; each segment of two must sit in one rack.
    where = placed([queue("q"), topology(TOPO, ZONE, RACK), *racks(3, 2, 1), manifest, *pods])
    assert len(where) == 4
    assert where["pt-worker-0"] == where["pt-worker-1"]
    assert where["pt-worker-2"] == where["pt-worker-3"]


def test_ray_cluster_and_worker_group_constraints() -> None:
    template = {
        "metadata": {
            "annotations": {
                "kai.scheduler/topology": TOPO,
                "kai.scheduler/topology-required-placement": RACK,
            }
        }
    }
    spec = {
        "headGroupSpec": {"template": {}},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": template}],
    }
    annotations = {
        "kai.scheduler/topology": TOPO,
        "kai.scheduler/topology-required-placement": ZONE,
    }
    rc = obj(RAY, "RayCluster", "rc", spec=spec, annotations=annotations)
    grouped = group(ctx(rc, ray_pod("gpu", rc)))
    manifest = grouped.to_manifest()
    manifest["spec"]["queue"] = "q"
    name = manifest["metadata"]["name"]
    pods = [
        pod("rc-head", name, cpu="1", namespace="ns", sub_group="headgroup"),
        pod("rc-gpu-0", name, gpus=1, namespace="ns", sub_group="gpu"),
        pod("rc-gpu-1", name, gpus=1, namespace="ns", sub_group="gpu"),
    ]
    # Zone z2 is the only zone holding all three pods; inside it only rack r3 holds both
    # GPU workers, although the fuller r2 has one GPU free.
    nodes = [
        node("a", gpus=1, labels={ZONE: "z1", RACK: "r1"}),
        node("b", gpus=1, labels={ZONE: "z2", RACK: "r2"}),
        node("c", gpus=4, labels={ZONE: "z2", RACK: "r3"}),
    ]
    where = placed([queue("q"), topology(TOPO, ZONE, RACK), *nodes, manifest, *pods])
    assert where["rc-gpu-0"] == where["rc-gpu-1"] == "c"
    assert where["rc-head"] in {"b", "c"}
