"""The results of a sweep: the terminal table, the JSON document and the HTML page with its plot.

Why: a sweep answers "what does each setting trade?": which points buy GPU
utilisation with waiting, and which give up fairness for it. The table lists
every point (failed and cancelled ones with their error); the page adds a
trade-off plot: utilisation against mean wait, one marker per point, its
colour Jain's index and its size the fair-share deviation. It is its own
page, beside the single-run report (``simulator.report``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from simulator import units
from simulator.plots import _png
from simulator.sweep import Sweep

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TEMPLATE = "sweep.html.j2"


def _index(value: float) -> str:
    return f"{value:.3f}"


# (heading, metrics key, formatter) of the table's figure columns, after the point's name:
# durations and percentages as the run's table and report write them (simulator/units.py);
# a missing figure is "-" (_cell), so the formatters see values only.
COLUMNS: tuple[tuple[str, str | None, Callable[[Any], str]], ...] = (
    ("util", "gpu_allocation_ratio", units.percent),
    ("wait mean", "wait_mean_s", units.duration),
    ("wait p95", "wait_p95_s", units.duration),
    ("Jain", "jain_index", _index),
    ("fs dev", "fair_share_deviation", _index),
    ("makespan", "makespan_s", units.duration),
    ("not started", "not_started", units.count),
    ("preempt/reclaim", None, str),
)


def _not_started(metrics: dict[str, Any]) -> int:
    return int(metrics.get("not_started") or 0)


def _finished(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points that ran to the end, in grid order."""
    return [r for r in rows if r["status"] == "ok" and r["metrics"] is not None]


