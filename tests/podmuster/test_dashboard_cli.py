"""Bad input to ``podmuster run dashboard`` and ``kubectl podmuster``: one line, no traceback.

Covers: a ``--refresh`` that is not positive and a kubeconfig that cannot be read (exit
2, naming the flag or the file) before anything connects; the plugin's unreadable
kubeconfig (exit 1, one line prefixed ``kubectl podmuster:``) and usage errors (exit 2);
the console script ``kubectl-podmuster`` that kubectl finds on PATH is declared.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from podmuster import kubectl_plugin
from podmuster.cli import main

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "users: [{name: u, user: {token: t}}]\n"
)
"""A kubeconfig whose server refuses connections."""


def test_refresh_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(UNREACHABLE)
    assert main(["run", "dashboard", f"--kubeconfig={kubeconfig}", "--refresh=0"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "podmuster run dashboard: --refresh: must be > 0"


def test_dashboard_unreadable_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert main(["run", "dashboard", f"--kubeconfig={missing}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("podmuster run dashboard: ")
    assert str(missing) in err
    assert "Traceback" not in err


def test_dashboard_bad_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text("actions: [nosuchaction]\n")
    assert main(["run", "dashboard", f"--config={config}"]) == 2
    assert str(config) in capsys.readouterr().err


def test_plugin_unreadable_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope"
    assert kubectl_plugin.main(["queues", f"--kubeconfig={missing}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kubectl podmuster: ")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [[], ["explain"], ["queues", "-o", "yaml"], ["nope"]])
def test_plugin_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        kubectl_plugin.main(argv)
    assert exited.value.code == 2


def test_console_script_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["kubectl-podmuster"] == "podmuster.kubectl_plugin:main"
    live = " ".join(project["optional-dependencies"]["live"])
    assert "starlette" in live
    assert "uvicorn" in live


def test_plugin_unreachable_server_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(UNREACHABLE)
    assert kubectl_plugin.main(["top", f"--kubeconfig={kubeconfig}", "--timeout=0.3"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("kubectl podmuster: could not list Node, Pod, PodGroup, Queue")
    assert err[0].endswith("within 0.3s (-v shows why)")
