"""Typed models: exact round trips, code defaults, validation and the CRD files themselves.

Aspects: every sample in ``data/`` (all fields set) and minimal objects dump
back to exactly the input; KAI's code defaults come from helpers and are never
injected into dumps; strictness (typos, wrong types, enums, minimums, Topology
rules); the CRD manifests' names, scopes, versions, subresources, printer
columns, quantity maps and absence of schema defaults; the package facade.
"""

from __future__ import annotations

from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from crds import bindrequest, podgroup, queue, rules, topology
from crds.meta import KaiModel

DATA = Path(__file__).parent / "data"
MODELS: dict[str, type[KaiModel]] = {
    "PodGroup": podgroup.PodGroup,
    "Queue": queue.Queue,
    "BindRequest": bindrequest.BindRequest,
    "Topology": topology.Topology,
}


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DATA / name).read_text())
    return loaded


@pytest.mark.parametrize("path", sorted(DATA.glob("*.yaml")), ids=lambda p: p.name)
def test_full_samples_round_trip_exactly(path: Path) -> None:
    manifest = yaml.safe_load(path.read_text())
    model = MODELS[manifest["kind"]].model_validate(manifest)
    assert model.to_manifest() == manifest
    assert model.model_dump(by_alias=True, exclude_none=True) == manifest
    assert MODELS[manifest["kind"]].model_validate(model.to_manifest()) == model


@pytest.mark.parametrize(
    "manifest",
    [
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "a"},
            "spec": {},
        },
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "q"},
            "spec": {},
        },
        {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {"name": "b"},
            "spec": {},
        },
    ],
)
def test_minimal_objects_get_no_injected_defaults(manifest: dict[str, Any]) -> None:
    assert MODELS[manifest["kind"]].model_validate(manifest).to_manifest() == manifest


def test_snake_case_names_are_accepted_too() -> None:
    spec = podgroup.PodGroupSpec(min_member=2, priority_class_name="train")
    assert spec.to_manifest() == {"minMember": 2, "priorityClassName": "train"}
    gpu = bindrequest.ReceivedGPU(count=1, portion="0.50")
    assert bindrequest.BindRequestSpec(received_gpu=gpu).to_manifest() == {
        "receivedGPU": {"count": 1, "portion": "0.50"}
    }


def test_podgroup_code_defaults() -> None:
    spec = podgroup.PodGroupSpec()
    assert spec.mark_unschedulable_or_default() is True
    assert spec.scheduling_backoff_or_default() == podgroup.SCHEDULING_BACKOFF_NONE == -1
    assert spec.default_min_available() == 1
    assert spec.preemptibility_for(99) == podgroup.PREEMPTIBLE
    assert spec.preemptibility_for(100) == podgroup.NON_PREEMPTIBLE
    explicit = podgroup.PodGroupSpec(
        min_member=4, preemptibility="preemptible", mark_unschedulable=False
    )
    assert explicit.default_min_available() == 4
    assert explicit.preemptibility_for(125) == "preemptible"
    assert explicit.mark_unschedulable_or_default() is False
    assert podgroup.SubGroup(name="w").min_available() == 0  # a leaf must set minMember
    assert podgroup.SubGroup(name="w", min_member=0).min_available() == 0


def test_queue_code_defaults_and_special_values() -> None:
    q = queue.Queue.model_validate(sample("queue-full.yaml"))
    assert q.spec.priority_or_default() == 120
    assert q.parent() == "research"
    res = q.spec.resources_or_default()
    assert res.get("gpu").limit_or_default() == Fraction(17, 2)
    assert res.get("cpu").quota_or_default() == queue.UNLIMITED
    assert res.get("memory").over_quota_weight_or_default() == Fraction(1, 2)

    bare = queue.Queue.model_validate({"metadata": {"name": "bare"}})
    assert bare.spec.priority_or_default() == queue.DEFAULT_QUEUE_PRIORITY == 100
    assert bare.parent() is None
    empty = bare.spec.resources_or_default()
    assert empty.get("gpu").quota_or_default() == 0
    assert empty.get("gpu").limit_or_default() == 0  # unset limit = hard cap of zero
    for field in ("quota", "limit"):
        with pytest.raises(pydantic.ValidationError, match="greater than or equal to -1"):
            queue.QueueResources.model_validate({"memory": {field: -5}})


