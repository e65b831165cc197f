"""``podmuster run all``: every flag is checked before anything connects.

The components themselves run end to end in tests/e2e/test_run_all.py; here the
bad inputs: each is one line on stderr naming the flag or the file, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from podmuster import all_in_one, cli
from scheduler.cache.pools import NodePool
from scheduler.live import loop


def run(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = cli.main(["run", "all", *flags])
    return code, capsys.readouterr().err.strip()


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return f"--kubeconfig={path}"


def test_parses_every_components_flags() -> None:
    args = cli.build_parser().parse_args(
        [
            "run",
            "all",
            "--schedule-period=0.5",
            "--binder-workers=4",
            "--debounce=0.2",
            "--queue-label-key=team",
            "--leader-elect",
            "--log-format=json",
        ]
    )
    assert (args.schedule_period, args.binder_workers, args.debounce) == (0.5, 4, 0.2)
    assert (args.kube_api_qps, args.direct_bind) == (50.0, False)
    assert (args.queue_label_key, args.leader_elect, args.scheduler_name) == (
        "team",
        True,
        "kai-scheduler",
    )


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--schedule-period=0", "--schedule-period: must be > 0"),
        ("--binder-workers=0", "--binder-workers: must be >= 1"),
        ("--debounce=-1", "--debounce: must be >= 0"),
        ("--kube-api-burst=0", "--kube-api-burst must be >= 1"),
        ("--pod-label-selector=a in (", "pod-label-selector"),
        (
            "--resource-reservation-allocation-timeout=0",
            "--resource-reservation-allocation-timeout: must be > 0",
        ),
        ("--resource-reservation-grace=-1", "--resource-reservation-grace: must be >= 0"),
    ],
)
def test_bad_flag_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], kubeconfig: str, flag: str, message: str
) -> None:
    code, err = run(capsys, kubeconfig, flag)
    assert code == 2
    assert err.startswith("podmuster run all: ")
    assert message in err
    assert "\n" not in err


def test_bad_scheduler_config_names_the_file(
    capsys: pytest.CaptureFixture[str], kubeconfig: str, tmp_path: Path
) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text("actions: [allocate, teleport]\n")
    code, err = run(capsys, kubeconfig, f"--config={config}")
    assert code == 2
    assert str(config) in err
    assert "teleport" in err


def test_missing_kubeconfig_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = run(capsys, f"--kubeconfig={tmp_path / 'absent'}")
    assert code == 2
    assert "absent" in err


def test_the_scheduler_takes_the_default_pool_of_the_podgroupers_label(
    monkeypatch: pytest.MonkeyPatch, kubeconfig: str
) -> None:
    """One node-pool label key for both: the podgrouper copies a pod's label under it to
    the PodGroup, and the scheduler of ``run all`` (the default pool) leaves out what has it."""
    seen: list[loop.Options] = []

    async def serve(args: object, options: loop.Options, *rest: object) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(all_in_one, "serve", serve)
    assert cli.main(["run", "all", kubeconfig, "--nodepool-label-key=example.com/pool"]) == 0
    assert seen[0].pool == NodePool(None, "example.com/pool")
