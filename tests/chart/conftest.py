"""Fixtures of the chart tests: the real helm, and the end-to-end control plane.

Why: every chart test needs helm (skipped with the reason when it is not built), and
the apply tests need the same real API server as tests/e2e, so its ``cluster``,
``namespace`` and ``kwok_node`` fixtures are re-exported here rather than written twice.
"""

from __future__ import annotations

import pytest
from chartkit import Helm, helm_binary

from tests.e2e.conftest import binaries, cluster, kwok_node, namespace

__all__ = ["binaries", "cluster", "helm", "kwok_node", "namespace"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chart: the Helm chart tests (make chart-test)")


@pytest.fixture(scope="session")
def helm() -> Helm:
    path, why = helm_binary()
    if path is None:
        pytest.skip(why)
    return Helm(path)
