"""The HTML report: what was simulated, the figures in human units, tables and plots, one page.

Why: a what-if answer is shared with people who will not run the CLI (a
platform team shows it to its leadership); one file with the numbers and the
pictures (rendered from a jinja2 template, plots embedded as base64 PNG) is
easy to attach to a change request. So the page names each configuration,
says which cluster and queue tree it ran on, shows every figure in its unit
(``simulator.units``) and, for a comparison, the difference B - A with a
colour for better or worse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crds.errors import InputError
from simulator import plots, units
from simulator.metrics import (
    COMPLETED,
    LOST,
    NOT_ARRIVED,
    RUNNING,
    WAITING,
    RunMetrics,
    never_started,
)

TEMPLATE = "report.html.j2"
NEVER_STARTED_ROWS = 50  # per run; the JSON's job_results has them all
JOB_ROWS = 100  # per run, in the per-job table


@dataclass(frozen=True, slots=True)
class Run:
    """One configuration's run as the page shows it."""

    key: str  # "A", "B", or "run" for a single run
    label: str  # the name a person gave it (--label) or its configuration file's
    configuration: str  # the configuration file, or a sentence saying where it came from
    metrics: RunMetrics

    @property
    def heading(self) -> str:
        return self.label if self.key == "run" else f"{self.label} ({self.key})"


@dataclass(frozen=True, slots=True)
class Metric:
    """One summary row: where the figure is, its unit, and which way is better."""

    label: str
    value: Callable[[dict[str, Any]], float | None]
    kind: str  # a key of units.KINDS
    better: str | None = None  # "lower", "higher" or None (neither)
    note: str = ""


def _at(*path: str) -> Callable[[dict[str, Any]], float | None]:
    def value(figures: dict[str, Any]) -> float | None:
        node: Any = figures
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return None
            node = node[key]
        return None if node is None else float(node)

    return value


SUMMARY = (
    Metric("jobs", _at("jobs"), "count"),
    Metric("completed", _at("completed"), "count", "higher"),
    Metric(
        "never started",
        lambda f: f.get("arrived", f["jobs"]) - f.get("started", f["jobs"]),
        "count",
        "lower",
        "still pending at the end of the run",
    ),
    Metric(
        "not arrived",
        lambda f: f["jobs"] - f.get("arrived", f["jobs"]) if f.get("partial") else None,
        "count",
        None,
        "a stopped run: jobs whose arrival it did not reach",
    ),
    Metric("wait, mean", _at("wait_time_s", "mean"), "duration", "lower"),
    Metric("wait, median", _at("wait_time_s", "p50"), "duration", "lower"),
    Metric("wait, 95th percentile", _at("wait_time_s", "p95"), "duration", "lower"),
    Metric("completion time, mean", _at("jct_s", "mean"), "duration", "lower"),
    Metric("completion time, median", _at("jct_s", "p50"), "duration", "lower"),
    Metric("completion time, 95th percentile", _at("jct_s", "p95"), "duration", "lower"),
    Metric("makespan", _at("makespan_s"), "duration", "lower", "first arrival to end of run"),
    Metric(
        "GPU allocation",
        _at("gpu_allocation_ratio"),
        "ratio",
        "higher",
        "allocated GPUs over cluster GPUs, time-weighted",
    ),
    Metric(
        "fragmentation",
        _at("fragmentation"),
        "ratio",
        "lower",
        "idle GPUs the waiting job cannot use, of cluster GPUs",
    ),
    Metric(
        "fair-share deviation",
        _at("fair_share_deviation"),
        "ratio",
        "lower",
        "queues' distance from their fair share, of cluster GPUs",
    ),
    Metric(
        "Jain's fairness index",
        _at("jain_index"),
        "index",
        "higher",
        "1 = every queue got the same fraction of its fair share",
    ),
    Metric("preemptions", _at("preemptions"), "count", "lower"),
    Metric("reclaims", _at("reclaims"), "count", "lower"),
    Metric("consolidation moves", _at("consolidation_moves"), "count", "lower"),
    Metric("GPU time lost", _at("gpu_hours_lost"), "gpu_hours", "lower", "work evicted jobs redo"),
    Metric("nodes added", _at("autoscaler", "scale_ups"), "count"),
    Metric("nodes removed", _at("autoscaler", "scale_downs"), "count"),
    Metric("scheduling cycles", _at("cycles"), "count"),
    Metric("engine time", _at("engine_seconds"), "duration", None, "wall time in the scheduler"),
)


