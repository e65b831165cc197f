"""The strict-check benchmark, at a tiny size: it runs, and reports both paths.

Timings are not checked; the snapshot it times must pass the check (a benchmark over
objects that fail would time the error path), and both the check and the reference walk
it falls back to are reported.
"""

from __future__ import annotations

import sys

import pytest

from benchmarks import strict_check


def test_a_small_snapshot_is_timed_on_both_paths(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["strict_check", "--sizes", "4x40x10", "--repeat", "1"])
    assert strict_check.main() == 0
    out = capsys.readouterr().out
    assert "first pass" in out
    assert "  check " in out
    assert "  reference_check " in out
