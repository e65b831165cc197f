"""Reading CSV rows with errors that name the file, the line and the column.

Why: traces are big hand-edited or exported CSV files; a bad cell must be
reported as one line (``file: line 12: column gpu_milli: ...``, exit code 2),
never as a traceback, and parsing rules (integers, numbers, durations) must
be the same for every CSV format the simulator reads.
"""

from __future__ import annotations

import csv
import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from crds.errors import InputError, shown
from scheduler.config import ConfigError, parse_duration


@dataclass(frozen=True, slots=True)
class Row:
    """One data row: its values by column, and where it is (``file``, 1-based ``line``)."""

    source: str
    line: int
    values: dict[str, str]

    def where(self) -> str:
        return f"line {self.line}"

    def error(self, column: str, message: str) -> InputError:
        return InputError(message, source=self.source, obj=self.where(), field=f"column {column}")

    def text(self, column: str) -> str:
        return (self.values.get(column) or "").strip()

    def integer(self, column: str, *, default: int | None = None, minimum: int = 0) -> int:
        raw = self.text(column)
        if not raw:
            if default is not None:
                return default
            raise self.error(column, "is required")
        try:
            value = int(raw)
        except ValueError:
            try:
                as_float = float(raw)
            except ValueError:
                raise self.error(column, f"expected a whole number, got {shown(raw)}") from None
            if not as_float.is_integer():
                raise self.error(column, f"expected a whole number, got {shown(raw)}") from None
            value = int(as_float)
        if value < minimum:
            raise self.error(column, f"must be at least {minimum}, got {value}")
        return value

    def number(self, column: str, *, default: float | None = None, minimum: float = 0.0) -> float:
        raw = self.text(column)
        if not raw:
            if default is not None:
                return default
            raise self.error(column, "is required")
        try:
            value = float(raw)
        except ValueError:
            raise self.error(column, f"expected a number, got {shown(raw)}") from None
        if value != value or value < minimum:  # NaN or too small
            raise self.error(column, f"must be a number of at least {minimum:g}, got {shown(raw)}")
        return value

    def seconds(self, column: str, *, default: float | None = None) -> float:
        """Seconds from a plain number or a duration such as ``90s``, ``5m``, ``1h30m``."""
        raw = self.text(column)
        if not raw:
            if default is not None:
                return default
            raise self.error(column, "is required")
        try:
            value = parse_duration(float(raw) if _is_number(raw) else raw, column)
        except ConfigError:
            raise self.error(
                column, f"expected seconds or a duration like 5m, got {shown(raw)}"
            ) from None
        if value < 0:
            raise self.error(column, f"must not be negative, got {shown(raw)}")
        return value


def _is_number(raw: str) -> bool:
    try:
        float(raw)
    except ValueError:
        return False
    return True


def _check_known(path: str, header: Sequence[str], known: Sequence[str]) -> None:
    """Every named column of ``header`` is one of ``known``: a misspelt optional column
    (``pod_per_gang``) would otherwise be dropped and its default used without a word."""
    for name in header:
        if name and name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise InputError(
                f"unknown column{hint}; known: {', '.join(known)}",
                source=path,
                obj="line 1",
                field=f"column {name}",
            )


def read_rows(
    path: str, required: Sequence[str], known: Sequence[str] | None = None
) -> Iterator[Row]:
    """The rows of a CSV file with a header line holding at least ``required``, and
    nothing but ``known`` when given (a blank column name is allowed).

    A byte-order mark before the header (spreadsheets write one with "CSV UTF-8") is
    not part of the first column's name."""
    try:
        handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=path) from None
    with handle:
        reader = csv.DictReader(handle)
        header = [name.strip() for name in reader.fieldnames or ()]
        missing = [name for name in required if name not in header]
        if missing:
            raise InputError(
                f"missing column {missing[0]!r} (the header has: {', '.join(header) or 'nothing'})",
                source=path,
                obj="line 1",
            )
        if known is not None:
            _check_known(path, header, known)
        reader.fieldnames = header
        for values in reader:
            if not any((v or "").strip() for v in values.values() if isinstance(v, str)):
                continue
            yield Row(path, reader.line_num, values)
