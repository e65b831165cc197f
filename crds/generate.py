"""The CRD manifests, written from the pydantic models (``make crds``).

Why this module exists: the models in :mod:`crds` are the one definition of KAI's API.
Everything a CRD schema says about a field comes from its model: the type, the
OpenAPI ``format`` (:class:`~crds.meta.SchemaFormat`), int-or-string quantities
(:data:`~crds.meta.QUANTITY`), enums (``Literal``), bounds and patterns
(``Field(ge=..., min_length=..., pattern=...)``), required-ness, schema-free blobs
(``dict[str, Any]``), CEL rules (:class:`~crds.meta.CelRule`) and the description
(the field's docstring). What is not about fields (names, scope, printer columns,
subresources) is the small table :data:`CRDS` below.

``python -m crds.generate`` rewrites ``crds/*.yaml`` and the chart's copies;
``--check`` exits 1 and names the files that differ from what would be written
(tests/crds/test_generated_manifests.py runs the same comparison).
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
import pydantic
import yaml

from crds import bindrequest, meta, podgroup, queue, topology

__all__ = ["CRDS", "CrdSpec", "main", "manifest", "manifest_text", "schema_of", "targets", "unwrap"]

ROOT = Path(__file__).resolve().parent.parent
CHART_CRDS = ROOT / "charts" / "podmuster" / "crds"


@dataclass(frozen=True)
class CrdSpec:
    """What a CRD says beyond its schema."""

    model: type[meta.KaiModel]
    plural: str
    scope: Literal["Namespaced", "Cluster"]
    description: str
    short_names: tuple[str, ...] = ()
    printer_columns: tuple[tuple[str, str, str], ...] = ()
    """``(name, type, jsonPath)`` of each ``kubectl get`` column."""
    status_subresource: bool = True

    @property
    def kind(self) -> str:
        return str(self.model.model_fields["kind"].default)

    @property
    def api_version(self) -> str:
        return str(self.model.model_fields["api_version"].default)

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def filename(self) -> str:
        return f"{self.group}_{self.plural}.yaml"


CRDS: tuple[CrdSpec, ...] = (
    CrdSpec(
        podgroup.PodGroup,
        plural="podgroups",
        scope="Namespaced",
        description="A gang of pods scheduled together.",
        short_names=("pg",),
        printer_columns=(
            ("Queue", "string", ".spec.queue"),
            ("MinMember", "integer", ".spec.minMember"),
            ("Priority", "string", ".spec.priorityClassName"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
    CrdSpec(
        queue.Queue,
        plural="queues",
        scope="Cluster",
        description="A node of the hierarchical fair-share queue tree.",
        printer_columns=(
            ("Priority", "string", ".spec.priority"),
            ("Parent", "string", ".spec.parentQueue"),
            ("Children", "string", ".status.childQueues"),
            ("DisplayName", "string", ".spec.displayName"),
        ),
    ),
    CrdSpec(
        bindrequest.BindRequest,
        plural="bindrequests",
        scope="Namespaced",
        description="A request from the scheduler to bind a pod to a node.",
        printer_columns=(
            ("Pod", "string", ".spec.podName"),
            ("Node", "string", ".spec.selectedNode"),
            ("Phase", "string", ".status.phase"),
            ("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
    CrdSpec(
        topology.Topology,
        plural="topologies",
        scope="Cluster",
        description="Node-label levels used for topology-aware placement.",
        status_subresource=False,
    ),
)

_BOUNDS = (
    (annotated_types.Ge, "ge", "minimum"),
    (annotated_types.Le, "le", "maximum"),
)


def unwrap(annotation: Any, metadata: list[Any]) -> Any:
    """Strip ``Optional`` and ``Annotated``, collecting the ``Annotated`` metadata."""
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = get_args(annotation)
            for item in extra:
                if isinstance(item, pydantic.fields.FieldInfo):
                    metadata.extend(item.metadata)
                else:
                    metadata.append(item)
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return tuple(members)
            annotation = members[0]
        else:
            return annotation


def _description(info: pydantic.fields.FieldInfo) -> dict[str, Any]:
    return {"description": " ".join(info.description.split())} if info.description else {}


def schema_of(annotation: Any, metadata: list[Any]) -> dict[str, Any]:
    """The OpenAPI schema of one field's type (without its description)."""
    annotation = unwrap(annotation, metadata)
    if any(isinstance(m, meta.QuantityMarker) for m in metadata):
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": meta.QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    schema: dict[str, Any]
    if annotation == (int, float):
        schema = {"type": "number"}
    elif get_origin(annotation) is Literal:
        schema = {"type": "string", "enum": list(get_args(annotation))}
    elif isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        schema = {"type": "object"}
        if annotation is not meta.ObjectMeta:
            schema.update(_properties(annotation))
    elif get_origin(annotation) is dict:
        value = get_args(annotation)[1]
        if value is Any:
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = {"type": "object", "additionalProperties": schema_of(value, [])}
    elif get_origin(annotation) is list:
        schema = {"type": "array", "items": schema_of(get_args(annotation)[0], [])}
    else:
        names = {str: "string", int: "integer", float: "number", bool: "boolean"}
        schema = {"type": names[annotation]}
    _constraints(schema, metadata)
    return schema