def _cell_class(metric: Metric, difference: float) -> str:
    if metric.better is None or difference == 0:
        return ""
    improved = difference < 0 if metric.better == "lower" else difference > 0
    return "better" if improved else "worse"


def summary_rows(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The summary table: one row per figure, one cell per run, and B - A when comparing."""
    rows = []
    partial = any(run.metrics.figures.get("partial") for run in runs)
    for metric in SUMMARY:
        values = [metric.value(run.metrics.figures) for run in runs]
        if all(value is None for value in values) and metric.kind == "count":
            continue  # e.g. nodes added, without an autoscaled pool
        row: dict[str, Any] = {
            "label": metric.label,
            "note": metric.note,
            "cells": [units.format_value(metric.kind, value) for value in values],
            "diff": None,
            "diff_class": "",
        }
        if len(values) == 2:
            a, b = values
            if a is None or b is None:
                row["diff"] = units.NOT_APPLICABLE
            else:
                row["diff"] = units.delta(metric.kind, b - a)
                # A partial run covers less simulated time: its difference is no win or loss.
                if not partial:
                    row["diff_class"] = _cell_class(metric, b - a)
        rows.append(row)
    return rows


def _queue_tree(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The queues depth first under their parents, each with its depth for indenting."""
    queues = cluster.get("queues") or []
    names = {queue["name"] for queue in queues}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for queue in queues:
        parent = queue["parent"] if queue["parent"] in names else None
        children.setdefault(parent, []).append(queue)
    out: list[dict[str, Any]] = []

    def visit(parent: str | None, depth: int) -> None:
        for queue in children.get(parent, []):
            limit = queue["gpu_limit"]
            quota = queue["gpu_quota"]
            out.append(
                {
                    "name": queue["name"],
                    "depth": depth,
                    "parent": queue["name"] in children,
                    "quota": "unlimited" if quota is None else units.gpus(quota),
                    "limit": "none" if limit is None else units.gpus(limit),
                    "weight": units.decimal(queue["over_quota_weight"]),
                    "priority": str(queue["priority"]),
                }
            )
            visit(queue["name"], depth + 1)

    visit(None, 0)
    return out


def _node_rows(cluster: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str]]:
    rows = []
    total_nodes = 0
    total_gpus = 0.0
    for group in cluster.get("nodes") or []:
        autoscale = group.get("autoscale")
        nodes = units.count(group["count"])
        if autoscale:
            nodes = f"{autoscale['min']:,} to {autoscale['max']:,} (autoscaled)"
            total_nodes += autoscale["max"]
            total_gpus += autoscale["max"] * group["gpus"]
        else:
            total_nodes += group["count"]
            total_gpus += group["count"] * group["gpus"]
        rows.append(
            {
                "pool": group.get("pool") or units.MISSING,
                "nodes": nodes,
                "gpus": units.decimal(group["gpus"]),
                "model": group.get("gpu_model") or units.MISSING,
                "cpu": units.MISSING if group["cpu"] is None else units.decimal(group["cpu"]),
                "memory": units.MISSING
                if group["memory_gib"] is None
                else f"{units.decimal(group['memory_gib'], 1)} GiB",
            }
        )
    autoscaled = any(group.get("autoscale") for group in cluster.get("nodes") or [])
    total = {
        "nodes": f"{'up to ' if autoscaled else ''}{total_nodes:,}",
        "gpus": f"{'up to ' if autoscaled else ''}{units.gpus(total_gpus)}",
    }
    return rows, total


