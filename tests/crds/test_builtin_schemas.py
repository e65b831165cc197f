"""Kubernetes' own kinds are checked as the API server's strict decoding checks them.

Why: a misspelt ``spec.unschedulabel`` on a Node, or ``priorityClasName`` on a Pod, used to
be dropped without a word, and the decision changed (pods bound to a cordoned node). The
built-in kinds are checked against the field table of the Kubernetes release the project
is tested on (``crds/builtin_schemas.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from crds import builtin, builtin_gen, errors
from podmuster.cli import main
from tests.kits.edits import replaced

_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "labels": {"app": "x"},
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}],
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {"f:x": {}}}}],
    },
    "spec": {
        "schedulerName": "kai-scheduler",
        "priority": 50,
        "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 30}],
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "500m"}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
            }
        ],
        "affinity": None,
    },
    "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
}


def test_a_pod_as_kubectl_prints_it_passes() -> None:
    assert builtin.check(_POD) is None  # int-or-string ports, numbers as quantities, nulls


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        (["spec", "priorityClasName"], "build", "spec.priorityClasName", "unknown field"),
        (["metadata", "foo"], 1, "metadata.foo", "unknown field"),
        (["spec", "containers", 0, "resourcez"], {}, "spec.containers[0].resourcez", "unknown"),
        (["status", "phase"], 3, "status.phase", "expected a string, got 3"),
        (["spec", "priority"], "high", "spec.priority", "expected an integer, got 'high'"),
        (["spec", "priority"], True, "spec.priority", "expected an integer, got true"),
        (["spec", "schedulingGates"], "x", "spec.schedulingGates", "expected a list, got 'x'"),
        (["spec", "nodeSelector"], ["a"], "spec.nodeSelector", "expected a map of strings"),
        (["spec", "nodeSelector", "zone"], 1, "spec.nodeSelector[zone]", "expected a string"),
        (["spec", "tolerations", 0], "gpu", "spec.tolerations[0]", "expected a map, got 'gpu'"),
        (
            ["spec", "containers", 0, "resources", "limits", "cpu"],
            [1],
            "spec.containers[0].resources.limits.cpu",
            "expected a quantity",
        ),
    ],
)
def test_a_pod_field_the_api_server_refuses_is_named(
    path: list[str | int], value: Any, field: str, message: str
) -> None:
    found = builtin.check(replaced(_POD, path, value))
    assert found is not None
    where, said = found
    assert errors.format_field_path(where) == field
    assert said.startswith(message), said


def test_other_kinds_and_unknown_kinds() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {}}
    assert builtin.check(node) is None
    node["spec"] = {"unschedulabel": True}
    assert builtin.check(node) == (["spec", "unschedulabel"], _unknown())
    priority = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5}
    assert builtin.check({**priority, "globalDefualt": True}) == (["globalDefualt"], _unknown())
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"paralelism": 4}}
    assert builtin.check(job) == (["spec", "paralelism"], _unknown())
    # a kind (or version) without a table entry is left to its own reader
    assert (
        builtin.check({"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": {"x": 1}}) is None
    )
    assert builtin.check({"apiVersion": "v2", "kind": "Pod", "spec": {"x": 1}}) is None


def _unknown() -> str:
    return f"unknown field (not in the Kubernetes {builtin_gen.KUBERNETES_VERSION} API)"


def test_the_table_covers_the_kinds_the_contract_reads() -> None:
    assert {"v1/Pod", "v1/Node", "scheduling.k8s.io/v1/PriorityClass", "batch/v1/Job"} <= (
        builtin.kinds()
    )


def test_the_table_is_what_the_openapi_document_gives() -> None:
    spec_dir = builtin_gen.default_spec_dir()
    if spec_dir is None:
        pytest.skip(f"no k8s.io/kubernetes@{builtin_gen.KUBERNETES_VERSION} in the Go module cache")
    assert builtin_gen.TARGET.read_text() == builtin_gen.text(spec_dir)


def test_schedule_leaves_a_misspelt_node_out_and_decides_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cordoned node's typo used to send the pod to it; now it is one line, the node is
    left out, and the pod waits for the other node's room."""

    def node(name: str, gpus: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "spec": spec,
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "nvidia.com/gpu": gpus}},
        }

    queue = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "team"},
        "spec": {
            "resources": {"gpu": {"quota": -1}, "cpu": {"quota": -1}, "memory": {"quota": -1}}
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"kai.scheduler/queue": "team"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
        },
    }
    typo = node("cordoned", "8", unschedulabel=True)
    path = tmp_path / "snapshot.yaml"
    objects = [node("small", "2"), typo, queue, pod]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    code = main(["schedule", str(path)])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.strip().splitlines() == [
        f"podmuster: {path}: Node cordoned: spec.unschedulabel: {_unknown()}"
    ]
    out = yaml.safe_load(captured.out)
    assert out["binds"] == []
    assert [g["outcome"] for g in out["podGroups"]] == ["pending"]
