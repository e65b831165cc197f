"""``podmuster completion bash|zsh|fish``: the scripts complete in the real shells.

Covers, in each shell that is installed (bash always; zsh and fish when found on
PATH), with the generated script loaded as a user loads it:

- subcommands at every level, flags (also after a flag's value, which is skipped)
  and the values of flags with fixed choices, written ``--flag VALUE`` and
  ``--flag=VALUE`` (``--log-format``, whose choices are only its metavar, too);
- a fixed positional (``completion SHELL``) once, then file names;
- file names where a flag's value or a file argument goes;
- every command path of the real parser: its subcommands and all its flags, and
  every choice of every flag (bash and fish for all; zsh for the subcommands and
  flags of each path).

bash is driven through its completion function with ``COMP_WORDS``/``COMP_CWORD``;
zsh through a pseudo-terminal (``zpty``), the script sourced after ``compinit`` and
autoloaded from ``$fpath``, with Tab pressed on each line and
``compadd`` recording what it was given; fish with ``complete -C``.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from podmuster.cli import build_parser, main
from podmuster.completion.command import script
from podmuster.parser_tree import walk

FILES = {"<files>"}
"""The shell offers file names here: bash offers none itself (readline does)."""
FILE_NAMES = {"snap.yaml"}
"""The file names zsh and fish offer, in the directory the shells run in."""

# (command line, cursor at its end; what each shell offers). bash splits `--flag=` at
# `=` (COMP_WORDBREAKS); fish offers `--flag=value` whole; zsh the value.
CASES: list[tuple[str, set[str]]] = [
    ("podmuster sch", {"schedule"}),
    ("podmuster ", {"schedule", "group", "demo", "simulate", "run", "completion"}),
    ("podmuster run n", {"node-scale-adjuster"}),
    ("podmuster run sched", {"scheduler"}),
    ("podmuster --version ru", {"run"}),
    ("podmuster run scheduler --log-level ", {"debug", "info", "warning", "error"}),
    ("podmuster run scheduler --config sched.yaml --log-l", {"--log-level"}),
    ("podmuster run all --kubeconfig kc --log-format j", {"json"}),
    ("podmuster schedule snap.yaml -o j", {"json"}),
    ("podmuster simulate --trace-format ", {"alibaba-2023", "csv"}),
    ("podmuster completion ", {"bash", "zsh", "fish"}),
    ("podmuster completion bash ", FILES),
    ("podmuster schedule --config ", FILES),
    ("podmuster schedule ", FILES),
    ("podmuster run dashboard --no-such-flag ", FILES),
]
EQUALS_CASE = "podmuster run all --log-format="
EQUALS_VALUES = {"plain", "json"}
FILE_EQUALS_CASE = "podmuster schedule --config=sn"


def parsers() -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    return walk(build_parser())


def coverage_cases(with_choices: bool = True) -> Iterator[tuple[str, set[str]]]:
    """From the real parser: each path's subcommands, its flags, its flags' choices."""
    for path, parser in parsers():
        line = " ".join(("podmuster", *path, ""))
        subcommands = (
            {name for name in parser._subparsers._group_actions[0].choices}
            if (parser._subparsers)
            else set()
        )
        if subcommands:
            yield line, subcommands
        flags = {flag for action in parser._actions for flag in action.option_strings}
        yield line + "-", flags
        if not with_choices:
            continue
        for action in parser._actions:
            if action.option_strings and action.choices:
                for flag in action.option_strings:
                    yield f"{line}{flag} ", {str(choice) for choice in action.choices}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scripts' directory; the shells run in a directory of its own with one file,
    so file-name completion has something to offer."""
    (tmp_path / "cwd").mkdir()
    for name in FILE_NAMES:
        (tmp_path / "cwd" / name).write_text("")
    monkeypatch.chdir(tmp_path / "cwd")
    return tmp_path


def write_script(shell: str, directory: Path) -> Path:
    path = directory / f"podmuster.{shell}"
    path.write_text(script(build_parser(), shell))
    return path


# -- bash ---------------------------------------------------------------------


def bash_words(line: str) -> list[str]:
    words = line.split(" ")
    if words[-1].endswith("="):  # readline splits at `=`
        words[-1:] = [words[-1][:-1], "=", ""]
    return words


def bash_complete(lines: list[str], directory: Path) -> list[set[str]]:
    script_path = write_script("bash", directory)
    driver = [f"source {shlex.quote(str(script_path))}", "complete -p podmuster"]
    for line in lines:
        words = bash_words(line)
        driver += [
            f"COMP_WORDS=({' '.join(shlex.quote(word) for word in words)})",
            f"COMP_CWORD={len(words) - 1}",
            "COMPREPLY=()",
            "_podmuster",
            'printf "%s\\n" "${COMPREPLY[@]}" "<<END>>"',
        ]
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "\n".join(driver)],
        capture_output=True,
        text=True,
        check=True,
    )
    first, *rest = done.stdout.split("\n", 1)
    assert first == "complete -o default -F _podmuster podmuster"  # empty: file names
    blocks = rest[0].split("<<END>>\n")[:-1]
    return [{word for word in block.splitlines() if word} or FILES for block in blocks]


def test_bash_completes(workdir: Path) -> None:
    lines = [line for line, _ in CASES] + [EQUALS_CASE, FILE_EQUALS_CASE]
    got = bash_complete(lines, workdir)
    assert dict(zip(lines, got, strict=True)) == {
        **dict(CASES),
        EQUALS_CASE: EQUALS_VALUES,
        FILE_EQUALS_CASE: FILES,
    }


