"""Keyword builders for adapter tests: objects with uids, pods owned by them, contexts,
and the family workloads of fixtures/adapter-families.yaml with one field changed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from integrations import base, registry

FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""tests/integrations/fixtures (also conftest.FIXTURES; importable under any conftest)."""


def families() -> dict[str, dict[str, Any]]:
    """fixtures/adapter-families.yaml by kind: one small, valid workload per family."""
    with (FIXTURES / "adapter-families.yaml").open() as handle:
        return {doc["kind"]: doc for doc in yaml.safe_load_all(handle) if doc}


def with_field(doc: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``doc`` with ``field`` (``a.b[0].c``) set to ``value``."""
    doc = copy.deepcopy(doc)
    keys: list[str | int] = []
    for part in field.split("."):
        name, _, index = part.partition("[")
        keys += [name, int(index.rstrip("]"))] if index else [name]
    parent: Any = doc
    for key in keys[:-1]:
        parent = parent[key] if isinstance(key, int) else parent.setdefault(key, {})
    parent[keys[-1]] = value
    return doc


def obj(
    api_version: str,
    kind: str,
    name: str,
    *,
    namespace: str = "ns",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    owner: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta, **extra}
    if spec is not None:
        body["spec"] = spec
    return body


def pod(name: str = "p", **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("spec", {"containers": [{"name": "c"}]})
    return obj("v1", "Pod", name, **kwargs)


def with_its_pod(doc: dict[str, Any], labels: dict[str, str]) -> list[dict[str, Any]]:
    """``doc`` (given a uid) and a pod ``p-0`` it owns, labelled ``labels``: a workload met
    with its pods, as in a cluster dump or live, so it is grouped, not synthesized."""
    doc = copy.deepcopy(doc)
    doc["metadata"]["uid"] = f"u-{doc['metadata']['name']}"
    return [doc, pod("p-0", namespace=doc["metadata"]["namespace"], labels=labels, owner=doc)]


class Lookup:
    """An ObjectLookup over a list of objects."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Any:
        for o in self.objects:
            meta = o["metadata"]
            if (
                o["kind"] == kind
                and meta["name"] == name
                and meta.get("namespace", "") == namespace
            ):
                return o
        return None

    def list(self, api_version: str, kind: str, namespace: str, labels: Any) -> Any:
        return [
            o
            for o in self.objects
            if o["kind"] == kind
            and o["metadata"].get("namespace") == namespace
            and all(o["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())
        ]


def ctx(
    top: dict[str, Any],
    the_pod: dict[str, Any],
    owners: tuple[dict[str, Any], ...] | None = None,
    *,
    lookup: Any = None,
    classes: tuple[str, ...] = ("train", "build", "inference", "build-preemptible"),
    defaults: tuple[base.DefaultPriority, ...] = (),
    **settings: Any,
) -> base.GroupingContext:
    return base.GroupingContext(
        top_owner=top,
        pod=the_pod,
        owners=(top,) if owners is None else owners,
        lookup=lookup or Lookup(),
        priority_classes=frozenset(classes),
        default_priorities=defaults,
        settings=base.GroupingSettings(**settings),
    )


def group(context: base.GroupingContext) -> base.PodGroupSpec:
    return registry.build_registry(settings=context.settings).group(context)


def subgroups(spec: base.PodGroupSpec) -> list[tuple[str, int, str | None]]:
    """``(name, min, parent)``: min is a parent's minSubGroup, else the leaf's minMember."""
    return [
        (s.name, s.min_member if s.min_sub_group is None else s.min_sub_group, s.parent)
        for s in spec.subgroups
    ]
