"""Labels, annotations, tolerations and affinity of the wrong shape, on every kind read offline.

Why: the API server refuses an object whose ``metadata.labels`` or
``metadata.annotations`` is not a map of strings, so such an object only comes from a
file; read as empty (``labels: [a, b]`` on a Node, ``annotations: x`` on a Queue) it
would be scheduled on a guess with no word. Each kind ``podmuster schedule`` reads, and
each kind ``podmuster group`` is given, must get one stderr line naming the object and
the field, be left out, and leave every other object decided (docs/cli.md "Bad input").
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from podmuster.cli import main

SNAPSHOT: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n0"},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": "8"}},
    },
    {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "team"},
        "spec": {
            "resources": {
                "gpu": {"quota": 4, "limit": -1},
                "cpu": {"quota": -1, "limit": -1},
                "memory": {"quota": -1, "limit": -1},
            }
        },
    },
    {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "good", "namespace": "ns"},
        "spec": {"queue": "team", "minMember": 1},
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "good-0",
            "namespace": "ns",
            "annotations": {"pod-group-name": "good"},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    },
]
"""A node, a queue and a one-pod gang that must be bound whatever else is broken."""

EXTRA: dict[str, tuple[str, str, str | None]] = {
    # kind: (apiVersion, name, namespace) of one more object of each kind schedule reads
    "Node": ("v1", "n1", None),
    "Queue": ("scheduling.run.ai/v2", "spare", None),
    "PodGroup": ("scheduling.run.ai/v2alpha2", "pg", "ns"),
    "Pod": ("v1", "p", "ns"),
    "BindRequest": ("scheduling.run.ai/v1alpha2", "br", "ns"),
    "PriorityClass": ("scheduling.k8s.io/v1", "pc", None),
    "Topology": ("kai.scheduler/v1alpha1", "topo", None),
    "Namespace": ("v1", "ns2", None),
    "PersistentVolumeClaim": ("v1", "pvc", "ns"),
    "PersistentVolume": ("v1", "pv", None),
    "StorageClass": ("storage.k8s.io/v1", "sc", None),
    "ResourceClaim": ("resource.k8s.io/v1", "rc", "ns"),
    "ResourceSlice": ("resource.k8s.io/v1", "rs", None),
    "DeviceClass": ("resource.k8s.io/v1", "dc", None),
    "NodeResourceTopology": ("topology.node.k8s.io/v1alpha2", "n0", None),
}

SHAPES: list[tuple[str, Any, str]] = [
    ("labels", ["a", "b"], "metadata.labels: expected a map of strings, got ['a', 'b']"),
    ("annotations", "x", "metadata.annotations: expected a map of strings, got 'x'"),
    ("labels", {"zone": 1}, "metadata.labels[zone]: expected a string, got 1"),
    ("annotations", {"on": True}, "metadata.annotations[on]: expected a string, got true"),
]


def _schedule(tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any]) -> Any:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    code = main(["schedule", str(path)])
    captured = capsys.readouterr()
    return code, yaml.safe_load(captured.out), captured.err.strip().splitlines(), str(path)


def _named(kind: str) -> tuple[dict[str, Any], str]:
    api_version, name, namespace = EXTRA[kind]
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    where = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}, where


@pytest.mark.parametrize(("field", "value", "message"), SHAPES)
@pytest.mark.parametrize("kind", sorted(EXTRA))
def test_every_kind_schedule_reads(
    kind: str,
    field: str,
    value: Any,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad, where = _named(kind)
    bad["metadata"][field] = value
    code, out, err, path = _schedule(tmp_path, capsys, [*SNAPSHOT, bad])
    assert code == 2
    assert err == [f"podmuster: {path}: {where}: {message}"]
    assert {b["pod"] for b in out["binds"]} == {"ns/good-0"}


@pytest.mark.parametrize("index", range(len(SNAPSHOT)))
def test_a_broken_member_of_the_snapshot_itself(
    index: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The node, queue, PodGroup or pod the gang needs: named, left out, the gang waits."""
    objects = copy.deepcopy(SNAPSHOT)
    objects[index]["metadata"]["annotations"] = ["pod-group-name=good"]
    code, out, err, path = _schedule(tmp_path, capsys, objects)
    kind, name = objects[index]["kind"], objects[index]["metadata"]["name"]
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"podmuster: {path}: {kind} "), err
    assert f"{name}: metadata.annotations: expected a map of strings" in err[0]
    assert out["binds"] == []


POD_SPECS: list[tuple[dict[str, Any], str]] = [
    ({"tolerations": "gpu"}, "spec.tolerations: expected a list, got 'gpu'"),
    ({"tolerations": ["gpu"]}, "spec.tolerations[0]: expected a map, got 'gpu'"),
    ({"affinity": "zone-a"}, "spec.affinity: expected a map, got 'zone-a'"),
    ({"affinity": {"nodeAffinity": [1]}}, "spec.affinity.nodeAffinity: expected a map, got [1]"),
    ({"nodeSelector": ["zone=a"]}, "spec.nodeSelector: expected a map of strings"),
]


