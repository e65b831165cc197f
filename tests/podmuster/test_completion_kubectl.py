"""``kubectl_complete-podmuster``: kubectl's Tab completion of ``kubectl podmuster``.

Covers: the commands with their help, the flags of a command, the fixed values of
``-o`` (``-o VALUE`` and ``--output=VALUE``), a flag's value not taken for a command,
file names (Cobra's default directive) where nothing is offered, no file names
(directive 4) where something is; the console script is declared; and, when a kubectl
binary is at hand (PATH or the control-plane cache), real ``kubectl __complete podmuster
...`` calls the installed script and returns its candidates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from podmuster.completion import kubectl
from podmuster.completion.spec import commands
from podmuster.kubectl_plugin_parser import build_parser
from tests.e2e.controlplane import Binaries

ROOT = Path(__file__).resolve().parents[2]
FILES, NO_FILES = kubectl.FILE_NAMES, kubectl.NO_FILE_NAMES


def complete(*words: str) -> tuple[set[str], int]:
    lines, directive = kubectl.candidates(commands(build_parser()), words)
    return {line.split("\t")[0] for line in lines}, directive


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (("",), ({"explain", "queues", "top"}, NO_FILES)),
        (("ex",), ({"explain"}, NO_FILES)),
        (("top", "--out"), ({"--output"}, NO_FILES)),
        (("top", "-o", ""), ({"text", "json"}, NO_FILES)),
        (("queues", "--output=j"), ({"--output=json"}, NO_FILES)),
        (("explain", "-n", "queues", "-o", "t"), ({"text"}, NO_FILES)),
        (("top", "--context", "explain", "--time"), ({"--timeout"}, NO_FILES)),
        (("top", "--kubeconfig", ""), (set(), FILES)),
        (("explain", ""), (set(), FILES)),
    ],
)
def test_candidates(words: tuple[str, ...], expected: tuple[set[str], int]) -> None:
    assert complete(*words) == expected


def test_commands_come_with_their_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert kubectl.main(["q"]) == 0
    assert capsys.readouterr().out == "queues\tthe queue tree with shares\n:4\n"


def test_console_script_is_declared() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl_complete-podmuster"] == "podmuster.completion.kubectl:main"


def test_real_kubectl_calls_it() -> None:
    built = Binaries.default().path("kubectl")
    exe = str(built) if built is not None else shutil.which("kubectl")
    scripts = Path(sys.executable).parent
    if exe is None or not (scripts / "kubectl_complete-podmuster").exists():
        pytest.skip("needs a kubectl binary and the installed console scripts")
    env = {**os.environ, "PATH": f"{scripts}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [exe, "__complete", "podmuster", "top", "-o", ""],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert done.stdout.splitlines() == ["text", "json", ":4"]
