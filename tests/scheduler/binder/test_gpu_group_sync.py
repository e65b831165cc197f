"""The binder's GPU-group sync as a pure plan: which reservation pods and sharing pods go,
what keeps a group in use (Running or bound Pending pods, unfinished BindRequests), and
the grace counted across runs."""

from __future__ import annotations

from typing import Any

from scheduler.binder.syncing import Plan, groups_of, plan

NS = "kai-resource-reservation"


def reservation(group: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"gpu-reservation-{group}",
        "namespace": NS,
        "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
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
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}


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
) -> Plan:
    return plan(pods, requests or [], namespace=NS, grace=grace, now=now, since=since or {})


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


def test_a_sharing_pod_whose_reservation_is_gone_is_deleted() -> None:
    out = run([sharer("a", "g1"), sharer("b", "g2"), reservation("g2")])
    assert [(p["metadata"]["name"], g) for p, g in out.orphans] == [("a", "g1")]


def test_a_reservation_being_deleted_counts_as_gone() -> None:
    out = run([sharer("a", "g1"), reservation("g1", deleting=True)])
    assert names([p for p, _ in out.orphans]) == ["a"]


def test_multi_device_pod_losing_one_group() -> None:
    out = run([sharer("a", "g1", "g2"), reservation("g1")])
    assert [(p["metadata"]["name"], g) for p, g in out.orphans] == [("a", "g2")]


def test_orphans_wait_for_the_grace_and_skip_pods_already_going() -> None:
    pods = [sharer("a", "g1"), sharer("b", "g1", deleting=True)]
    first = run(pods, grace=5, now=0)
    assert first.orphans == []
    later = run(pods, grace=5, now=5, since=first.since)
    assert names([p for p, _ in later.orphans]) == ["a"]


def test_pods_not_marked_fraction_are_never_deleted() -> None:
    pod = sharer("a", "g1")
    del pod["metadata"]["annotations"]["received-resource-type"]
    assert run([pod]).orphans == []


def test_reservation_pods_elsewhere_are_not_reservations() -> None:
    other = reservation("g1")
    other["metadata"]["namespace"] = "ml"
    out = run([other, sharer("a", "g1")])
    assert out.reservations == []
    assert names([p for p, _ in out.orphans]) == ["a"]