def _started(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The finished points where some job started (they have a wait)."""
    return [r for r in _finished(rows) if r["metrics"].get("wait_mean_s") is not None]


def _front_floor(rows: Sequence[dict[str, Any]]) -> int | None:
    """The fewest jobs never started among the points with a wait: only points that
    leave no more compete for the front (None: no such point)."""
    started = [_not_started(r["metrics"]) for r in _started(rows)]
    return min(started) if started else None


def pareto(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The finished points no other beats on both utilisation (higher) and mean wait (lower).

    A point is dominated when another has at least its utilisation and at most
    its mean wait, and is better on one of them; the rest are the trade-off
    front a person chooses from. Grid order.

    Only the points that started the most jobs compete: a point that left
    more jobs never started than another point did less work (a queue it
    blocks has no wait to count and no fair share to miss), so its shorter
    wait or better fairness is not a trade a platform team can take. A point
    where no job started has no wait at all and is never on the front.
    """
    least = _front_floor(rows)
    rivals = [
        (r["name"], r["metrics"]["gpu_allocation_ratio"] or 0.0, r["metrics"]["wait_mean_s"])
        for r in _started(rows)
        if _not_started(r["metrics"]) == least
    ]
    return [
        name
        for name, util, wait in rivals
        if not any(u >= util and w <= wait and (u > util or w < wait) for _, u, w in rivals)
    ]


def off_front(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Finished points kept off the front by jobs they never started: name -> why, grid order."""
    least = _front_floor(rows)
    out = {}
    for r in _finished(rows):
        missing = _not_started(r["metrics"])
        if r["metrics"].get("wait_mean_s") is None:
            out[r["name"]] = "no job started"
        elif least is not None and missing > least:
            out[r["name"]] = f"{missing} never started ({missing - least} more than the front)"
    return out


def document(
    sweep: Sweep, rows: Sequence[dict[str, Any]], settings: dict[str, Any]
) -> dict[str, Any]:
    """The ``-o json``/``yaml`` document: the sweep, its settings and one entry per point."""
    return {
        "sweep": sweep.name,
        "file": sweep.path,
        "axes": list(sweep.axes),
        "settings": settings,
        "pareto": pareto(rows),
        "points": list(rows),
    }


def _cell(metrics: dict[str, Any], key: str | None, form: Callable[[Any], str]) -> str:
    if key is None:
        return f"{metrics['preemptions']} / {metrics['reclaims']}"
    value = metrics.get(key)
    return "-" if value is None else form(value)


def table(rows: Sequence[dict[str, Any]], stream: TextIO | None = None) -> None:
    """One line per point, in grid order; a failed or cancelled point shows its status and error."""
    out = stream or sys.stdout
    header = ["point", *(c[0] for c in COLUMNS)]
    lines = []
    notes = []
    front = set(pareto(rows))
    for entry in rows:
        metrics = entry["metrics"]
        if entry["status"] == "ok" and metrics is not None:
            cells = [_cell(metrics, key, form) for _, key, form in COLUMNS]
            if metrics.get("partial"):
                cells[-1] += " (partial)"
        else:
            cells = [entry["status"].upper(), *([""] * (len(COLUMNS) - 1))]
            if entry["status"] == "failed":
                notes.append(f"{entry['name']}: failed: {entry['error']}")
        lines.append([f"{entry['name']} *" if entry["name"] in front else entry["name"], *cells])
    cancelled = sum(entry["status"] == "cancelled" for entry in rows)
    if cancelled:
        notes.append(f"{cancelled} of {len(rows)} points cancelled: stopped by a signal")
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]

    def show(line: list[str]) -> str:
        first = line[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(line[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    out.write(show(header) + "\n")
    out.write("-" * len(show(header)) + "\n")
    for line in lines:
        out.write(show(line) + "\n")
    kept_off = off_front(rows)
    if kept_off:
        notes[:0] = [f"{name}: not on the front: {why}" for name, why in kept_off.items()]
    if front:
        notes.insert(
            0,
            "* on the trade-off front: no other point that started as many jobs has both"
            " higher util and lower wait",
        )
    for note in notes:
        out.write(note + "\n")


def tradeoff_plot(rows: Sequence[dict[str, Any]]) -> str:
    """The trade-off plot (``tradeoff_figure``) as a base64 PNG for the page."""
    return _png(tradeoff_figure(rows))


def tradeoff_figure(rows: Sequence[dict[str, Any]]) -> Figure:
    """Utilisation (x) against mean wait (y) per point; colour Jain's index, size the deviation.

    A point where no job started has no wait: it is not drawn (never at a wait
    of 0) but named in a note. A point kept off the front by jobs it never
    started is a hollow marker whose label says how many.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    finished = _finished(rows)
    done = _started(rows)
    no_wait = [r["name"] for r in finished if r["metrics"].get("wait_mean_s") is None]
    figure, axes = pyplot.subplots(figsize=(10, 5.2), dpi=90)
    if not done:
        text = "no point finished" if not finished else "no job started in any point"
        axes.text(0.5, 0.5, text, ha="center", va="center")
        axes.set_axis_off()
        return figure
    excluded = off_front(rows)
    metrics = [r["metrics"] for r in done]
    x = [m["gpu_allocation_ratio"] or 0.0 for m in metrics]
    y = [m["wait_mean_s"] for m in metrics]
    jain = [m["jain_index"] if m["jain_index"] is not None else 1.0 for m in metrics]
    deviation = [m["fair_share_deviation"] or 0.0 for m in metrics]
    top = max(deviation) or 1.0
    sizes = [40 + 360 * d / top for d in deviation]
    low = min(jain)
    hollow = [r["name"] in excluded for r in done]
    full = [i for i, h in enumerate(hollow) if not h]
    empty = [i for i, h in enumerate(hollow) if h]
    drawn = axes.scatter(
        [x[i] for i in full], [y[i] for i in full], c=[jain[i] for i in full],
        s=[sizes[i] for i in full], edgecolors="black", linewidths=0.5, alpha=0.85, cmap="viridis",
        vmin=min(low - 0.05, 0.9), vmax=1.0,
    )  # fmt: skip
    if empty:
        axes.scatter(
            [x[i] for i in empty], [y[i] for i in empty], s=[sizes[i] for i in empty],
            facecolors="none", edgecolors="tab:red", linewidths=1.2, linestyle="--",
        )  # fmt: skip
    front = set(pareto(rows))
    edge = sorted((xi, yi) for xi, yi, r in zip(x, y, done, strict=True) if r["name"] in front)
    axes.plot(
        [p[0] for p in edge], [p[1] for p in edge], color="tab:red", linewidth=1, linestyle="--",
        zorder=0, label="trade-off front",
    )  # fmt: skip
    middle = (min(x) + max(x)) / 2
    placed: list[tuple[float, float]] = []  # label anchors so far, in axes fractions
    span_x = (max(x) - min(x)) or 1.0
    span_y = (max(y) - min(y)) or 1.0
    for xi, yi, entry in zip(x, y, done, strict=True):
        right_half = xi > middle and max(x) > min(x)  # its name goes to the left, inside the axes
        fx, fy = (xi - min(x)) / span_x, (yi - min(y)) / span_y
        shift = 5
        while any(abs(fx - px) < 0.25 and abs(fy + shift / 200 - py) < 0.04 for px, py in placed):
            shift += 9  # a label that would sit on another goes up a line
        placed.append((fx, fy + shift / 200))
        name = entry["name"]
        if name in excluded:
            name += ": " + excluded[name]
        axes.annotate(
            name,
            (xi, yi),
            textcoords="offset points",
            xytext=(-7, shift) if right_half else (7, shift),
            ha="right" if right_half else "left",
            fontsize="x-small",
            color="tab:red" if entry["name"] in excluded else "black",
        )
    axes.margins(x=0.08, y=0.15)
    note = "better: right (busier GPUs) and down (shorter waits)"
    if empty:
        note = "hollow red: jobs never started, so not on the front\n" + note
    if no_wait:
        note = f"not drawn, no job started: {', '.join(no_wait)}\n" + note
    axes.text(
        0.99, 0.01, note, transform=axes.transAxes, ha="right", va="bottom",
        fontsize="x-small", color="dimgrey",
    )  # fmt: skip
    axes.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=None))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: units.duration(v)))
    axes.set_xlabel("GPU allocation (time-weighted utilisation)")
    axes.set_ylabel("mean wait")
    axes.set_title("Sweep trade-off: utilisation vs wait")
    axes.grid(alpha=0.3)
    colour = figure.colorbar(drawn, ax=axes, pad=0.02)
    colour.set_label("Jain's index (1 = fair)")
    handles = [
        axes.scatter([], [], s=40 + 360 * f, color="grey", edgecolors="black", linewidths=0.5)
        for f in (0.0, 0.5, 1.0)
    ]
    axes.legend(
        [*handles, axes.get_lines()[0]],
        [*(units.decimal(top * f, 3) for f in (0.0, 0.5, 1.0)), "trade-off\nfront"],
        title="fair-share\ndeviation",
        loc="upper left",
        bbox_to_anchor=(1.18, 1.0),
        borderaxespad=0.0,
        labelspacing=1.4,
        frameon=False,
    )
    return figure


