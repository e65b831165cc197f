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
from simulator import sweep_ray
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
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _ray_or_skip()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # a local Ray, whatever the shell says
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


@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::ResourceWarning")
def test_a_stop_cancels_the_ray_tasks_still_pending(fixtures: Path) -> None:
    _ray_or_skip()
    import ray

    from podmuster.cli import build_parser
    from podmuster.simulate_command import _scenario
    from podmuster.sweep_command import _input
    from simulator import sweep, sweep_ray
    from simulator.progress import StopFlag

    grid = sweep.load(str(fixtures / "sweep" / "grid.yaml"))
    options = _input(build_parser().parse_args(["simulate"]), dict(grid.input))
    scenario = _scenario(options, "kai-scheduler")
    flag = StopFlag()
    with sweep_ray.session(None, 2):
        rows = sweep_ray.run(scenario, grid.points, 1.0, stop=flag, on_done=lambda r: flag.set(2))
    assert sorted(r["status"] for r in rows) == ["cancelled", "cancelled", "cancelled", "ok"]
    assert [r["name"] for r in rows] == [p.name for p in grid.points]  # grid order kept
    assert not ray.is_initialized()


@pytest.mark.parametrize("from_env", [False, True], ids=["--ray-address", "RAY_ADDRESS"])
def test_a_ray_cluster_that_cannot_be_reached_is_one_line_and_exit_2(
    fixtures: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    from_env: bool,
) -> None:
    _ray_or_skip()
    import ray

    def refuse(*args: Any, **kwargs: Any) -> None:
        try:
            raise PermissionError("RPC error: InvalidAuthToken: token missing\nmore lines")
        except PermissionError as cause:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379") from cause

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(sweep_ray, "_unreachable", lambda address: None)  # a head answers
    grid = str(fixtures / "sweep" / "grid.yaml")
    argv = ["simulate", "--sweep", grid, "--no-progress", "--ray-address", "10.0.0.1:6379"]
    if from_env:
        monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
        argv = argv[:4]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "podmuster: --ray-address: cannot connect to the Ray cluster at 10.0.0.1:6379: "
        "ConnectionError: Failed to connect to Ray cluster at 10.0.0.1:6379; "
        "PermissionError: RPC error: InvalidAuthToken: token missing\n"
    )
