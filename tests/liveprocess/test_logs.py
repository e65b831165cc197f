"""``--log-format`` and ``--log-level`` set up the same logs in every component."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator

import pytest

from liveprocess import flags, logs


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    logger = logging.getLogger()
    saved = (logger.handlers[:], logger.level)
    yield logger
    logger.handlers[:], logger.level = saved[0], saved[1]


def configured(*argv: str) -> logging.Logger:
    parser = argparse.ArgumentParser()
    flags.add_common_arguments(parser, metrics_port=0)
    logs.configure_from(parser.parse_args(argv))
    return logging.getLogger()


def test_json_format_and_level(root: logging.Logger) -> None:
    logger = configured("--log-format=json", "--log-level=warning")
    assert logger.level == logging.WARNING
    (handler,) = logger.handlers
    record = logging.makeLogRecord(
        {"name": "kopf.objects", "levelname": "WARNING", "msg": "m", "k8s_ref": {"name": "p"}}
    )
    line = json.loads(handler.format(record))
    assert (line["level"], line["logger"], line["msg"], line["k8s_ref"]) == (
        "warning",
        "kopf.objects",
        "m",
        {"name": "p"},
    )


def test_plain_is_the_default_and_full_means_plain(root: logging.Logger) -> None:
    for argv in ([], ["--log-format=full"]):
        logger = configured(*argv, "--log-level=debug")
        assert logger.level == logging.DEBUG
        assert not isinstance(logger.handlers[0].formatter, logs.JsonFormatter)
