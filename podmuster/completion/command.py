"""``podmuster completion bash|zsh|fish``: print a shell completion script (docs/cli.md §8).

Why: the script is generated from the parser the command itself runs, so it always
matches the installed version's commands, flags and choices.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from podmuster.completion import bash, fish, zsh
from podmuster.completion.spec import Command, commands

SHELLS: dict[str, Callable[[Sequence[Command], str], str]] = {
    "bash": bash.script,
    "zsh": zsh.script,
    "fish": fish.script,
}


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script of a shell for podmuster's commands, "
        "flags and choices. docs/cli.md says how to load it.",
    )
    parser.add_argument("shell", choices=tuple(SHELLS), help="the shell to complete in")
    parser.set_defaults(handler=run)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``shell`` for every command of ``parser``."""
    return SHELLS[shell](commands(parser), parser.prog)


def run(args: argparse.Namespace) -> int:
    from podmuster.cli import build_parser  # the whole tree, this command included

    sys.stdout.write(script(build_parser(), args.shell))
    return 0
