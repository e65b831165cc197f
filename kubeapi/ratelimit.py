"""Client-side request rate limits: a token bucket (QPS and burst), as client-go's.

Why this module exists: every Kubernetes client states how hard it may press the API
server. client-go gives each client a token bucket (``QPS`` tokens a second, at most
``Burst`` saved up, full at start) and every request, watches included, waits for a
token. KAI's components run with QPS 50 / burst 300. A benchmark that compares
schedulers must state and equalise these limits, and a production deployment must be
able to bound our components. The limiter is opt-in per client
(:class:`kubeapi.http.KubeHttp` ``rate_limit=``); without it requests are not limited.

:class:`TokenBucket` is pure (its clock is injected): :meth:`TokenBucket.reserve` takes
a token now and says how long the caller must wait for it. Reserving ahead keeps
concurrent callers in arrival order and the long-run rate exact; a caller cancelled
while it waits loses its token (the next callers are not delayed by it for longer than
one token). :class:`RateLimiter` is the asyncio wrapper that sleeps that long.

:func:`add_arguments` adds ``--kube-api-qps`` / ``--kube-api-burst`` to a component's
parser and :func:`from_arguments` reads them back (``--kube-api-qps`` ≤ 0: no limit).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_QPS",
    "RateLimit",
    "RateLimitError",
    "RateLimiter",
    "TokenBucket",
    "add_arguments",
    "from_arguments",
]

DEFAULT_QPS: Final = 50.0
"""KAI's default for every component (``--qps 50``)."""

DEFAULT_BURST: Final = 300
"""KAI's default for every component (``--burst 300``)."""


class RateLimitError(ValueError):
    """A QPS or burst that cannot be used (the message names the flag's meaning)."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``qps`` requests a second on average, up to ``burst`` at once."""

    qps: float
    burst: int

    def __post_init__(self) -> None:
        if self.qps <= 0:
            raise RateLimitError(f"--kube-api-qps must be > 0, got {self.qps:g}")
        if self.burst < 1:
            raise RateLimitError(f"--kube-api-burst must be >= 1, got {self.burst}")

    def __str__(self) -> str:
        return f"QPS {self.qps:g}, burst {self.burst}"


class TokenBucket:
    """``limit.burst`` tokens at start, refilled at ``limit.qps`` a second, capped at burst."""

    def __init__(self, limit: RateLimit, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self._clock = clock
        self._tokens = float(limit.burst)
        self._last = clock()

    @property
    def tokens(self) -> float:
        """Tokens available now (negative: owed to callers already waiting)."""
        self._refill()
        return self._tokens

    def _refill(self) -> None:
        now = self._clock()
        if now > self._last:
            self._tokens = min(
                float(self.limit.burst), self._tokens + (now - self._last) * self.limit.qps
            )
            self._last = now

    def reserve(self) -> float:
        """Take one token; return the seconds to wait before using it (0: go now)."""
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0.0:
            return 0.0
        return -self._tokens / self.limit.qps


class RateLimiter:
    """Awaitable front of a :class:`TokenBucket`: ``await limiter.wait()`` per request."""

    def __init__(
        self,
        limit: RateLimit,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.bucket = TokenBucket(limit, clock)
        self._sleep = sleep
        self.waited = 0.0  # total seconds callers were held back (for logs and tests)

    async def wait(self) -> None:
        delay = self.bucket.reserve()
        if delay > 0.0:
            self.waited += delay
            await self._sleep(delay)


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
) -> None:
    """``--kube-api-qps`` and ``--kube-api-burst`` (defaults: KAI's 50 and 300)."""
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=qps,
        help=f"requests per second to the API server, watches included (default {qps:g}, "
        "KAI's; 0 or less: no client-side limit)",
    )
    parser.add_argument(
        "--kube-api-burst",
        type=int,
        default=burst,
        help=f"requests allowed at once above the QPS rate (default {burst}, KAI's)",
    )


def from_arguments(args: argparse.Namespace) -> RateLimit | None:
    """The limit the flags ask for, or None for no limit; RateLimitError for a bad burst."""
    qps = float(getattr(args, "kube_api_qps", 0.0) or 0.0)
    if qps <= 0:
        return None
    return RateLimit(qps, int(getattr(args, "kube_api_burst", DEFAULT_BURST)))
