"""NodeResourceTopology objects, pods' NUMA requests and placement records as the cache reads them.

Why: a malformed NodeResourceTopology must be refused with the object and field named
and keep only that node's NUMA data out (the node is then simply not modelled); the
policy and scope come from the attributes, else the deprecated ``topologyPolicies``;
zones are ordered by their NUMA-node number whatever order the exporter lists them in;
and a pod's alignable request follows the kubelet (Guaranteed, whole CPUs, init peaks).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crds.errors import InputError
from crds.names import NUMA_PLACEMENT_OBSERVED_ANNOTATION, NUMA_PLACEMENT_PREDICTED_ANNOTATION
from scheduler.api.numa import NumaPolicy, NumaScope
from scheduler.api.resources import CPU, GPU, MEMORY, ResourceSpace
from scheduler.cache.numa_reading import (
    numa_request_of,
    placement_record,
    pod_numa_request,
    read_node_resource_topology,
)
from scheduler.cache.parsing import FieldError, pod_request
from scheduler.cache.reading import read_pod
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError, load_config
from tests.kits.numa_kit import nrt, zone
from tests.kits.worlds import node, sourced

GI = 2**30


def test_zones_in_engine_units_ordered_by_number() -> None:
    body = nrt("n", "single-numa-node", [zone("4", "16Gi", 1), zone("8", "32Gi", 0)])
    body["zones"].reverse()  # listed node-1 first: still zone 0 first
    body["zones"].append({"name": "socket-0", "type": "Socket", "resources": []})
    info = read_node_resource_topology(body, ResourceSpace())
    assert info is not None
    assert info.zone_ids == ("node-0", "node-1")
    assert info.policy == NumaPolicy.SINGLE_NUMA_NODE
    assert info.scope == NumaScope.POD
    assert info.allocatable[:, CPU].tolist() == [4000, 8000]
    assert info.allocatable[:, MEMORY].tolist() == [16 * GI, 32 * GI]
    assert info.allocatable[:, GPU].tolist() == [1000, 0]
    assert set(info.gated) == {CPU, MEMORY}
    assert GPU in info.aware


@pytest.mark.parametrize(
    ("legacy", "policy", "scope"),
    [
        ("SingleNUMANodeContainerLevel", NumaPolicy.SINGLE_NUMA_NODE, NumaScope.CONTAINER),
        ("RestrictedPodLevel", NumaPolicy.RESTRICTED, NumaScope.POD),
        ("BestEffort", NumaPolicy.BEST_EFFORT, NumaScope.CONTAINER),
        ("None", NumaPolicy.NONE, NumaScope.CONTAINER),
    ],
)
def test_legacy_topology_policies(legacy: str, policy: NumaPolicy, scope: NumaScope) -> None:
    body = nrt("n", "none", [zone("4", "1Gi")])
    del body["attributes"]
    body["topologyPolicies"] = [legacy]
    info = read_node_resource_topology(body, ResourceSpace())
    assert info is not None
    assert (info.policy, info.scope) == (policy, scope)


def test_no_node_zone_means_no_numa_data() -> None:
    body = nrt("n", "single-numa-node", [])
    assert read_node_resource_topology(body, ResourceSpace()) is None


def _bad(body: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    target: Any = body
    for step in path[:-1]:
        target = target[step]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        (["zones"], "node-0", "zones", "expected a list"),
        (["zones", 0], 3, "zones[0]", "expected a map"),
        (["zones", 0, "name"], None, "zones[0].name", "expected a string"),
        (
            ["zones", 0, "resources", 0, "available"],
            "lots",
            "zones[0].resources[0].available",
            "invalid quantity",
        ),
        (
            ["zones", 0, "resources", 0, "allocatable"],
            KeyError,
            "zones[0].resources[0].allocatable",
            "required",
        ),
        (["zones", 1, "name"], "node-0", "zones", "zone names must be unique"),
        (["attributes", 0, "value"], 7, "attributes[0].value", "expected a string"),
    ],
)
def test_bad_node_resource_topology_names_the_field(
    path: list[Any], value: Any, field: str, message: str
) -> None:
    body = _bad(nrt("n", "restricted", [zone("4", "1Gi"), zone("4", "1Gi")]), path, value)
    with pytest.raises(FieldError) as caught:
        read_node_resource_topology(body, ResourceSpace())
    assert caught.value.field == field
    assert message in caught.value.message


def test_bad_object_keeps_only_that_node_out() -> None:
    good = nrt("a", "single-numa-node", [zone("4", "1Gi")])
    bad = _bad(nrt("b", "single-numa-node", [zone("4", "1Gi")]), ["zones"], "x")
    objects = [node("a"), node("b"), good, bad]
    with pytest.raises(InputError, match="NodeResourceTopology b: zones: expected a list"):
        build_snapshot(sourced(objects))
    result = build_snapshot(sourced(objects), strict=False)
    assert set(result.snapshot.numa) == {"a"}
    assert [str(e) for e in result.errors] == [
        "scenario: NodeResourceTopology b: zones: expected a list, got str"
    ]


def _spec(*containers: dict[str, str], key: str = "limits", inits: Any = ()) -> dict[str, Any]:
    return {
        "containers": [{"name": f"c{i}", "resources": {key: c}} for i, c in enumerate(containers)],
        "initContainers": list(inits),
    }


def _request(spec: dict[str, Any], status: dict[str, Any] | None = None) -> Any:
    space = ResourceSpace()
    return pod_numa_request(spec, status or {}, pod_request(spec, space), space)


def test_guaranteed_whole_cpus_only() -> None:
    request = _request(_spec({"cpu": "2", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}))
    assert request is not None
    assert request.guaranteed
    assert [int(v[CPU]) for v in request.concurrent] == [2000, 0]
    assert int(request.pod[CPU]) == 2000
    assert int(request.pod[MEMORY]) == 2 * GI


def test_pod_cpu_is_the_init_peak_when_larger() -> None:
    init = {"name": "i", "resources": {"limits": {"cpu": "6", "memory": "1Gi"}}}
    request = _request(_spec({"cpu": "2", "memory": "1Gi"}, inits=[init]))
    assert request is not None
    assert int(request.pod[CPU]) == 6000
    assert [int(v[CPU]) for v in request.serial] == [6000]


def test_burstable_without_devices_has_no_request() -> None:
    assert _request(_spec({"cpu": "2", "memory": "1Gi"}, key="requests")) is None


def test_status_qos_class_wins() -> None:
    spec = _spec({"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}, key="requests")
    request = _request(spec, {"qosClass": "Burstable"})
    assert request is not None
    assert not request.guaranteed
    assert int(request.pod[GPU]) == 1000


def test_placement_record_observed_first() -> None:
    space = ResourceSpace()
    annotations = {
        NUMA_PLACEMENT_PREDICTED_ANNOTATION: '[{"zone": "node-0", "amount": {"cpu": "4"}}]',
        NUMA_PLACEMENT_OBSERVED_ANNOTATION: '[{"zone": "node-1", "amount": {"cpu": "2", "x/y": "1"}}]',
    }
    record = placement_record(annotations, space)
    assert record is not None
    key, zones = record
    assert key == NUMA_PLACEMENT_OBSERVED_ANNOTATION
    assert [(z, int(v[CPU])) for z, v in zones] == [("node-1", 2000)]
    assert space.width == 4  # an unknown resource adds no column
    assert np.count_nonzero(zones[0][1]) == 1


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("{", f"metadata.annotations[{NUMA_PLACEMENT_OBSERVED_ANNOTATION}]"),
        ("[]", f"metadata.annotations[{NUMA_PLACEMENT_OBSERVED_ANNOTATION}]"),
        ('[{"amount": {}}]', f"metadata.annotations[{NUMA_PLACEMENT_OBSERVED_ANNOTATION}][0]"),
        (
            '[{"zone": "node-0", "amount": {"cpu": "x"}}]',
            f"metadata.annotations[{NUMA_PLACEMENT_OBSERVED_ANNOTATION}][0].amount.cpu",
        ),
    ],
)
def test_bad_placement_record_names_the_annotation(raw: str, field: str) -> None:
    with pytest.raises(FieldError) as caught:
        placement_record({NUMA_PLACEMENT_OBSERVED_ANNOTATION: raw}, ResourceSpace())
    assert caught.value.field == field


def test_numa_config() -> None:
    config = load_config(
        {"plugins": {"numa": {"enabled": True, "arguments": {"ignoreList": "memory, x/y"}}}}
    )
    assert config.numa
    assert config.numa_ignore == ("memory", "x/y")
    assert not load_config({}).numa


@pytest.mark.parametrize(
    ("numa", "message"),
    [
        ("on", "plugins.numa: expected a mapping"),
        ({"enabled": "yes"}, "plugins.numa.enabled: expected true or false"),
        ({"arguments": "x"}, "plugins.numa.arguments: expected a mapping"),
        ({"arguments": {"ignoreList": ["memory"]}}, "plugins.numa.arguments.ignoreList"),
    ],
)
def test_bad_numa_config_names_the_key(numa: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config({"plugins": {"numa": numa}})


def test_request_built_only_when_asked_and_only_for_candidates() -> None:
    space = ResourceSpace()
    cpu_only = _pod_body({"cpu": "2", "memory": "1Gi"}, "requests")
    gpu = _pod_body({"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"}, "requests")
    plain = read_pod(cpu_only, space, "kai-scheduler")
    assert plain.numa_source is None
    assert numa_request_of(plain, space) is None
    device = read_pod(gpu, space, "kai-scheduler")
    assert device.numa is None
    assert device.numa_source is not None
    request = numa_request_of(device, space)
    assert request is not None
    assert device.numa is request
    assert device.numa_source is None


def _pod_body(resources: dict[str, str], key: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d"},
        "spec": {"containers": [{"name": "c", "resources": {key: resources}}]},
    }
