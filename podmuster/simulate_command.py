"""``podmuster simulate``: replay a trace or manifests on a simulated cluster (docs/cli.md §5).

Why: the what-if question "what happens to my teams if I change this" is
answered offline, on the same engine as the live scheduler (the
``simulator`` package). This module only reads the options, picks the input
form, and writes the table, the JSON and the report.

It also owns the run's lifetime: progress on stderr once a run lasts over
2 s, and SIGINT/SIGTERM, which only set a flag (``simulator.progress``); the
loop stops at the next event boundary, the results so far are written
as usual, marked partial, and the exit status says a signal ended the run
(128 + its number: 130 for SIGINT, 143 for SIGTERM; docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

from crds.errors import InputError, shown
from podmuster import output
from podmuster.schedule_command import read_config, report_bad_objects
from scheduler.config import ConfigError, SchedulerConfig

if TYPE_CHECKING:
    from simulator.metrics import RunMetrics
    from simulator.progress import StopFlag

FORMATS = ("alibaba-2023", "csv")


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="what-if simulation of the scheduler over time, on a trace or manifests",
        description=(
            "Replay workloads (a trace or manifests with arrival times and durations) on a "
            "simulated cluster with the scheduler's own engine, and report waits, completion "
            "times, allocation, fairness and disruption."
        ),
    )
    parser.add_argument("--trace", help="trace: a directory (alibaba-2023) or a CSV file")
    parser.add_argument("--trace-format", choices=FORMATS, help="default: from --trace")
    parser.add_argument(
        "--pods",
        help="alibaba-2023: another pod list: a file, or one in the trace directory by name"
        " or variant (gpushare40)",
    )
    parser.add_argument("--cluster", help="cluster YAML: nodes, pools, queues, scheduler")
    parser.add_argument("--workloads", help="directory of workload manifests")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        help="scheduler configuration (YAML); give twice to compare two configurations",
    )
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="CONFIG_B",
        help="a second configuration to compare (once: a comparison has two)",
    )
    parser.add_argument("--period", help="scheduling period, e.g. 1s (default 1s)")
    parser.add_argument(
        "--arrival-scale",
        type=float,
        default=1.0,
        metavar="X",
        help="multiply every arrival time by X (e.g. 0.01 packs a sparse trace; default 1)",
    )
    parser.add_argument("--report", metavar="FILE.html", help="write an HTML report with plots")
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="A=NAME",
        help=(
            "name a configuration in the table, the JSON and the report, e.g. --label A=today "
            "--label B=spread (default: its configuration file's name)"
        ),
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--progress",
        action="store_true",
        help="show progress from the start (default: once a run lasts over 2 s)",
    )
    shown.add_argument("--no-progress", action="store_true", help="never show progress")
    parser.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    from podmuster import sweep_command

    sweep_command.add_arguments(parser)
    parser.set_defaults(handler=run)


def _scenario(args: argparse.Namespace, scheduler_name: str) -> Any:
    from simulator import alibaba, cluster, csvtrace, workloads

    if args.trace and args.workloads:
        raise InputError("give --trace or --workloads, not both", field="--workloads")
    if args.workloads:
        if not args.cluster:
            raise InputError("--workloads needs --cluster CLUSTER.yaml", field="--cluster")
        return workloads.load(args.workloads, cluster.load(args.cluster), scheduler_name)
    if not args.trace:
        raise InputError("give --trace FILE/DIR or --cluster with --workloads", field="--trace")
    form = args.trace_format or ("alibaba-2023" if os.path.isdir(args.trace) else "csv")
    if form == "alibaba-2023":
        if args.cluster:
            raise InputError("the alibaba-2023 trace brings its own nodes", field="--cluster")
        return alibaba.load(args.trace, args.pods)
    if args.pods:
        raise InputError("only the alibaba-2023 format reads --pods", field="--pods")
    if not args.cluster:
        raise InputError("a CSV trace needs --cluster CLUSTER.yaml", field="--cluster")
    return csvtrace.load(args.trace, cluster.load(args.cluster))


def _configs(args: argparse.Namespace) -> list[tuple[str, SchedulerConfig | None]]:
    """(name, configuration) for A and, when comparing, B; None: the cluster's or the default."""
    paths = list(args.config)
    if len(args.compare) > 1:  # not the last one silently: a three-way comparison is not run
        raise InputError(
            f"given {len(args.compare)} times; a comparison has two configurations (A and B)",
            field="--compare",
        )
    paths.extend(args.compare)
    if len(paths) > 2:
        raise InputError("at most two configurations (A and B)", field="--config")
    configs: list[tuple[str, SchedulerConfig | None]] = []
    if args.compare and not args.config:
        configs.append(("default", None))
    for path in paths:
        try:
            configs.append((path, read_config(path)))
        except ConfigError as exc:
            raise InputError(str(exc), source=path) from None
    return configs or [("default", None)]


