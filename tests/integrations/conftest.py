"""Shared fixtures for the adapter tests: the shared corpus and small fixture files."""

from __future__ import annotations

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
