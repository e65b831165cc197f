"""CEL device selectors of DRA (``selectors[].cel.expression``), compiled once, tested per device.

Why: DeviceClasses and claim requests pick devices with Common Expression Language
over ``device.driver``, ``device.attributes["domain"].name`` and
``device.capacity["domain"].name``. Expressions are compiled with ``cel-python``
(module ``celpy``) when the object is read, so a bad expression is reported once,
by object and field; matches are computed once per (selectors, device) per cycle by
the DRA plugin, never per node.

Kubernetes' quantity library is provided for capacities: ``quantity("40Gi")`` and
the methods ``compareTo``, ``isGreaterThan``, ``isLessThan``, ``asInteger`` and
``asApproximateFloat``. An attribute name without a domain belongs to the device's
driver, as in Kubernetes. A runtime error (a missing attribute, a wrong type) means
the device does not match.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from crds.errors import shown
from crds.quantities import parse_quantity

Program = Any


class CelError(ValueError):
    """An expression that does not compile."""


class Quantity:
    """A Kubernetes quantity inside CEL: compared with its methods."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


def _quantity(text: Any) -> Quantity:
    return Quantity(parse_quantity(str(text)))


def _compare(a: Any, b: Any) -> int:
    left, right = _value(a), _value(b)
    return (left > right) - (left < right)


def _value(q: Any) -> Fraction:
    if isinstance(q, Quantity):
        return q.value
    if isinstance(q, int | float | Fraction):
        return Fraction(q)
    raise TypeError(f"expected a quantity, got {shown(q)}")


@cache
def _environment() -> tuple[Any, dict[str, Any]]:
    """The CEL environment and our functions, on first use: importing ``celpy`` and building
    its parser take a few hundred ms that every command would pay at import, though few
    clusters have a CEL selector."""
    import celpy
    from celpy import celtypes

    functions: dict[str, Any] = {
        "quantity": _quantity,
        "compareTo": lambda a, b: celtypes.IntType(_compare(a, b)),
        "isGreaterThan": lambda a, b: celtypes.BoolType(_compare(a, b) > 0),
        "isLessThan": lambda a, b: celtypes.BoolType(_compare(a, b) < 0),
        "asInteger": lambda a: celtypes.IntType(int(_value(a))),
        "asApproximateFloat": lambda a: celtypes.DoubleType(float(_value(a))),
    }
    return celpy.Environment(), functions


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Program:
    """The compiled expression; :class:`CelError` with the parser's message if it is bad."""
    if not expression.strip():
        raise CelError("empty expression")
    from celpy.celparser import CELParseError

    environment, functions = _environment()
    try:
        ast = environment.compile(expression)
        return environment.program(ast, functions=functions)
    except CELParseError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
        raise CelError(first) from None


_DRIVER_EQUALS = re.compile(r'\s*device\.driver\s*==\s*"([^"\\]*)"\s*')


def driver_equals(expression: str) -> str | None:
    """The driver of an expression that is exactly ``device.driver == "<driver>"`` (the
    usual DeviceClass selector, tested without the interpreter), else None."""
    found = _DRIVER_EQUALS.fullmatch(expression)
    return found.group(1) if found else None


def _cel(value: Any) -> Any:
    from celpy import celtypes

    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, Fraction):
        return Quantity(value)
    if isinstance(value, list | tuple):
        return celtypes.ListType([_cel(v) for v in value])
    return celtypes.StringType(str(value))


def _by_domain(values: Mapping[str, Any], driver: str) -> Any:
    from celpy import celtypes

    domains: dict[str, dict[Any, Any]] = {}
    for qualified, value in values.items():
        domain, _, name = qualified.rpartition("/")
        domains.setdefault(domain or driver, {})[celtypes.StringType(name)] = _cel(value)
    return celtypes.MapType(
        {celtypes.StringType(d): celtypes.MapType(names) for d, names in domains.items()}
    )


def device_activation(
    driver: str, attributes: Mapping[str, Any], capacity: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``device`` variable for one device."""
    from celpy import celtypes

    device = celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("attributes"): _by_domain(attributes, driver),
            celtypes.StringType("capacity"): _by_domain(capacity, driver),
        }
    )
    return {"device": device}


def matches(program: Program, activation: Mapping[str, Any]) -> bool:
    """True only when the expression evaluates to true (errors: no match)."""
    from celpy import celtypes

    try:
        result = program.evaluate(activation)
    except Exception:
        return False
    return isinstance(result, celtypes.BoolType) and bool(result)
