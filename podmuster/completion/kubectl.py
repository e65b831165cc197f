"""``kubectl_complete-podmuster``: Tab completion of ``kubectl podmuster`` in kubectl's own.

Why: kubectl (1.26 and later) completes a plugin's words by running
``kubectl_complete-<plugin>`` from ``PATH`` with the words typed after the plugin's
name, the last one the word under the cursor (empty for a new word). It reads one
candidate a line (``value<TAB>help``) and, last, Cobra's ``:<directive>``. The answers
come from the plugin's parser through :mod:`.spec`, by the rules the ``podmuster``
scripts follow: subcommands, flags, a flag's fixed values (``-o text|json``, also
``--flag=value``), a flag's value never taken for a subcommand, file names elsewhere.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from podmuster.completion.spec import Command, commands

FILE_NAMES = 0
"""Cobra's ShellCompDirectiveDefault: the shell offers file names when nothing matches."""
NO_FILE_NAMES = 4
"""Cobra's ShellCompDirectiveNoFileComp."""


def candidates(tree: Sequence[Command], words: Sequence[str]) -> tuple[list[str], int]:
    """What completes the last of ``words`` (the words after the program's name)."""
    by_path = {command.path: command for command in tree}
    command = by_path[()]
    *typed, current = words or [""]
    flag_due: str | None = None
    positionals = 0
    for word in typed:
        if flag_due is not None:
            flag_due = None
        elif word.startswith("-"):
            flag_due = word if word in command.value_flags else None
        elif (*command.path, word) in by_path:
            command, positionals = by_path[(*command.path, word)], 0
        else:
            positionals += 1
    if flag_due is not None:
        return _values(command, flag_due, "", current)
    if current.startswith("-") and "=" in current:
        flag, _, value = current.partition("=")
        return _values(command, flag, f"{flag}=", value)
    if current.startswith("-"):
        return _matching(
            [(flag, option.help) for option in command.options for flag in option.flags], current
        )
    if command.subcommands:
        return _matching(list(command.subcommands), current)
    if command.positional_choices and positionals == 0:
        return _matching([(choice, "") for choice in command.positional_choices], current)
    return [], FILE_NAMES


def _values(command: Command, flag: str, prefix: str, typed: str) -> tuple[list[str], int]:
    for option in command.options:
        if flag in option.flags and option.choices:
            return _matching([(prefix + choice, "") for choice in option.choices], prefix + typed)
    return [], FILE_NAMES


def _matching(offered: Sequence[tuple[str, str]], typed: str) -> tuple[list[str], int]:
    lines = [
        f"{word}\t{text}" if text else word for word, text in offered if word.startswith(typed)
    ]
    return lines, NO_FILE_NAMES


def main(argv: Sequence[str] | None = None) -> int:
    """Print the candidates for ``argv`` (default: the process's arguments), then the directive."""
    from podmuster.kubectl_plugin_parser import build_parser

    lines, directive = candidates(commands(build_parser()), sys.argv[1:] if argv is None else argv)
    sys.stdout.write("".join(f"{line}\n" for line in lines) + f":{directive}\n")
    return 0
