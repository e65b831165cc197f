"""Five-field cron expressions, for KAI's ``cron`` usage window, in UTC.

Why this module exists: a ``cron`` window (``usageParams.cronString``) resets
queue usage at each time the expression fires ("0 0 * * 1": every Monday at
midnight) and the window runs from the latest firing to now. Only that question
is asked (:meth:`CronSchedule.previous`), so a small parser answers it without
a dependency: minute, hour, day of month, month, day of week; ``*``, lists,
ranges, ``/step``, month and weekday names, and the ``@hourly``, ``@daily``,
``@weekly``, ``@monthly``, ``@yearly`` shorthands. As in cron, when both day of
month and day of week are restricted a day matching either fires.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from crds.errors import shown

_SHORTHANDS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (  # name, low, high, names
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
_SEARCH_DAYS = 366 * 8 + 2  # Feb 29 recurs within 8 years (2096 → 2104)


def _value(text: str, low: int, names: tuple[str, ...]) -> int:
    lowered = text.lower()
    if lowered in names:
        return names.index(lowered) + (1 if low == 1 else 0)
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a number")
    return int(text)


def _field(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise ValueError(f"{name}: bad step in {part!r}")
            step = int(step_text)
        if body == "*":
            start, end = low, high
        elif "-" in body:
            first, _, last = body.partition("-")
            start, end = _value(first, low, names), _value(last, low, names)
        else:
            start = _value(body, low, names)
            end = high if step_text else start
        if not low <= start <= end <= high:
            raise ValueError(f"{name}: {part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """The parsed fields of one expression (day of week 7 is Sunday, as 0)."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str) -> CronSchedule:
        """Parse ``text``; ``ValueError`` naming the bad field otherwise."""
        expression = _SHORTHANDS.get(text.strip().lower(), text)
        parts = expression.split()
        if len(parts) != 5:
            raise ValueError(
                f"expected 5 fields (minute hour day month weekday), got {shown(text)}"
            )
        fields = [
            _field(part, name, low, high, names)
            for part, (name, low, high, names) in zip(parts, _FIELDS, strict=True)
        ]
        weekdays = frozenset(d % 7 for d in fields[4])
        return cls(
            fields[0], fields[1], fields[2], fields[3], weekdays, parts[2] == "*", parts[4] == "*"
        )

    def _day_matches(self, day: dt.date) -> bool:
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return by_date and by_weekday
        return by_date or by_weekday

    def previous(self, now: float) -> float:
        """The latest firing at or before ``now`` (epoch seconds, UTC).

        ``ValueError`` if the expression never fires (``0 0 31 2 *``).
        """
        moment = dt.datetime.fromtimestamp(now, dt.UTC)
        day = moment.date()
        for offset in range(_SEARCH_DAYS):
            if offset:
                day -= dt.timedelta(days=1)
            if not self._day_matches(day):
                continue
            for hour in sorted(self.hours, reverse=True):
                for minute in sorted(self.minutes, reverse=True):
                    fired = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=dt.UTC)
                    if fired.timestamp() <= now:
                        return fired.timestamp()
        raise ValueError("the cron expression never fires")