def _cluster_config(
    configs: list[tuple[str, SchedulerConfig | None]], scenario: Any, cluster_path: str | None
) -> list[tuple[str, SchedulerConfig | None]]:
    """A run without --config that runs the cluster YAML's ``scheduler:`` is named after
    that file, not "default" (which would say it ran the defaults)."""
    if scenario.config is None or not cluster_path:
        return configs
    return [(cluster_path if path == "default" else path, c) for path, c in configs]


def _labels(raw: list[str], configs: list[tuple[str, SchedulerConfig | None]]) -> list[str]:
    """The name of each run: ``--label A=NAME`` / ``B=NAME``, else its file's name without suffix.

    Why: "A" and "B" mean nothing to a reader of the report; "today" and
    "spread" do. A run of the cluster YAML's ``scheduler:`` is named after that file;
    without either, a run is "default".
    """
    keys = ["A", "B"][: len(configs)]
    given: dict[str, str] = {}
    for item in raw:
        key, sep, name = item.partition("=")
        key = key.strip().upper()  # a=NAME is A=NAME (tests/simulator/test_sim_report.py)
        if not sep or key not in keys or not name.strip():
            runs = " and ".join(f"{k}=NAME" for k in keys)
            raise InputError(f"expected {runs}, got {shown(item)}", field="--label")
        if key in given:
            raise InputError(f"{key} is named twice", field="--label")
        given[key] = name.strip()
    labels = []
    for key, (path, _) in zip(keys, configs, strict=True):
        stem = os.path.splitext(os.path.basename(path))[0] if path != "default" else "default"
        labels.append(given.get(key, stem))
    if len(labels) == 2 and labels[0] == labels[1] and not given:
        labels = [path for path, _ in configs]  # a/spread.yaml and b/spread.yaml
    return labels


def _period(raw: str | None, scenario_period: float | None) -> float:
    if raw is None:
        return scenario_period or 1.0
    from simulator.model import period_seconds

    try:
        return period_seconds(raw)
    except ValueError as exc:
        raise InputError(str(exc), field="--period") from None


def _default_source(path: str) -> str:
    """Where a run without --config got its scheduler configuration (``path``: its name)."""
    if path != "default":
        return f"the scheduler: section of {path}"
    return "the defaults (docs/configuration.md)"


def _title(labels: list[str]) -> str:
    if len(labels) == 2:
        return f"Simulation: {labels[0]} vs {labels[1]}"
    return f"Simulation: {labels[0]}"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _stop_on_signals(flag: StopFlag) -> Iterator[None]:
    """SIGINT and SIGTERM set ``flag`` while the block runs; the previous handlers come back after.

    The handler only records the signal: the event loop reads the flag between
    events. It also puts the previous handler back, so a second Ctrl-C or
    SIGTERM stops the command at once, without results, for a person who does
    not want to wait for them.
    """
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        flag.set(signum)
        signal.signal(signum, previous[signum])

    try:
        for stop_signal in STOP_SIGNALS:
            if signal.getsignal(stop_signal) is signal.SIG_IGN:
                continue  # ignored on purpose (a background job, nohup): leave it so
            previous[stop_signal] = signal.signal(stop_signal, handler)
    except ValueError:  # not the main thread (an embedding program): no handlers
        for number, old in previous.items():
            signal.signal(number, old)
        previous.clear()
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def run(args: argparse.Namespace) -> int:
    from podmuster import sweep_command
    from simulator.progress import StopFlag

    if args.sweep:
        return sweep_command.run(args)
    sweep_command.refuse_without_sweep(args)

    flag = StopFlag()
    with _stop_on_signals(flag):
        status = _simulate(args, flag)
    return 128 + flag.signum if flag.signum is not None else status


