"""Two runs side by side: the JSON ``diff`` of configuration B against A.

Why: "binpack or spread?" is answered by the differences; computing them once
here keeps the JSON, the table and the report in agreement.
"""

from __future__ import annotations

from typing import Any


def diff(a: Any, b: Any) -> Any:
    """B minus A for every number, recursively; other values are left out. A number only
    one run has (a pending reason only B met, a skip only A made) is a count the other run
    has as 0, so the difference is still given."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {}
        for key in {**a, **b}:
            if key in a and key in b:
                value = diff(a[key], b[key])
            elif _is_number(a.get(key, b.get(key))):
                value = diff(a.get(key, 0), b.get(key, 0))
            else:
                continue
            if value is not None and value != {}:
                out[key] = value
        return out
    if isinstance(a, bool) or isinstance(b, bool):
        return None
    if isinstance(a, int) and isinstance(b, int):
        return b - a
    if isinstance(a, int | float) and isinstance(b, int | float):
        return round(float(b) - float(a), 6)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def document(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A's figures at the top level (the single-run keys) plus ``compare: {a, b, diff, partial}``.

    ``partial`` is true when either run was interrupted: then ``diff`` compares
    runs over different simulated times, not two configurations.
    """
    partial = bool(a.get("partial") or b.get("partial"))
    return {**a, "compare": {"a": a, "b": b, "diff": diff(a, b), "partial": partial}}
