"""``podmuster schedule`` starts without loading what it does not run.

A command's modules are most of the start-up (issue 20: the whole ``schedule``
process on 1,000 nodes / 20,000 pods within 2 s), so the command line builds only
the parser of the command named, and CEL's parser waits for a CEL selector. The
check runs in a fresh interpreter: this test process has imported everything.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from podmuster import cli
from tests.kits import worlds as st
from tests.kits.worlds import flatten

OPENBLAS = "OPENBLAS_NUM_THREADS"
HEAVY = ("podgrouper.flags", "integrations.base", "liveprocess.flags", "celpy", "asyncio")


def test_schedule_imports_nothing_of_the_live_components_or_cel() -> None:
    code = (
        "import sys\n"
        "from podmuster import cli\n"
        "cli.build_parser('schedule').parse_args(['schedule', 'x.yaml'])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


def _commands(command: str | None) -> set[str]:
    action = cli.build_parser(command)._subparsers._group_actions[0]  # type: ignore[union-attr]
    return set(action.choices or ())


def test_without_a_command_every_command_is_listed() -> None:
    assert _commands(None) == set(cli.COMMANDS)
    assert _commands("schedule") == {"schedule"}
    assert _commands("--version") == set(cli.COMMANDS)


def _schedule_process(
    tmp_path: Path, objects: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    command = [sys.executable, "-m", "podmuster.cli", "schedule", str(path), "-o", "json"]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_a_one_shot_process_prints_all_its_output_and_keeps_its_exit_code(
    tmp_path: Path,
) -> None:
    """``schedule`` ends without tearing down its objects: what it printed is all there,
    and a bad object still makes it exit 2 with its stderr line."""
    jobs = [st.job(f"j{i}", "q") for i in range(200)]
    good = _schedule_process(
        tmp_path, flatten([st.node("n1", cpu="500", memory="500G", pods=500), st.queue("q"), *jobs])
    )
    assert good.returncode == 0, good.stderr
    assert len(json.loads(good.stdout)["binds"]) == 200
    broken = st.pod_group("broken", "q")
    broken["spec"]["minMember"] = "two"
    bad = _schedule_process(
        tmp_path, flatten([st.node("n1"), st.queue("q"), st.job("j", "q"), broken])
    )
    assert bad.returncode == 2
    assert "default/broken" in bad.stderr
    assert len(json.loads(bad.stdout)["binds"]) == 1


def test_a_json_snapshot_is_scheduled_without_pyyaml(tmp_path: Path) -> None:
    """PyYAML is for YAML input, YAML output and ``--config``: JSON in and out needs none."""
    path = tmp_path / "cluster.json"
    objects = flatten([st.node("n1"), st.queue("q"), st.job("j", "q")])
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    code = (
        "import contextlib, io, sys\n"
        "from podmuster import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = cli.main(['schedule', {str(path)!r}, '-o', 'json'])\n"
        "print(code, len(out.getvalue()) > 0, 'yaml' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.split() == ["0", "True", "False"]


def test_a_one_shot_command_leaves_openblas_single_threaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No BLAS thread pool for ``schedule`` (its numpy work never calls BLAS); a value the
    user set is kept, and other commands are left alone."""
    seen: list[str | None] = []

    def main(_: object) -> int:
        seen.append(os.environ.get(OPENBLAS))
        return 0

    def exit_(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr(gc, "disable", lambda: None)
    monkeypatch.setattr(os, "_exit", exit_)
    for argv, preset in ((["schedule", "x"], None), (["schedule", "x"], "4"), (["demo"], None)):
        if preset is None:
            monkeypatch.delenv(OPENBLAS, raising=False)
        else:
            monkeypatch.setenv(OPENBLAS, preset)
        monkeypatch.setattr(sys, "argv", ["podmuster", *argv])
        with pytest.raises(SystemExit):
            cli.entry()
    assert seen == ["1", "4", None]
