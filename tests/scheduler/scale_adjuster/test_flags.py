"""``podmuster run node-scale-adjuster`` and ``run all --cluster-autoscaling`` flags: a bad
value is exit code 2 with one line naming the flag, before anything connects; the
settings carry the flags' values."""

from __future__ import annotations

import pytest

from podmuster.cli import build_parser, main
from scheduler.scale_adjuster.flags import settings_from


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        ("--gpu-memory-to-fraction-ratio=1.5", "--gpu-memory-to-fraction-ratio"),
        ("--scale-cool-down-seconds=-1", "--scale-cool-down-seconds"),
        ("--scaling-pod-namespace=", "--scaling-pod-namespace"),
        ("--debounce=-1", "--debounce"),
    ],
)
def test_bad_flags_exit_2(flag: str, named: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "node-scale-adjuster", "--kubeconfig=/nonexistent", flag]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert named in line


def test_run_all_takes_the_adjuster_flags() -> None:
    args = build_parser().parse_args(
        [
            "run",
            "all",
            "--cluster-autoscaling",
            "--scheduler-name=mine",
            "--scale-cool-down-seconds=5",
            "--gpu-memory-to-fraction-ratio=0.25",
        ]
    )
    assert args.cluster_autoscaling
    settings = settings_from(args)
    assert (settings.scheduler_name, settings.cool_down) == ("mine", 5.0)
    assert settings.gpu_memory_to_fraction_ratio == 0.25
    assert settings.namespace == "kai-scale-adjust"
    assert not build_parser().parse_args(["run", "all"]).cluster_autoscaling
