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
from simulator.metrics import RunMetrics

TEMPLATE = "report.html.j2"


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
    )


def write(path: str, page: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror}", source=path) from None