def _page_row(entry: dict[str, Any], front: set[str]) -> dict[str, Any]:
    """A point's cells for the page, each in the unit a person reads (no raw float, no None)."""
    m = entry["metrics"]
    out: dict[str, Any] = {
        "name": entry["name"],
        "label": entry["name"] + (" *" if entry["name"] in front else ""),
        "params": entry["params"],
        "status": entry["status"],
        "error": entry["error"] or "",
        "cells": [],
        "queues": {},
    }
    if m is None:
        return out
    if m.get("partial"):
        out["status"] += " (partial)"
    out["cells"] = [
        units.percent(m["gpu_allocation_ratio"]),
        units.duration(m["wait_mean_s"]),
        units.duration(m["wait_p95_s"]),
        units.decimal(m["jain_index"], 3) if m["jain_index"] is not None else units.MISSING,
        units.decimal(m["fair_share_deviation"], 3),
        units.duration(m["makespan_s"]),
        f"{units.count(m['not_started'])} of {units.count(m['jobs'])}",
        units.count(m["preemptions"]),
        units.count(m["reclaims"]),
        units.gpu_hours(m.get("gpu_hours_lost")),
        units.duration(m.get("wall_seconds")),
    ]
    for name, q in m["queues"].items():
        if not q["jobs"]:
            continue  # a parent queue or an unused one: named below the table
        wait = units.duration(q["wait_mean_s"])
        out["queues"][name] = (
            f"wait {wait}; {units.gpus(q['allocated_gpus_mean'])} "
            f"(fair {units.gpus(q['fair_share_gpus_mean'])})"
        )
    return out


def progress(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How far a sweep got: the settings' counts, and whether every point ran to its end."""
    finished = sum(entry["status"] in ("ok", "failed") for entry in rows)
    cancelled = sum(entry["status"] == "cancelled" for entry in rows)
    return {"points done": finished, "points cancelled": cancelled, "complete": cancelled == 0}


def render(
    sweep: Sweep, rows: Sequence[dict[str, Any]], *, source: str, settings: dict[str, Any]
) -> str:
    """The sweep's HTML page: settings, the trade-off plot and a row per point."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("simulator", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    front = set(pareto(rows))
    page_rows = [_page_row(entry, front) for entry in rows]
    used = {q for r in page_rows for q in r["queues"]}
    every = {q for r in rows if r["metrics"] for q in r["metrics"]["queues"]}
    return environment.get_template(TEMPLATE).render(
        title=f"podmuster simulate --sweep: {sweep.name}",
        source=source,
        settings=settings,
        axes=list(sweep.axes),
        rows=page_rows,
        queues=sorted(used),
        empty_queues=sorted(every - used),
        variants=list(sweep.variants),
        off_front=off_front(rows),
        cancelled=sum(entry["status"] == "cancelled" for entry in rows),
        total=len(rows),
        plot=tradeoff_plot(rows),
    )
