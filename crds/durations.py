"""Go ``time.Duration`` strings (``90s``, ``1h30m``, ``500ms``), parsed in one place.

Why this module exists: Kubernetes and KAI write durations as Go strings
(``metav1.Duration``: a PodGroup's ``preemptionDelay``, a Queue's usage window,
the scheduler configuration's grace periods). The API models validate them and
the engine reads them in seconds; both go through :func:`seconds`.
"""

from __future__ import annotations

from typing import Final

__all__ = ["seconds"]

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