def test_bash_completes_every_command_flag_and_choice(workdir: Path) -> None:
    cases = list(coverage_cases())
    got = bash_complete([line for line, _ in cases], workdir)
    assert dict(zip([line for line, _ in cases], got, strict=True)) == dict(cases)


# -- fish ---------------------------------------------------------------------

needs_fish = pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")


def fish_complete(lines: list[str], directory: Path) -> list[set[str]]:
    script_path = write_script("fish", directory)
    driver = [f"source {shlex.quote(str(script_path))}"]
    for line in lines:
        driver += [f"complete -C {shlex.quote(line)}", "printf '%s\\n' '<<END>>'"]
    done = subprocess.run(
        ["fish", "--no-config", "-c", "\n".join(driver)],
        capture_output=True,
        text=True,
        check=True,
    )
    blocks = done.stdout.split("<<END>>\n")[:-1]
    return [{entry.split("\t")[0] for entry in block.splitlines()} for block in blocks]


@needs_fish
def test_fish_completes(workdir: Path) -> None:
    lines = [line for line, _ in CASES] + [EQUALS_CASE, FILE_EQUALS_CASE]
    got = fish_complete(lines, workdir)
    expected = {line: FILE_NAMES if want == FILES else want for line, want in CASES}
    expected[EQUALS_CASE] = {f"--log-format={value}" for value in EQUALS_VALUES}
    expected[FILE_EQUALS_CASE] = {f"--config={name}" for name in FILE_NAMES}
    assert dict(zip(lines, got, strict=True)) == expected


@needs_fish
def test_fish_completes_every_command_flag_and_choice(workdir: Path) -> None:
    cases = list(coverage_cases())
    got = fish_complete([line for line, _ in cases], workdir)
    assert dict(zip([line for line, _ in cases], got, strict=True)) == dict(cases)


# -- zsh ----------------------------------------------------------------------

needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")

ZSH_DRIVER = r"""
# zsh -f driver SCRIPT OUT LOAD LINE...: load SCRIPT in an interactive zsh as LOAD says
# (source: after compinit; fpath: as _podmuster in a directory of $fpath), type each
# LINE, press Tab, record what compadd is given in OUT, <<END>> after each.
zmodload zsh/zpty
local script=$1 out=$2 load=$3 line i
shift 3
zpty z zsh -f -i
zpty -w z "PROMPT= RPROMPT=; unsetopt autolist; autoload -U compinit"
if [[ $load == source ]]; then
    zpty -w z "compinit -u -D; source ${(q)script}"
else
    mkdir -p $out.d && cp $script $out.d/_podmuster
    zpty -w z "fpath=(${(q)out}.d \$fpath); compinit -u -D"
fi
zpty -w z "__end() { print -r -- '<<END>>' >> ${(q)out} }"
zpty -w z "compadd() { local -a m; builtin compadd -A m \"\$@\"; print -rl -- \$m >> ${(q)out}; comppostfuncs=(__end); builtin compadd \"\$@\" }"
for line in "$@"; do
    zpty -n -w z "$line"$'\t'
    for i in {1..600}; do  # up to 60 s on a loaded machine
        [[ -f $out && "$(tail -n 1 $out)" == '<<END>>' ]] && break
        sleep 0.1
    done
    print -r -- '<<NEXT>>' >> $out
    zpty -n -w z $'\C-u'
done
zpty -d z
"""


def zsh_complete(lines: list[str], directory: Path, load: str = "source") -> list[set[str]]:
    script_path = write_script("zsh", directory)
    driver = directory / "driver.zsh"
    driver.write_text(ZSH_DRIVER)
    out = directory / "out"
    subprocess.run(
        ["zsh", "-f", str(driver), str(script_path), str(out), load, *lines],
        check=True,
        timeout=600,
    )
    blocks = out.read_text().split("<<NEXT>>\n")[:-1]
    results = []
    for block in blocks:
        assert block.endswith("<<END>>\n"), f"zsh did not finish completing: {block!r}"
        results.append({word for word in block.splitlines() if word and word != "<<END>>"})
    return results


@needs_zsh
@pytest.mark.parametrize("load", ["source", "fpath"])
def test_zsh_completes(workdir: Path, load: str) -> None:
    lines = [line for line, _ in CASES] + [EQUALS_CASE, FILE_EQUALS_CASE]
    got = zsh_complete(lines, workdir, load)
    expected = {line: FILE_NAMES if want == FILES else want for line, want in CASES}
    assert dict(zip(lines, got, strict=True)) == {
        **expected,
        EQUALS_CASE: EQUALS_VALUES,
        FILE_EQUALS_CASE: FILE_NAMES,
    }


@needs_zsh
def test_zsh_completes_every_command_and_flag(workdir: Path) -> None:
    cases = list(coverage_cases(with_choices=False))
    got = zsh_complete([line for line, _ in cases], workdir)
    assert dict(zip([line for line, _ in cases], got, strict=True)) == dict(cases)


# -- the command --------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_command_prints_a_script_the_shell_accepts(
    shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    printed = capsys.readouterr().out
    assert printed == script(build_parser(), shell)
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed")
    path = tmp_path / f"podmuster.{shell}"
    path.write_text(printed)
    subprocess.run([shell, "-n", str(path)], check=True)


def test_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "tcsh"])
    assert exited.value.code == 2
    assert "invalid choice: 'tcsh'" in capsys.readouterr().err
