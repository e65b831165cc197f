"""Label selectors in kubectl syntax: equality, inequality, set terms, existence, empty
selector, commas inside parentheses, and unparsable terms named in the error."""

from __future__ import annotations

import pytest

from podgrouper.selectors import LabelSelector, SelectorError


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),
        ("a!=1", {"a": "1"}, False),
        ("a in (1, 2),b", {"a": "2", "b": ""}, True),
        ("a in (1,2)", {}, False),
        ("a notin (1,2)", {"a": "3"}, True),
        ("a notin (1,2)", {}, True),
        ("!a", {"a": "x"}, False),
        ("!a, b=", {"b": ""}, True),
        ("kai.scheduler/queue", {"kai.scheduler/queue": "q"}, True),
    ],
)
def test_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    selector = LabelSelector.parse(text)
    assert selector.matches(labels) is expected
    assert str(selector) == text.strip()
    assert selector.is_empty is (not text)


@pytest.mark.parametrize("text", ["a in (1", "a=b=c", "a in 1", "=x"])
def test_unparsable_terms_are_named(text: str) -> None:
    with pytest.raises(SelectorError, match="cannot parse term"):
        LabelSelector.parse(text)