def _simulate(args: argparse.Namespace, flag: StopFlag) -> int:
    from simulator import compare, report, table
    from simulator.checking import leave_out_bad_objects
    from simulator.events import Simulation
    from simulator.progress import Progress

    configs = _configs(args)
    names = ["A", "B"] if len(configs) == 2 else ["run"]
    _labels(args.label, configs)  # a bad --label is reported before the input is read
    scheduler_name = (configs[0][1] or SchedulerConfig()).scheduler_name
    scenario = _scenario(args, scheduler_name)
    configs = _cluster_config(configs, scenario, args.cluster)
    labels = _labels(args.label, configs)
    leave_out_bad_objects(scenario, scheduler_name)
    bad_input = report_bad_objects(scenario.bad_objects)
    period = _period(args.period, scenario.period)
    if not args.arrival_scale > 0:
        raise InputError(f"must be positive, got {args.arrival_scale}", field="--arrival-scale")
    for job in scenario.jobs:
        job.arrival *= args.arrival_scale
    progress = None
    if not args.no_progress:
        progress = Progress(
            sys.stderr, tty=sys.stderr.isatty(), delay=0.0 if args.progress else 2.0
        )
    results: list[tuple[str, RunMetrics]] = []
    for (path, config), name in zip(configs, names, strict=True):
        if flag.is_set() and results:
            break  # stopped during A: B is not run, A is written partial
        chosen = config or scenario.config or SchedulerConfig()
        label = f"{name} ({os.path.basename(path)})" if len(configs) == 2 else "simulating"
        if args.label and len(configs) == 2:
            label = f"{name} ({labels[len(results)]})"
        simulation = Simulation(
            scenario.fresh(), chosen, period=period, progress=progress, stop=flag
        )
        if progress is not None:
            progress.begin(label)
        started = time.perf_counter()
        metrics = simulation.run()
        metrics.figures["wall_seconds"] = round(time.perf_counter() - started, 3)
        metrics.figures["label"] = labels[len(results)]
        if progress is not None:
            progress.end(
                simulation.now,
                simulation.finished,
                len(simulation.runs),
                partial=simulation.partial,
            )
        results.append((name if len(configs) == 2 else "run", metrics))
    configs = configs[: len(results)]
    names = names[: len(results)]
    labels = labels[: len(results)]
    figures = [m.figures for _, m in results]
    if args.report:
        runs = [
            report.Run(
                key=name,
                label=run_label,
                configuration=path if config is not None else _default_source(path),
                metrics=metrics,
            )
            for (path, config), name, run_label, (_, metrics) in zip(
                configs, names, labels, results, strict=True
            )
        ]
        page = report.render(
            runs,
            title=_title(labels[: len(results)]),
            source=scenario.source,
            settings={"scheduling period": f"{period:g}s"},
        )
        report.write(args.report, page)
    if args.output == "table":
        columns = [
            (
                f"{name}: {run_label if args.label else os.path.basename(path)}"
                if len(configs) == 2
                else (run_label if args.label else path),
                f,
            )
            for (path, _), name, run_label, f in zip(configs, names, labels, figures, strict=True)
        ]
        table.render(columns)
        if args.report:
            print(f"report: {args.report}")
        return bad_input
    document = figures[0] if len(figures) == 1 else compare.document(figures[0], figures[1])
    output.write(document, args.output)
    return bad_input
