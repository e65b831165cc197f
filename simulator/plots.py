"""The report's plots, drawn with matplotlib and returned as base64 PNG.

Why: the HTML report is one self-contained file a person can mail around, so
every plot is embedded as a data URI instead of a file beside it.
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator import units
from simulator.metrics import RunMetrics

MAX_POINTS = 4000
# wait-time axis ticks at round human durations, from 0 to 30 days; at most MAX_TICKS are shown
WAIT_TICKS = (
    0.0, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
    21600.0, 43200.0, 86400.0, 172800.0, 604800.0, 2592000.0,
)  # fmt: skip
MAX_TICKS = 8


def _figure(height: float = 3.8) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(figsize=(10, height), dpi=90)


def _legend_outside(axes: Any, **options: Any) -> None:
    """The legend right of the plot area, so it never hides a line."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **options)


def _png(figure: Any) -> str:
    from matplotlib import pyplot

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    pyplot.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def time_unit(runs: Sequence[tuple[str, RunMetrics]]) -> tuple[str, float]:
    """(label, seconds per unit) that suits the longest run: seconds, minutes, hours or days."""
    span = max(
        (m.series.times[-1] - m.series.times[0] for _, m in runs if m.series.times), default=0
    )
    for label, seconds, up_to in (("seconds", 1.0, 600), ("minutes", 60.0, 7200)):
        if span <= up_to:
            return label, seconds
    return ("hours", 3600.0) if span <= 5 * 86400 else ("days", 86400.0)


def _thin(times: Sequence[float], unit: float, *values: Sequence[float]) -> tuple[np.ndarray, ...]:
    """The steps up to the end of the run, thinned to about MAX_POINTS (every k-th step).

    ``times`` has one more entry than the values (the end of the last step); the last
    value is repeated there so the final step is drawn. The plots are for the eye.
    """
    t = np.asarray(times, dtype=np.float64)
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    if len(t) == len(arrays[0]) + 1:
        arrays = [np.append(a, a[-1]) if len(a) else np.zeros(1) for a in arrays]
    if len(t) > MAX_POINTS:
        keep = np.unique(np.r_[np.arange(0, len(t), int(np.ceil(len(t) / MAX_POINTS))), len(t) - 1])
        t = t[keep]
        arrays = [a[keep] for a in arrays]
    return (t / unit, *arrays)


def allocation(runs: Sequence[tuple[str, RunMetrics]]) -> str:
    label, unit = time_unit(runs)
    figure, axes = _figure()
    for name, metrics in runs:
        series = metrics.series
        if not series.allocated:
            continue
        t, allocated, capacity = _thin(series.times, unit, series.allocated, series.capacity)
        ratio = np.divide(allocated, capacity, out=np.zeros_like(allocated), where=capacity > 0)
        axes.step(t, ratio, where="post", label=name)
    axes.set_xlabel(f"simulated {label}")
    axes.set_ylabel("GPUs allocated (% of cluster)")
    axes.set_ylim(0, 1.05)
    axes.yaxis.set_major_formatter(_percent_formatter())
    axes.set_title("GPU allocation over time")
    _legend_outside(axes)
    return _png(figure)


def shown_queues(metrics: RunMetrics) -> list[str]:
    """The queues worth a line: those that ever had GPUs allocated or a fair share.

    Parent queues hold no jobs of their own, and a queue nobody used is a flat
    line at zero; both are left out of the plot (the page lists the tree).
    """
    return [
        queue
        for queue, series in metrics.series.queues.items()
        if any(series.allocated) or any(series.fair_share)
    ]


def fair_share(name: str, metrics: RunMetrics) -> str:
    from matplotlib.lines import Line2D

    label, unit = time_unit([(name, metrics)])
    figure, axes = _figure()
    series = metrics.series
    handles = []
    for queue in shown_queues(metrics):
        queue_series = series.queues[queue]
        t, allocated, fair = _thin(
            series.times, unit, queue_series.allocated, queue_series.fair_share
        )
        line = axes.step(t, allocated, where="post", label=queue)
        axes.step(t, fair, where="post", linestyle="--", color=line[0].get_color())
        handles.append(line[0])
    if not handles:
        axes.text(0.5, 0.5, "no queue had GPUs allocated", ha="center", va="center")
        axes.set_axis_off()
        return _png(figure)
    handles.append(Line2D([], [], color="0.3", label="allocated"))
    handles.append(Line2D([], [], color="0.3", linestyle="--", label="fair share"))
    axes.set_xlabel(f"simulated {label}")
    axes.set_ylabel("GPUs")
    axes.set_ylim(bottom=0)
    axes.set_title(f"Queues: allocated (solid) vs fair share (dashed), {name}")
    _legend_outside(axes, handles=handles, fontsize="small")
    return _png(figure)


