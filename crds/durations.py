"""Go ``time.Duration`` strings (``90s``, ``1h30m``, ``500ms``), parsed in one place.

Why this module exists: Kubernetes and KAI write durations as Go strings
(``metav1.Duration``: a PodGroup's ``preemptionDelay``, a Queue's usage window,
the scheduler configuration's grace periods). The API models validate them and
the engine reads them in seconds; both go through :func:`seconds`.
"""

from __future__ import annotations

from typing import Final

__all__ = ["go_string", "prometheus_seconds", "seconds"]

_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def seconds(text: str) -> float:
    """Seconds in a Go duration string; ``ValueError`` saying what is wrong otherwise.

    A sign may lead (``-30s``); each number needs a unit (``0`` alone is allowed,
    as in Go).
    """
    raw = text.strip()
    if not raw:
        raise ValueError("empty duration")
    sign = -1.0 if raw.startswith("-") else 1.0
    body = raw.lstrip("+-")
    if body == "0":
        return 0.0
    total, number, i = 0.0, "", 0
    while i < len(body):
        ch = body[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = next((u for u in ("ms", "us", "µs", "ns") if body.startswith(u, i)), ch)
        if unit not in _UNITS or not number:
            raise ValueError(f"invalid duration {text!r}")
        try:
            total += float(number) * _UNITS[unit]
        except ValueError:
            raise ValueError(f"invalid duration {text!r}") from None
        number = ""
        i += len(unit)
    if number:
        raise ValueError(f"invalid duration {text!r} (missing unit)")
    return sign * total


def go_string(text: str) -> str:
    """``text`` (a Go duration) as Go prints it (``time.Duration.String``: ``5m`` is
    ``5m0s``), which is how a ``metav1.Duration`` is written back; ``ValueError`` as
    :func:`seconds`."""
    nanos = round(seconds(text) * 1e9)
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("\u00b5s", 1_000), ("ns", 1)):
            if nanos >= size or unit == "ns":
                return f"{sign}{_fraction(nanos, size)}{unit}"
    hours, rest = divmod(nanos, 3600 * 1_000_000_000)
    minutes, rest = divmod(rest, 60 * 1_000_000_000)
    text_out = f"{hours}h" if hours else ""
    text_out += f"{minutes}m" if hours or minutes else ""
    return f"{sign}{text_out}{_fraction(rest, 1_000_000_000)}s"


def _fraction(value: int, size: int) -> str:
    """``value / size`` in decimal without trailing zeros (``1500, 1000`` → ``1.5``)."""
    whole, part = divmod(value, size)
    if not part:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{str(part).rjust(digits, '0').rstrip('0')}"


_PROMETHEUS_UNITS: Final = {"y": 365 * 86400.0, "w": 7 * 86400.0, "d": 86400.0, **_UNITS}


def prometheus_seconds(text: str) -> float:
    """Seconds in a Prometheus duration (``1w``, ``2d12h``, ``90s``); ``ValueError`` otherwise.

    Prometheus durations (a monitoring ``Duration``, such as KAI's usage ``windowSize``)
    add ``d`` (24h), ``w`` (7d) and ``y`` (365d) to Go's units and take no sign.
    """
    raw = text.strip()
    if not raw or raw[0] in "+-":
        raise ValueError(f"invalid duration {text!r}")
    total, number = 0.0, ""
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch.isdigit():
            number += ch
            i += 1
            continue
        unit = "ms" if raw.startswith("ms", i) else ch
        if unit not in _PROMETHEUS_UNITS or not number:
            raise ValueError(f"invalid duration {text!r}")
        total += int(number) * _PROMETHEUS_UNITS[unit]
        number = ""
        i += len(unit)
    if number:
        raise ValueError(f"invalid duration {text!r} (missing unit)")
    return total
