"""NodeResourceTopology objects and Guaranteed pods for the NUMA tests.

Why: the NUMA scenario tables and property tests need nodes publishing their
zones the way NFD's topology updater does (``topology.node.k8s.io/v1alpha2``,
zones of type ``Node``, the policy and scope as attributes) and pods whose QoS
is Guaranteed; spelling both once keeps the tables about the rule each row pins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crds.names import POD_GROUP_ANNOTATION

Obj = dict[str, Any]


def zone(
    cpus: str, memory: str, gpus: int | None = None, *, free: Mapping[str, str] | None = None
) -> Obj:
    """One zone's allocatable resources; ``free`` overrides what is available (default: all)."""
    resources = {"cpu": cpus, "memory": memory}
    if gpus is not None:
        resources["nvidia.com/gpu"] = str(gpus)
    available = {**resources, **(free or {})}
    return {name: (value, available[name]) for name, value in resources.items()}


def nrt(node: str, policy: str, zones: Sequence[Obj], *, scope: str = "pod") -> Obj:
    """A NodeResourceTopology for ``node``: zones ``node-0``, ``node-1``, ... of type Node."""
    return {
        "apiVersion": "topology.node.k8s.io/v1alpha2",
        "kind": "NodeResourceTopology",
        "metadata": {"name": node},
        "attributes": [
            {"name": "topologyManagerPolicy", "value": policy},
            {"name": "topologyManagerScope", "value": scope},
        ],
        "zones": [
            {
                "name": f"node-{i}",
                "type": "Node",
                "resources": [
                    {
                        "name": name,
                        "capacity": allocatable,
                        "allocatable": allocatable,
                        "available": available,
                    }
                    for name, (allocatable, available) in z.items()
                ],
            }
            for i, z in enumerate(zones)
        ],
    }


def gpod(
    name: str,
    group: str,
    containers: Sequence[Mapping[str, str]],
    *,
    guaranteed: bool = True,
    state: str = "Pending",
    node: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Obj:
    """A pod of ``group`` with one container per resource map (limits = requests if Guaranteed)."""
    key = "limits" if guaranteed else "requests"
    spec: Obj = {
        "schedulerName": "kai-scheduler",
        "containers": [
            {"name": f"c{i}", "resources": {key: dict(resources)}}
            for i, resources in enumerate(containers)
        ],
    }
    status: Obj = {"phase": "Pending"}
    if state == "Running":
        spec["nodeName"] = node
        status = {"phase": "Running"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {POD_GROUP_ANNOTATION: group, **(annotations or {})},
        },
        "spec": spec,
        "status": status,
    }


__all__ = ["gpod", "nrt", "zone"]
