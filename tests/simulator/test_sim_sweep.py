"""``podmuster simulate --sweep`` (docs/simulate.md, Sweeps): the format, the runs, the output.

Covers: the grid (cross product, names, parameters, merged configurations
and queue overrides); bad SWEEP.yaml keys as one line naming the file and
the field; a serial sweep's rows against single runs; a failing point that
leaves the others complete (exit 1); a stop that cancels the remaining
points; Ray missing (exit 2 with how to install it); the table, JSON and the
HTML report with its trade-off plot. The Ray runs are in test_sim_sweep_ray.py.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crds.errors import InputError
from podmuster.cli import main
from simulator import sweep, sweep_run
from simulator.progress import StopFlag

GRID = "sweep/grid.yaml"


def _sweep_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> dict[str, Any]:
    assert main(["simulate", "--sweep", *argv, "--sweep-local", "-o", "json"]) == code
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_the_grid_is_the_cross_product_of_the_axes_in_order(fixtures: Path) -> None:
    grid = sweep.load(str(fixtures / GRID))
    assert grid.name == "frag-grid"
    assert grid.axes == ("placement", "limit")
    assert [p.name for p in grid.points] == [
        "binpack/open",
        "binpack/two",
        "spread/open",
        "spread/two",
    ]
    assert grid.points[3].params == {"placement": "spread", "limit": "two"}
    assert [p.config and p.config.gpu_placement for p in grid.points] == [
        "binpack", "binpack", "spread", "spread"
    ]  # fmt: skip
    assert grid.points[2].config is not None
    assert grid.points[2].config.cpu_placement == "spread"
    assert grid.points[0].queues == ()
    assert [(o.queue, dict(o.values)) for o in grid.points[1].queues] == [
        ("team", {"gpuLimit": 2.0})
    ]
    assert grid.input["trace"] == str(fixtures / "frag.csv")


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return str(path)


def test_later_axes_override_earlier_ones_key_by_key(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("placementStrategy: {gpu: spread, cpu: spread}\n")
    path = _write(
        tmp_path,
        """
base: base.yaml
axes:
  - name: a
    values:
      - {name: x, config: {placementStrategy: {gpu: binpack}}, queues: {q: {gpuQuota: 1, gpuLimit: 3}}}
  - name: b
    values:
      - {name: y, config: {actions: [allocate]}, queues: {q: {gpuQuota: 2}}}
""",
    )
    (point,) = sweep.load(path).points
    assert point.config is not None
    assert (point.config.gpu_placement, point.config.cpu_placement) == ("binpack", "spread")
    assert point.config.actions == ("allocate",)
    assert dict(point.queues[0].values) == {"gpuQuota": 2.0, "gpuLimit": 3.0}


def test_without_a_base_the_overrides_go_onto_the_cluster_scheduler(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "nodes: [{name: n, gpus: 1}]\nscheduler: {placementStrategy: {cpu: spread}}\n"
    )
    path = _write(
        tmp_path,
        """