@pytest.mark.parametrize(
    ("status", "limit", "failed"),
    [
        (None, None, False),
        ({"phase": "Pending"}, None, False),
        ({"phase": "Failed"}, None, True),
        ({"phase": "Failed", "failedAttempts": 1}, 3, False),
        ({"phase": "Failed", "failedAttempts": 3}, 3, True),
    ],
)
def test_bindrequest_failed_for_good(
    status: dict[str, Any] | None, limit: int | None, failed: bool
) -> None:
    request = bindrequest.BindRequest.model_validate(
        {"metadata": {"name": "p"}, "spec": {"backoffLimit": limit}, "status": status}
    )
    manifest = request.to_manifest()
    assert rules.bind_request_finally_failed(manifest["spec"], manifest.get("status", {})) is failed


@pytest.mark.parametrize(
    ("kind", "patch", "problem"),
    [
        ("PodGroup", {"spec": {"minmember": 2}}, "extra_forbidden"),
        ("PodGroup", {"spec": {"minMember": -1}}, "greater_than_equal"),
        ("PodGroup", {"spec": {"minMember": "2"}}, "int_type"),
        ("PodGroup", {"spec": {"minMember": 2**31}}, "value_error"),
        ("PodGroup", {"spec": {"preemptibility": "Preemptible"}}, "literal_error"),
        ("PodGroup", {"spec": {"subGroups": [{"name": ""}]}}, "string_too_short"),
        ("PodGroup", {"spec": {"subGroups": [{"minMember": 1}]}}, "missing"),
        ("PodGroup", {"spec": {"markUnschedulable": 1}}, "bool_type"),
        ("PodGroup", {"status": {"resourcesStatus": {"requested": {"cpu": "1mi"}}}}, "value_error"),
        (
            "PodGroup",
            {"status": {"conditions": [{"lastTransitionTime": "yesterday"}]}},
            "value_error",
        ),
        ("PodGroup", {"kind": "Queue"}, "literal_error"),
        ("PodGroup", {"extra": 1}, "extra_forbidden"),
        ("Queue", {"spec": {"resources": {"gpu": {"quota": "4"}}}}, "int_type"),
        ("Queue", {"status": {"conditions": [{"type": "OverQuota"}]}}, "missing"),
        ("BindRequest", {"spec": {"receivedResourceType": "Shared"}}, "literal_error"),
        ("Topology", {"spec": {"levels": []}}, "too_short"),
        ("Topology", {"spec": {"levels": [{"nodeLabel": "a"}] * 2}}, "value_error"),
        ("Topology", {"spec": {"levels": [{"nodeLabel": "Bad Label"}]}}, "string_pattern_mismatch"),
        (
            "Topology",
            {"spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}]}},
            "value_error",
        ),
    ],
)
def test_invalid_objects_are_rejected(kind: str, patch: dict[str, Any], problem: str) -> None:
    manifest: dict[str, Any] = {"metadata": {"name": "x"}, **patch}
    if kind == "Topology":
        manifest.setdefault("spec", {"levels": [{"nodeLabel": "rack"}]})
    with pytest.raises(pydantic.ValidationError) as caught:
        MODELS[kind].model_validate(manifest)
    assert caught.value.errors()[0]["type"] == problem


def test_object_meta_keeps_unknown_fields() -> None:
    pg = podgroup.PodGroup.model_validate(
        {"metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}], "selfLink": "/x"}}
    )
    assert pg.to_manifest()["metadata"]["managedFields"] == [{"manager": "kubectl"}]
    assert pg.metadata.label("missing") is None


# ----------------------------------------------------------------- CRD files


def crd(filename: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(resources.files("crds").joinpath(filename).read_text())
    return loaded


def _walk(node: Any, path: str = "") -> list[tuple[str, Any]]:
    found = [(path, node)]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _walk(child, f"{path}.{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _walk(child, f"{path}[{i}]")
    return found


@pytest.mark.parametrize(
    ("filename", "group", "kind", "version", "scope", "status", "short"),
    [
        (
            "scheduling.run.ai_podgroups.yaml",
            "scheduling.run.ai",
            "PodGroup",
            "v2alpha2",
            "Namespaced",
            True,
            ["pg"],
        ),
        (
            "scheduling.run.ai_queues.yaml",
            "scheduling.run.ai",
            "Queue",
            "v2",
            "Cluster",
            True,
            None,
        ),
        (
            "scheduling.run.ai_bindrequests.yaml",
            "scheduling.run.ai",
            "BindRequest",
            "v1alpha2",
            "Namespaced",
            True,
            None,
        ),
        (
            "kai.scheduler_topologies.yaml",
            "kai.scheduler",
            "Topology",
            "v1alpha1",
            "Cluster",
            False,
            None,
        ),
    ],
)
def test_crd_identity(
    filename: str,
    group: str,
    kind: str,
    version: str,
    scope: str,
    status: bool,
    short: list[str] | None,
) -> None:
    doc = crd(filename)
    spec = doc["spec"]
    assert doc["apiVersion"] == "apiextensions.k8s.io/v1"
    assert doc["metadata"]["name"] == f"{spec['names']['plural']}.{group}"
    assert filename == f"{group}_{spec['names']['plural']}.yaml"
    assert (spec["group"], spec["names"]["kind"], spec["scope"]) == (group, kind, scope)
    assert spec["names"].get("shortNames") == short
    (served,) = spec["versions"]
    assert (served["name"], served["served"], served["storage"]) == (version, True, True)
    assert ("status" in served.get("subresources", {})) is status


@pytest.mark.parametrize(
    "filename", [p.name for p in resources.files("crds").iterdir() if p.name.endswith(".yaml")]
)
def test_crd_schemas_are_structural_without_defaults(filename: str) -> None:
    nodes = _walk(crd(filename)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert [p for p, n in nodes if isinstance(n, dict) and "default" in n] == []
    preserved = [
        p for p, n in nodes if isinstance(n, dict) and n.get("x-kubernetes-preserve-unknown-fields")
    ]
    assert all(p.endswith(".allocation") for p in preserved), preserved
    _assert_structural(crd(filename)["spec"]["versions"][0]["schema"]["openAPIV3Schema"], "")


def _assert_structural(node: dict[str, Any], path: str) -> None:
    """Every schema node has a type (int-or-string nodes: the standard anyOf instead)."""
    if node.get("x-kubernetes-int-or-string"):
        assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
        return
    assert node.get("type") in ("object", "array", "string", "integer", "number", "boolean"), path
    for name, child in node.get("properties", {}).items():
        _assert_structural(child, f"{path}.{name}")
    if "items" in node:
        _assert_structural(node["items"], path + "[]")
    if isinstance(node.get("additionalProperties"), dict):
        _assert_structural(node["additionalProperties"], path + "{}")


def _columns(filename: str) -> list[tuple[str, str, str]]:
    version = crd(filename)["spec"]["versions"][0]
    return [
        (c["name"], c["jsonPath"], c["type"]) for c in version.get("additionalPrinterColumns", [])
    ]


def test_printer_columns() -> None:
    assert _columns("scheduling.run.ai_queues.yaml") == [
        ("Priority", ".spec.priority", "string"),
        ("Parent", ".spec.parentQueue", "string"),
        ("Children", ".status.childQueues", "string"),
        ("DisplayName", ".spec.displayName", "string"),
    ]
    assert [c[0] for c in _columns("scheduling.run.ai_podgroups.yaml")] == [
        "Queue",
        "MinMember",
        "Priority",
        "Age",
    ]
    assert [c[0] for c in _columns("scheduling.run.ai_bindrequests.yaml")] == [
        "Pod",
        "Node",
        "Phase",
        "Age",
    ]
    assert _columns("kai.scheduler_topologies.yaml") == []


def test_to_patch_keeps_an_explicit_none_as_a_removal() -> None:
    """The binder's merge patches: set fields only, ``None`` removes a stale field."""
    status = bindrequest.BindRequestStatus(phase="Succeeded", reason=None)
    assert status.to_patch() == {"phase": "Succeeded", "reason": None}
    assert status.to_manifest() == {"phase": "Succeeded"}
