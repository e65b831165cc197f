"""Running the points of a sweep: one pure simulate call per point, and the serial runner.

Why: a sweep's point is the same run ``podmuster simulate`` makes, on the
same engine, with a configuration and queue quotas of its own. Whether the
points run one after the other here (``--sweep-local``) or as Ray tasks
(``simulator.sweep_ray``), each goes through :func:`run_point`, which
returns a small row (its parameters and summary figures, never the run's
series or job list), so both runners give the same rows. A point that fails
reports its error in its row; the other points are not affected.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from scheduler.config import SchedulerConfig
from simulator.model import Scenario
from simulator.progress import StopFlag
from simulator.sweep import Point, apply_queues

# Figures of a row that measure this machine, not the schedule: left out when rows are compared.
TIMING_KEYS = ("wall_seconds", "engine_seconds")

OnDone = Callable[[dict[str, Any]], None]


def summary(figures: dict[str, Any]) -> dict[str, Any]:
    """The figures a sweep compares points by, from one run's full figures."""
    wait = figures["wait_time_s"]
    return {
        "jobs": figures["jobs"],
        "completed": figures["completed"],
        "not_started": figures["jobs"] - figures["started"],
        "gpu_allocation_ratio": figures["gpu_allocation_ratio"],
        "wait_mean_s": wait["mean"],
        "wait_p95_s": wait["p95"],
        "jain_index": figures["jain_index"],
        "fair_share_deviation": figures["fair_share_deviation"],
        "makespan_s": figures["makespan_s"],
        "preemptions": figures["preemptions"],
        "reclaims": figures["reclaims"],
        "gpu_hours_lost": figures["gpu_hours_lost"],
        "partial": figures["partial"],
        "engine_seconds": figures["engine_seconds"],
        "queues": {
            name: {
                "jobs": queue["jobs"],
                "completed": queue["completed"],
                "wait_mean_s": queue["wait_time_s"]["mean"],
                "wait_p95_s": queue["wait_time_s"]["p95"],
                "allocated_gpus_mean": queue["allocated_gpus_mean"],
                "fair_share_gpus_mean": queue["fair_share_gpus_mean"],
            }
            for name, queue in figures["queues"].items()
        },
    }


def row(
    point: Point, status: str, *, metrics: dict[str, Any] | None = None, error: str = ""
) -> dict[str, Any]:
    """One point's entry of the results: ``status`` is ok, failed or cancelled."""
    return {
        "name": point.name,
        "params": dict(point.params),
        "status": status,
        "error": error or None,
        "metrics": metrics,
    }


def run_point(
    scenario: Scenario, point: Point, period: float, stop: StopFlag | None = None
) -> dict[str, Any]:
    """Simulate ``scenario`` with the point's configuration and queues; its row, never raising.

    ``scenario`` is not changed (the run gets a fresh copy), so one scenario
    serves every point, in this process or in a Ray worker.
    """
    from simulator.events import Simulation

    started = time.perf_counter()
    try:
        own = scenario.fresh()
        own.queues = apply_queues(own.queues, point)
        config = point.config or scenario.config or SchedulerConfig()
        simulation = Simulation(own, config, period=period, stop=stop)
        figures = simulation.run().figures
    except Exception as exc:
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" (at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno})" if last else ""
        return row(point, "failed", error=f"{type(exc).__name__}: {exc}{where}")
    if stop is not None and stop.is_set():
        return row(point, "cancelled", error="stopped by a signal")
    metrics = summary(figures)
    metrics["wall_seconds"] = round(time.perf_counter() - started, 3)
    return row(point, "ok", metrics=metrics)


def run_serial(
    scenario: Scenario,
    points: Sequence[Point],
    period: float,
    *,
    stop: StopFlag,
    on_done: OnDone | None = None,
) -> list[dict[str, Any]]:
    """Every point in this process, in grid order; after a stop, the rest are cancelled."""
    rows = []
    for point in points:
        if stop.is_set():
            rows.append(row(point, "cancelled", error="stopped by a signal"))
            continue
        result = run_point(scenario, point, period, stop)
        rows.append(result)
        if on_done is not None:
            on_done(result)
    return rows
