"""The points of a sweep as Ray tasks: a local Ray by default, or an existing cluster.

Why: a grid of what-if runs is embarrassingly parallel, and our Ray users
already run Ray. This is the only module that imports ``ray`` (an optional
extra: ``pip install 'podmuster[ray]'``). The scenario goes to the object
store once; each task is :func:`simulator.sweep_run.run_point` and returns
its small row, so the rows are the serial runner's rows.

A local Ray is bounded (``num_cpus``, a small object store, no dashboard,
warnings only) and shut down after the sweep. A stop (SIGINT/SIGTERM,
through the caller's :class:`StopFlag`) cancels the tasks still pending or
running; the rows of finished points are kept.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from crds.errors import InputError
from simulator.model import Scenario
from simulator.progress import StopFlag
from simulator.sweep import Point
from simulator.sweep_run import OnDone, row, run_point

INSTALL_HINT = "install the ray extra: pip install 'podmuster[ray]'"
LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024
WAIT_S = 0.25  # how often the driver looks at the stop flag while tasks run


def missing() -> str | None:
    """Why Ray cannot be used here (not installed), or None when it can."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        return f"--sweep runs on Ray, which is not installed ({exc.name}); {INSTALL_HINT}"
    return None


@contextmanager
def session(address: str | None, num_cpus: int) -> Iterator[None]:
    """Ray connected for the block: ``address`` (an existing cluster) or a local, bounded one."""
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    import ray

    options: dict[str, Any] = {
        "include_dashboard": False,
        "logging_level": logging.WARNING,
        "log_to_driver": True,
        "configure_logging": True,
    }
    if address:
        unreachable = _unreachable(address)
        if unreachable:
            raise InputError(
                f"cannot connect to the Ray cluster at {address}: {unreachable}",
                field="--ray-address",
            )
    try:
        if address:
            ray.init(address=address, **options)
        else:
            # "local": a new Ray of our own, even where `ray start` left a cluster behind
            local = {"num_cpus": num_cpus, "object_store_memory": LOCAL_OBJECT_STORE_BYTES}
            ray.init(address="local", **local, **options)
    except Exception as exc:  # no cluster there, a token missing, no room for a local Ray...
        what = f"cannot connect to the Ray cluster at {address}" if address else "cannot start Ray"
        field = "--ray-address" if address else "--sweep"
        raise InputError(f"{what}: {_first_lines(exc)}", field=field) from None
    try:
        yield
    finally:
        ray.shutdown()


PROBE_SECONDS = 5.0


def _unreachable(address: str) -> str | None:
    """Why nothing answers at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``), or None.

    Ray retries an unreachable head for many minutes before it gives up; one TCP
    connection with a short timeout tells a mistyped address at once. ``auto`` and
    addresses without a port are left to Ray.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
            return None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        if isinstance(exc, TimeoutError) or not exc.strerror:
            why = f"no answer within {PROBE_SECONDS:g}s"
        return f"nothing answers on {host}:{port} ({why})"


def _first_lines(exc: BaseException) -> str:
    """The first line of the error and of its cause (Ray's own messages run to many lines,
    and may quote a traceback: its lines are skipped)."""
    parts: list[str] = []
    current: BaseException | None = exc
    while current is not None and len(parts) < 2:
        lines = [_before_traceback(line) for line in str(current).splitlines()]
        text = next((line for line in lines if line), "")
        parts.append(f"{type(current).__name__}: {text}"[:300])
        current = current.__cause__
    return "; ".join(parts)


def _before_traceback(line: str) -> str:
    """A message line without a quoted traceback: what precedes one, none of its frames."""
    text = line.strip()
    if text.startswith('File "'):
        return ""
    return text.split("Traceback (most recent call last)")[0].rstrip(" :")


def run(
    scenario: Scenario,
    points: Sequence[Point],
    period: float,
    *,
    stop: StopFlag,
    on_done: OnDone | None = None,
) -> list[dict[str, Any]]:
    """Every point as a Ray task (inside :func:`session`); rows in grid order."""
    import ray

    task = ray.remote(num_cpus=1, max_retries=0)(run_point)
    shared = ray.put(scenario)
    pending = {task.remote(shared, point, period): i for i, point in enumerate(points)}
    rows: list[dict[str, Any] | None] = [None] * len(points)
    while pending and not stop.is_set():
        done, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_S)
        for ref in done:
            i = pending.pop(ref)
            try:
                result: dict[str, Any] = ray.get(ref)
            except Exception as exc:  # the worker died, ran out of memory, was interrupted...
                result = row(points[i], "failed", error=f"Ray: {type(exc).__name__}: {exc}")
                if stop.is_set():  # Ctrl-C reached the worker too: the point was cancelled
                    result = row(points[i], "cancelled", error="stopped by a signal")
            rows[i] = result
            if on_done is not None:
                on_done(result)
    for ref, i in pending.items():
        ray.cancel(ref, force=True)
        rows[i] = row(points[i], "cancelled", error="stopped by a signal")
    return [r for r in rows if r is not None]