input: {cluster: cluster.yaml}
axes: [{name: a, values: [{name: x, config: {placementStrategy: {gpu: spread}}}, {name: y}]}]
""",
    )
    with_override, plain = sweep.load(path).points
    assert with_override.config is not None
    assert (with_override.config.gpu_placement, with_override.config.cpu_placement) == (
        "spread",
        "spread",
    )
    assert plain.config is not None
    assert plain.config.cpu_placement == "spread"


def test_queue_overrides_change_only_the_named_queue_s_gpu_entry() -> None:
    from simulator import objects

    queues = [objects.queue("a", gpu_quota=1), objects.queue("b", gpu_quota=1)]
    point = sweep.Point(
        "p", {}, None, (sweep.QueueOverride("a", {"gpuQuota": 4.0, "overQuotaWeight": 2.0}, "f"),)
    )
    changed = sweep.apply_queues(queues, point)
    assert changed[0]["spec"]["resources"]["gpu"] == {
        "quota": 4.0,
        "overQuotaWeight": 2.0,
        "limit": -1,
    }
    assert changed[0]["spec"]["resources"]["cpu"] == queues[0]["spec"]["resources"]["cpu"]
    assert changed[1] is queues[1]
    assert queues[0]["spec"]["resources"]["gpu"]["quota"] == 1  # the scenario's own is untouched


BAD = [
    ("axes: []", "sweep.yaml: axes: expected a non-empty list of axes"),
    ("axs: []", "sweep.yaml: axs: unknown key; known: axes, base, input, name"),
    (
        "axes: [{name: a, values: [{name: x, confg: {}}]}]",
        "sweep.yaml: axes[0].values[0].confg: unknown key; known: config, configFile, name, queues",
    ),
    (
        "axes: [{name: a, values: [{name: x}, {name: x}]}]",
        "sweep.yaml: axes[0].values[1].name: duplicate value 'x' in axis 'a'",
    ),
    (
        "axes: [{name: a, values: [{name: x}]}, {name: a, values: [{name: y}]}]",
        "sweep.yaml: axes[1].name: duplicate axis 'a'",
    ),
    (
        "axes: [{name: 'a b', values: [{name: x}]}]",
        "sweep.yaml: axes[0].name: expected a name of letters, digits and _ . + = -, got 'a b'",
    ),
    (
        "axes: [{name: a, values: []}]",
        "sweep.yaml: axes[0].values: expected a non-empty list of values",
    ),
    (
        "axes: [{name: a, values: [{name: x, config: {placementStrategy: {gpu: pack}}}]}]",
        "sweep.yaml: axes[0].values[0]: configuration: placementStrategy.gpu: must be one of binpack, spread, got 'pack'",
    ),
    (  # the same checks as --config: a misspelt plugin argument is named, not dropped
        "axes: [{name: a, values: [{name: x, config: {plugins: {proportion: {arguments: {kValu: 1}}}}}]}]",
        "sweep.yaml: axes[0].values[0]: configuration: plugins.proportion.arguments.kValu: unknown key; known: kValue, reclaimerSaturationMultiplier, relcaimerSaturationMultiplier",
    ),
    (
        "axes: [{name: a, values: [{name: x, queues: {q: {gpuQuota: -2}}}]}]",
        "sweep.yaml: axes[0].values[0].queues.q.gpuQuota: expected a number >= 0, got -2",
    ),
    (
        "axes: [{name: a, values: [{name: x, queues: {q: {gpuLimit: lots}}}]}]",
        "sweep.yaml: axes[0].values[0].queues.q.gpuLimit: expected a number >= 0, or -1 for no limit, got 'lots'",
    ),
    (
        "axes: [{name: a, values: [{name: x, queues: {q: {quota: 1}}}]}]",
        "sweep.yaml: axes[0].values[0].queues.q.quota: unknown key; known: gpuLimit, gpuQuota, overQuotaWeight",
    ),
    (
        "axes: [{name: a, values: [{name: x, configFile: nope.yaml}]}]",
        "sweep.yaml: axes[0].values[0].configFile: cannot read {dir}/nope.yaml: No such file or directory",
    ),
    (
        "axes: [{name: a, values: [{name: x}, {name: y, config: {schedulerName: other}}]}]",
        "sweep.yaml: axes: every point must have the same schedulerName (the trace's pods name one), got kai-scheduler, other",
    ),
    (
        "input: {arrivalScale: 0}\naxes: [{name: a, values: [{name: x}]}]",
        "sweep.yaml: input.arrivalScale: expected a positive number, got 0",
    ),
    (  # the file's field, not the --period flag the user never gave
        "input: {period: 10q}\naxes: [{name: a, values: [{name: x}]}]",
        "sweep.yaml: input.period: expected a positive duration such as 1s, got '10q'",
    ),
    (
        "input: {period: 0}\naxes: [{name: a, values: [{name: x}]}]",
        "sweep.yaml: input.period: expected a positive duration such as 1s, got 0",
    ),
    (  # the sweep file named once, with the position
        "name: x\n```\naxes: []\n",
        "sweep.yaml: line 2 column 1: invalid YAML: found character '`' that cannot start any token",
    ),
    ("- a\n", "sweep.yaml: expected a mapping at the top level"),
    (
        "input: {trace: jobs.csv, clustr: c.yaml}\naxes: [{name: a, values: [{name: x}]}]",
        "sweep.yaml: input.clustr: unknown key; known: arrivalScale, cluster, period, pods, trace, traceFormat, workloads",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_sweep_file_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        sweep.load(path)
    assert str(caught.value) == message.replace("sweep.yaml", path, 1).replace(
        "{dir}", str(tmp_path)
    )


def test_a_queue_the_cluster_lacks_is_an_error_naming_the_field(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        f"""
input: {{trace: {fixtures / "frag.csv"}, cluster: {fixtures / "frag-cluster.yaml"}}}
axes: [{{name: a, values: [{{name: x, queues: {{teem: {{gpuQuota: 1}}}}}}]}}]
""",
    )
    assert main(["simulate", "--sweep", path, "--sweep-local"]) == 2
    assert capsys.readouterr().err == (
        f"podmuster: {path}: axes[0].values[0].queues.teem: no queue 'teem' in the cluster; known: team\n"
    )


def _single(capsys: pytest.CaptureFixture[str], fixtures: Path, *extra: str) -> dict[str, Any]:
    argv = ["simulate", "--trace", str(fixtures / "frag.csv")]
    argv += ["--cluster", str(fixtures / "frag-cluster.yaml"), *extra, "-o", "json"]
    assert main(argv) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_each_point_is_the_run_simulate_makes_with_its_settings(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _sweep_json(capsys, str(fixtures / GRID))
    assert document["sweep"] == "frag-grid"
    assert document["axes"] == ["placement", "limit"]
    points = {p["name"]: p for p in document["points"]}
    assert list(points) == ["binpack/open", "binpack/two", "spread/open", "spread/two"]
    assert all(p["status"] == "ok" and p["error"] is None for p in points.values())
    single = _single(capsys, fixtures, "--config", str(fixtures / "spread.yaml"))
    spread = points["spread/open"]["metrics"]
    assert spread["gpu_allocation_ratio"] == single["gpu_allocation_ratio"]
    assert spread["wait_mean_s"] == single["wait_time_s"]["mean"]
    assert spread["wait_p95_s"] == single["wait_time_s"]["p95"]
    assert spread["jain_index"] == single["jain_index"]
    assert spread["fair_share_deviation"] == single["fair_share_deviation"]
    assert spread["makespan_s"] == single["makespan_s"]
    assert spread["not_started"] == single["jobs"] - single["started"] == 0
    # binpack fits the 2-GPU job at once; a 2-GPU queue limit makes it wait as spread does
    assert points["binpack/open"]["metrics"]["wait_mean_s"] == 1.0
    assert points["binpack/two"]["metrics"]["wait_mean_s"] == spread["wait_mean_s"] > 1.0
    assert points["binpack/two"]["params"] == {"placement": "binpack", "limit": "two"}


def test_a_failing_point_reports_its_error_and_the_others_complete(
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simulator import events

    real = events.Simulation.run

    def run(self: events.Simulation) -> Any:
        if self.config.gpu_placement == "spread":
            raise RuntimeError("engine broke")
        return real(self)

    monkeypatch.setattr(events.Simulation, "run", run)
    document = _sweep_json(capsys, str(fixtures / GRID), code=1)
    statuses = {p["name"]: p["status"] for p in document["points"]}
    assert statuses == {
        "binpack/open": "ok", "binpack/two": "ok", "spread/open": "failed", "spread/two": "failed"
    }  # fmt: skip
    failed = document["points"][2]
    assert failed["metrics"] is None
    assert failed["error"].startswith("RuntimeError: engine broke (at test_sim_sweep.py:")
    page = tmp_path / "sweep.html"
    argv = ["simulate", "--sweep", str(fixtures / GRID), "--sweep-local", "--no-progress"]
    assert main([*argv, "--report", str(page)]) == 1
    table = capsys.readouterr().out
    assert page.read_text().count('<td class="error" colspan="11">RuntimeError: engine broke') == 2
    assert "spread/open     FAILED" in table
    assert "spread/two: failed: RuntimeError: engine broke" in table


def test_a_stop_cancels_the_points_not_finished(fixtures: Path) -> None:
    from podmuster.simulate_command import _scenario
    from podmuster.sweep_command import _input

    grid = sweep.load(str(fixtures / GRID))
    scenario = _scenario(_input(_namespace(), dict(grid.input)), "kai-scheduler")
    flag = StopFlag()
    rows = sweep_run.run_serial(
        scenario, grid.points, 1.0, stop=flag, on_done=lambda row: flag.set(2)
    )
    assert [r["status"] for r in rows] == ["ok", "cancelled", "cancelled", "cancelled"]
    assert rows[1]["error"] == "stopped by a signal"
    assert rows[1]["metrics"] is None


def _namespace() -> Any:
    from podmuster.cli import build_parser

    return build_parser().parse_args(["simulate"])


def test_without_ray_the_sweep_says_how_to_install_it(
    fixtures: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # import ray fails
    assert main(["simulate", "--sweep", str(fixtures / GRID)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("podmuster: --sweep: --sweep runs on Ray, which is not installed")
    assert "pip install 'podmuster[ray]'" in err
    assert "--sweep-local" in err


def test_options_that_do_not_fit_a_sweep_are_refused(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", "--sweep", str(fixtures / GRID), "--sweep-local"]
    assert main([*argv, "--compare", str(fixtures / "spread.yaml")]) == 2
    assert "a sweep's configurations are its file's base and axes" in capsys.readouterr().err
    assert main([*argv[:3], "--ray-cpus", "0"]) == 2
    assert capsys.readouterr().err == "podmuster: --ray-cpus: expected at least 1, got 0\n"
    assert main([*argv, "--label", "A=x"]) == 2  # it would have no effect
    assert capsys.readouterr().err == (
        "podmuster: --label: a sweep's points are named by their axis values, not by --label\n"
    )


@pytest.mark.parametrize(
    "extra", [["--sweep-local"], ["--ray-address", "auto"], ["--ray-cpus", "4"]], ids=str
)
def test_sweep_options_without_a_sweep_are_refused(
    fixtures: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    argv = ["simulate", "--trace", str(fixtures / "frag.csv")]
    assert main([*argv, "--cluster", str(fixtures / "frag-cluster.yaml"), *extra]) == 2
    assert capsys.readouterr().err == (
        f"podmuster: {extra[0]}: only a sweep runs on Ray; give --sweep SWEEP.yaml\n"
    )


def test_command_line_input_wins_over_the_file(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(fixtures / "frag.csv", tmp_path / "other.csv")
    with (tmp_path / "other.csv").open("a") as handle:
        handle.write("6,team,1,1,10,train,extra\n")
    document = _sweep_json(capsys, str(fixtures / GRID), "--trace", str(tmp_path / "other.csv"))
    assert {p["metrics"]["jobs"] for p in document["points"]} == {4}


def test_the_table_and_the_report(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "sweep.html"
    argv = ["simulate", "--sweep", str(fixtures / GRID), "--sweep-local", "--report", str(page)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].split() == [
        "point", "util", "wait", "mean", "wait", "p95", "Jain", "fs", "dev", "makespan", "not",
        "started", "preempt/reclaim",
    ]  # fmt: skip
    assert lines[2].split() == [
        "binpack/open",
        "*",
        "54.5%",
        "1s",
        "1s",
        "1.000",
        "0.010",
        "1m41s",
        "0",
        "0",
        "/",
        "0",
    ]  # durations and percentages as the run's table writes them, never raw seconds
    assert "incomplete" not in captured.out
    assert lines[-1] == f"report: {page}"
    assert "sweep: 4/4 points done: spread/two ok" in captured.err
    html = page.read_text()
    assert html.count('src="data:image/png;base64,') == 1
    for name in ("binpack/open", "binpack/two", "spread/open", "spread/two"):
        assert f"<td>{name}</td>" in html
    assert "runner: this process" in html
    assert "None" not in html
    assert "54.5%" in html  # the page's figures are in units too
    assert 'class="scroll"' in html  # wide tables scroll in their own box
    assert "queue team: gpuLimit 2" in html  # what the variant "two" sets
    assert "Incomplete sweep" not in html


def _ok(name: str, util: float, wait: float) -> dict[str, Any]:
    metrics = {"gpu_allocation_ratio": util, "wait_mean_s": wait}
    return {"name": name, "params": {}, "status": "ok", "error": None, "metrics": metrics}


def test_the_trade_off_front_keeps_the_points_nothing_beats_on_both() -> None:
    from simulator.sweep_report import pareto

    rows = [
        _ok("busy-slow", 0.9, 100.0),
        _ok("idle-fast", 0.5, 10.0),
        _ok("worse", 0.5, 50.0),  # as busy as idle-fast, waits longer
        _ok("tie", 0.9, 100.0),  # the same as busy-slow: neither beats the other
        _ok("middle", 0.7, 40.0),
        _ok("beaten", 0.6, 60.0),  # middle is busier and faster
        {"name": "broken", "params": {}, "status": "failed", "error": "x", "metrics": None},
    ]
    assert pareto(rows) == ["busy-slow", "idle-fast", "tie", "middle"]


def test_each_row_has_its_queues_figures(
    fixtures: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _sweep_json(capsys, str(fixtures / GRID))
    assert document["pareto"] == ["binpack/open"]  # busiest and fastest of the four
    queues = document["points"][2]["metrics"]["queues"]
    assert list(queues) == ["team"]
    assert queues["team"]["jobs"] == 3
    assert queues["team"]["wait_mean_s"] == document["points"][2]["metrics"]["wait_mean_s"]
    assert set(queues["team"]) == {
        "jobs", "completed", "wait_mean_s", "wait_p95_s", "allocated_gpus_mean",
        "fair_share_gpus_mean",
    }  # fmt: skip


def test_the_plot_says_so_when_no_point_finished() -> None:
    from simulator import sweep_report

    rows = [{"name": "p", "params": {}, "status": "failed", "error": "x", "metrics": None}]
    assert sweep_report.tradeoff_plot(rows)  # a PNG with a note instead of an empty plot


_points = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1e4)), min_size=0, max_size=12).map(
    lambda pairs: [_ok(f"p{i}", u, w) for i, (u, w) in enumerate(pairs)]
)


@given(_points)
def test_the_front_is_exactly_the_points_no_other_dominates(rows: list[dict[str, Any]]) -> None:
    from simulator.sweep_report import pareto

    def beats(a: dict[str, Any], b: dict[str, Any]) -> bool:
        (ua, wa), (ub, wb) = (
            (x["metrics"]["gpu_allocation_ratio"], x["metrics"]["wait_mean_s"]) for x in (a, b)
        )
        return ua >= ub and wa <= wb and (ua > ub or wa < wb)

    front = pareto(rows)
    for row in rows:
        assert (row["name"] in front) == (not any(beats(other, row) for other in rows))
    if rows:  # the busiest point with the shortest wait among the busiest is always on it
        best = max(
            rows, key=lambda r: (r["metrics"]["gpu_allocation_ratio"], -r["metrics"]["wait_mean_s"])
        )
        assert best["name"] in front


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_the_grid_has_one_uniquely_named_point_per_combination(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int]
) -> None:
    axes = [
        {"name": f"axis{a}", "values": [{"name": f"v{v}"} for v in range(size)]}
        for a, size in enumerate(sizes)
    ]
    path = tmp_path_factory.mktemp("grid") / "sweep.yaml"
    path.write_text(json.dumps({"axes": axes}))
    grid = sweep.load(str(path))
    assert len(grid.points) == math.prod(sizes)
    assert len({p.name for p in grid.points}) == len(grid.points)
    for point in grid.points:
        assert point.name == "/".join(point.params[f"axis{a}"] for a in range(len(sizes)))


def test_a_point_for_another_scheduler_is_refused_before_anything_runs(
    fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path,
        f"""
