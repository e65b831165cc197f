"""The podgrouper facade: ``__all__`` is complete, and importing the package
loads neither kopf nor aiohttp (only kubehttp, handlers and cli may)."""

from __future__ import annotations

import subprocess
import sys

import podgrouper


def test_all_matches_the_public_names() -> None:
    public = {n for n in vars(podgrouper) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(podgrouper, n)).__name__ == "module"}
    assert len(podgrouper.__all__) == len(set(podgrouper.__all__))  # order: ruff RUF022
    assert set(podgrouper.__all__) == public - modules


def test_the_facade_does_not_import_kopf_or_aiohttp() -> None:
    code = "import sys, podgrouper, tests.kits.podgrouper_kube; print(sorted(m for m in ('kopf', 'aiohttp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
