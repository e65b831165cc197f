"""Label selectors, parsed once into requirements and matched against label maps.

Why: pod affinity terms, topology spread constraints, namespace selectors and a
claim's PV selector all use Kubernetes' ``LabelSelector``; node affinity uses
the same operators plus ``Gt``/``Lt``. One requirement rule serves them all,
and a selector parsed into hashable requirements can be compared, cached and
indexed by the pairs it requires (``anchors``), which is what lets inter-pod
affinity count matching pods without scanning every pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from crds.errors import shown

IN: Final = "In"
NOT_IN: Final = "NotIn"
EXISTS: Final = "Exists"
DOES_NOT_EXIST: Final = "DoesNotExist"
GT: Final = "Gt"
LT: Final = "Lt"
SELECTOR_OPERATORS: Final = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NODE_OPERATORS: Final = SELECTOR_OPERATORS | {GT, LT}


def requirement_matches(value: str | None, operator: str, values: tuple[str, ...]) -> bool:
    """One requirement against a label's value (None: the label is absent)."""
    if operator == IN:
        return value is not None and value in values
    if operator == NOT_IN:
        return value is None or value not in values
    if operator == EXISTS:
        return value is not None
    if operator == DOES_NOT_EXIST:
        return value is None
    if operator in (GT, LT) and value is not None and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == GT else left < right
    return False


Requirement = tuple[str, str, tuple[str, ...]]  # (key, operator, values)


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed ``LabelSelector``: every requirement must hold (``()`` matches everything)."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, operator, values in self.requirements:
            if not requirement_matches(labels.get(key), operator, values):
                return False
        return True

    def anchors(self) -> tuple[tuple[str, str | None], ...]:
        """Label pairs one of which a matching object must carry; ``(key, None)``: the key.

        The most selective requirement is used: an ``In`` (its values), else an
        ``Exists`` (its key). Empty when no requirement narrows the candidates.
        """
        for key, operator, values in self.requirements:
            if operator == IN:
                return tuple((key, value) for value in values)
        for key, operator, _values in self.requirements:
            if operator == EXISTS:
                return ((key, None),)
        return ()

    def keys(self) -> frozenset[str]:
        return frozenset(key for key, _, _ in self.requirements)

    def narrowed(self, extra: tuple[Requirement, ...]) -> Selector:
        return Selector(self.requirements + extra) if extra else self


class SelectorError(ValueError):
    """A malformed selector; ``field`` is relative to the selector."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_selector(raw: Any, *, operators: frozenset[str] = SELECTOR_OPERATORS) -> Selector:
    """A ``LabelSelector`` mapping as a :class:`Selector`; raises :class:`SelectorError`."""
    if not isinstance(raw, dict | Mapping):
        raise SelectorError("", f"expected a map, got {type(raw).__name__}")
    requirements: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, dict | Mapping):
        raise SelectorError("matchLabels", "expected a map of strings")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"matchLabels.{key}", f"expected a string, got {shown(value)}")
        requirements.append((str(key), IN, (value,)))
    expressions = raw.get("matchExpressions") or ()
    if not isinstance(expressions, list | tuple):
        raise SelectorError("matchExpressions", "expected a list")
    for i, expression in enumerate(expressions):
        requirements.append(parse_requirement(expression, f"matchExpressions[{i}]", operators))
    return Selector(tuple(requirements))


def parse_requirement(raw: Any, field: str, operators: frozenset[str]) -> Requirement:
    """One ``{key, operator, values}`` expression, checked as the API server checks it."""
    if not isinstance(raw, dict | Mapping):
        raise SelectorError(field, "expected a map")
    key = raw.get("key")
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{field}.key", "required")
    operator = raw.get("operator")
    if operator not in operators:
        allowed = ", ".join(sorted(operators))
        raise SelectorError(f"{field}.operator", f"must be one of {allowed}, got {shown(operator)}")
    values = raw.get("values") or ()
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise SelectorError(f"{field}.values", "expected a list of strings")
    if operator in (IN, NOT_IN) and not values:
        raise SelectorError(f"{field}.values", f"must be non-empty for {operator}")
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise SelectorError(f"{field}.values", f"must be empty for {operator}")
    if operator in (GT, LT) and len(values) != 1:
        raise SelectorError(f"{field}.values", f"must have one value for {operator}")
    return (key, str(operator), tuple(values))
