"""``podmuster simulate --sweep`` on a local Ray (docs/simulate.md, Sweeps): same rows as serial.

The points run as Ray tasks on a local Ray of 2 CPUs, started and shut down
by the command. Skipped, with the reason, where the ``ray`` extra is not
installed; CI installs it and sets ``PODMUSTER_REQUIRE_RAY=1``, which turns
that skip into a failure, so the test cannot pass there without running.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from podmuster.cli import main
from simulator.sweep_run import TIMING_KEYS


def _ray_or_skip() -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("PODMUSTER_REQUIRE_RAY") == "1":
            pytest.fail("PODMUSTER_REQUIRE_RAY=1 but ray is not importable")
        pytest.skip("ray is not installed (pip install 'podmuster[ray]')")


def _rows(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["simulate", "--sweep", *argv, "-o", "json", "--no-progress"]) == 0
    points: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["points"]
    for point in points:
        for key in TIMING_KEYS:
            point["metrics"].pop(key)
    return points


@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_a_small_sweep_on_local_ray_gives_the_serial_rows(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ray_or_skip()
    import ray

    grid = str(fixtures / "sweep" / "grid.yaml")
    serial = _rows(capsys, grid, "--sweep-local")
    page = tmp_path / "sweep.html"
    on_ray = _rows(capsys, grid, "--ray-cpus", "2", "--report", str(page))
    assert on_ray == serial
    assert [p["status"] for p in on_ray] == ["ok"] * 4
    assert len({p["metrics"]["wait_mean_s"] for p in on_ray}) == 2  # the points do differ
    assert "runner: local Ray, 2 CPUs" in page.read_text()
    assert not ray.is_initialized()  # the command shut its local Ray down
