"""Every ``podmuster run`` component takes the common flags, with the same help text."""

from __future__ import annotations

import argparse

import pytest

from liveprocess import flags
from podmuster.cli import build_parser

COMPONENTS = (
    "podgrouper",
    "scheduler",
    "binder",
    "controllers",
    "all",
    "webhooks",
    "node-scale-adjuster",
    "dashboard",
)
REQUIRED = {"webhooks": ["--tls-cert-file=c", "--tls-key-file=k"]}
COMMON = (
    "--kubeconfig",
    "--context",
    "--kube-api-qps",
    "--kube-api-burst",
    "--leader-elect",
    "--leader-elect-lease-name",
    "--leader-elect-lease-namespace",
    "--metrics-port",
    "--health-port",
    "--log-level",
    "--log-format",
)


def component_parsers() -> dict[str, argparse.ArgumentParser]:
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # type: ignore[union-attr]
    choices: dict[str, argparse.ArgumentParser] = run._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    return choices


def helps(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    return {s: a.help for a in parser._actions for s in a.option_strings}


def test_every_component_is_listed() -> None:
    assert set(component_parsers()) == set(COMPONENTS)


def test_every_component_has_the_common_flags_with_one_help_text() -> None:
    reference = argparse.ArgumentParser()
    flags.add_common_arguments(reference, metrics_port=1)
    expected = helps(reference)
    for name, parser in component_parsers().items():
        seen = helps(parser)
        for flag in COMMON:
            assert seen.get(flag) == expected[flag], (name, flag)


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_component_parses_the_common_flags(component: str) -> None:
    args = build_parser().parse_args(
        [
            "run",
            component,
            *REQUIRED.get(component, []),
            "--kubeconfig=/k",
            "--context=c",
            "--kube-api-qps=20",
            "--kube-api-burst=40",
            "--leader-elect",
            "--leader-elect-lease-name=mine",
            "--leader-elect-lease-namespace=ops",
            "--metrics-port=9000",
            "--health-port=9001",
            "--log-level=debug",
            "--log-format=json",
        ]
    )
    assert (args.kubeconfig, args.context, args.kube_api_qps, args.kube_api_burst) == (
        "/k",
        "c",
        20.0,
        40,
    )
    assert (args.leader_elect, args.leader_elect_lease_name, args.leader_elect_namespace) == (
        True,
        "mine",
        "ops",
    )
    assert (args.metrics_port, args.health_port, args.log_level, args.log_format) == (
        9000,
        9001,
        "debug",
        "json",
    )


@pytest.mark.parametrize("component", COMPONENTS)
def test_old_spellings_stay_accepted(component: str) -> None:
    args = build_parser().parse_args(
        [
            "run",
            component,
            *REQUIRED.get(component, []),
            "--leader-elect-namespace=old",
            "--log-format=full",
        ]
    )
    assert (args.leader_elect_namespace, args.log_format) == ("old", "plain")


@pytest.mark.parametrize("component", COMPONENTS)
def test_help_lists_the_common_flags(component: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", component, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "common to every podmuster run component" in out
    for flag in COMMON:
        assert flag in out, flag


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--log-format=xml"], "invalid choice: 'xml'"),
        (["--log-level=trace"], "invalid choice: 'trace'"),
        (["--metrics-port=x"], "invalid int value"),
    ],
)
def test_bad_common_flags_name_the_flag(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "binder", *argv])
    err = capsys.readouterr().err
    assert problem in err
    assert argv[0].split("=")[0] in err


def test_defaults_and_lease_helpers() -> None:
    parser = argparse.ArgumentParser()
    flags.add_common_arguments(parser, metrics_port=8085)
    args = parser.parse_args([])
    assert (args.metrics_port, args.health_port, args.log_format, args.log_level) == (
        8085,
        None,
        "plain",
        "info",
    )
    assert flags.health_port(args) is None
    assert flags.health_port(parser.parse_args(["--health-port=8085"])) is None  # same port
    assert flags.health_port(parser.parse_args(["--health-port=1"])) == 1
    assert flags.lease_name(args, "podmuster-x") == "podmuster-x"
    assert flags.lease_namespace(args, "") == "default"
    assert flags.lease_namespace(args, "own") == "own"
    named = parser.parse_args(["--leader-elect-lease-name=n", "--leader-elect-namespace=s"])
    assert (flags.lease_name(named, "d"), flags.lease_namespace(named, "own")) == ("n", "s")
