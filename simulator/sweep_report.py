"""The results of a sweep: the terminal table, the JSON document and the HTML page with its plot.

Why: a sweep answers "what does each setting trade?": which points buy GPU
utilisation with waiting, and which give up fairness for it. The table lists
every point (failed and cancelled ones with their error); the page adds a
trade-off plot: utilisation against mean wait, one marker per point, its
colour Jain's index and its size the fair-share deviation. It is its own
page, beside the single-run report (``simulator.report``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TextIO

from simulator import units
from simulator.plots import _png
from simulator.sweep import Sweep

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation, Text
    from matplotlib.transforms import Bbox

# a label's place around its marker: (horizontal alignment, dx, dy) in display pixels
_Spot = tuple[Literal["left", "center", "right"], float, float]

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


# Where a point's label goes, in display pixels: this far from its marker's edge, from
# another label and from the plot's note.
_GAP = 3.0


@dataclass(frozen=True)
class _Label:
    """A point's label, its marker's radius in points, and whether its name reads better
    to the left of the marker (a point in the right half of the plot)."""

    annotation: Annotation
    radius: float
    leftward: bool


def _spots(radius: float, width: float, height: float, leftward: bool, rows: int) -> list[_Spot]:
    """Where a label of ``width`` x ``height`` px may sit around a marker of ``radius`` px,
    nearest first: (ha, dx, dy) from the marker's centre to the label's anchor.

    Beside the marker (the side towards the plot's middle first), above or below it
    (centred, or starting or ending over it), then a line further up or down at a time,
    up to ``rows`` lines.
    """
    near = radius + _GAP
    step = height + _GAP
    sides: list[tuple[Literal["left", "right"], float]] = [("right", -near), ("left", near)]
    if not leftward:
        sides.reverse()
    ranked: list[tuple[float, _Spot]] = []
    for k in range(rows + 1):
        for dy in (0.0,) if k == 0 else (k * step, -k * step):
            reach = math.hypot(near, max(0.0, abs(dy) - height / 2))
            ranked += [(reach, (ha, dx, dy)) for ha, dx in sides]
        offset = near + height / 2 + k * step
        ranked += [
            (near + k * step, (ha, 0.0, sign * offset))
            for sign in (1, -1)
            for ha in ("center", sides[0][0], sides[1][0])
        ]
    ranked.sort(key=lambda item: item[0])  # stable: a tie keeps the order above
    return [spot for _, spot in ranked]


def _meet(a: Bbox, b: Bbox, pad: float = 0.0) -> bool:
    """Whether two boxes overlap or come closer than ``pad``."""
    return bool(a.x0 < b.x1 + pad and b.x0 < a.x1 + pad and a.y0 < b.y1 + pad and b.y0 < a.y1 + pad)


def _place_labels(
    figure: Figure, axes: Axes, labels: Sequence[_Label], avoid: Sequence[Text]
) -> None:
    """Move each point's label to where it meets no other label nor ``avoid`` and stays
    inside the axes; one moved away from its marker gets a thin leader line to it.

    Measured on the drawn figure, in display pixels: each label's box comes from the
    renderer, the longest label is placed first, and the places ``_spots`` lists are
    tried nearest first (one sticking out sideways slid back into the axes). The first
    inside the axes that meets no label placed before it, nor the note, nor its own
    marker, and covers no other marker wins; without one, the nearest that covers the
    fewest other markers. The axes' limits are fixed first so that nothing drawn later
    moves the points.
    """
    from matplotlib.lines import Line2D
    from matplotlib.transforms import Bbox

    figure.canvas.draw()
    axes.set_xlim(axes.get_xlim())
    axes.set_ylim(axes.get_ylim())
    frame = axes.get_window_extent()
    pixels = figure.dpi / 72  # display pixels per point
    centres = [axes.transData.transform(label.annotation.xy) for label in labels]
    markers = [
        Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)
        for (cx, cy), r in zip(centres, (label.radius * pixels for label in labels), strict=True)
    ]
    taken = [text.get_window_extent() for text in avoid]
    boxes = [label.annotation.get_window_extent() for label in labels]
    # the longest labels first: they have the fewest places to go
    for i in sorted(range(len(labels)), key=lambda i: -boxes[i].width):
        (cx, cy), label, own = centres[i], labels[i], markers[i]
        width, height = boxes[i].width, boxes[i].height
        rows = int(frame.height // (height + _GAP))
        spots = _spots(label.radius * pixels, width, height, label.leftward, rows)
        best: tuple[int, _Spot] | None = None
        for ha, dx, dy in spots:
            left = cx + dx - {"left": 0.0, "right": width, "center": width / 2}[ha]
            slide = min(max(left, frame.x0), frame.x1 - width) - left  # back into the axes
            dx, left = dx + slide, left + slide
            spot = Bbox.from_bounds(left, cy + dy - height / 2, width, height)
            if spot.x0 < frame.x0 or spot.y0 < frame.y0 or spot.y1 > frame.y1 or _meet(spot, own):
                continue
            if any(_meet(spot, other, _GAP) for other in taken):
                continue
            covered = sum(_meet(spot, m) for m in markers if m is not own)
            if best is None or covered < best[0]:
                best = (covered, (ha, dx, dy))
            if covered == 0:
                break
        ha, dx, dy = spots[0] if best is None else best[1]  # no free place: beside its marker
        label.annotation.set_horizontalalignment(ha)
        label.annotation.xyann = (dx / pixels, dy / pixels)
        placed = label.annotation.get_window_extent()
        taken.append(placed)
        # the label's nearest point to the marker's centre; farther than half a line from
        # the marker's edge, a leader line joins them
        ex, ey = min(max(cx, placed.x0), placed.x1), min(max(cy, placed.y0), placed.y1)
        length = math.hypot(ex - cx, ey - cy)
        edge = label.radius * pixels
        if length - edge > _GAP + height / 2:
            ends = axes.transAxes.inverted().transform(
                [(cx + (ex - cx) * edge / length, cy + (ey - cy) * edge / length), (ex, ey)]
            )
            axes.add_line(
                Line2D(
                    ends[:, 0],
                    ends[:, 1],
                    transform=axes.transAxes,
                    color="grey",
                    linewidth=0.6,
                    alpha=0.8,
                )
            )


def tradeoff_plot(rows: Sequence[dict[str, Any]]) -> str:
    """The trade-off plot (``tradeoff_figure``) as a base64 PNG for the page."""
    return _png(tradeoff_figure(rows))


def tradeoff_figure(rows: Sequence[dict[str, Any]]) -> Figure:
    """Utilisation (x) against mean wait (y) per point; colour Jain's index, size the deviation.

    A point where no job started has no wait: it is not drawn (never at a wait
    of 0) but named in a note. A point kept off the front by jobs it never
    started is a hollow marker whose label says how many. Each label is placed
    where it meets no other, inside the axes (``_place_labels``).
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
    labels: list[_Label] = []
    for xi, yi, size, entry in zip(x, y, sizes, done, strict=True):
        name = entry["name"]
        if name in excluded:
            name += ": " + excluded[name]
        annotation = axes.annotate(
            name, (xi, yi), textcoords="offset points", xytext=(0, 0), va="center",
            fontsize="x-small", color="tab:red" if entry["name"] in excluded else "black",
        )  # fmt: skip
        # the marker's radius: its size is an area in points squared
        labels.append(_Label(annotation, size**0.5 / 2, xi > middle and max(x) > min(x)))
    axes.margins(x=0.08, y=0.15)
    note = "better: right (busier GPUs) and down (shorter waits)"
    if empty:
        note = "hollow red: jobs never started, so not on the front\n" + note
    if no_wait:
        note = f"not drawn, no job started: {', '.join(no_wait)}\n" + note
    note_text = axes.text(
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
    _place_labels(figure, axes, labels, avoid=[note_text])
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
