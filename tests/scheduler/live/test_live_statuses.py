"""PodGroup scheduling-condition bodies: other node pools kept, transitionID advanced only
when the reasons change, nothing written when they did not; pod condition comparison."""

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
