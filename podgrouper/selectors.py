"""Kubernetes label selectors in their string form (``a=b,c!=d,e in (x,y),!f``).

Why this module exists: the podgrouper's ``--pod-label-selector`` and
``--namespace-label-selector`` take the same syntax as ``kubectl -l``; they are parsed
once when the settings are built (a bad selector fails at start-up with the offending
term), and matched in memory on every event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_SET_TERM = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALITY_TERM = re.compile(r"^\s*([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


class SelectorError(ValueError):
    """A label selector that cannot be parsed; names the selector and the term."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term: ``operator`` is ``in``, ``notin``, ``exists`` or ``!exists``."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!exists":
            return self.key not in labels
        if self.operator == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """All requirements must match; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()
    text: str = ""

    @property
    def is_empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return self.text

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse ``kubectl -l`` syntax; raises :class:`SelectorError`."""
        terms = _split(text)
        return cls(tuple(_requirement(text, term) for term in terms), text.strip())


def _split(text: str) -> list[str]:
    """Split on the commas outside parentheses; blank input gives no terms."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()] if text.strip() else []


def _requirement(text: str, term: str) -> Requirement:
    if match := _SET_TERM.match(term):
        values = frozenset(v.strip() for v in match.group(3).split(",") if v.strip())
        return Requirement(match.group(1), match.group(2), values)
    if match := _EQUALITY_TERM.match(term):
        operator = "notin" if match.group(2) == "!=" else "in"
        return Requirement(match.group(1), operator, frozenset({match.group(3)}))
    if match := _EXISTS_TERM.match(term):
        return Requirement(match.group(2), "!exists" if match.group(1) else "exists")
    raise SelectorError(f"label selector {text!r}: cannot parse term {term.strip()!r}")
