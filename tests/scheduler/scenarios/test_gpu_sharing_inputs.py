"""Reading fractional-GPU annotations, and carrying groups across rounds (docs/semantics.md §3, §6).

Why: a bad annotation must be reported on that pod, naming the field, while
every other pod is still scheduled; the group chosen for a pod must reach the
next cycle (the binder's ``runai-gpu-group`` label), and the same input must
always give the same group ids (docs/cli.md §2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from gpu_kit import fraction, gpu_node, memory

from crds.errors import InputError
from podmuster.cli import main
from scheduler.api.gpu_sharing import GpuShare, group_id
from scheduler.cache.parsing import FieldError
from scheduler.cache.reading import read_gpu_share
from scheduler.cache.snapshotting import build_snapshot
from scheduler.cycle import run_cycle
from scheduler.rounds import play
from tests.kits.worlds import (
    ALLOCATE_ONLY,
    NOW,
    flatten,
    job,
    pod,
    queue,
    run_objects,
    sourced,
)

NO_GPU: dict[str, object] = {"containers": [{"name": "main"}]}
"""A pod spec without whole GPUs."""


@pytest.mark.parametrize(
    ("annotations", "field", "message"),
    [
        ({"gpu-fraction": "1"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-fraction": "1.5"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-fraction": "0"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-fraction": "-0.25"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-fraction": "half"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-fraction": " 0.5"}, "gpu-fraction", "a number with 0 < x < 1"),
        ({"gpu-memory": "0"}, "gpu-memory", "positive integer"),
        ({"gpu-memory": "4Gi"}, "gpu-memory", "positive integer"),
        ({"gpu-memory": "\u00b2"}, "gpu-memory", "positive integer of MiB (ASCII digits only)"),
        ({"gpu-memory": " 100\n"}, "gpu-memory", "positive integer"),
        ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"}, "gpu-fraction-num-devices", ""),
        (
            {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "two"},
            "gpu-fraction-num-devices",
            "",
        ),
    ],
)
def test_bad_annotation_names_its_field(
    annotations: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(FieldError) as raised:
        read_gpu_share(annotations, NO_GPU)
    assert raised.value.field == f"metadata.annotations[{field}]"
    assert message in raised.value.message


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "amd.com/gpu"])
def test_fraction_with_whole_gpu_is_an_error_naming_the_resource(resource: str) -> None:
    spec = {"containers": [{"name": "main", "resources": {"limits": {resource: "1"}}}]}
    with pytest.raises(FieldError) as raised:
        read_gpu_share({"gpu-fraction": "0.5"}, spec)
    assert raised.value.field == f"spec.containers[0].resources.limits[{resource}]"
    assert raised.value.message.startswith(f"{resource} limit '1' cannot be combined with the ")


@pytest.mark.parametrize(("raw", "portion"), [("0.0001", 1), ("0.0004", 1), ("0.9996", 999)])
def test_every_fraction_the_webhook_admits_is_kept_within_thousandths(
    raw: str, portion: int
) -> None:
    """0 < x < 1 is the one rule (the webhook's); the scheduler keeps thousandths, at least
    0.001 and at most 0.999, instead of refusing the pod forever after admitting it."""
    share = read_gpu_share({"gpu-fraction": raw}, NO_GPU)
    assert share is not None
    assert share.portion == portion


def test_fraction_wins_over_memory_and_defaults() -> None:
    share = read_gpu_share(
        {"gpu-fraction": "0.25", "gpu-memory": "1000", "gpu-fraction-container-name": "c2"}, NO_GPU
    )
    assert share == GpuShare(portion=250, memory=0, devices=1, container="c2")
    assert read_gpu_share({}, NO_GPU) is None
    assert read_gpu_share(memory(3000, devices=2), NO_GPU) == GpuShare(0, 3000, 2)


@pytest.mark.parametrize(
    ("annotations", "limits"),
    [
        ({"gpu-fraction": " 0.5"}, None),
        ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": " 1"}, None),
        ({"gpu-memory": "20000 "}, None),
        ({"gpu-fraction": "0.5"}, {"nvidia.com/gpu": "0"}),
    ],
)
def test_a_bound_pod_admitted_by_earlier_rules_still_holds_its_device(
    annotations: dict[str, str], limits: dict[str, str] | None
) -> None:
    """Spellings an earlier webhook admitted (spaces, a zero whole-GPU key): a pod already
    on a node keeps its device counted, so no whole-GPU pod is bound onto it. Before, it
    was refused on reading, so not counted, and its GPU handed out a second time."""
    spec: dict[str, object] = {
        "nodeName": "n0",
        "containers": [{"name": "main", "resources": {"limits": limits or {}}}],
    }
    assert read_gpu_share(annotations, spec) is not None
    pending = {**spec, "nodeName": None}
    if limits or any(v != v.strip() for v in annotations.values()):
        with pytest.raises(FieldError):
            read_gpu_share(annotations, pending)  # a new pod is held to today's rule
    running = pod("running", annotations=annotations, state="Running", node="n0", extended=limits)
    objects = [queue("q"), gpu_node("n0", 1), *running, job("whole", "q", gpus=1)]
    built = build_snapshot(sourced(objects), now=NOW.timestamp(), strict=False)
    assert built.errors == []
    assert run_cycle(built.snapshot, ALLOCATE_ONLY).binds == []


def test_bad_pod_reported_while_others_schedule() -> None:
    """Live cache (strict=False): the bad pod is an error naming the field; the rest binds."""
    objects = [
        queue("q"),
        gpu_node("n0", 1),
        job("bad", "q", annotations={"gpu-fraction": "1.0"}),
        job("good", "q", annotations=fraction(0.5)),
        job("whole", "q", cpu="1"),
    ]
    built = build_snapshot(sourced(objects), now=NOW.timestamp(), strict=False)
    assert len(built.errors) == 1
    assert "bad-0" in str(built.errors[0])
    assert "metadata.annotations[gpu-fraction]" in str(built.errors[0])
    result = run_cycle(built.snapshot, ALLOCATE_ONLY)
    assert {b.pod for b in result.binds} == {"default/good-0", "default/whole-0"}


def test_bad_annotation_stops_the_cli_snapshot_with_the_field() -> None:
    objects = [queue("q"), gpu_node("n0", 1), job("bad", "q", annotations={"gpu-fraction": "2"})]
    with pytest.raises(InputError, match=r"metadata.annotations\[gpu-fraction\]"):
        build_snapshot(sourced(objects), now=NOW.timestamp())


def test_same_input_same_groups() -> None:
    objects = [
        queue("q"),
        gpu_node("n0", 2),
        gpu_node("n1", 2),
        *[job(f"p{i}", "q", annotations=fraction(0.3)) for i in range(7)],
    ]
    first, second = run_objects(objects), run_objects(objects)
    assert first.binds == second.binds
    ids = {g for b in first.binds for g in b.gpu_groups}
    assert len(ids) == 3  # 7 x 0.3 packs three to a device
    assert all(re.fullmatch(r"[0-9a-f-]{36}", g) for g in ids)


def test_group_ids_differ_per_pod_and_device() -> None:
    assert group_id("n0", "uid-a", 0) != group_id("n0", "uid-b", 0)
    assert group_id("n0", "uid-a", 0) != group_id("n0", "uid-a", 1)
    assert group_id("n0", "uid-a", 0) == group_id("n0", "uid-a", 0)


def test_rounds_label_the_group_so_the_next_cycle_joins_it() -> None:
    """Round 1 binds a half and labels it; round 2 puts the next half into that group."""
    objects = [queue("q"), gpu_node("n0", 2), job("a", "q", annotations=fraction(0.5))]
    rounds = list(play(sourced(objects), ALLOCATE_ONLY, now=NOW.timestamp(), rounds=1))
    (bind,) = rounds[0].result.binds
    after = [o.obj for o in rounds[0].objects]
    (bound,) = [o for o in after if o["kind"] == "Pod"]
    assert bound["metadata"]["labels"]["runai-gpu-group"] == bind.gpu_groups[0]
    second = run_objects([*after, job("b", "q", annotations=fraction(0.5))])
    (joined,) = second.binds
    assert joined.gpu_groups == bind.gpu_groups


def test_rounds_label_every_group_of_a_multi_device_pod() -> None:
    objects = [queue("q"), gpu_node("n0", 2), job("a", "q", annotations=fraction(0.5, devices=2))]
    (played,) = play(sourced(objects), ALLOCATE_ONLY, now=NOW.timestamp(), rounds=1)
    (bind,) = played.result.binds
    (bound,) = [o.obj for o in played.objects if o.obj["kind"] == "Pod"]
    labels = bound["metadata"]["labels"]
    assert {k for k in labels if k.startswith("runai-gpu-group/")} == {
        f"runai-gpu-group/{g}" for g in bind.gpu_groups
    }


def test_other_schedulers_pods_keep_their_annotations_to_themselves() -> None:
    """A pod of another scheduler is never read as fractional: it counts what it requests."""
    objects = [
        queue("q"),
        gpu_node("n0", 1),
        *pod(
            "web",
            gpus=1,
            state="Running",
            node="n0",
            scheduler_name="other",
            annotations={"gpu-fraction": "1.0"},
        ),
        job("a", "q", annotations=fraction(0.5)),
    ]
    built = build_snapshot(sourced(objects), now=NOW.timestamp(), strict=False)
    assert built.errors == []
    assert run_cycle(built.snapshot, ALLOCATE_ONLY).binds == []


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        ({"gpu-memory": "\u00b2"}, "gpu-memory"),
        ({"gpu-memory": "\u0661\u0660\u0660"}, "gpu-memory"),
        ({"gpu-memory": " 100\n"}, "gpu-memory"),
        ({"gpu-fraction": "0.5", "gpu-fraction-num-devices": "\u00b2"}, "gpu-fraction-num-devices"),
    ],
)
def test_schedule_reports_a_non_ascii_or_padded_integer_and_schedules_the_rest(
    annotations: dict[str, str], field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``str.isdigit`` takes ``"²"`` (``int`` then raised ValueError and ``schedule`` crashed)
    and Arabic-Indic digits; KAI's ParseUint takes ASCII digits only."""
    objects = flatten(
        [
            queue("q"),
            gpu_node("n0", 1),
            job("bad", "q", annotations=annotations),
            job("good", "q", annotations=fraction(0.5)),
        ]
    )
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    code = main(["schedule", str(path), "-o", "json"])
    captured = capsys.readouterr()
    assert code == 2
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"podmuster: {path}: Pod default/bad-0: metadata.annotations[{field}]: ")
    assert "must be a positive integer" in line
    assert [b["pod"] for b in json.loads(captured.out)["binds"]] == ["default/good-0"]