@pytest.mark.parametrize(("spec", "message"), POD_SPECS)
def test_pod_placement_fields_of_the_wrong_shape(
    spec: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a string of tolerations became a tuple of its characters, with no word."""
    pod = copy.deepcopy(SNAPSHOT[3])
    pod["metadata"]["name"] = "p"
    pod["spec"].update(spec)
    code, out, err, path = _schedule(tmp_path, capsys, [*SNAPSHOT, pod])
    assert code == 2
    assert len(err) == 1, err
    assert err[0].startswith(f"podmuster: {path}: Pod ns/p: {message}"), err
    assert {b["pod"] for b in out["binds"]} == {"ns/good-0"}


@pytest.mark.parametrize(
    ("stamp", "message"),
    [
        ("yesterday", "invalid RFC 3339 timestamp 'yesterday'"),
        (5, "expected an RFC 3339 date-time string, got 5"),
    ],
)
def test_a_bare_pod_with_a_bad_creation_timestamp_gets_one_line(
    stamp: Any, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod with no PodGroup: the one the CLI makes for it (as the podgrouper would) is in
    no file, so the pod's line is the only one; before, that PodGroup got a second."""
    pod = copy.deepcopy(SNAPSHOT[3])
    pod["metadata"] = {"name": "p", "namespace": "ns", "creationTimestamp": stamp}
    code, out, err, path = _schedule(tmp_path, capsys, [*SNAPSHOT, pod])
    assert code == 2
    assert err == [f"podmuster: {path}: Pod ns/p: metadata.creationTimestamp: {message}"]
    assert {b["pod"] for b in out["binds"]} == {"ns/good-0"}
    assert [g["podGroup"] for g in out["podGroups"]] == ["ns/good"]


def test_node_taints_of_the_wrong_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = {**copy.deepcopy(SNAPSHOT[0]), "metadata": {"name": "n1"}, "spec": {"taints": "gpu"}}
    code, out, err, path = _schedule(tmp_path, capsys, [*SNAPSHOT, node])
    assert code == 2
    assert err == [f"podmuster: {path}: Node n1: spec.taints: expected a list, got 'gpu'"]
    assert {b["pod"] for b in out["binds"]} == {"ns/good-0"}


def test_group_reads_the_same_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``podmuster group`` goes through the same loader: a ConfigMap it is handed too."""
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": [1]}}
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([SNAPSHOT[3], bad]))
    assert main(["group", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"podmuster: {path}: ConfigMap c: metadata.labels: expected a map of strings, got [1]"
    ]


@pytest.mark.parametrize("annotation", ["last-start", "stale-podgroup", "last-eviction"])
@pytest.mark.parametrize("stamp", ["not-a-time", "2026-12-06 02:59:00", "2026-12-06T02:59:00"])
def test_a_bad_scheduler_timestamp_on_a_podgroup_is_ignored_with_a_note(
    annotation: str, stamp: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scheduler's own timestamp annotations: a value Go's RFC 3339 parse refuses (no
    zone, a space for T, not a time) is ignored, as KAI's scheduler ignores it; the group is
    scheduled and its outcome says so. Before, the whole PodGroup was left out."""
    name = f"kai.scheduler/{annotation}-timestamp"
    objects = copy.deepcopy(SNAPSHOT)
    objects[2]["metadata"]["annotations"] = {name: stamp}
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    code = main(["schedule", str(path), "--explain"])
    captured = capsys.readouterr()
    out = yaml.safe_load(captured.out)
    assert (code, captured.err) == (0, "")
    assert {b["pod"] for b in out["binds"]} == {"ns/good-0"}
    (group,) = out["podGroups"]
    assert any(
        r.startswith(f"IgnoredAnnotation: metadata.annotations[{name}]: ") for r in group["reasons"]
    ), group


def test_a_full_rfc3339_timestamp_with_an_offset_and_fractions_is_read() -> None:
    from crds.meta import strict_rfc3339_seconds

    assert strict_rfc3339_seconds("2026-12-06T03:59:00.5+01:00") == strict_rfc3339_seconds(
        "2026-12-06T02:59:00.5Z"
    )


def test_jobs_of_an_invalid_queue_are_told_it_is_invalid_not_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Queue exists but one field cannot be read: its jobs (and those of its child
    queues) say so, naming the field; before, they said the queue did not exist."""
    objects = copy.deepcopy(SNAPSHOT)
    objects[1]["spec"]["preemptMinRuntime"] = "forever"
    child = {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "child"},
        "spec": {"parentQueue": "team", "resources": objects[1]["spec"]["resources"]},
    }
    other = copy.deepcopy(objects[2:])
    other[0]["metadata"]["name"] = "other"
    other[0]["spec"]["queue"] = "child"
    other[1]["metadata"] = {"name": "other-0", "namespace": "ns",
                            "annotations": {"pod-group-name": "other"}}  # fmt: skip
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all([*objects, child, *other]))
    assert main(["schedule", str(path)]) == 2
    out = yaml.safe_load(capsys.readouterr().out)
    reasons = {g["podGroup"]: g["reasons"] for g in out["podGroups"]}
    (said,) = reasons["ns/good"]
    assert said.startswith("QueueDoesNotExist: queue 'team' is not usable: it is invalid (")
    assert "spec.preemptMinRuntime" in said
    (said,) = reasons["ns/other"]
    assert "its ancestor queue 'team' was dropped (it is invalid (" in said
