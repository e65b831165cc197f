"""User adapters through the ``podmuster.adapters`` entry point: the documented example
loaded through a fake entry point and used by the live reconcile and by offline grouping;
entry shapes (tuple, list, callable); malformed entries, load failures and duplicates
(with a built-in and between plugins) rejected with the entry point named."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from podgrouper_objects import SETTINGS, fake, obj, pod, pod_group, run

from integrations import base, default
from podgrouper import adapters, reconciling

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@dataclass
class FakeEntryPoint:
    name: str
    value: str
    loaded: Any = None

    def load(self) -> Any:
        if isinstance(self.loaded, Exception):
            raise self.loaded
        return self.loaded


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> FakeEntryPoint:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import custom_adapter  # the documented example, imported as its entry point would

    return FakeEntryPoint("trainingrun", "custom_adapter:adapters", custom_adapter.adapters)


def test_example_adapter_groups_a_custom_kind_live(example: FakeEntryPoint) -> None:
    groupers = adapters.build_registry(SETTINGS.grouping(), [example])
    training = obj("example.com/v1", "TrainingRun", "tr", spec={"workers": 3})
    p = pod("tr-driver", training)
    kube_ = fake(training, p)
    outcome = run(reconciling.reconcile_pod(p, kube_, groupers, SETTINGS))
    assert outcome.applied is not None
    assert pod_group(kube_, "pg-tr-uid-tr")["spec"]["minMember"] == 4


def test_example_adapter_error_names_the_field(example: FakeEntryPoint) -> None:
    groupers = adapters.build_registry(SETTINGS.grouping(), [example])
    training = obj("example.com/v1", "TrainingRun", "tr", spec={"workers": "many"})
    p = pod("tr-driver", training)
    kube_ = fake(training, p)
    outcome = run(reconciling.reconcile_pod(p, kube_, groupers, SETTINGS))
    assert "TrainingRun ns/tr field spec.workers" in outcome.error


def test_installed_entry_points_are_read_by_default() -> None:
    assert adapters.load_adapters() == []  # nothing in this checkout declares one


GROUPER = default.DefaultGrouper("mine")


@pytest.mark.parametrize(
    "loaded",
    [
        ("example.com", "Thing", "v1", GROUPER),
        [("example.com", "Thing", "v1", GROUPER)],
        lambda: [("example.com", "Thing", "v1", GROUPER)],
    ],
    ids=["tuple", "list", "callable"],
)
def test_entry_shapes(loaded: Any) -> None:
    (adapter,) = adapters.load_adapters([FakeEntryPoint("thing", "m:x", loaded)])
    assert adapter.gvk == base.GroupVersionKind("example.com", "v1", "Thing")
    assert adapter.source == "thing = m:x"


@pytest.mark.parametrize(
    ("loaded", "problem"),
    [
        (42, "expected"),
        ([("example.com", "Thing")], "not a 4-tuple"),
        ([("example.com", "Thing", "v1", object())], "no name/group"),
        ([("example.com", "", "v1", GROUPER)], "must be strings"),
        (ImportError("no module named m"), "cannot load"),
    ],
)
def test_malformed_entry_points_are_rejected(loaded: Any, problem: str) -> None:
    with pytest.raises(adapters.AdapterError, match=f"entry point bad = m:x: .*{problem}"):
        adapters.load_adapters([FakeEntryPoint("bad", "m:x", loaded)])


def test_duplicate_of_a_builtin_is_rejected() -> None:
    point = FakeEntryPoint("job", "m:x", ("batch", "Job", "v1", GROUPER))
    with pytest.raises(adapters.AdapterError, match=r"batch/v1 Job already has grouper 'job'"):
        adapters.build_registry(None, [point])


def test_duplicate_between_plugins_is_rejected() -> None:
    points = [FakeEntryPoint(n, "m:x", ("example.com", "Thing", "*", GROUPER)) for n in "ab"]
    with pytest.raises(adapters.AdapterError, match="entry point b = m:x"):
        adapters.build_registry(None, points)


def test_offline_grouping_uses_a_registry_with_user_adapters(example: FakeEntryPoint) -> None:
    from integrations.grouping import group_workloads

    groupers = adapters.build_registry(None, [example])
    training = obj("example.com/v1", "TrainingRun", "tr", spec={"workers": 2})
    p = pod("tr-driver", training)
    result = group_workloads([training, p], groupers=groupers)
    assert [g["spec"]["minMember"] for g in result.pod_groups] == [3]
    assert [g["spec"]["minMember"] for g in group_workloads([training, p]).pod_groups] == [1]