def _queue_results(figures: dict[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
    """Per-queue figures of the queues that had jobs, and the names of those that had none."""
    rows = []
    empty = []
    for name, queue in figures["queues"].items():
        if not queue["jobs"]:
            empty.append(name)
            continue
        causes = queue.get("pending_reasons") or {}
        top = max(causes, key=lambda cause: causes[cause]) if causes else None
        rows.append(
            {
                "queue": name,
                "jobs": units.count(queue["jobs"]),
                "completed": units.count(queue["completed"]),
                "wait_p50": units.duration(queue["wait_time_s"]["p50"]),
                "wait_p95": units.duration(queue["wait_time_s"]["p95"]),
                "jct_p50": units.duration(queue["jct_s"]["p50"]),
                "allocated": units.decimal(queue["allocated_gpus_mean"], 1),
                "fair": units.decimal(queue["fair_share_gpus_mean"], 1),
                "deviation": units.decimal(queue["fair_share_deviation"], 1),
                "disruptions": units.count(queue["preemptions"] + queue["reclaims"]),
                "lost": units.decimal(queue["gpu_hours_lost"], 2),
                "reason": (
                    f"{top} ({units.count(causes[top])} of {units.count(queue['jobs'])} jobs)"
                    if top is not None
                    else units.MISSING
                ),
            }
        )
    return rows, empty


_STATUS = {
    COMPLETED: "completed",
    RUNNING: "running at the end",
    LOST: "lost: an evicted bare Pod, gone",
    WAITING: "waiting to start again at the end",
}
"""A started job's status in the report, by its ``state``."""


def _job_rows(figures: dict[str, Any]) -> list[dict[str, str]]:
    """Every job, the longest waits first (never started at the top), in human units."""
    entries = sorted(
        figures.get("job_results") or [],
        key=lambda e: (
            e.get("state") == NOT_ARRIVED,  # a stopped run's jobs still to come go last
            e["start_s"] is not None,
            -(e["wait_s"] or 0.0),
        ),
    )
    rows = []
    for entry in entries:
        disruptions = sum(
            entry.get(key, 0) for key in ("preempted", "reclaimed", "moved", "stale_gang_evicted")
        )
        state = entry.get("state")
        if state == NOT_ARRIVED:
            status, why = "not arrived when the run stopped", ""
        elif entry["start_s"] is None:
            status = "never started"
            why = (entry.get("last_reasons") or ["no cycle explained it"])[0]
        else:
            status = _STATUS.get(str(state), "running at the end")
            why = entry.get("waited_for") or "no reason: placed (or pipelined) when first tried"
        rows.append(
            {
                "job": entry["workload"] or entry["name"],
                "queue": entry["queue"],
                "gpus": units.decimal(entry["gpus"]),
                "arrival": units.duration(entry["arrival_s"]),
                "wait": units.duration(entry["wait_s"]),
                "jct": units.duration(
                    None if entry["end_s"] is None else entry["end_s"] - entry["arrival_s"]
                ),
                "nodes": units.count(entry["nodes"]) if entry["nodes"] else units.MISSING,
                "disruptions": units.count(disruptions),
                "status": status,
                "why": why,
            }
        )
    return rows


def _never_started(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """The jobs that never started, each with a display name and its last reasons.

    Why: a reader of the report asks "which job never ran, and why" before
    trusting a queue's fairness figures; the workload a person submitted is
    easier to recognise than its PodGroup's generated name.
    """
    return [
        {
            "job": entry["workload"] or entry["name"],
            "queue": entry["queue"],
            "gpus": units.decimal(entry["gpus"]),
            "arrival": units.duration(entry["arrival_s"]),
            "reasons": entry["last_reasons"] or ["no cycle explained it"],
        }
        for entry in never_started(figures)
    ]


def render(runs: Sequence[Run], *, title: str, source: str, settings: dict[str, str]) -> str:
    """The report page for one run or two runs compared (first is A)."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("simulator", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    named = [(run.heading, run.metrics) for run in runs]
    images = {
        "allocation": plots.allocation(named),
        "wait_cdf": plots.wait_cdf(named),
        "pending_reasons": plots.pending_reasons(named),
        "fair_share": [(name, plots.fair_share(name, metrics)) for name, metrics in named],
    }
    cluster = runs[0].metrics.figures.get("cluster") or {}
    node_rows, node_total = _node_rows(cluster)
    return environment.get_template(TEMPLATE).render(
        title=title,
        source=source,
        settings=settings,
        runs=[
            {
                "key": run.key,
                "label": run.label,
                "heading": run.heading,
                "configuration": run.configuration,
                "figures": run.metrics.figures,
                "simulated": units.duration(run.metrics.figures.get("simulated_seconds")),
                "queues": _queue_results(run.metrics.figures),
                "jobs": _job_rows(run.metrics.figures),
                "never_started": _never_started(run.metrics.figures),
                "reasons": list(run.metrics.figures["pending_reasons"].items()),
            }
            for run in runs
        ],
        summary=summary_rows(runs),
        compare=len(runs) == 2,
        partial=any(run.metrics.figures.get("partial") for run in runs),
        node_rows=node_rows,
        node_total=node_total,
        queue_tree=_queue_tree(cluster),
        images=images,
        never_started_rows=NEVER_STARTED_ROWS,
        job_rows=JOB_ROWS,
        missing=units.MISSING,
    )


def write(path: str, page: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", source=path) from None
