"""``scheduler.rounds``: one cycle's decisions carried out on the objects (docs/cli.md §2).

Covers: a bind makes the pod run on its node; an evicted pod is gone with its
BindRequest; an evicted and re-placed victim is pending again; a pipelined pod
stays pending; annotations are written and removed on the PodGroup; inputs
are never mutated; a decision about an unknown pod is refused; ``play``
advances the clock one second per round and a preemption plays out as
evict + pipeline, then bind, then nothing; a job placed and then preempted in
the same cycle stays pending.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from crds.documents import SourcedObject
from scheduler.config import SchedulerConfig
from scheduler.cycle import Bind, CycleResult, Eviction
from scheduler.rounds import ROUND_SECONDS, apply_result, made_decisions, play
from tests.kits.worlds import NOW, job, node, pod, queue, sourced

LAST_START = "kai.scheduler/last-start-timestamp"
STALE = "kai.scheduler/stale-podgroup-timestamp"
T = NOW.timestamp()
NOW_TEXT = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")


def _objects() -> list[SourcedObject]:
    return sourced(
        [
            node("node0", gpus=4),
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=4, gpu_weight=1),
            job("run", "q", 1, gpus=1, states=["Running"], nodes=["node0"]),
            job("wait", "q", 1, gpus=1),
            pod("binding", gpus=1, state="Binding", node="node0"),
        ]
    )


def _by_key(objects: list[SourcedObject], kind: str) -> dict[str, dict[str, Any]]:
    return {f"{o.namespace or 'default'}/{o.name}": o.obj for o in objects if o.obj["kind"] == kind}


def test_bind_runs_the_pod_on_its_node() -> None:
    result = CycleResult(binds=[Bind("default/wait-0", "node0")])
    pods = _by_key(apply_result(_objects(), result, T), "Pod")
    assert pods["default/wait-0"]["spec"]["nodeName"] == "node0"
    assert pods["default/wait-0"]["status"] == {"phase": "Running", "startTime": NOW_TEXT}


def test_evicted_pod_is_gone_with_its_bind_request() -> None:
    result = CycleResult(evictions=[Eviction("default/binding", "preempt", "default/wait")])
    after = apply_result(_objects(), result, T)
    assert "default/binding" not in _by_key(after, "Pod")
    assert _by_key(after, "BindRequest") == {}
    assert len(after) == len(_objects()) - 2


def test_evicted_and_replaced_victim_is_pending_again() -> None:
    result = CycleResult(
        evictions=[Eviction("default/run-0", "consolidation", "default/wait")],
        pipelined=[Bind("default/run-0", "node1")],
    )
    moved = _by_key(apply_result(_objects(), result, T), "Pod")["default/run-0"]
    assert "nodeName" not in moved["spec"]
    assert moved["status"] == {"phase": "Pending"}


def test_pipelined_preemptor_stays_pending() -> None:
    result = CycleResult(pipelined=[Bind("default/wait-0", "node0")])
    before = _by_key(_objects(), "Pod")["default/wait-0"]
    after = _by_key(apply_result(_objects(), result, T), "Pod")["default/wait-0"]
    assert after == {**before, "status": {"phase": "Pending"}}


def test_annotations_are_written_and_removed_on_the_pod_group() -> None:
    stamped = CycleResult(annotations={"default/wait": {STALE: "2026-01-02T00:00:00Z"}})
    once = apply_result(_objects(), stamped, T)
    assert _by_key(once, "PodGroup")["default/wait"]["metadata"]["annotations"] == {
        STALE: "2026-01-02T00:00:00Z"
    }
    cleared = apply_result(once, CycleResult(annotations={"default/wait": {STALE: None}}), T)
    assert "annotations" not in _by_key(cleared, "PodGroup")["default/wait"]["metadata"]


def test_inputs_are_not_mutated_and_untouched_objects_pass_through() -> None:
    objects = _objects()
    frozen = copy.deepcopy([o.obj for o in objects])
    result = CycleResult(
        binds=[Bind("default/wait-0", "node0")],
        evictions=[Eviction("default/run-0", "preempt", None)],
        annotations={"default/run": {LAST_START: NOW_TEXT}},
    )
    after = apply_result(objects, result, T)
    assert [o.obj for o in objects] == frozen
    assert after[0] is objects[0]  # the node
    changed = next(o for o in after if o.obj["kind"] == "Pod" and o.name == "wait-0")
    assert (changed.source, changed.index) == ("scenario", _index(objects, "wait-0"))


def _index(objects: list[SourcedObject], name: str) -> int:
    return next(o.index for o in objects if o.obj["kind"] == "Pod" and o.name == name)


def test_a_decision_about_an_unknown_pod_is_refused() -> None:
    with pytest.raises(ValueError, match="default/ghost"):
        apply_result(_objects(), CycleResult(binds=[Bind("default/ghost", "node0")]), T)


def test_preemption_plays_out_over_rounds_then_nothing_changes() -> None:
    objects = sourced(
        [
            node("node0", gpus=2),
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=2, gpu_weight=1),
            job("low", "q", 2, gpus=1, states=["Running"] * 2, nodes=["node0"] * 2),
            job("high", "q", 1, gpus=2, priority_class="inference"),
        ]
    )
    rounds = list(play(objects, SchedulerConfig(), now=T, rounds=4))
    assert [r.now - T for r in rounds] == [0, ROUND_SECONDS, 2 * ROUND_SECONDS, 3 * ROUND_SECONDS]
    first, second, third, fourth = (r.result for r in rounds)
    assert [e.pod for e in first.evictions] == ["default/low-0", "default/low-1"]
    assert first.pipelined == [Bind("default/high-0", "node0")]
    assert not first.binds
    assert second.binds == [Bind("default/high-0", "node0")]
    assert not second.evictions
    assert not made_decisions(third)
    assert not made_decisions(fourth)
    assert rounds[3].objects == rounds[2].objects


def test_a_job_placed_then_preempted_in_one_cycle_stays_pending() -> None:
    """Allocate binds j next to r; preempt then evicts r and j for h: j was never started,
    so it is neither run nor deleted, and waits while h takes the node."""
    objects = sourced(
        [
            node("node0", gpus=4),
            queue("q", gpu_quota=8),
            job("r", "q", 1, gpus=2, states=["Running"], nodes=["node0"]),
            job("h", "q", 1, gpus=4, priority_class="build"),
            job("j", "q", 1, gpus=2),
        ]
    )
    first, second = list(play(objects, SchedulerConfig(), now=T, rounds=2))
    assert [e.pod for e in first.result.evictions] == ["default/r-0"]
    assert not first.result.binds
    pods = _by_key(first.objects, "Pod")
    assert "default/r-0" not in pods
    assert pods["default/j-0"]["status"] == {"phase": "Pending"}
    assert "nodeName" not in pods["default/j-0"]["spec"]
    assert second.result.binds == [Bind("default/h-0", "node0")]
    assert {o.pod_group: o.outcome for o in second.result.pod_groups}["default/j"] == "pending"


def test_the_last_round_applies_its_decisions_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A one-cycle run (``schedule`` without ``--rounds``) never carries its result out;
    asking for the round's objects does, once."""
    from scheduler import rounds as rounds_module

    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> list[SourcedObject]:
        calls.append(1)
        return apply_result(*args, **kwargs)

    monkeypatch.setattr(rounds_module, "apply_result", counting)
    (only,) = play(_objects(), SchedulerConfig(), now=T, rounds=1)
    assert only.result.binds
    assert calls == []
    assert only.objects is only.objects
    assert calls == [1]
    pods = _by_key(only.objects, "Pod")
    assert pods["default/wait-0"]["spec"]["nodeName"] == "node0"
    assert len(list(play(_objects(), SchedulerConfig(), now=T, rounds=2))) == 2
    assert len(calls) == 2  # the first of two rounds: the second runs on its objects