def wait_cdf(runs: Sequence[tuple[str, RunMetrics]]) -> str:
    """The fraction of jobs that waited at most x, one line per run.

    The fraction is of the jobs that arrived, so a run whose jobs did not all
    start tops out below 100%, and its legend says how many never started.

    Each line runs on to the right edge at its final fraction, so a run whose
    jobs all waited the same time is still a visible step (not a single point
    on the axis), and a marker shows where its jobs' waits are.
    """
    from matplotlib.ticker import FuncFormatter

    figure, axes = _figure()
    all_waits = [
        np.sort(np.asarray(metrics.waits.get("", []), dtype=np.float64)) for _, metrics in runs
    ]
    longest = max((float(waits[-1]) for waits in all_waits if len(waits)), default=0.0)
    right = max(longest * 2.0, 2.0)
    drawn = False
    for (name, metrics), waits in zip(runs, all_waits, strict=True):
        if len(waits) == 0:
            continue
        # Of the jobs that arrived: the line tops out at the share that started.
        arrived = max(int(metrics.figures.get("arrived", len(waits))), len(waits))
        fraction = np.arange(1, len(waits) + 1) / arrived
        label = name
        if waits[0] == waits[-1]:
            label = f"{name}: all {len(waits):,} waited {units.duration(float(waits[0]))}"
        if arrived > len(waits):
            label += f" ({arrived - len(waits):,} of {arrived:,} never started)"
        axes.step(
            np.r_[0.0, waits, right],
            np.r_[0.0, fraction, fraction[-1]],
            where="post",
            label=label,
            marker="o" if len(np.unique(waits)) <= 20 else None,
            markevery=list(range(1, len(waits) + 1)) if len(np.unique(waits)) <= 20 else None,
            markersize=4,
        )
        drawn = True
    if not drawn:
        axes.text(0.5, 0.5, "no job started", ha="center", va="center")
        axes.set_axis_off()
        return _png(figure)
    axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlim(0, right)
    ticks = [tick for tick in WAIT_TICKS if tick <= right]
    step = -(-len(ticks) // MAX_TICKS)  # every step-th, the largest kept
    axes.set_xticks(ticks[::-1][::step][::-1])
    axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: units.duration(x)))
    axes.yaxis.set_major_formatter(_percent_formatter())
    axes.set_xlabel("wait time (log scale above 1s)")
    axes.set_ylabel("jobs started within")
    axes.set_ylim(0, 1.02)
    axes.set_title("Wait time CDF")
    _legend_outside(axes)
    return _png(figure)


def _percent_formatter() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def _wrapped(label: str, width: int = 44, lines: int = 3) -> str:
    """A long reason on up to ``lines`` lines, cut with an ellipsis only beyond them."""
    parts = textwrap.wrap(label, width) or [label]
    if len(parts) > lines:
        parts = [*parts[: lines - 1], parts[lines - 1][: width - 1] + "…"]
    return "\n".join(parts)


def pending_reasons(runs: Sequence[tuple[str, RunMetrics]]) -> str:
    from matplotlib.ticker import MaxNLocator

    labels: list[str] = []
    for _, metrics in runs:
        for reason in list(metrics.figures["pending_reasons"])[:8]:
            if reason not in labels:
                labels.append(reason)
    # a bar keeps its thickness however few reasons there are
    figure, axes = _figure(min(3.8, 1.4 + 0.35 * max(1, len(labels)) * len(runs)))
    if not labels:
        axes.text(0.5, 0.5, "no job was ever pending", ha="center", va="center")
        axes.set_axis_off()
        return _png(figure)
    height = 0.8 / len(runs)
    positions = np.arange(len(labels))
    for i, (name, metrics) in enumerate(runs):
        counts = [metrics.figures["pending_reasons"].get(label, 0) for label in labels]
        axes.barh(positions + i * height, counts, height=height, label=name)
    axes.set_yticks(positions + height * (len(runs) - 1) / 2)
    axes.set_yticklabels([_wrapped(label) for label in labels], fontsize="small")
    axes.invert_yaxis()
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("jobs (each counted once, by what it waited for longest)")
    axes.set_title("Pending reasons")
    _legend_outside(axes)
    return _png(figure)
