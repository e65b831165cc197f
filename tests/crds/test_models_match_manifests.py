"""Drift test: the pydantic models and the CRD manifests describe the same API.

Both sides are flattened into ``{field path: facts}`` (type, format, enum,
minimum, length/item bounds, pattern, required-ness, quantity, preserve-unknown)
and compared both ways, so a field added, renamed or constrained on one side
only fails here. Paths read like ``spec.subGroups[].minMember`` and
``status.allocated{}`` (map values).

Also covered: the full sample objects in ``data/`` set every field the models
define, so the round-trip tests really exercise all of them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import pydantic
import pytest
import yaml

from crds import bindrequest, generate, meta, podgroup, queue, topology

KINDS: dict[str, tuple[type[pydantic.BaseModel], str]] = {
    "PodGroup": (podgroup.PodGroup, "scheduling.run.ai_podgroups.yaml"),
    "Queue": (queue.Queue, "scheduling.run.ai_queues.yaml"),
    "BindRequest": (bindrequest.BindRequest, "scheduling.run.ai_bindrequests.yaml"),
    "Topology": (topology.Topology, "kai.scheduler_topologies.yaml"),
}
SAMPLES = {
    "PodGroup": "podgroup-full.yaml",
    "Queue": "queue-full.yaml",
    "BindRequest": "bindrequest-full.yaml",
    "Topology": "topology-full.yaml",
}
DATA = Path(__file__).parent / "data"
Facts = dict[str, Any]


def load_crd_schema(filename: str) -> dict[str, Any]:
    text = resources.files("crds").joinpath(filename).read_text(encoding="utf-8")
    crd = yaml.safe_load(text)
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


# ---------------------------------------------------------------- CRD side


def schema_facts(node: dict[str, Any], required: bool) -> Facts:
    facts: Facts = {"required": required}
    if node.get("x-kubernetes-int-or-string"):
        facts["type"] = "quantity"
        facts["pattern"] = node.get("pattern")
    else:
        facts["type"] = node["type"]
    if node.get("x-kubernetes-preserve-unknown-fields"):
        facts["preserve"] = True
    for key in ("format", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        if key in node:
            facts[key] = node[key]
    if node.get("pattern") and facts["type"] != "quantity":
        facts["pattern"] = node["pattern"]
    if "enum" in node:
        facts["enum"] = sorted(node["enum"])
    return facts


def flatten_schema(node: dict[str, Any], prefix: str = "") -> dict[str, Facts]:
    out: dict[str, Facts] = {}
    required = set(node.get("required", []))
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        out[path] = schema_facts(child, name in required)
        out.update(flatten_children(child, path))
    return out


def flatten_children(node: dict[str, Any], path: str) -> dict[str, Facts]:
    out: dict[str, Facts] = {}
    if path == "metadata":
        return out
    if "properties" in node:
        out.update(flatten_schema(node, path + "."))
    if "items" in node:
        out[path + "[]"] = schema_facts(node["items"], False)
        out.update(flatten_children(node["items"], path + "[]"))
    if isinstance(node.get("additionalProperties"), dict):
        out[path + "{}"] = schema_facts(node["additionalProperties"], False)
        out.update(flatten_children(node["additionalProperties"], path + "{}"))
    return out


# -------------------------------------------------------------- model side


def model_type_facts(tp: Any, metadata: list[Any]) -> Facts:
    tp = generate.unwrap(tp, metadata)
    facts: Facts = {}
    if any(isinstance(m, meta.QuantityMarker) for m in metadata):
        return {"type": "quantity", "pattern": QUANTITY_PATTERN}
    if tp == (int, float):
        facts["type"] = "number"
    elif get_origin(tp) is Literal:
        facts["type"], facts["enum"] = "string", sorted(get_args(tp))
    elif isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        facts["type"] = "object"
    elif get_origin(tp) is dict:
        facts["type"] = "object"
        if get_args(tp)[1] is Any:
            facts["preserve"] = True
    elif get_origin(tp) is list:
        facts["type"] = "array"
    else:
        facts["type"] = {str: "string", int: "integer", float: "number", bool: "boolean"}[tp]
    length_keys = (
        ("minItems", "maxItems") if facts["type"] == "array" else ("minLength", "maxLength")
    )
    for m in metadata:
        if isinstance(m, meta.SchemaFormat):
            facts["format"] = m.format
        elif isinstance(m, annotated_types.Ge):
            facts["minimum"] = m.ge
        elif isinstance(m, annotated_types.Le):
            facts["maximum"] = m.le
        elif isinstance(m, annotated_types.MinLen):
            facts[length_keys[0]] = m.min_length
        elif isinstance(m, annotated_types.MaxLen):
            facts[length_keys[1]] = m.max_length
        elif getattr(m, "pattern", None):
            facts["pattern"] = m.pattern
    return facts


def flatten_type(tp: Any, path: str) -> dict[str, Facts]:
    """Facts for what sits inside ``tp`` (model fields, list items, map values)."""
    tp = generate.unwrap(tp, [])
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return {} if tp is meta.ObjectMeta else flatten_model(tp, path + ".")
    if get_origin(tp) in (list, dict):
        inner = get_args(tp)[-1]
        if inner is Any:
            return {}
        child = path + ("[]" if get_origin(tp) is list else "{}")
        return {
            child: {**model_type_facts(inner, []), "required": False},
            **flatten_type(inner, child),
        }
    return {}


def flatten_model(model: type[pydantic.BaseModel], prefix: str = "") -> dict[str, Facts]:
    out: dict[str, Facts] = {}
    for name, field in model.model_fields.items():
        path = prefix + (field.alias or name)
        facts = model_type_facts(field.annotation, list(field.metadata))
        facts["required"] = field.is_required()
        if path in ("apiVersion", "kind"):
            facts.pop("enum")  # the CRD leaves these to the apiserver
        if path == "metadata":
            facts["required"] = False  # ours insists on a name; the CRD leaves it to the apiserver
        out[path] = facts
        out.update(flatten_type(field.annotation, path))
    return out


QUANTITY_PATTERN = load_crd_schema("scheduling.run.ai_queues.yaml")["properties"]["status"][
    "properties"
]["allocated"]["additionalProperties"]["pattern"]


# ------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_model_and_crd_have_the_same_fields(kind: str) -> None:
    model, filename = KINDS[kind]
    from_model = flatten_model(model)
    from_crd = flatten_schema(load_crd_schema(filename))
    assert sorted(set(from_model) - set(from_crd)) == [], "fields only in the model"
    assert sorted(set(from_crd) - set(from_model)) == [], "fields only in the CRD"
    differing = {
        p: (from_model[p], from_crd[p]) for p in from_model if from_model[p] != from_crd[p]
    }
    assert differing == {}, "(model facts, CRD facts) differ"


def test_flattening_sees_constraints() -> None:
    """Guard the guard: the flattener must really pick up enums, minimums and formats."""
    facts = flatten_model(podgroup.PodGroup)
    assert facts["spec.minMember"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 0,
        "required": False,
    }
    assert facts["spec.preemptibility"]["enum"] == ["non-preemptible", "preemptible"]
    assert facts["spec.subGroups[].name"]["required"] is True
    assert facts["status.resourcesStatus.allocated{}"]["type"] == "quantity"
    assert flatten_model(topology.Topology)["spec.levels"]["maxItems"] == topology.MAX_LEVELS


def _map_paths(value: Any, path: str, model_paths: set[str]) -> set[str]:
    """Present paths with map keys replaced by ``{}`` where the model has a map."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = (
                f"{path}{{}}" if f"{path}{{}}" in model_paths else f"{path}.{key}" if path else key
            )
            found.add(child_path)
            found |= _map_paths(child, child_path, model_paths)
    elif isinstance(value, list):
        for child in value:
            found.add(path + "[]")
            found |= _map_paths(child, path + "[]", model_paths)
    return found


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_full_samples_set_every_field(kind: str) -> None:
    model, _ = KINDS[kind]
    model_paths = set(flatten_model(model))
    sample = yaml.safe_load((DATA / SAMPLES[kind]).read_text())
    present = _map_paths(sample, "", model_paths)
    assert sorted(model_paths - present) == []
