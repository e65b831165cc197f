"""Fixtures for the simulator tests: small hand-written inputs and the shared trace if present."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kits.browser import chromium

FIXTURES = Path(__file__).parent / "fixtures"
_REPO = Path(__file__).resolve().parents[2]
_TRACE = Path("shared") / "corpus" / "traces" / "alibaba-openb"


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES


@pytest.fixture
def alibaba_trace() -> Path:
    """The real Alibaba 2023 trace beside the repository; tests using it skip without it."""
    for candidate in (_REPO / ".." / _TRACE, _REPO / ".." / ".." / _TRACE):
        if (candidate / "openb_pod_list_default.csv").is_file():
            return candidate
    pytest.skip("the shared corpus (../shared/corpus/traces/alibaba-openb) is not present")


@pytest.fixture(scope="session")
def report_input() -> list[str]:
    """``podmuster simulate`` on the report's scenario: a pool of two 2-GPU nodes under a
    two-level queue tree, five jobs of which one never starts (test_sim_report*.py)."""
    return [
        "simulate",
        "--trace", str(FIXTURES / "report-jobs.csv"),
        "--cluster", str(FIXTURES / "report-cluster.yaml"),
        "--no-progress",
    ]  # fmt: skip


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless chromium for the pages' browser tests (tests/kits/browser.py); they skip
    without it."""
    yield from chromium()
