"""The cluster YAML: nodes and pools expanded, queues, raw objects, scheduler settings, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from crds.errors import InputError
from simulator import cluster, objects

FULL = """
nodes:
  - {name: big, gpus: 8, cpu: 96, memory: 1Ti, labels: {zone: a}}
  - {name: small, count: 2, cpu: "500m", memory: 2, ephemeralStorage: 200Gi}
nodePools:
  - {name: t4, count: 3, gpus: 2}
  - name: burst
    gpus: 8
    autoscale: {min: 1, max: 4, scaleUpDelay: 2m}
queues:
  - {name: research, gpuQuota: 8, overQuotaWeight: 2}
  - {name: nlp, parent: research, gpuQuota: 4, gpuLimit: 16, priority: 120}
objects:
  - {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: urgent}, value: 200}
scheduler: {placementStrategy: {gpu: spread}}
period: 2s
"""


def test_full_cluster(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(FULL)
    scenario = cluster.load(str(path))
    names = [n["metadata"]["name"] for n in scenario.nodes]
    assert names == ["big", "small-0", "small-1", "t4-0", "t4-1", "t4-2"]
    big = scenario.nodes[0]
    assert big["status"]["allocatable"] == {
        "cpu": "96000m",
        "memory": "1048576Mi",
        "pods": "110",
        "ephemeral-storage": "1048576Mi",  # the default, 1Ti: every kubelet reports a disk
        "nvidia.com/gpu": "8",
    }
    assert scenario.nodes[1]["status"]["allocatable"]["cpu"] == "500m"
    assert scenario.nodes[1]["status"]["allocatable"]["memory"] == "2048Mi"
    assert scenario.nodes[1]["status"]["allocatable"]["ephemeral-storage"] == "204800Mi"
    assert scenario.nodes[3]["metadata"]["labels"] == {objects.POOL_LABEL: "t4"}
    (pool,) = scenario.pools
    assert (pool.min_nodes, pool.max_nodes, pool.scale_up_delay, pool.scale_down_delay) == (
        1,
        4,
        120.0,
        600.0,
    )
    nlp = scenario.queues[1]
    assert nlp["spec"]["parentQueue"] == "research"
    assert nlp["spec"]["priority"] == 120
    assert nlp["spec"]["resources"]["gpu"] == {"quota": 4.0, "limit": 16.0, "overQuotaWeight": 1.0}
    assert [c["metadata"]["name"] for c in scenario.priority_classes] == ["urgent"]
    assert scenario.config is not None
    assert scenario.config.gpu_placement == "spread"
    assert scenario.period == 2.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: [{gpus: 1}]", "nodes[0]: name: is required"),
        ("nodes: [{name: a, gpus: -1}]", "nodes[0]: gpus: expected a whole number >= 0"),
        ("nodes: [{name: a, memory: lots}]", "nodes[0]: memory:"),
        ("nodes: [{name: a, ephemeralStorage: lots}]", "nodes[0]: ephemeralStorage:"),
        (
            "nodePools: [{name: p, count: 2, autoscale: {min: 0, max: 2}}]",
            "nodePools[0]: count: an autoscaled pool has min and max, not count",
        ),
        (
            "nodePools: [{name: p, autoscale: {min: 3, max: 2}}]",
            "nodePools[0].autoscale: max: must be at least min (3), got 2",
        ),
        ("queues: [{name: q}, {name: q}]\nnodes: [{name: a}]", "queues[1]: name: duplicate queue"),
        (
            "nodes: [{name: a}]\nscheduler: {placementStrategy: {gpu: tight}}",
            "scheduler: placementStrategy.gpu",
        ),
        (
            "nodes: [{name: a}]\nscheduler: {minRuntime: {preemptMinRuntme: 1s}}",
            "scheduler: minRuntime.preemptMinRuntme: unknown key",
        ),
        ("nodes: [{name: a}\n", "line 2 column 1: invalid YAML: expected ',' or ']'"),
        ("nodes: [{name: a}]\nperiod: soon", "cluster: period: expected a duration"),
        ("nodes: [{name: a}]\nobjects: [{kind: Pod}]", "objects[0]: kind: expected one of"),
        ("queues: []", "cluster: nodes: the cluster has no nodes and no node pools"),
        ("node: []", "cluster: node: unknown key"),
        # found by the fuzz tests: a MemoryError and an OverflowError, not one line
        (
            f"nodes: [{{name: a, count: {10**30}}}]",
            f"nodes[0]: count: expected at most 100000, got {10**30}",
        ),
        (
            "nodes: [{name: a, cpu: .inf}]",
            "nodes[0]: cpu: expected a number of at least 0, got inf",
        ),
        ("nodes: [{name: a, memory: .nan}]", "nodes[0]: memory: expected a number of at least 0"),
        # a pool's labels not a map: one line, not a TypeError
        (
            "nodePools: [{name: p, count: 1, labels: [zone=a]}]",
            "nodePools[0]: labels: expected a mapping of label to value",
        ),
        # the objects: manifests get the document loader's metadata check (crds.metadata)
        (
            "nodes: [{name: a}]\nobjects: [{apiVersion: v1, kind: Node,"
            " metadata: {name: b, annotations: [x]}}]",
            "Node b (objects[0]): metadata.annotations: expected a map of strings, got ['x']",
        ),
        (
            "nodes: [{name: a}]\nobjects: [{apiVersion: scheduling.k8s.io/v1,"
            " kind: PriorityClass, metadata: {name: pc, labels: {tier: 1}}, value: 5}]",
            "PriorityClass pc (objects[0]): metadata.labels[tier]: expected a string, got 1",
        ),
        # and the built-in kinds' field check (crds.builtin): a cordoned node's typo
        (
            "nodes: [{name: a}]\nobjects: [{apiVersion: v1, kind: Node,"
            " metadata: {name: b}, spec: {unschedulabel: true}}]",
            "Node b (objects[0]): spec.unschedulabel: unknown field",
        ),
    ],
)
def test_errors_name_the_entry_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        cluster.load(str(path))
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
