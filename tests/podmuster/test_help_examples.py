"""Every command's ``--help`` ends with examples, and every example parses.

Covers: each command of ``podmuster`` and of ``kubectl podmuster`` (found by walking
the real parsers, so a new command without examples fails here) prints an
"examples:" section with its lines as written (not re-wrapped); the tables name no
command that does not exist; and each example's ``podmuster`` (or ``kubectl
podmuster``) invocation, taken out of its shell line (pipes, redirections, process
substitution), is accepted by the real parser and runs the command it is listed
under.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Iterator

import pytest

from podmuster import help_examples, kubectl_plugin
from podmuster.cli import build_parser
from podmuster.parser_tree import walk

PROGRAMS: dict[str, tuple[Callable[[], argparse.ArgumentParser], help_examples.Examples]] = {
    "podmuster": (build_parser, help_examples.PODMUSTER),
    "kubectl podmuster": (kubectl_plugin.build_parser, help_examples.KUBECTL_PODMUSTER),
}
REDIRECTS = {">", ">>", "<", "<<"}


def invocations(line: str, prog: str) -> Iterator[list[str]]:
    """The arguments of each ``prog`` command in a shell line."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    command: list[str] = []
    commands = [command]
    tokens = iter(lexer)
    for token in tokens:
        if token in REDIRECTS:
            next(tokens)  # the file
        elif token and set(token) <= set("();<>|&"):
            command = []
            commands.append(command)
        else:
            command.append(token)
    words = prog.split()
    for found in commands:
        if found[: len(words)] == words:
            yield found[len(words) :]


def cases() -> Iterator[tuple[str, tuple[str, ...], help_examples.Example]]:
    for prog, (_, table) in PROGRAMS.items():
        for path, examples in table.items():
            for example in examples:
                yield prog, path, example


@pytest.mark.parametrize("prog", PROGRAMS)
def test_every_command_prints_examples(prog: str) -> None:
    build, table = PROGRAMS[prog]
    for path, parser in walk(build()):
        assert path in table, f"{prog} {' '.join(path)} has no examples"
        text = parser.format_help()
        assert "\nexamples:\n" in text, path
        for example in table[path]:
            assert f"\n  {example.line}\n" in text + "\n", (path, example.line)


@pytest.mark.parametrize("prog", PROGRAMS)
def test_examples_name_only_real_commands(prog: str) -> None:
    build, table = PROGRAMS[prog]
    assert set(table) <= {path for path, _ in walk(build())}


@pytest.mark.parametrize(
    ("prog", "path", "example"),
    list(cases()),
    ids=[f"{prog} {' '.join(path)}: {example.line}" for prog, path, example in cases()],
)
def test_example_parses_as_its_command(
    prog: str,
    path: tuple[str, ...],
    example: help_examples.Example,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build, _ = PROGRAMS[prog]
    found = list(invocations(example.line, prog))
    assert found, f"no {prog} command in {example.line!r}"
    for argv in found:
        assert tuple(argv[: len(path)]) == path, "an example runs the command it is listed under"
        try:
            build().parse_args(argv)
        except SystemExit:
            pytest.fail(f"{example.line!r} does not parse: {capsys.readouterr().err}")


def test_invocations_are_cut_out_of_shell_lines() -> None:
    line = "kubectl get pods -o yaml | podmuster schedule - --explain > out.yaml"
    assert list(invocations(line, "podmuster")) == [["schedule", "-", "--explain"]]
    assert list(invocations("source <(podmuster completion bash)", "podmuster")) == [
        ["completion", "bash"]
    ]
    assert list(invocations("podmuster run binder --x '' --y", "podmuster")) == [
        ["run", "binder", "--x", "", "--y"]
    ]
    assert list(invocations("kubectl podmuster top -o json", "kubectl podmuster")) == [
        ["top", "-o", "json"]
    ]


def test_a_bad_example_would_fail() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["schedule", "x.yaml", "--output", "xml"])