input: {{trace: {fixtures / "frag.csv"}, cluster: {fixtures / "frag-cluster.yaml"}}}
axes: [{{name: a, values: [{{name: x, config: {{schedulerName: other}}}}]}}]
""",
    )
    assert main(["simulate", "--sweep", path, "--sweep-local", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"podmuster: {path}: axes[0].values[0]: schedulerName 'other': "
        "the input's pods are for kai-scheduler\n"
    )


def _started(name: str, util: float, wait: float | None, not_started: int) -> dict[str, Any]:
    entry = _ok(name, util, 0.0)
    entry["metrics"].update(wait_mean_s=wait, not_started=not_started)
    return entry


def test_a_point_that_leaves_more_jobs_never_started_is_not_on_the_front() -> None:
    from simulator.sweep_report import off_front, pareto

    rows = [
        _started("as-is", 0.69, 17036.0, 1),  # one gang that can never fit, in every point
        _started("freeze-all", 0.0, None, 151),  # nothing ran: no wait at all
        _started("freeze-pretrain", 0.68, 97.0, 43),  # a team blocked: short waits for the rest
        _started("slower", 0.60, 20000.0, 1),
    ]
    assert pareto(rows) == ["as-is"]
    assert off_front(rows) == {
        "freeze-all": "no job started",
        "freeze-pretrain": "43 never started (42 more than the front)",
    }


def test_the_table_says_why_a_point_is_off_the_front(capsys: pytest.CaptureFixture[str]) -> None:
    from simulator import sweep_report

    rows = [_started("as-is", 0.69, 17036.0, 0), _started("freeze", 0.0, None, 151)]
    for entry in rows:
        entry["metrics"].update(
            jain_index=None, fair_share_deviation=0.0, makespan_s=10.0, preemptions=0, reclaims=0
        )
    sweep_report.table(rows)
    out = capsys.readouterr().out
    assert "freeze: not on the front: no job started" in out
    assert sweep_report.tradeoff_plot(rows)  # the point without a wait is named, not drawn at 0


def test_a_stopped_sweep_is_marked_incomplete_in_its_json_and_page(
    fixtures: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import signal

    serial = sweep_run.run_serial

    def stop_after_the_first(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        done = kwargs["on_done"]

        def then_stop(row: dict[str, Any]) -> None:
            done(row)
            signal.raise_signal(signal.SIGTERM)  # caught by the command's handler

        return serial(*args, **{**kwargs, "on_done": then_stop})

    monkeypatch.setattr(sweep_run, "run_serial", stop_after_the_first)
    page = tmp_path / "sweep.html"
    argv = ["simulate", "--sweep", str(fixtures / GRID), "--sweep-local", "--no-progress"]
    assert main([*argv, "-o", "json", "--report", str(page)]) == 143
    settings_ = json.loads(capsys.readouterr().out)["settings"]
    assert settings_["points done"] == 1
    assert settings_["points cancelled"] == 3
    assert settings_["complete"] is False
    assert "Incomplete sweep: stopped by a signal. 1 of 4 points done, 3 cancelled" in (
        page.read_text()
    )


def test_the_plot_labels_never_overlap_and_stay_in_the_figure() -> None:
    """A crowded grid: 18 points of near-identical utilisation and wait with long names
    (three kept off the front by jobs never started, whose labels are longer still).
    Measured on the drawn figure with its renderer: no two labels' boxes meet, and each
    lies inside the plot's axes (so inside the figure, clear of the colour bar)."""
    from matplotlib import pyplot
    from matplotlib.text import Annotation

    from simulator import sweep_report

    rows = []
    for i in range(18):
        name = f"placement-{'binpack' if i % 2 else 'spread'}/quota-research-heavy-{i}/no-reclaim"
        entry = _started(name, 0.80 + 0.0004 * (i % 5), 1000.0 + 3.0 * (i % 4), 2 if i < 3 else 0)
        entry["metrics"].update(jain_index=0.9 + 0.005 * i, fair_share_deviation=0.01 * i)
        rows.append(entry)
    figure = sweep_report.tradeoff_figure(rows)
    try:
        figure.canvas.draw()  # the extents below are the renderer's, as drawn
        plot = figure.axes[0]
        labels = [text for text in plot.texts if isinstance(text, Annotation)]
        boxes = [(label.get_text(), label.get_window_extent()) for label in labels]
        frame = plot.get_window_extent()
    finally:
        pyplot.close(figure)
    assert sorted(text.split(":")[0] for text, _ in boxes) == sorted(r["name"] for r in rows)
    outside = [
        text
        for text, box in boxes
        for corner in ((box.x0, box.y0), (box.x1, box.y1))
        if not (figure.bbox.contains(*corner) and frame.contains(*corner))
    ]
    overlapping = [
        (a, b)
        for i, (a, box_a) in enumerate(boxes)
        for b, box_b in boxes[i + 1 :]
        if box_a.x0 < box_b.x1
        and box_b.x0 < box_a.x1
        and box_a.y0 < box_b.y1
        and box_b.y0 < box_a.y1
    ]
    assert (outside, overlapping) == ([], [])
