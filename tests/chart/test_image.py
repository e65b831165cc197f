"""The image the chart runs: its build context and user match the code and the chart.

Why: the image is built by each team from this repository's Dockerfile (none is
published), so a package left out of ``.dockerignore`` or of the Dockerfile's COPY lines
breaks the build or the running component only on their machine; and a user id other
than the chart's runAsUser stops every pod at start.
"""

from __future__ import annotations

import re
import tomllib

import pytest
import yaml
from chartkit import CHART, REPO

pytestmark = pytest.mark.chart


def packages() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    found = project["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(p.rstrip("*") for p in found)


def test_every_package_is_in_the_build_context_and_copied() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    ignore = (REPO / ".dockerignore").read_text().split()
    copied = sorted(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.M))
    assert copied == packages()
    assert sorted(line[1:] for line in ignore if line.startswith("!") and "." not in line) == (
        packages()
    )


def test_image_user_and_entry_point_match_the_chart() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    uid = values["podSecurityContext"]["runAsUser"]
    assert f"USER {uid}:{values['podSecurityContext']['runAsGroup']}" in dockerfile
    assert 'ENTRYPOINT ["podmuster"]' in dockerfile
