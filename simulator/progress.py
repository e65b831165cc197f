"""Progress of a long simulation on stderr, and the flag that stops one early.

Why: a contended trace can run for many minutes. With no sign of life a
person stops it, and before this module everything computed so far was lost;
in CI or under ``nohup`` (no terminal) there was no sign of life at all.

* :class:`Progress` writes nothing for a run that ends within ``delay``
  (2 s), so quick runs and scripts see a clean stderr. After that it writes
  the simulated time, the jobs done of the total and an estimate of the time
  left: on a terminal one line redrawn in place, otherwise one plain line
  every ``interval`` (5 s), which reads well in a log file. Its clock is a
  parameter, so tests drive it with a fake clock and never sleep.
* :class:`StopFlag` is what SIGINT and SIGTERM set. The event loop reads it
  between events (``simulator.events``), so a run stops on a consistent
  state and its figures are computed by the normal code path; a signal
  handler that computed or printed results would run in the middle of an
  event, on half-updated state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from simulator import units

DELAY_S = 2.0  # runs shorter than this print no progress
INTERVAL_S = 5.0  # one plain line this often without a terminal
REDRAW_S = 0.5  # on a terminal, the line is redrawn this often


class StopFlag:
    """Set, with the signal's number, to stop a running simulation after its current event."""

    __slots__ = ("signum",)

    def __init__(self) -> None:
        self.signum: int | None = None

    def set(self, signum: int) -> None:
        """Only records the request: safe to call from a signal handler."""
        if self.signum is None:
            self.signum = signum

    def is_set(self) -> bool:
        return self.signum is not None


def duration(seconds: float) -> str:
    """A short human duration in whole seconds: ``42s``, ``12m05s``, ``3h12m``, ``2d03h``."""
    return units.duration(max(0, int(seconds)))


class Progress:
    """Progress lines for the runs of one command; see the module docstring for when it writes.

    The command calls :meth:`begin` before each run and :meth:`end` after it;
    the event loop calls :meth:`update` after every event. ``update`` reads
    the clock and compares, nothing more, until a line is due. The ``delay``
    counts from the creation of this object, so the loading of a big trace
    counts towards it, and a second run (``--compare``) after a long first
    one shows its progress at once.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool,
        clock: Callable[[], float] = time.monotonic,
        delay: float = DELAY_S,
        interval: float = INTERVAL_S,
        redraw: float = REDRAW_S,
    ) -> None:
        self.stream = stream
        self.tty = tty
        self.clock = clock
        self.every = redraw if tty else interval
        self.due = clock() + delay
        self.label = ""
        self.run_started = self.due
        self.shown = False  # a line of the current run has been written
        self.width = 0  # of the line drawn in place (terminal), to blank what is left of it

    def begin(self, label: str) -> None:
        self.label = label
        self.run_started = self.clock()
        self.shown = False

    def update(self, simulated: float, done: int, total: int) -> None:
        """Called after every event; writes a line only when one is due."""
        now = self.clock()
        if now < self.due:
            return
        self._write(self._line(now, simulated, done, total))
        self.due = now + self.every

    def end(self, simulated: float, done: int, total: int, *, partial: bool) -> None:
        """Close the run's progress: a last line if any was shown (on a terminal, the newline)."""
        if not self.shown:
            return
        now = self.clock()
        if partial:
            line = (
                f"{self.label}: stopped at {duration(simulated)} simulated, {done}/{total} jobs "
                f"done, after {duration(now - self.run_started)}; writing the partial results"
            )
        else:
            line = (
                f"{self.label}: finished at {duration(simulated)} simulated, {done}/{total} jobs "
                f"done, in {duration(now - self.run_started)}"
            )
        self._write(line)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0

    def _line(self, now: float, simulated: float, done: int, total: int) -> str:
        elapsed = now - self.run_started
        if done and total:
            eta = f"ETA {duration(elapsed * (total - done) / done)}"
        else:
            eta = "ETA unknown"
        return (
            f"{self.label}: simulated {duration(simulated)}, {done}/{total} jobs done, "
            f"{duration(elapsed)} elapsed, {eta}"
        )

    def _write(self, line: str) -> None:
        self.shown = True
        if self.tty:
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
