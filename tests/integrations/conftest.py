"""Shared fixtures for the adapter tests: the shared corpus and small fixture files."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def load_all(path: Path) -> list[dict[str, Any]]:
    with path.open() as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc]


@pytest.fixture
def corpus() -> Path:
    """The shared corpus folder; tests using it skip when it is absent."""
    if not (CORPUS / "manifests").is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (run inside the podmuster workspace)")
    return CORPUS


@pytest.fixture
def manifests(corpus: Path) -> Callable[..., list[dict[str, Any]]]:
    """Load corpus manifests: ``manifests("kuberay/ray-cluster.sample.yaml", ...)``."""

    def load(*names: str) -> list[dict[str, Any]]:
        return [doc for name in names for doc in load_all(corpus / "manifests" / name)]

    return load


@pytest.fixture
def fixture() -> Callable[[str], list[dict[str, Any]]]:
    """Load a file of ``tests/integrations/fixtures``."""
    return lambda name: load_all(FIXTURES / name)


def families() -> dict[str, dict[str, Any]]:
    """fixtures/adapter-families.yaml by kind: one small, valid workload per family."""
    return {doc["kind"]: doc for doc in load_all(FIXTURES / "adapter-families.yaml")}


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
