"""PodGroup scheduling-condition bodies: other node pools kept, transitionID advanced only
when the reasons change, nothing written when they did not (also when only the gang
member a reason names changed); pod condition comparison."""

from __future__ import annotations

from scheduler.live import statuses


def test_condition_replaced_for_our_pool_only_and_versioned() -> None:
    other = {"type": "UnschedulableOnNodePool", "nodePool": "gpu-a", "reasons": []}
    first = statuses.pod_group_patch(
        {"status": {"schedulingConditions": [other]}}, ["OverLimit: x"]
    )
    assert first is not None
    kept, ours = first["status"]["schedulingConditions"]
    assert kept == other
    assert (ours["transitionID"], ours["reasons"]) == (
        "0",
        [{"reason": "OverLimit", "message": "OverLimit: x"}],
    )
    group = {"status": first["status"]}
    assert statuses.pod_group_patch(group, ["OverLimit: x"]) is None
    changed = statuses.pod_group_patch(group, ["pod ns/p-0: no node fits"])
    assert changed is not None
    assert changed["status"]["schedulingConditions"][1]["transitionID"] == "1"


def test_pod_condition_written_only_when_it_differs() -> None:
    patch = statuses.pod_scheduled_patch(["no node fits"])
    pod = {"status": patch["status"]}
    assert not statuses.pod_needs_condition(pod, ["no node fits"])
    assert statuses.pod_needs_condition(pod, ["OverLimit: y"])
    assert statuses.pod_needs_condition({}, ["no node fits"])


def test_the_cause_leaves_out_only_pod_keys() -> None:
    tried = "gang of 3 pods: only 2 could be placed; pod ml/train-2: 0/4 nodes fit"
    assert statuses.cause(tried) == statuses.cause(tried.replace("train-2", "train-0"))
    assert statuses.cause(tried) != statuses.cause(tried.replace("0/4", "1/4"))
    kept = "the pod group waits; 1 more node(s) would host the 2 pod(s)"
    assert statuses.cause(kept) == kept


def test_a_new_member_with_the_same_cause_writes_nothing() -> None:
    group = statuses.pod_group_patch({}, ["pod ns/p-0: no node fits"])
    assert group is not None
    assert statuses.pod_group_patch(group, ["pod ns/p-1: no node fits"]) is None
    assert statuses.pod_group_patch(group, ["pod ns/p-1: no node has a GPU"]) is not None
    pod = {"status": statuses.pod_scheduled_patch(["pod ns/p-0: no node fits"])["status"]}
    assert not statuses.pod_needs_condition(pod, ["pod ns/p-1: no node fits"])
    assert statuses.pod_needs_condition(pod, ["pod ns/p-1: no node has a GPU"])


def test_a_message_says_each_reason_once() -> None:
    assert statuses.message_of(["A: short", "A: short", "hint"]) == "A: short; hint"
