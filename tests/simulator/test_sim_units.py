"""The report's units (simulator.units): durations, percentages, GPUs, differences; never
``None`` or scientific notation."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator import units


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (0, "0s"),
        (0.016, "<0.1s"),
        (0.4, "0.4s"),
        (1.5, "1.5s"),
        (9.96, "10s"),
        (42, "42s"),
        (59.6, "1m00s"),
        (92, "1m32s"),
        (74709.0, "20h45m"),
        (86400 * 3 + 7200, "3d02h"),
        (-125, "-2m05s"),
    ],
)
def test_duration(seconds: float | None, text: str) -> None:
    assert units.duration(seconds) == text


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (None, "n/a"),
        (0.0, "0%"),
        (9.3e-05, "<0.01%"),
        (0.0005, "0.05%"),
        (0.825, "82.5%"),
        (0.14, "14%"),
        (0.9999, "99.9%"),
        (1.0, "100%"),
    ],
)
def test_percent(ratio: float | None, text: str) -> None:
    assert units.percent(ratio) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0 GPUs"), (0.5, "0.5 GPU"), (1, "1 GPU"), (1.02, "1 GPU"), (12.34, "12.3 GPUs")],
)
def test_gpus(value: float, text: str) -> None:
    assert units.gpus(value) == text


def test_gpu_hours_and_plain_numbers() -> None:
    assert units.gpu_hours(0) == "0 GPU-h"
    assert units.gpu_hours(0.4234) == "0.42 GPU-h"
    assert units.gpu_hours(2.100556) == "2.1 GPU-h"
    assert units.gpu_hours(1204.4) == "1,204 GPU-h"
    assert units.decimal(0.984357) == "0.98"
    assert units.decimal(0.00002) == "<0.01"
    assert units.decimal(None) == "n/a"
    assert units.count(1523) == "1,523"


def test_differences_carry_their_sign_and_unit() -> None:
    assert units.delta("duration", 227.0) == "+3m47s"
    assert units.delta("duration", -91.0) == "\N{MINUS SIGN}1m31s"
    assert units.delta("ratio", -0.20986) == "\N{MINUS SIGN}21 pp"
    assert units.delta("count", 0) == "0"
    assert units.delta("gpu_hours", -0.37) == "\N{MINUS SIGN}0.37 GPU-h"


@given(
    st.sampled_from(sorted(units.KINDS)),
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False) | st.none(),
)
def test_no_kind_prints_none_or_scientific_notation(kind: str, value: float | None) -> None:
    text = units.format_value(kind, value)
    assert "None" not in text
    assert not re.search(r"\de[+-]?\d", text), text
