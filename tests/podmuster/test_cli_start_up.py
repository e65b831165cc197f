"""``podmuster schedule`` starts without loading what it does not run.

A command's modules are most of the start-up (issue 20: the whole ``schedule``
process on 1,000 nodes / 20,000 pods within 2 s), so the command line builds only
the parser of the command named, and CEL's parser waits for a CEL selector. The
check runs in a fresh interpreter: this test process has imported everything.
"""

from __future__ import annotations

import subprocess
import sys

from podmuster import cli

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
