"""The inputs of queue admission (docs/semantics.md §5.11): the Queue annotation, the
``queueAdmissionGate`` key, our gate told apart from others' on a pod, and the rule that
a queue is under the gate when it or an ancestor opted in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from crds import rules
from crds.names import ADMISSION_GATE, ADMISSION_GATE_ANNOTATION
from scheduler.cache.parsing import FieldError
from scheduler.cache.queue_tree import queue_info
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import ConfigError, load_config
from tests.kits.worlds import job, queue, sourced


def test_config_key() -> None:
    assert load_config({"queueAdmissionGate": True}).admission_gate_all_queues
    assert not load_config({}).admission_gate_all_queues
    with pytest.raises(ConfigError, match="queueAdmissionGate: expected true or false"):
        load_config({"queueAdmissionGate": "yes"})


def test_queue_annotation_is_read_and_a_bad_value_names_the_field() -> None:
    assert queue_info(queue("q", admission_gate=True), 0.0, "u").admission_gate
    assert not queue_info(queue("q"), 0.0, "u").admission_gate
    body = queue("q")
    body["metadata"]["annotations"] = {ADMISSION_GATE_ANNOTATION: "yes"}
    with pytest.raises(FieldError) as caught:
        queue_info(body, 0.0, "u")
    assert caught.value.field == f"metadata.annotations[{ADMISSION_GATE_ANNOTATION}]"


def test_only_our_gate_marks_a_pod_admission_gated() -> None:
    objects = [
        queue("q"),
        job("ours", "q", 1, states=["AdmissionGated"]),
        job("theirs", "q", 1, states=["Gated"]),
    ]
    snapshot = build_snapshot(sourced(objects)).snapshot
    gated = {pod.name: pod.admission_gated for pod in snapshot.pods}
    assert gated == {"ours-0": True, "theirs-0": False}
    assert rules.pod_admission_gated({"schedulingGates": [{"name": ADMISSION_GATE}]})


names = hs.sampled_from(["a", "b", "c", "d", "e"])


@given(hs.dictionaries(names, hs.none() | names), hs.sets(names))
def test_under_the_gate_means_an_opted_in_queue_on_the_path(
    parents: dict[str, str | None], opted: set[str]
) -> None:
    gated = rules.admission_gated_queues(parents, opted)
    for name in parents:
        path, current = [], name
        while current is not None and current not in path:
            path.append(current)
            current = parents.get(current)
        assert (name in gated) == any(q in opted for q in path)
