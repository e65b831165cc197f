"""What every live component's process does: its identity, signals and log format.

Why this module exists: the scheduler, the binder, the status controllers and the scale
adjuster run as separate processes (or together in ``podmuster run all``) and must look
the same to an operator: one lease identity format, SIGTERM/SIGINT for a graceful stop,
SIGUSR1 to log every task's stack, and the same JSON log fields (``docs/metrics.md``).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import signal
import socket
import time

log = logging.getLogger("podmuster")


def identity() -> str:
    """hostname + pid: unique per replica, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{os.getpid()}"


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


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``msg`` (the names KAI's
    JSON logs use) and any ``extra`` fields; docs/metrics.md lists them."""

    _standard = set(vars(logging.makeLogRecord({})))

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        entry = {
            "ts": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in self._standard})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(log_format: str, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
