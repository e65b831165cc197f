"""The kopf operator without an API server: the registry podgrouper.cli builds (exactly
the pod handlers for create/update/resume with our filter and error mode, plus login,
start-up and clean-up), the when-filter, the pod handler called with kopf-shaped kwargs
and FakeKube in memo (grouping, adapter errors returning normally, transient errors as
kopf.TemporaryError with exponential back-off), start-up settings, and the flags."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from podgrouper_objects import SETTINGS, fake, obj, pod, pod_group

from integrations import registry
from kubeapi import credentials
from kubeapi import http as kubehttp
from kubeapi.errors import TransientError
from podgrouper import (
    cli,
    flags,
    handlers,
    selectors,
    settings,
)
from tests.kits import podgrouper_kube as testing

CREDS = credentials.Credentials(server="https://api.test:6443", token="t")
LOGGER = logging.getLogger("test-podgrouper")


def operator(config: settings.PodGrouperSettings = SETTINGS) -> kopf.OperatorRegistry:
    return cli.build_operator_registry(config, CREDS, registry.build_registry())


def pod_handlers(op: kopf.OperatorRegistry) -> list[Any]:
    return sorted(op._changing.get_all_handlers(), key=lambda h: str(h.id))


def call(kube_: testing.FakeKube, body: dict[str, Any], retry: int = 0) -> None:
    runtime = handlers.Runtime(kube_, registry.build_registry(), SETTINGS)
    memo = kopf.Memo({handlers.MEMO_KEY: runtime})
    (handler, *_) = pod_handlers(operator())
    asyncio.run(handler.fn(body=kopf.Body(body), memo=memo, retry=retry, logger=LOGGER))


def test_registry_has_exactly_the_pod_handlers() -> None:
    found = pod_handlers(operator())
    assert [str(h.id) for h in found] == sorted(handlers.HANDLER_IDS)
    reasons = {str(h.id): (h.reason, h.initial) for h in found}
    assert reasons == {
        "podgrouper/create": (kopf.Reason.CREATE, None),
        "podgrouper/resume": (None, True),
        "podgrouper/update": (kopf.Reason.UPDATE, None),
    }
    for handler in found:
        assert handler.fn is handlers.group_pod
        assert (handler.selector.group, handler.selector.version) == ("", "v1")
        assert handler.selector.any_name == "pods"
        assert handler.errors is kopf.ErrorsMode.TEMPORARY
        assert (handler.labels, handler.annotations, handler.field) == (None, None, None)
        assert handler.when is not None
        assert not handler.requires_finalizer


def test_registry_activities() -> None:
    ids = sorted(str(h.id) for h in operator()._activities.get_all_handlers())
    assert ids == ["podgrouper/cleanup", "podgrouper/login", "podgrouper/startup"]


def test_when_filter_checks_scheduler_name_and_pod_selector() -> None:
    config = settings.PodGrouperSettings(pod_selector=selectors.LabelSelector.parse("team"))
    (handler, *_) = pod_handlers(operator(config))
    assert handler.when(spec={"schedulerName": "kai-scheduler"}, labels={"team": "a"})
    assert not handler.when(spec={"schedulerName": "kai-scheduler"}, labels={})
    assert not handler.when(spec={"schedulerName": "default-scheduler"}, labels={"team": "a"})


def test_handler_groups_the_pod() -> None:
    job = obj("batch/v1", "Job", "train", spec={})
    p = pod("train-x", job)
    kube_ = fake(job, p)
    call(kube_, p)
    assert pod_group(kube_, "pg-train-uid-train")["spec"]["queue"] == "default-queue"


def test_adapter_error_returns_normally_with_events() -> None:
    bad = obj("ray.io/v1", "RayCluster", "bad", spec={"workerGroupSpecs": [{"replicas": 1}]})
    p = pod("bad-head", bad, labels={"ray.io/group": "headgroup"})
    kube_ = fake(bad, p)
    call(kube_, p)
    assert {e["involvedObject"]["kind"] for e in kube_.events} == {"Pod", "RayCluster"}


@pytest.mark.parametrize(("retry", "delay"), [(0, 1.0), (3, 8.0), (10, 60.0)])
def test_transient_error_is_a_temporary_error_with_backoff(retry: int, delay: float) -> None:
    p = pod("solo")
    kube_ = fake(p)
    kube_.fail("create", "PodGroup", "ns", "pg-solo-uid-solo", TransientError)
    with pytest.raises(kopf.TemporaryError) as caught:
        call(kube_, p, retry)
    assert caught.value.delay == delay
    assert isinstance(caught.value.__cause__, Exception)


def test_missing_runtime_is_named() -> None:
    with pytest.raises(RuntimeError, match="memo"):
        handlers.runtime_of(kopf.Memo())


def test_startup_login_and_cleanup() -> None:
    op = operator(settings.PodGrouperSettings(max_concurrent_reconciles=4))
    activities = {str(h.id): h.fn for h in op._activities.get_all_handlers()}
    info = activities["podgrouper/login"]()
    assert (info.server, info.token) == ("https://api.test:6443", "t")
    operator_settings = kopf.OperatorSettings()
    memo = kopf.Memo()
    activities["podgrouper/startup"](settings=operator_settings, memo=memo)
    assert operator_settings.posting.enabled is False
    assert operator_settings.queueing.worker_limit == 4
    # A done worker frees its slot at once, not after kopf's 5 s (ten pods per 5 s).
    assert operator_settings.queueing.idle_timeout == cli.WORKER_IDLE_SECONDS < 1
    runtime = handlers.runtime_of(memo)
    assert isinstance(runtime.kube, kubehttp.KubeHttp)
    asyncio.run(activities["podgrouper/cleanup"](memo=memo))


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    flags.add_arguments(parser)
    return parser.parse_args(argv)


def test_flags_become_settings() -> None:
    config = flags.settings_from_args(
        parse(
            "--scheduler-name=mine",
            "--queue-label-key=q",
            "--namespace-label-selector=kai=on",
            "--pod-label-selector=app in (a,b)",
            "--default-priorities-configmap-name=defaults",
            "--default-priorities-configmap-namespace=kai",
            "--knative-gang-schedule=false",
            "--max-concurrent-reconciles=3",
        )
    )
    assert config.scheduler_name == "mine"
    assert config.grouping().queue_label_key == "q"
    assert config.namespace_selector.matches({"kai": "on"})
    assert config.pod_selector.matches({"app": "b"})
    assert config.default_priorities_configmap == "kai/defaults"
    assert config.knative_gang_schedule is False
    assert config.max_concurrent_reconciles == 3


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        (["--pod-label-selector=a in (b"], "cannot parse term"),
        (["--default-priorities-configmap-name=x"], "must be given together"),
        (["--kubeconfig=/nonexistent"], "cannot read"),
        (["--leader-elect", "--peering=p"], "--leader-elect and --peering"),
        (["--kube-api-qps=5", "--kube-api-burst=0"], "--kube-api-burst must be >= 1"),
    ],
)
def test_configuration_errors_are_one_line(
    flags: list[str], problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(flags) == 2
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


def test_main_runs_the_kopf_operator_with_an_explicit_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    seen: dict[str, Any] = {}

    async def operator(**kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(cli.kopf, "operator", operator)
    argv = ["--kubeconfig", str(path), "--namespace", "a", "--namespace", "b"]
    assert cli.main([*argv, "--metrics-port=-1"]) == 0
    assert isinstance(seen["registry"], kopf.OperatorRegistry)
    assert (seen["clusterwide"], seen["namespaces"], seen["standalone"]) == (
        False,
        ["a", "b"],
        True,
    )


def test_add_parser_registers_the_subcommand() -> None:
    parser = argparse.ArgumentParser()
    flags.add_parser(parser.add_subparsers())
    args = parser.parse_args(["podgrouper", "--scheduler-name", "x"])
    assert args.handler is flags.run_operator
    assert args.scheduler_name == "x"


def test_a_fence_wraps_every_write_and_the_limit_reaches_the_client() -> None:
    from kubeapi.ratelimit import RateLimit
    from liveprocess.fencing import FencedWrites

    op = cli.build_operator_registry(
        SETTINGS, CREDS, registry.build_registry(), limit=RateLimit(5, 10), fence=lambda: False
    )
    activities = {str(h.id): h.fn for h in op._activities.get_all_handlers()}
    memo = kopf.Memo()
    activities["podgrouper/startup"](settings=kopf.OperatorSettings(), memo=memo)
    kube = handlers.runtime_of(memo).kube
    assert isinstance(kube, FencedWrites)
    assert isinstance(kube.api, kubehttp.KubeHttp)
    asyncio.run(activities["podgrouper/cleanup"](memo=memo))


def test_ready_only_once_kopf_has_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from liveprocess import serving

    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [{"name": "k", "cluster": {"server": "https://k"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    seen: list[list[str]] = []

    async def operator(*, stop_flag: asyncio.Event, ready_flag: asyncio.Event, **_: Any) -> None:
        seen.append(serving.READINESS.failing())
        ready_flag.set()
        for _ in range(500):  # poll, 5 s at most
            if not serving.READINESS.failing():
                break
            await asyncio.sleep(0.01)
        seen.append(serving.READINESS.failing())

    monkeypatch.setattr(cli.kopf, "operator", operator)
    assert cli.main(["--kubeconfig", str(path), "--metrics-port=-1"]) == 0
    assert seen == [["podgrouper: kopf not started"], []]
    assert serving.READINESS.failing() == []  # nothing left behind
