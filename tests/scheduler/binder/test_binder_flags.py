"""``podmuster run binder``: the GPU reservation flags and ``--workers``, parsed and checked
before connecting."""

from __future__ import annotations

import pytest

from podmuster import cli
from scheduler.binder.flags import reservation_settings
from scheduler.binder.sharing import DEFAULT_IMAGE, Settings


def test_defaults_are_kais() -> None:
    args = cli.build_parser().parse_args(["run", "binder"])
    assert reservation_settings(args) == Settings(image=DEFAULT_IMAGE)
    assert reservation_settings(args).timeout == 40.0
    assert reservation_settings(args).runtime_class == ""  # KAI v0.17: no runtime class


def test_every_flag_reaches_the_settings() -> None:
    args = cli.build_parser().parse_args(
        [
            "run", "binder", "--resource-reservation-namespace=gpu-rr",
            "--resource-reservation-image=img:1", "--resource-reservation-runtime-class=nvidia",
            "--resource-reservation-allocation-timeout=5", "--resource-reservation-grace=0",
            "--cdi-enabled", "--scheduler-name=podmuster",
        ]
    )  # fmt: skip
    assert reservation_settings(args) == Settings(
        namespace="gpu-rr", image="img:1", runtime_class="nvidia", timeout=5.0, grace=0.0, cdi=True,
        scheduler_name="podmuster",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--resource-reservation-allocation-timeout=0", "must be > 0"),
        ("--resource-reservation-grace=-1", "must be >= 0"),
        ("--resource-reservation-namespace=", "must not be empty"),
        ("--workers=0", "must be >= 1"),  # a binder that would bind nothing
        ("--workers=-2", "must be >= 1"),
        ("--scheduler-name=", "'' must be a label value"),
        ("--scheduler-name=Pod Muster", "'Pod Muster' must be a label value"),
    ],
)
def test_bad_flags_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], flag: str, message: str
) -> None:
    code = cli.main(["run", "binder", flag])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"podmuster run binder: {flag.split('=')[0]}: {message}")
    assert "\n" not in err
