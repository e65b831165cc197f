"""The subcommands of an argparse parser, walked in one place.

Why: the help examples (:mod:`podmuster.help_examples`) and the shell completion
scripts (:mod:`podmuster.completion`) both visit every command of the ``podmuster``
and ``kubectl podmuster`` parsers; argparse keeps subcommands in private
attributes, read here only.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator


def subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, help, parser)`` of each subcommand of ``parser``, in the order added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield name, helps.get(name, ""), child


def walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``(path, parser)`` of ``parser`` (path ``()``) and every command below it."""
    yield path, parser
    for name, _, child in subcommands(parser):
        yield from walk(child, (*path, name))
