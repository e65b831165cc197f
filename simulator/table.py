"""The terminal view of a run: a table of figures at the end.

Why: a person running ``podmuster simulate`` wants to read the answer at a
glance; with two configurations the columns sit side by side so the
differences stand out. (Progress while it runs: ``simulator.progress``.)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from simulator import units
from simulator.metrics import never_started

NEVER_STARTED_LINES = 10  # per run; the JSON's job_results has them all


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value and abs(value) < 0.001:
            return "<0.001" if value > 0 else ">-0.001"  # never 9.3e-05
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _duration(value: Any) -> str:
    """As the report writes durations (``12m05s``, ``3h12m``): one formatter for both."""
    return units.duration(None if value is None else float(value))


def _gpus(count: float) -> str:
    return f"{count:g} GPU" if count == 1 else f"{count:g} GPUs"


def _rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    wait = figures["wait_time_s"]
    jct = figures["jct_s"]
    rows = [
        ("jobs (completed)", f"{figures['jobs']:,} ({figures['completed']:,})"),
        ("wait mean / p50 / p95", " / ".join(_duration(wait[k]) for k in ("mean", "p50", "p95"))),
        ("JCT mean / p50 / p95", " / ".join(_duration(jct[k]) for k in ("mean", "p50", "p95"))),
        ("makespan", _duration(figures["makespan_s"])),
        ("GPU allocation ratio", _number(figures["gpu_allocation_ratio"])),
        ("fragmentation", _number(figures["fragmentation"])),
        ("fair-share deviation", _number(figures["fair_share_deviation"])),
        ("Jain's index (queues)", _number(figures["jain_index"])),
        ("preemptions / reclaims", f"{figures['preemptions']} / {figures['reclaims']}"),
        ("consolidation moves", _number(figures["consolidation_moves"])),
        ("GPU-hours lost", _number(figures["gpu_hours_lost"])),
        ("cycles", _number(figures["cycles"])),
        ("engine seconds", _number(figures["engine_seconds"])),
    ]
    if "autoscaler" in figures:
        scaler = figures["autoscaler"]
        rows.append(("nodes added / removed", f"{scaler['scale_ups']} / {scaler['scale_downs']}"))
    return rows


def _queue_rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for name, queue in figures["queues"].items():
        wait = queue["wait_time_s"]
        rows.append(
            (
                f"queue {name}",
                f"{queue['jobs']} jobs, wait p50 {_duration(wait['p50'])} p95 "
                f"{_duration(wait['p95'])}, {_number(queue['allocated_gpus_mean'])} GPUs"
                f" (fair {_number(queue['fair_share_gpus_mean'])})",
            )
        )
    return rows


def _reason_rows(figures: dict[str, Any], limit: int = 5) -> list[tuple[str, str]]:
    reasons = list(figures["pending_reasons"].items())[:limit]
    return [(f"pending: {reason}", f"{count:,} jobs") for reason, count in reasons]


def _partial_rows(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """The first row of a run stopped early (SIGINT/SIGTERM): its figures cover only part of it."""
    if not figures.get("partial"):
        return []
    return [("PARTIAL (interrupted)", f"after {_duration(figures['simulated_seconds'])} simulated")]


def render(runs: Sequence[tuple[str, dict[str, Any]]], stream: TextIO | None = None) -> None:
    """Print one column per run (name, figures)."""
    out = stream or sys.stdout
    columns = [[*_partial_rows(f), *_rows(f), *_queue_rows(f), *_reason_rows(f)] for _, f in runs]
    labels: list[str] = []
    for column in columns:
        for label, _ in column:
            if label not in labels:
                labels.append(label)
    partial = "PARTIAL (interrupted)"
    if partial in labels:  # first, whichever run was stopped (B, after a whole A)
        labels.remove(partial)
        labels.insert(0, partial)
    values = [dict(column) for column in columns]
    label_width = max(len(label) for label in labels)
    widths = [
        max(len(name), *(len(v.get(label, "")) for label in labels))
        for (name, _), v in zip(runs, values, strict=True)
    ]
    header = (
        " " * label_width
        + "  "
        + "  ".join(name.ljust(w) for (name, _), w in zip(runs, widths, strict=True))
    )
    out.write(header.rstrip() + "\n")
    out.write("-" * len(header.rstrip()) + "\n")
    for label in labels:
        cells = "  ".join(v.get(label, "-").ljust(w) for v, w in zip(values, widths, strict=True))
        out.write(f"{label.ljust(label_width)}  {cells}".rstrip() + "\n")
    skipped = runs[0][1].get("skipped") or {}
    for reason, count in skipped.items():
        out.write(f"skipped {count:,} input rows: {reason}\n")
    for name, figures in runs:
        _never_started(out, name if len(runs) > 1 else "", figures)


def _never_started(out: TextIO, name: str, figures: dict[str, Any]) -> None:
    """List the jobs that never started, each with the engine's last reason.

    Why: "10 jobs (9 completed)" does not say which job never ran or why, and
    one such job skews its queue's fairness figures. The first reason is the
    placement failure ("0/2 nodes are available: ..."); the JSON has the rest.
    """
    jobs = never_started(figures)
    if not jobs:
        return
    where = f" in {name}" if name else ""
    out.write(f"\njobs that never started{where}: {len(jobs):,} of {figures['jobs']:,}\n")
    shown = jobs[:NEVER_STARTED_LINES]
    names = [entry["workload"] or entry["name"] for entry in shown]
    width = max(len(name) for name in names)
    for entry, job in zip(shown, names, strict=True):
        reasons = entry["last_reasons"] or ["no cycle explained it"]
        out.write(
            f"  {job.ljust(width)}  queue {entry['queue']}, {_gpus(entry['gpus'])}, "
            f"arrived {_duration(entry['arrival_s'])}: {reasons[0]}\n"
        )
    if len(jobs) > NEVER_STARTED_LINES:
        out.write(f"  ... and {len(jobs) - NEVER_STARTED_LINES:,} more (-o json: job_results)\n")
