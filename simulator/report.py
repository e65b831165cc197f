"""The HTML report: figures, per-queue tables and plots in one self-contained page.

Why: a what-if answer is shared with people who will not run the CLI; one
file with the numbers and the pictures (rendered from a jinja2 template,
plots embedded as base64 PNG) is easy to attach to a change request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crds.errors import InputError
from simulator import plots
from simulator.metrics import RunMetrics, never_started

TEMPLATE = "report.html.j2"
NEVER_STARTED_ROWS = 50  # per run; the JSON's job_results has them all


def render(
    runs: Sequence[tuple[str, RunMetrics]], *, title: str, source: str, settings: dict[str, Any]
) -> str:
    """The report page for one run or two runs compared (first is A)."""
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("simulator", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
    )
    images = {
        "allocation": plots.allocation(runs),
        "wait_cdf": plots.wait_cdf(runs),
        "pending_reasons": plots.pending_reasons(runs),
        "fair_share": [(name, plots.fair_share(name, metrics)) for name, metrics in runs],
    }
    return environment.get_template(TEMPLATE).render(
        title=title,
        source=source,
        settings=settings,
        runs=[(name, metrics.figures) for name, metrics in runs],
        images=images,
        never_started=[
            (name, metrics.figures["jobs"], _never_started(metrics.figures))
            for name, metrics in runs
        ],
        never_started_rows=NEVER_STARTED_ROWS,
    )


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
            "gpus": f"{entry['gpus']:g}",
            "arrival_s": entry["arrival_s"],
            "reasons": entry["last_reasons"] or ["no cycle explained it"],
        }
        for entry in never_started(figures)
    ]


def write(path: str, page: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", source=path) from None
