"""The report's plots, drawn with matplotlib and returned as base64 PNG.

Why: the HTML report is one self-contained file a person can mail around, so
every plot is embedded as a data URI instead of a file beside it.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.metrics import RunMetrics

MAX_POINTS = 4000


def _figure() -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot.subplots(figsize=(9, 3.6), dpi=90)


def _png(figure: Any) -> str:
    from matplotlib import pyplot

    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png")
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
    axes.set_ylabel("allocated GPUs / cluster GPUs")
    axes.set_ylim(0, 1.05)
    axes.set_title("GPU allocation over time")
    axes.legend(loc="upper right")
    return _png(figure)


def fair_share(name: str, metrics: RunMetrics) -> str:
    label, unit = time_unit([(name, metrics)])
    figure, axes = _figure()
    series = metrics.series
    for queue, queue_series in series.queues.items():
        if not queue_series.allocated:
            continue
        t, allocated, fair = _thin(
            series.times, unit, queue_series.allocated, queue_series.fair_share
        )
        line = axes.step(t, allocated, where="post", label=f"{queue} allocated")
        axes.step(
            t,
            fair,
            where="post",
            linestyle="--",
            color=line[0].get_color(),
            label=f"{queue} fair share",
        )
    axes.set_xlabel(f"simulated {label}")
    axes.set_ylabel("GPUs")
    axes.set_title(f"Queues: allocated vs fair share ({name})")
    axes.legend(loc="upper right", fontsize="small", ncol=2)
    return _png(figure)


def wait_cdf(runs: Sequence[tuple[str, RunMetrics]]) -> str:
    figure, axes = _figure()
    for name, metrics in runs:
        waits = np.sort(np.asarray(metrics.waits.get("", []), dtype=np.float64))
        if len(waits) == 0:
            continue
        fraction = np.arange(1, len(waits) + 1) / len(waits)
        axes.step(np.r_[0.0, waits], np.r_[0.0, fraction], where="post", label=name)
    axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlabel("wait time (s)")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.02)
    axes.set_title("Wait time CDF")
    axes.legend(loc="lower right")
    return _png(figure)


def pending_reasons(runs: Sequence[tuple[str, RunMetrics]]) -> str:
    figure, axes = _figure()
    labels: list[str] = []
    for _, metrics in runs:
        for reason in list(metrics.figures["pending_reasons"])[:8]:
            if reason not in labels:
                labels.append(reason)
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
    axes.set_yticklabels([label[:48] for label in labels], fontsize="small")
    axes.invert_yaxis()
    axes.set_xlabel("jobs that waited for this reason")
    axes.set_title("Pending reasons")
    axes.legend(loc="lower right")
    return _png(figure)
