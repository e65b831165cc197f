"""The binder's GPU-group sync as a pure plan: which reservation pods and sharing pods go,
what keeps a group in use (Running or bound Pending pods, unfinished BindRequests), and
the grace counted across runs."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.binder.sharing import Settings
from scheduler.binder.syncing import Plan, groups_of, plan

NS = "kai-resource-reservation"


def reservation(group: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"gpu-reservation-{group}",
        "namespace": NS,
        "labels": {
            "app": "kai-resource-reservation",
            "runai-gpu-group": group,
            "podmuster.io/created-by": "binder",
            "podmuster.io/scheduler-name": "kai-scheduler",
        },
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


def sharer(
    name: str, *groups: str, phase: str = "Running", node: str = "n1", deleting: bool = False
) -> dict[str, Any]:
    labels = {"runai-gpu-group": groups[0]}
    if len(groups) > 1:
        labels.update({f"runai-gpu-group/{g}": g for g in groups})
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ml",
        "labels": labels,
        "annotations": {"received-resource-type": "Fraction"},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec = {"nodeName": node, "schedulerName": "kai-scheduler"}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def bind_request(*groups: str, phase: str | None = None, failed: int = 0) -> dict[str, Any]:
    return {
        "spec": {
            "receivedResourceType": "Fraction",
            "selectedGPUGroups": list(groups),
            "backoffLimit": 3,
        },
        "status": {"phase": phase, "failedAttempts": failed},
    }


def names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def run(
    pods: list[Any],
    requests: list[Any] | None = None,
    grace: float = 0.0,
    now: float = 0.0,
    since: dict[str, float] | None = None,
    timeout: float = 40.0,
) -> Plan:
    settings = Settings(namespace=NS, grace=grace, timeout=timeout)
    return plan(pods, requests or [], settings=settings, now=now, since=since or {})


def test_groups_of_reads_both_label_forms() -> None:
    assert groups_of(sharer("a", "g1")) == {"g1"}
    assert groups_of(sharer("a", "g1", "g2")) == {"g1", "g2"}
    assert groups_of({"metadata": {}}) == set()


def test_a_group_with_a_running_pod_keeps_its_reservation() -> None:
    out = run([reservation("g1"), sharer("a", "g1")])
    assert out.reservations == []
    assert out.orphans == []


def test_an_empty_group_loses_its_reservation() -> None:
    out = run([reservation("g1"), sharer("a", "g2"), reservation("g2")])
    assert names(out.reservations) == ["gpu-reservation-g1"]


def test_finished_pods_and_unbound_pending_pods_do_not_keep_a_group() -> None:
    pods = [
        reservation("g1"),
        sharer("done", "g1", phase="Succeeded"),
        sharer("failed", "g1", phase="Failed"),
        sharer("unbound", "g1", phase="Pending", node=""),
    ]
    assert names(run(pods).reservations) == ["gpu-reservation-g1"]
    bound_pending = [reservation("g1"), sharer("b", "g1", phase="Pending")]
    assert run(bound_pending).reservations == []


def test_an_unfinished_bind_request_keeps_its_groups() -> None:
    pods = [reservation("g1"), reservation("g2"), reservation("g3")]
    requests = [
        bind_request("g1"),
        bind_request("g2", phase="Succeeded"),
        bind_request("g3", phase="Failed", failed=3),
    ]
    assert names(run(pods, requests).reservations) == ["gpu-reservation-g2", "gpu-reservation-g3"]
    retrying = [bind_request("g2", phase="Failed", failed=1)]
    assert "gpu-reservation-g2" not in names(run(pods, retrying).reservations)


def test_unused_reservation_waits_for_the_grace_across_runs() -> None:
    pods = [reservation("g1")]
    first = run(pods, grace=20, now=100)
    assert first.reservations == []
    second = run(pods, grace=20, now=119, since=first.since)
    assert second.reservations == []
    third = run(pods, grace=20, now=120, since=second.since)
    assert names(third.reservations) == ["gpu-reservation-g1"]
    # In use again meanwhile: the clock starts over.
    again = run([*pods, sharer("a", "g1")], grace=20, now=121, since=second.since)
    assert again.reservations == []
    assert again.since == {}


def test_a_reservation_already_being_deleted_is_not_deleted_again() -> None:
    assert run([reservation("g1", deleting=True)]).reservations == []


TRIED = {"tried/g1": 0.0, "tried/g2": 0.0}  # a restore was tried and failed


def restores(out: Plan) -> list[tuple[str, str, list[str]]]:
    return [(r.group, r.node, names(list(r.pods))) for r in out.restores]


def test_a_lost_group_is_restored_before_any_pod_is_deleted() -> None:
    out = run([sharer("a", "g1"), sharer("c", "g1"), sharer("b", "g2"), reservation("g2")])
    assert out.orphans == []
    assert restores(out) == [("g1", "n1", ["a", "c"])]


def test_a_sharing_pod_whose_reservation_is_gone_is_deleted_once_the_restore_was_tried() -> None:
    out = run([sharer("a", "g1"), sharer("b", "g2"), reservation("g2")], since=TRIED)
    assert [(p["metadata"]["name"], g) for p, g in out.orphans] == [("a", "g1")]
    assert out.restores == []
    assert "tried/g1" in out.since  # remembered while the group has no reservation pod
    assert "tried/g2" not in out.since  # g2 is held again: forgotten


def test_a_reservation_being_deleted_counts_as_gone() -> None:
    out = run([sharer("a", "g1"), reservation("g1", deleting=True)], since=TRIED)
    assert names([p for p, _ in out.orphans]) == ["a"]


def test_multi_device_pod_losing_one_group() -> None:
    pods = [sharer("a", "g1", "g2"), reservation("g1")]
    assert restores(run(pods)) == [("g2", "n1", ["a"])]
    out = run(pods, since=TRIED)
    assert [(p["metadata"]["name"], g) for p, g in out.orphans] == [("a", "g2")]


def test_orphans_wait_for_the_grace_and_skip_pods_already_going() -> None:
    pods = [sharer("a", "g1"), sharer("b", "g1", deleting=True)]
    first = run(pods, grace=5, now=0, since=TRIED)
    assert first.orphans == []
    later = run(pods, grace=5, now=5, since=first.since)
    assert names([p for p, _ in later.orphans]) == ["a"]


def restored(uuid: str = "", expected: str = "GPU-a", phase: str = "Running") -> dict[str, Any]:
    pod = reservation("g1")
    pod["metadata"]["annotations"] = {"podmuster.io/restored-for-gpu": expected}
    if uuid:
        pod["metadata"]["annotations"]["run.ai/reserve_for_gpu_index"] = uuid
    pod["status"]["phase"] = phase
    return pod


def test_a_restore_that_gets_the_pods_gpu_holds_the_group() -> None:
    out = run([sharer("a", "g1"), restored("GPU-a", expected="GPU-x,GPU-a")], since=TRIED)
    assert (out.orphans, out.reservations, out.restores) == ([], [], [])
    assert "tried/g1" not in out.since


def test_a_restore_waits_for_its_gpu_up_to_the_timeout() -> None:
    pods = [sharer("a", "g1"), restored(phase="Pending")]
    waiting = run(pods, now=100, since={"tried/g1": 99}, timeout=10)
    assert (waiting.orphans, waiting.reservations, waiting.restores) == ([], [], [])
    assert waiting.since["tried/g1"] == 99
    late = run(pods, now=110, since=waiting.since, timeout=10)
    assert names(late.reservations) == ["gpu-reservation-g1"]
    assert names([p for p, _ in late.orphans]) == ["a"]  # grace 0
    assert late.restores == []  # tried once


@pytest.mark.parametrize(
    "pod", [restored("GPU-b"), restored(phase="Failed")], ids=["another-gpu", "failed"]
)
def test_a_restore_on_another_gpu_or_failed_is_deleted_with_its_users(pod: Any) -> None:
    out = run([sharer("a", "g1"), pod], since={"tried/g1": 0.0})
    assert names(out.reservations) == ["gpu-reservation-g1"]
    assert names([p for p, _ in out.orphans]) == ["a"]
    assert out.restores == []


def test_another_schedulers_sharing_pods_are_not_this_binders() -> None:
    kai = sharer("kai", "g1")
    kai["spec"]["schedulerName"] = "kai-scheduler"
    theirs = reservation("g2")
    theirs["metadata"]["labels"] = {"app": "kai-resource-reservation", "runai-gpu-group": "g2"}
    out = plan(
        [kai, reservation("g1"), sharer("other", "g3"), theirs],
        [],
        settings=Settings(namespace=NS, grace=0.0, scheduler_name="podmuster"),
        now=0.0,
        since=TRIED,
    )
    # kai's pod keeps no group of ours; its group g1's pod, labelled for kai-scheduler,
    # is not ours to delete either; an unlabelled reservation pod (KAI's) is left alone
    assert out.reservations == []
    assert (out.orphans, out.restores) == ([], [])


def test_only_own_reservation_pods_are_deleted() -> None:
    other = reservation("g1")
    other["metadata"]["labels"]["podmuster.io/scheduler-name"] = "another-podmuster"
    kai = reservation("g2")
    del kai["metadata"]["labels"]["podmuster.io/created-by"]
    del kai["metadata"]["labels"]["podmuster.io/scheduler-name"]
    assert run([other, kai, reservation("g3")]).reservations == [reservation("g3")]
    # and they still hold their group for a pod of ours (never deleted for lack of one)
    assert run([sharer("a", "g2"), kai]).orphans == []


def test_pods_not_marked_fraction_are_never_deleted() -> None:
    pod = sharer("a", "g1")
    del pod["metadata"]["annotations"]["received-resource-type"]
    assert run([pod]).orphans == []


def test_a_look_alike_in_another_namespace_holds_no_group() -> None:
    """Anyone may label a pod of theirs as a reservation pod: outside the reservation
    namespace it holds no group (KAI's binder lists only that namespace), so a group whose
    real reservation pod is gone is not kept on the look-alike's GPU, and the binder never
    deletes it."""
    fake = reservation("g1")
    fake["metadata"]["namespace"] = "tenant-b"
    out = run([fake, sharer("a", "g1")], since=TRIED)
    assert names([p for p, _ in out.orphans]) == ["a"]
    assert run([fake]).reservations == []


def test_a_pod_labelled_with_a_group_but_no_reservation_app_is_no_reservation() -> None:
    other = reservation("g1")
    del other["metadata"]["labels"]["app"]
    other["spec"]["schedulerName"] = "default-scheduler"
    out = run([other, sharer("a", "g1")], since=TRIED)
    assert out.reservations == []
    assert names([p for p, _ in out.orphans]) == ["a"]
