"""``podmuster demo``: the whole engine on an embedded cluster (filled in below)."""

from __future__ import annotations

from typing import Any


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the scheduler on an embedded simulated cluster"
    )
    parser.set_defaults(handler=run)


def run(args: Any) -> int:
    del args
    return 0
