"""Back-off between retries: the one helper every live component uses.

Why this module exists: the informers retry a failed list or watch, and the binder
retries a failed BindRequest; each used to have its own delays (jittered exponential,
a fixed second, 1-2-4 capped). :func:`exponential` is the schedule (``base * 2**n``,
capped); :class:`Backoff` adds state and jitter (``uniform(d/2, d)``) for loops that
retry in-process, so many clients failing together do not retry together.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Backoff", "exponential"]


def exponential(attempt: int, base: float, cap: float) -> float:
    """``min(cap, base * 2**attempt)``; attempt 0 is the first retry."""
    return min(cap, base * 2.0 ** max(attempt, 0))


@dataclass(slots=True)
class Backoff:
    """Jittered exponential back-off: ``uniform(d/2, d)`` with ``d = exponential(n, ...)``."""

    base: float = 0.5
    cap: float = 8.0
    """client-go's reflector caps at 30 s; a scheduler that lost its API server should be
    back within seconds of its return (measured: 29 s after an API server restart with
    30 s), and a few components' retries every 4-8 s cost the server nothing."""
    attempts: int = 0
    rng: random.Random = field(default_factory=random.Random)

    def next_delay(self) -> float:
        ceiling = exponential(self.attempts, self.base, self.cap)
        self.attempts += 1
        return self.rng.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self.attempts = 0

    def fresh(self) -> Backoff:
        """The same schedule and random source, from attempt 0 (one per watched kind)."""
        return Backoff(self.base, self.cap, 0, self.rng)
