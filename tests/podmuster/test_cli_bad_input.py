"""``podmuster schedule`` on bad input (docs/cli.md "Bad input").

Each broken object is checked as the API server checks it (unknown fields, wrong
types, out-of-range values; for pods and nodes what the scheduler reads), gets one stderr line naming ``Kind namespace/name``,
the field and the value, and is left out; everything else is still decided and
printed on stdout, and the exit status is 2. A missing queue is not an input
error but the group's reason. PodGroups of other API groups (Volcano, the
upstream ``scheduling.k8s.io`` one) in a ``kubectl`` dump are not KAI's: they are
ignored with one warning line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0"},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}},
    }


def _queue(name: str = "team", **resources: Any) -> dict[str, Any]:
    gpu = {"quota": 4, "limit": -1, "overQuotaWeight": 1, **resources}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"resources": {"gpu": gpu, "cpu": {"quota": -1}, "memory": {"quota": -1}}},
    }


def _group(name: str, queue: str = "team", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"queue": queue, "minMember": 2, **spec},
    }


def _pod(name: str, group: str, gpus: Any = "1", **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "annotations": {"pod-group-name": group, **annotations},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
    }


def _with_spec(pod: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**pod, "spec": {**pod["spec"], **spec}}


def _objects() -> list[dict[str, Any]]:
    """A node, a queue and two 2-pod gangs: ``good`` and ``other`` (the one to break)."""
    return [
        _node(),
        _queue(),
        _group("good"),
        _pod("good-0", "good"),
        _pod("good-1", "good"),
        _group("other"),
        _pod("other-0", "other"),
        _pod("other-1", "other"),
    ]


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any]) -> Any:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    code = main(["schedule", str(path)])
    captured = capsys.readouterr()
    return code, yaml.safe_load(captured.out), captured.err.strip().splitlines(), str(path)


def _bound(out: Any) -> set[str]:
    return {b["pod"] for b in out["binds"]}


def _replace(objects: list[dict[str, Any]], index: int, new: dict[str, Any]) -> list[Any]:
    return [new if i == index else o for i, o in enumerate(objects)]


def _broken_group(**spec: Any) -> list[Any]:
    group = _group("other")
    group["spec"].update(spec)
    return _replace(_objects(), 5, group)


def _without_min_member(key: str, value: Any) -> list[Any]:
    group = _group("other")
    del group["spec"]["minMember"]
    group["spec"][key] = value
    return _replace(_objects(), 5, group)


def _broken_queue(extra: dict[str, Any], gpu: dict[str, Any]) -> list[Any]:
    queue = _queue(**gpu)
    queue["spec"].update(extra)
    objects = _replace(_objects(), 1, queue)
    return [*objects, _queue("spare")]


CASES = {
    "minMember-typo": (
        _without_min_member("minMemeber", 3),
        "PodGroup ns/other: spec.minMemeber: unknown field, got 3",
        {"ns/good-0", "ns/good-1"},
    ),
    "minMember-negative": (
        _broken_group(minMember=-2),
        "PodGroup ns/other: spec.minMember: Input should be greater than or equal to 0, got -2",
        {"ns/good-0", "ns/good-1"},
    ),
    "minMember-wrong-type": (
        _broken_group(minMember="3"),
        "PodGroup ns/other: spec.minMember: Input should be a valid integer, got '3'",
        {"ns/good-0", "ns/good-1"},
    ),
    "parentQueue-typo": (
        _broken_queue({"parentQueu": "root"}, {}),
        "Queue team: spec.parentQueu: unknown field, got 'root'",
        set(),
    ),
    "overQuotaWeight-typo": (
        _broken_queue({}, {"overQuotaWieght": 2}),
        "Queue team: spec.resources.gpu.overQuotaWieght: unknown field, got 2",
        set(),
    ),
    "quota-below-minus-one": (
        _broken_queue({}, {"quota": -4}),
        "Queue team: spec.resources.gpu.quota: Input should be greater than or equal to -1, got -4",
        set(),
    ),
    "limit-below-minus-one": (
        _broken_queue({}, {"limit": -6}),
        "Queue team: spec.resources.gpu.limit: Input should be greater than or equal to -1, got -6",
        set(),
    ),
    "negative-quantity": (
        _replace(_objects(), 6, _pod("other-0", "other", gpus="-1")),
        "Pod ns/other-0: spec.containers[0].resources.limits.nvidia.com/gpu: "
        "negative quantity '-1'",
        {"ns/good-0", "ns/good-1"},
    ),
    "bad-quantity": (
        _replace(_objects(), 6, _pod("other-0", "other", gpus="1.2.3")),
        "Pod ns/other-0: spec.containers[0].resources.limits.nvidia.com/gpu: "
        "invalid quantity '1.2.3'",
        {"ns/good-0", "ns/good-1"},
    ),
    "bad-fraction": (
        _replace(_objects(), 6, _pod("other-0", "other", gpus="0", **{"gpu-fraction": "1.5"})),
        "Pod ns/other-0: metadata.annotations[gpu-fraction]: must be a number with 0 < x < 1",
        {"ns/good-0", "ns/good-1"},
    ),
    "node-flag-as-string": (
        [*_objects(), {**_node(), "metadata": {"name": "n1"}, "spec": {"unschedulable": "false"}}],
        "Node n1: spec.unschedulable: expected true or false, got 'false'",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "label-not-a-string": (
        _replace(
            _objects(),
            6,
            {
                **_pod("other-0", "other"),
                "metadata": {
                    "name": "other-0",
                    "namespace": "ns",
                    "labels": {"tier": 3},
                    "annotations": {"pod-group-name": "other"},
                },
            },
        ),
        "Pod ns/other-0: metadata.labels[tier]: expected a string, got 3",
        {"ns/good-0", "ns/good-1"},
    ),
    "anti-affinity-without-topology-key": (
        _replace(
            _objects(),
            6,
            _with_spec(
                _pod("other-0", "other"),
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "x"}}}
                        ]
                    }
                },
            ),
        ),
        "Pod ns/other-0: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnored"
        "DuringExecution[0].topologyKey: required",
        {"ns/good-0", "ns/good-1"},
    ),
    "spread-max-skew-zero": (
        _replace(
            _objects(),
            6,
            _with_spec(
                _pod("other-0", "other"),
                topologySpreadConstraints=[
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
            ),
        ),
        "Pod ns/other-0: spec.topologySpreadConstraints[0].maxSkew: "
        "must be an integer of at least 1, got 0",
        {"ns/good-0", "ns/good-1"},
    ),
    "namespace-label-not-a-string": (
        [
            *_objects(),
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "ns", "labels": {"a": 1}},
            },
        ],
        "Namespace ns: metadata.labels[a]: expected a string, got 1",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    # found by the fuzz tests (tests/fuzz): each once a Python traceback
    "containers-not-a-list": (
        _replace(_objects(), 6, _with_spec(_pod("other-0", "other"), containers=1.5)),
        "Pod ns/other-0: spec.containers: expected a list, got 1.5",
        {"ns/good-0", "ns/good-1"},
    ),
    "container-not-a-map": (
        _replace(_objects(), 6, _with_spec(_pod("other-0", "other"), containers=[1, "two"])),
        "Pod ns/other-0: spec.containers[0]: expected a map, got 1",
        {"ns/good-0", "ns/good-1"},
    ),
    "requests-not-a-map": (
        _replace(
            _objects(),
            6,
            _with_spec(
                _pod("other-0", "other"),
                containers=[{"name": "c", "resources": {"requests": "12"}}],
            ),
        ),
        "Pod ns/other-0: spec.containers[0].resources.requests: expected a map, got '12'",
        {"ns/good-0", "ns/good-1"},
    ),
    "quantity-too-large": (
        _replace(_objects(), 6, _pod("other-0", "other", gpus=10**30)),
        "Pod ns/other-0: spec.containers[0].resources.limits.nvidia.com/gpu: "
        f"quantity {10**30} is too large (at most 2^53 units)",
        {"ns/good-0", "ns/good-1"},
    ),
    "node-status-not-a-map": (
        [*_objects(), {**_node(), "metadata": {"name": "n1"}, "status": -3}],
        "Node n1: status: expected a map, got -3",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "node-conditions-not-a-list": (
        [*_objects(), {**_node(), "metadata": {"name": "n1"}, "status": {"conditions": "Ready"}}],
        "Node n1: status.conditions: expected a list, got 'Ready'",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "pod-without-group-spec-not-a-map": (
        [*_objects(), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "x"}],
        "Pod p: spec: expected a map",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "pod-without-group-annotations-not-a-map": (
        [
            *_objects(),
            {
                **_pod("p", "unused"),
                "metadata": {"name": "p", "namespace": "ns", "annotations": 1.5},
            },
        ],
        "Pod ns/p: metadata.annotations: expected a map of strings, got 1.5",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "object-without-apiVersion-kind-or-name": (
        [*_objects(), {"kind": "Node", "metadata": {"name": "n1"}}],
        "Node n1: apiVersion: missing or not a string",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
    "document-not-an-object": (
        [*_objects(), "text"],
        "document 1: items[8]: expected an object (mapping), got str",
        {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_object_named_left_out_and_the_rest_decided(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects, line, bound = CASES[case]
    code, out, err, path = _run(tmp_path, capsys, objects)
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"podmuster: {path}: {line}"), err[0]
    assert bound <= _bound(out)
    assert {g["podGroup"] for g in out["podGroups"]} >= {"ns/good"}


def test_without_the_bad_queue_its_groups_name_it_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _, _ = _run(tmp_path, capsys, CASES["quota-below-minus-one"][0])
    assert code == 2
    reasons = {g["podGroup"]: g["reasons"] for g in out["podGroups"]}
    assert any("QueueDoesNotExist" in r for r in reasons["ns/good"])


def test_every_bad_object_gets_its_own_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = _group("other")
    group["spec"]["minMemeber"] = 3
    objects = _replace(_objects(), 5, group)
    objects = _replace(objects, 4, _pod("good-1", "good", gpus="-2"))
    objects.append(_queue("extra", limit=-6))
    code, out, err, path = _run(tmp_path, capsys, objects)
    assert code == 2
    assert [line.split(": ")[2] for line in err] == [
        "Pod ns/good-1",
        "PodGroup ns/other",
        "Queue extra",
    ]
    assert all(line.startswith(f"podmuster: {path}: ") for line in err)
    assert out["binds"] == []  # good lacks a pod, other is left out
    assert {g["podGroup"] for g in out["podGroups"]} == {"ns/good"}


def test_missing_queue_is_a_reason_not_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = _replace(_objects(), 5, _group("other", queue="nowhere"))
    code, out, err, _ = _run(tmp_path, capsys, objects)
    assert code == 0
    assert err == []
    reasons = {g["podGroup"]: g["reasons"] for g in out["podGroups"]}
    assert reasons["ns/other"] == ["QueueDoesNotExist: queue 'nowhere' does not exist"]
    assert _bound(out) == {"ns/good-0", "ns/good-1"}


@pytest.mark.parametrize(
    ("api_version", "warning"),
    [
        ("scheduling.volcano.sh/v1beta1", "PodGroup (scheduling.volcano.sh)"),
        ("scheduling.k8s.io/v1alpha1", "PodGroup (scheduling.k8s.io)"),
        ("scheduling.x-k8s.io/v1alpha1", "PodGroup (scheduling.x-k8s.io)"),
    ],
)
def test_other_groups_podgroups_are_not_kai_ones(
    api_version: str, warning: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A foreign PodGroup of the same name would turn ``other`` into a 5-pod gang if read."""
    foreign = {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "other", "namespace": "ns"},
        "spec": {"minMember": 5, "queue": "team"},
    }
    objects = [*_objects(), foreign]
    code, out, err, _ = _run(tmp_path, capsys, objects)
    assert code == 0
    assert err == [f"podmuster: warning: ignoring objects of kind {warning}"]
    assert _bound(out) == {"ns/good-0", "ns/good-1", "ns/other-0", "ns/other-1"}


@pytest.mark.parametrize("kind", ["queue", "QUEUE", "pOD"])
def test_a_known_kind_in_the_wrong_case_is_named_as_such(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz tests: ``kind: queue`` was ignored like any unknown kind, leaving
    the user to guess why the queue is missing. The warning now says which kind was meant."""
    meant = kind.capitalize()
    objects = [*_objects(), {**_queue("spare"), "kind": kind}]
    code, _, err, _ = _run(tmp_path, capsys, objects)
    assert code == 0
    assert err == [
        f"podmuster: warning: ignoring objects of kind {kind} (kinds are case-sensitive: "
        f"did you mean {meant}?)"
    ]
