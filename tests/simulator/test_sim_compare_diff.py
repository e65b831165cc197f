"""``--compare``'s ``diff``: B minus A for every number (docs/simulate.md).

Why: a count only one run had (a pending reason only B met, rows only A skipped) was left
out of the difference, so the document said less than "every number".
"""

from __future__ import annotations

from simulator.compare import diff


def test_a_count_only_one_run_has_is_a_difference_from_zero() -> None:
    a = {"jobs": 3, "pending_reasons": {"Insufficient cpu": 2}, "skipped": {}, "label": "a"}
    b = {"jobs": 3, "pending_reasons": {"Insufficient nvidia.com/gpu": 1}, "skipped": {"x": 4}}
    assert diff(a, b) == {
        "jobs": 0,
        "pending_reasons": {"Insufficient cpu": -2, "Insufficient nvidia.com/gpu": 1},
        "skipped": {"x": 4},
    }


def test_what_is_not_a_number_is_left_out() -> None:
    a = {"partial": False, "queues": {"q": {"jobs": 1, "name": "q"}}, "only_a": {"n": 1}}
    b = {"partial": True, "queues": {"q": {"jobs": 2, "name": "q"}}}
    assert diff(a, b) == {"queues": {"q": {"jobs": 1}}}