def _constraints(schema: dict[str, Any], metadata: list[Any]) -> None:
    is_array = schema["type"] == "array"
    for item in metadata:
        if isinstance(item, meta.SchemaFormat):
            schema["format"] = item.format
        for marker, attribute, key in _BOUNDS:
            if isinstance(item, marker):
                schema[key] = getattr(item, attribute)
        if isinstance(item, annotated_types.MinLen):
            schema["minItems" if is_array else "minLength"] = item.min_length
        elif isinstance(item, annotated_types.MaxLen):
            schema["maxItems" if is_array else "maxLength"] = item.max_length
        elif getattr(item, "pattern", None):
            schema["pattern"] = item.pattern
        elif isinstance(item, meta.ListType):
            schema["x-kubernetes-list-type"] = item.list_type
        elif isinstance(item, meta.CelRule):
            rule = {"rule": item.rule, "message": item.message}
            schema.setdefault("x-kubernetes-validations", []).append(rule)


def _properties(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        schema = schema_of(info.annotation, list(info.metadata))
        if alias in ("apiVersion", "kind"):
            schema.pop("enum", None)  # the API server checks these itself
        properties[alias] = {**_description(info), **schema}
        if info.is_required() and alias != "metadata":
            required.append(alias)
    out: dict[str, Any] = {"properties": properties}
    if required:
        out["required"] = required
    return out


def manifest(spec: CrdSpec) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind."""
    schema = {"description": spec.description, "type": "object", **_properties(spec.model)}
    names: dict[str, Any] = {
        "kind": spec.kind,
        "listKind": f"{spec.kind}List",
        "plural": spec.plural,
        "singular": spec.kind.lower(),
    }
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    version: dict[str, Any] = {"name": spec.version, "served": True, "storage": True}
    if spec.printer_columns:
        version["additionalPrinterColumns"] = [
            {"name": name, "type": kind, "jsonPath": path}
            for name, kind, path in spec.printer_columns
        ]
    version["schema"] = {"openAPIV3Schema": schema}
    if spec.status_subresource:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{spec.plural}.{spec.group}"},
        "spec": {
            "group": spec.group,
            "names": names,
            "scope": spec.scope,
            "versions": [version],
        },
    }


def manifest_text(spec: CrdSpec) -> str:
    """The file's text: a header saying where it comes from, then the CRD."""
    module = spec.model.__module__.replace(".", "/") + ".py"
    header = (
        f"# podmuster: {spec.kind} CRD ({spec.api_version})\n"
        f"# Generated from {module} by `make crds` (crds/generate.py): do not edit.\n"
        "# Field names, types and validations follow KAI Scheduler's API so existing\n"
        "# manifests work unchanged. KAI declares no schema defaults: defaults are\n"
        "# applied in code (see docs/api.md).\n"
        "---\n"
    )
    body = yaml.safe_dump(manifest(spec), sort_keys=False, width=1000, allow_unicode=True)
    return header + body


def targets() -> dict[Path, str]:
    """Every manifest file and the text it should have (``crds/`` and the chart's copy)."""
    out: dict[Path, str] = {}
    for spec in CRDS:
        text = manifest_text(spec)
        out[ROOT / "crds" / spec.filename] = text
        out[CHART_CRDS / spec.filename] = text
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m crds.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on drift")
    args = parser.parse_args(argv)
    stale = [
        path
        for path, text in targets().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)}: differs from the models (run make crds)")
        return 1 if stale else 0
    for path in stale:
        path.write_text(targets()[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
