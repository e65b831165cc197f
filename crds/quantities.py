"""Kubernetes resource quantities as exact fractions.

Every number the scheduler adds up (requests, allocatable, queue quotas, GPU
portions) arrives as a Kubernetes quantity: ``"100m"``, ``"1.5Gi"``, ``4``,
``"1e3"``. Summing them as floats drifts (``0.1 + 0.2``), so this module parses
them into :class:`fractions.Fraction` and converts to integers only at the
edge, with the rounding Kubernetes uses.

Grammar (what ``resource.ParseQuantity`` accepts)::

    quantity = [sign] number [suffix]
    sign     = "+" | "-"
    number   = digits ["." [digits]] | "." digits
    suffix   = binary | decimal | exponent
    binary   = "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei"          (powers of 1024)
    decimal  = "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" (powers of 1000)
    exponent = ("e" | "E") [sign] digits                         (powers of 10)

``"12E"`` is 12 exa, ``"1E3"`` is 1000. Suffixes are case-sensitive: ``"1mi"``,
``"1K"`` and ``"1 Gi"`` are errors. Like Kubernetes, a non-zero value finer than
one nano-unit is rounded away from zero to the next nano-unit, binary-suffixed
values are capped at 2^63-1, and leading/trailing whitespace is ignored (as
``Quantity.UnmarshalJSON`` does). Where podmuster is stricter: exponents beyond
±:data:`MAX_EXPONENT` are rejected instead of building astronomically large
numbers.

JSON/YAML numbers are accepted too: ints exactly, floats by their shortest
decimal representation (``0.1`` means one tenth, not the binary double).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

__all__ = [
    "MAX_EXPONENT",
    "QuantityError",
    "QuantityLike",
    "milli_value",
    "parse_quantity",
    "value",
]

QuantityLike = str | int | float | Fraction
"""What a quantity can look like on input: a string, a JSON number or an already parsed value."""

MAX_EXPONENT: Final = 100
"""Largest absolute decimal exponent accepted (10^100 exceeds any real resource)."""

_BINARY_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
_DECIMAL_SUFFIXES: Final[dict[str, Fraction]] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NANO: Final = 10**9
_BINARY_CAP: Final = Fraction(2**63 - 1)
_DIGITS: Final = frozenset("0123456789")
_MAX_LENGTH: Final = 200


class QuantityError(ValueError):
    """A string (or number) that is not a valid Kubernetes quantity.

    ``str()`` reads ``invalid quantity "1.2.3": <what is wrong>``.
    """

    def __init__(self, text: str, problem: str) -> None:
        self.text = text
        self.problem = problem
        super().__init__(f"invalid quantity {_quote(text)}: {problem}")


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _scan_digits(text: str, pos: int) -> int:
    """Return the index of the first non-digit at or after ``pos``."""
    while pos < len(text) and text[pos] in _DIGITS:
        pos += 1
    return pos


def _split_number(text: str) -> tuple[int, Fraction, str]:
    """Split ``text`` into (sign, unsigned number, suffix); raise on a malformed number."""
    sign = 1
    pos = 0
    if text[:1] in ("+", "-"):
        sign = -1 if text[0] == "-" else 1
        pos = 1
    int_end = _scan_digits(text, pos)
    integer = text[pos:int_end]
    fraction = ""
    end = int_end
    if end < len(text) and text[end] == ".":
        end = _scan_digits(text, int_end + 1)
        fraction = text[int_end + 1 : end]
    if not integer and not fraction:
        if pos < len(text) and text[pos] == ".":
            raise QuantityError(text, "a decimal point needs at least one digit")
        raise QuantityError(text, "expected a number before the suffix")
    number = Fraction(int(integer or "0") * 10 ** len(fraction) + int(fraction or "0"))
    number /= 10 ** len(fraction)
    return sign, number, text[end:]


def _suffix_factor(text: str, suffix: str) -> tuple[Fraction, bool]:
    """Return (multiplier, is_binary) for ``suffix``; raise with a hint when unknown."""
    if suffix in _BINARY_SUFFIXES:
        return Fraction(_BINARY_SUFFIXES[suffix]), True
    if suffix in _DECIMAL_SUFFIXES:
        return _DECIMAL_SUFFIXES[suffix], False
    if suffix[0] in "eE" and len(suffix) > 1:
        digits = suffix[1:]
        if digits[0] in "+-":
            digits = digits[1:]
        if not digits or _scan_digits(digits, 0) != len(digits):
            raise QuantityError(text, f"bad exponent {_quote(suffix)} (expected e.g. e3 or E-2)")
        exponent = int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(text, f"exponent {exponent} is out of range")
        return Fraction(10) ** exponent, False
    if suffix[0] == ".":
        raise QuantityError(text, "more than one decimal point")
    if any(ch.isspace() for ch in suffix):
        raise QuantityError(text, "whitespace inside a quantity")
    if suffix[0] in "+-":
        raise QuantityError(text, "a sign may only appear at the start")
    known = [*_DECIMAL_SUFFIXES, *_BINARY_SUFFIXES]
    near = [s for s in known if s and s.lower() == suffix.lower()]
    if near:
        hint = f"did you mean {_quote(near[0])}? suffixes are case-sensitive"
    else:
        hint = "expected one of n u m k M G T P E Ki Mi Gi Ti Pi Ei or an exponent like e3"
    raise QuantityError(text, f"unknown suffix {_quote(suffix)} ({hint})")


def _round_to_nano(amount: Fraction) -> Fraction:
    """Round a non-zero amount away from zero to a whole number of nano-units."""
    scaled = amount * _NANO
    if scaled.denominator == 1:
        return amount
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if amount > 0 else -magnitude, _NANO)


def _parse_string(raw: str) -> Fraction:
    text = raw.strip()
    if not text:
        raise QuantityError(raw, "empty string")
    if len(text) > _MAX_LENGTH:
        raise QuantityError(raw[:20] + "...", f"longer than {_MAX_LENGTH} characters")
    sign, number, suffix = _split_number(text)
    factor, is_binary = _suffix_factor(raw, suffix) if suffix else (Fraction(1), False)
    amount = number * factor
    if is_binary and amount > _BINARY_CAP:
        amount = _BINARY_CAP
    if amount:
        amount = _round_to_nano(amount)
    return sign * amount


def parse_quantity(quantity: QuantityLike) -> Fraction:
    """Parse a Kubernetes quantity into an exact :class:`~fractions.Fraction`.

    >>> parse_quantity("100m"), parse_quantity("1.5Gi"), parse_quantity(2)
    (Fraction(1, 10), Fraction(1610612736, 1), Fraction(2, 1))

    Raises :class:`QuantityError` (a :class:`ValueError`) on a malformed value.
    """
    if isinstance(quantity, Fraction):
        return quantity
    if isinstance(quantity, bool):
        raise QuantityError(str(quantity).lower(), "a boolean is not a quantity")
    if isinstance(quantity, int):
        return Fraction(quantity)
    if isinstance(quantity, float):
        if not math.isfinite(quantity):
            raise QuantityError(repr(quantity), "not a finite number")
        return _parse_string(repr(quantity))
    if isinstance(quantity, str):
        return _parse_string(quantity)
    raise QuantityError(
        repr(quantity), f"expected a string or a number, got {type(quantity).__name__}"
    )


def _away_from_zero(amount: Fraction) -> int:
    return math.ceil(amount) if amount >= 0 else math.floor(amount)


def value(quantity: QuantityLike) -> int:
    """The quantity as an integer, rounded away from zero like ``Quantity.Value()``.

    >>> value("100m"), value("-1.5"), value("2Ki")
    (1, -2, 2048)
    """
    return _away_from_zero(parse_quantity(quantity))


def milli_value(quantity: QuantityLike) -> int:
    """The quantity in thousandths, rounded away from zero like ``Quantity.MilliValue()``.

    >>> milli_value("0.1"), milli_value("1"), milli_value("1n")
    (100, 1000, 1)
    """
    return _away_from_zero(parse_quantity(quantity) * 1000)
