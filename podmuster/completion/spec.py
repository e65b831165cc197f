"""What completes where: the commands, flags and choices of an argparse tree.

Why: the completion scripts are static (a Tab must not start Python), so every
command path's subcommands, flags, the flags that take a value and the values they
offer are read from the real parser here, once, and written into the scripts.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from podmuster.parser_tree import subcommands

# A metavar like ``{plain,json}`` lists the values offered where the parser also
# accepts others (an old spelling), so it has no ``choices``.
_BRACED = re.compile(r"^\{([^{}]+)\}$")


@dataclass(frozen=True)
class Option:
    """One flag: its spellings, whether it takes a value, the values offered."""

    flags: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...]
    help: str


@dataclass(frozen=True)
class Command:
    """One command path (``()`` is the program itself) and what follows it."""

    path: tuple[str, ...]
    help: str
    subcommands: tuple[tuple[str, str], ...]  # (name, help)
    options: tuple[Option, ...]
    positional_choices: tuple[str, ...]  # values of its first positional, if fixed

    @property
    def key(self) -> str:
        """The path as the scripts match it: words joined by one space."""
        return " ".join(self.path)

    @property
    def value_flags(self) -> tuple[str, ...]:
        return tuple(flag for option in self.options if option.takes_value for flag in option.flags)


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """Every command path of ``parser``, the program first, parents before children."""
    return list(_walk(parser, (), parser.description or ""))


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...], help_: str) -> Iterator[Command]:
    children = list(subcommands(parser))
    options: list[Option] = []
    positional_choices: tuple[str, ...] = ()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            options.append(
                Option(
                    flags=tuple(action.option_strings),
                    takes_value=action.nargs != 0,
                    choices=_choices(action),
                    help=_help(action),
                )
            )
        elif not positional_choices:
            positional_choices = _choices(action)
    yield Command(
        path=path,
        help=help_,
        subcommands=tuple((name, text) for name, text, _ in children),
        options=tuple(options),
        positional_choices=positional_choices,
    )
    for name, text, child in children:
        yield from _walk(child, (*path, name), text)


def _choices(action: argparse.Action) -> tuple[str, ...]:
    if action.choices is not None:
        return tuple(str(choice) for choice in action.choices)
    braced = _BRACED.match(action.metavar) if isinstance(action.metavar, str) else None
    return tuple(braced.group(1).split(",")) if braced else ()


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            text = text % {**vars(action), "prog": ""}
    return " ".join(text.split())


def function_name(prog: str) -> str:
    """The shell function completing ``prog``: ``_podmuster`` for ``podmuster``."""
    return "_" + re.sub(r"\W", "_", prog)


def shell_quote(text: str) -> str:
    """``text`` as one single-quoted bash or zsh word."""
    return "'" + text.replace("'", "'\\''") + "'"


def summary(text: str, width: int = 72) -> str:
    """A help text cut to one short line, for the shells that show descriptions."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def choice_options(commands: Sequence[Command]) -> Iterator[tuple[Command, Option]]:
    """Each flag that takes one of fixed values, with its command."""
    for command in commands:
        for option in command.options:
            if option.takes_value and option.choices:
                yield command, option
