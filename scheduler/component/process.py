"""What every live component's process does: its identity and signals.

Why this module exists: the scheduler, the binder, the status controllers and the scale
adjuster run as separate processes (or together in ``podmuster run all``) and must look
the same to an operator: SIGTERM/SIGINT for a graceful stop,
and SIGUSR1 to log every task's stack (logs: :mod:`liveprocess.logs`).
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal

__all__ = ["install_signal_handlers", "log_tasks"]

log = logging.getLogger("podmuster")


def install_signal_handlers(stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT stop; SIGUSR1 logs where every task is waiting (for a stuck process)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, log_tasks)


def log_tasks() -> None:
    """One warning per asyncio task with its stack (innermost frames last)."""
    for task in asyncio.all_tasks():
        out = io.StringIO()
        task.print_stack(limit=20, file=out)
        log.warning("task %s", task.get_name(), extra={"stack": out.getvalue()})
