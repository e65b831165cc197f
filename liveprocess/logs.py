"""Log set-up of every component: ``--log-format plain|json`` and ``--log-level``.

Why this module exists: the operator reads every component's logs the same way, so one
formatter (the JSON fields of ``docs/metrics.md``) and one set-up serve them all,
kopf's loggers in the podgrouper included.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

__all__ = ["JsonFormatter", "configure_from", "configure_logging"]


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


def configure_from(args: argparse.Namespace) -> None:
    """``--log-format`` and ``--log-level`` of :func:`liveprocess.flags.add_common_arguments`."""
    configure_logging(args.log_format, logging.getLevelName(args.log_level.upper()))
