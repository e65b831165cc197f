"""Write ``crds/builtin_schemas.json``, the field schemas of the built-in kinds we read.

Why: the command-line contract checks every object on input as the API server does with
strict field validation: an unknown field or a value of the wrong type is an error naming
the field. For KAI's kinds the pydantic models say which fields exist; for Kubernetes' own
kinds (Pod, Node, PriorityClass, Job, ...) the API server's OpenAPI document does. This
turns that document (``api/openapi-spec/v3`` of the ``k8s.io/kubernetes`` Go module, the
version our test control plane runs) into a compact table: per definition, its fields and
each field's type, without descriptions. :mod:`crds.builtin` checks objects against it.

``python -m crds.builtin_gen [--spec-dir DIR] [--check]``; without ``--spec-dir`` the Go
module cache is searched for ``k8s.io/kubernetes@`` :data:`KUBERNETES_VERSION`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "v1.37.2"
"""The Kubernetes release whose API the table describes (the e2e control plane's)."""

TARGET = Path(__file__).resolve().parent / "builtin_schemas.json"

KINDS: dict[str, tuple[str, ...]] = {
    "api__v1_openapi.json": (
        "v1/Pod",
        "v1/Node",
        "v1/Namespace",
        "v1/PersistentVolumeClaim",
        "v1/PersistentVolume",
    ),
    "apis__scheduling.k8s.io__v1_openapi.json": ("scheduling.k8s.io/v1/PriorityClass",),
    "apis__storage.k8s.io__v1_openapi.json": (
        "storage.k8s.io/v1/StorageClass",
        "storage.k8s.io/v1/CSINode",
    ),
    "apis__batch__v1_openapi.json": ("batch/v1/Job", "batch/v1/CronJob"),
    "apis__apps__v1_openapi.json": (
        "apps/v1/Deployment",
        "apps/v1/StatefulSet",
        "apps/v1/ReplicaSet",
    ),
    "apis__resource.k8s.io__v1_openapi.json": (
        "resource.k8s.io/v1/ResourceClaim",
        "resource.k8s.io/v1/ResourceClaimTemplate",
        "resource.k8s.io/v1/ResourceSlice",
        "resource.k8s.io/v1/DeviceClass",
    ),
}
"""OpenAPI file -> the ``apiVersion/Kind`` of each built-in kind read there."""

# Compact type codes (crds.builtin reads them)
SCALARS = {"string": "s", "integer": "i", "number": "n", "boolean": "b"}
ANY, QUANTITY, INT_OR_STRING, TIME = "x", "q", "is", "t"
_PREFIX = "#/components/schemas/"


def default_spec_dir() -> Path | None:
    """The Go module cache's ``k8s.io/kubernetes@VERSION/api/openapi-spec/v3``, if there."""
    cache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    found = Path(cache) / "k8s.io" / f"kubernetes@{KUBERNETES_VERSION}" / "api/openapi-spec/v3"
    return found if found.is_dir() else None


def _short(ref: str) -> str:
    return ref.removeprefix(_PREFIX)


def _encode(schema: dict[str, Any], wanted: list[str]) -> Any:
    """The compact type of one property schema; referenced definitions go to ``wanted``."""
    if "allOf" in schema and len(schema["allOf"]) == 1:
        schema = {**schema, **schema["allOf"][0]}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        wanted.append(_short(ref))
        return "#" + _short(ref)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return ANY
    if schema.get("format") == "int-or-string":
        return INT_OR_STRING
    kind = schema.get("type")
    if kind == "array":
        return ["l", _encode(schema.get("items", {}), wanted)]
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if "properties" in schema:
            return _object(schema, wanted)
        extra = schema.get("additionalProperties")
        return ["m", _encode(extra, wanted)] if isinstance(extra, dict) else ANY
    if kind == "string" and schema.get("format") == "date-time":
        return TIME
    if isinstance(kind, str) and kind in SCALARS:
        return SCALARS[kind]
    one_of = {branch.get("type") for branch in schema.get("oneOf", ())}
    if one_of == {"string", "number"}:
        return QUANTITY
    if one_of == {"integer", "string"}:
        return INT_OR_STRING
    return ANY


def _object(schema: dict[str, Any], wanted: list[str]) -> dict[str, Any]:
    return {name: _encode(field, wanted) for name, field in sorted(schema["properties"].items())}


def build(spec_dir: Path) -> dict[str, Any]:
    """The table: ``kinds`` (``apiVersion/Kind`` -> definition) and ``definitions``."""
    kinds: dict[str, str] = {}
    definitions: dict[str, Any] = {}
    for file_name, wanted_kinds in KINDS.items():
        schemas = json.loads((spec_dir / file_name).read_text())["components"]["schemas"]
        by_gvk: dict[str, str] = {}
        for name, schema in schemas.items():
            for gvk in schema.get("x-kubernetes-group-version-kind", ()):
                group = f"{gvk['group']}/" if gvk["group"] else ""
                by_gvk[f"{group}{gvk['version']}/{gvk['kind']}"] = name
        todo: list[str] = []
        for kind in wanted_kinds:
            kinds[kind] = by_gvk[kind]
            todo.append(by_gvk[kind])
        while todo:
            name = todo.pop()
            if name in definitions:
                continue
            encoded = _encode(schemas[name], todo)
            definitions[name] = encoded
    return {
        "kubernetes": KUBERNETES_VERSION,
        "kinds": dict(sorted(kinds.items())),
        "definitions": dict(sorted(definitions.items())),
    }


def text(spec_dir: Path) -> str:
    return json.dumps(build(spec_dir), indent=0, sort_keys=False, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec-dir", type=Path, help="api/openapi-spec/v3 of k8s.io/kubernetes")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs")
    args = parser.parse_args(argv)
    spec_dir = args.spec_dir or default_spec_dir()
    if spec_dir is None:
        print(f"no k8s.io/kubernetes@{KUBERNETES_VERSION} in the Go module cache", file=sys.stderr)
        return 2
    wanted = text(spec_dir)
    if args.check:
        same = TARGET.exists() and TARGET.read_text() == wanted
        if not same:
            print(f"{TARGET} differs from the OpenAPI document", file=sys.stderr)
        return 0 if same else 1
    TARGET.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
