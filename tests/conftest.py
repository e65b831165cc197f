"""Root test configuration: end-to-end tests are opt-in with ``--e2e``.

End-to-end tests need a real control plane (tests/controlplane); the unit,
scenario and property tests never talk to an API server.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--e2e",
        action="store_true",
        default=False,
        help="run the end-to-end tests against a real kube-apiserver",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e"):
        return
    skip = pytest.mark.skip(reason="end-to-end test: run with --e2e (make e2e)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
