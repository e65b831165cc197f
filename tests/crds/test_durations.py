"""Go duration strings: what the API models accept and the seconds the engine reads."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crds import durations
from crds.podgroup import PodGroupSpec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0.0),
        ("30s", 30.0),
        ("1h30m", 5400.0),
        ("1.5m", 90.0),
        ("500ms", 0.5),
        ("-30s", -30.0),
        ("2h0m0.25s", 7200.25),
        ("10us", 1e-5),
    ],
)
def test_seconds_of_go_durations(text: str, expected: float) -> None:
    assert durations.seconds(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "30", "s", "1x", "1..5s", "5m3"])
def test_bad_durations_say_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        durations.seconds(text)


def test_podgroup_duration_fields_are_validated_and_kept_as_written() -> None:
    spec = PodGroupSpec.from_manifest({"preemptionDelay": "1m30s", "stalenessGracePeriod": "-1s"})
    assert spec.to_manifest() == {"preemptionDelay": "1m30s", "stalenessGracePeriod": "-1s"}
    with pytest.raises(ValidationError, match="preemptionDelay"):
        PodGroupSpec.from_manifest({"preemptionDelay": "soon"})
