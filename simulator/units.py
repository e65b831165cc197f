"""Figures in the units a person reads: durations, percentages, GPUs, GPU-hours, counts.

Why: the run's JSON keeps raw numbers (seconds, ratios from 0 to 1) for
programs; the report is read by people who should see ``2h05m``, ``82.5%``
and ``3.1 GPU-h``, never ``7509.0``, ``None`` or ``9.3e-05``. Every text
figure of the report (and the progress lines) is formatted here, so one
value reads the same everywhere. Each formatter also has a signed form for
the difference column (B minus A) of a comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

MISSING: Final = "—"
"""A figure that does not exist (no job started, so no wait); the page explains it."""
MINUS: Final = "\N{MINUS SIGN}"
"""The sign of a negative difference: a true minus, as wide as the plus."""
NOT_APPLICABLE: Final = "n/a"
"""A figure that cannot be computed for this run (no queue had a fair share)."""


def duration(seconds: float | None) -> str:
    """``<0.1s``, ``0.4s``, ``42s``, ``12m05s``, ``3h12m``, ``2d03h``; ``—`` for no value.

    Below 10 s a tenth of a second is kept (a wait of one 1 s period and a
    half is 1.5s, not 2s); above a minute the two largest units are shown.
    """
    if seconds is None:
        return MISSING
    value = abs(float(seconds))
    sign = "-" if seconds < 0 else ""
    if 0 < value < 0.05:
        return f"{sign}<0.1s"
    if round(value, 1) < 10:
        tenths = f"{value:.1f}".removesuffix(".0")
        return f"{sign}{tenths}s"
    whole = round(value)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d{hours:02d}h"
    if hours:
        return f"{sign}{hours}h{minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m{secs:02d}s"
    return f"{sign}{secs}s"


def percent(ratio: float | None) -> str:
    """A ratio from 0 to 1 as a percentage: ``82.5%``, ``0.05%``, ``<0.01%``, ``0%``."""
    if ratio is None:
        return NOT_APPLICABLE
    value = float(ratio) * 100
    magnitude = abs(value)
    sign = "-" if value < 0 else ""
    if magnitude == 0:
        return "0%"
    if magnitude < 0.01:
        return f"{sign}<0.01%"
    if magnitude < 1:
        return f"{sign}{magnitude:.2f}%"
    if magnitude < 99.95 or magnitude >= 100:
        return f"{sign}{magnitude:.1f}%".replace(".0%", "%")
    return f"{sign}99.9%"  # not rounded up to a full 100%: something was left


def decimal(value: float | None, places: int = 2) -> str:
    """A plain number with thousands separators and at most ``places`` decimals; never 1e-05."""
    if value is None:
        return NOT_APPLICABLE
    number = float(value)
    if number and abs(number) < 10**-places:
        return f"{'-' if number < 0 else ''}<{10**-places:.{places}f}"
    text = f"{number:,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def count(value: int | float | None) -> str:
    """A whole count with thousands separators: ``1,523``."""
    if value is None:
        return MISSING
    return f"{round(value):,}"


def gpus(value: float | None) -> str:
    """GPUs, fractions kept: ``1 GPU``, ``0.5 GPU``, ``12.3 GPUs``."""
    if value is None:
        return MISSING
    text = decimal(value, 1)
    return f"{text} GPU" if text == "1" or 0 < abs(float(value)) < 1 else f"{text} GPUs"


def gpu_hours(value: float | None) -> str:
    """GPU time: ``0 GPU-h``, ``0.42 GPU-h``, ``3.1 GPU-h``, ``1,204 GPU-h``."""
    if value is None:
        return MISSING
    number = float(value)
    places = 2 if abs(number) < 1 else 1 if abs(number) < 100 else 0
    return f"{decimal(number, places)} GPU-h"


def signed(text: str, value: float) -> str:
    """A difference with its sign (a true minus): ``+3m10s``, ``-2.5%``; ``0`` for none."""
    if value == 0:
        return "0"
    return f"+{text}" if value > 0 else f"{MINUS}{text.removeprefix('-')}"


def delta(kind: str, value: float) -> str:
    """B minus A in the unit of ``kind`` (see :data:`KINDS`); ratios in percentage points."""
    if kind == "ratio":
        return signed(decimal(abs(value) * 100, 1) + " pp", value)
    return signed(KINDS[kind](abs(value)), value)


KINDS: Final[dict[str, Callable[[float | None], str]]] = {
    "count": count,
    "duration": duration,
    "ratio": percent,
    "index": decimal,
    "gpus": gpus,
    "gpu_hours": gpu_hours,
}
"""The formatter of each kind of figure, by name (the report's rows name their kind)."""


def format_value(kind: str, value: float | None) -> str:
    """``value`` in the unit of ``kind``."""
    return KINDS[kind](value)
