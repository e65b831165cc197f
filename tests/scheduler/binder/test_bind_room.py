"""Bind-time admission (scheduler.cache.room, docs/semantics.md §5.10): a room another
scheduler took since the decision fails the BindRequest for good, and the pod is not bound.

Node n1 has 4 CPUs and room for 3 pods; the pod ``p`` to bind requests 2 CPUs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from crds import rules
from kubeapi.errors import TransientError
from scheduler.binder.reconciler import Binder
from scheduler.cache.room import NodeRoom, held_on
from scheduler.component.watching import Store
from scheduler.metrics.families import Metrics
from tests.kits.fake_kube import FakeKube
from tests.kits.worlds import bind_request

BR = ("scheduling.run.ai/v1alpha2", "BindRequest")
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "3"}},
}


def a_pod(
    name: str,
    cpu: str = "2",
    *,
    node: str = "",
    phase: str = "Pending",
    nominated: str = "",
    scheduler: str = "default-scheduler",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": phase}
    if nominated:
        status["nominatedNodeName"] = nominated
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": spec,
        "status": status,
    }


OURS = a_pod("p", scheduler="kai-scheduler")


@pytest.mark.parametrize(
    ("pod", "holds"),
    [
        (a_pod("w", node="n1", phase="Running"), "n1"),
        (a_pod("w", node="n1"), "n1"),  # bound, not started yet: the kubelet admits it
        (a_pod("w", nominated="n1"), "n1"),  # kube-scheduler's preemptor
        (a_pod("w", node="n1", nominated="n2"), "n1"),  # bound wins over nominated
        (a_pod("w"), ""),  # pending, nowhere yet
        (a_pod("w", node="n1", phase="Failed"), ""),  # OutOfcpu: terminal
        (a_pod("w", node="n1", phase="Succeeded"), ""),
        (a_pod("w", phase="Failed", nominated="n1"), ""),
    ],
    ids=[
        "running",
        "bound-pending",
        "nominated",
        "bound-over-nominated",
        "pending",
        "failed",
        "succeeded",
        "failed-nominated",
    ],
)
def test_what_holds_room(pod: dict[str, Any], holds: str) -> None:
    assert held_on(pod) == holds


@pytest.mark.parametrize(
    ("others", "refused"),
    [
        ([], ""),
        ([a_pod("w", "2", node="n1", phase="Running")], ""),  # 2 + 2 = 4 fits exactly
        ([a_pod("w", "3", node="n1", phase="Running")], "cpu 2 requested, 1 free"),
        ([a_pod("w", "3", node="n1")], "cpu 2 requested, 1 free"),
        ([a_pod("w", "3", nominated="n1")], "cpu 2 requested, 1 free"),
        ([a_pod("w", "3", node="n1", phase="Failed")], ""),
        ([a_pod("w", "3", node="n2", phase="Running")], ""),  # another node
        ([a_pod(f"w{i}", "0", node="n1") for i in range(3)], "pods 1 requested, 0 free"),
        # the pod itself, already filed (our own hold, or a nominated copy), is not counted
        ([{**OURS, "spec": {**OURS["spec"], "nodeName": "n1"}}], ""),
        # a pod of the same scheduler nominated there: the snapshot does not count it either
        ([a_pod("w", "3", nominated="n1", scheduler="kai-scheduler")], ""),
        # ... but bound there, it does, whatever its scheduler
        ([a_pod("w", "3", node="n1", scheduler="kai-scheduler")], "cpu 2 requested, 1 free"),
        ([a_pod("w", "3", node="n1", scheduler="")], "cpu 2 requested, 1 free"),
    ],
    ids=[
        "empty",
        "exact-fit",
        "running-took-it",
        "bound-took-it",
        "nominated-holds-it",
        "failed-holds-nothing",
        "other-node",
        "pod-count",
        "itself",
        "same-scheduler-nominated",
        "same-scheduler-bound",
        "no-scheduler-name-bound",
    ],
)
def test_shortfall(others: list[dict[str, Any]], refused: str) -> None:
    room = NodeRoom()
    for other in others:
        room.pod_changed(None, other)
    reason = room.shortfall(NODE, OURS)
    if not refused:
        assert reason is None
    else:
        assert reason is not None
        assert refused in reason
        assert "node n1" in reason


def test_changes_re_file_the_pod() -> None:
    room = NodeRoom()
    bound = a_pod("w", "3", node="n1", phase="Running")
    room.pod_changed(None, a_pod("w", "3", nominated="n1"))
    assert room.shortfall(NODE, OURS) is not None
    room.pod_changed(a_pod("w", "3", nominated="n1"), a_pod("w", "3", node="n2"))
    assert room.shortfall(NODE, OURS) is None  # bound elsewhere after all
    room.pod_changed(None, bound)
    assert room.shortfall(NODE, OURS) is not None
    room.pod_changed(bound, {**bound, "status": {"phase": "Failed", "reason": "OutOfcpu"}})
    assert room.shortfall(NODE, OURS) is None
    room.pod_changed(None, bound)
    room.pod_changed(bound, None)  # deleted
    assert room.shortfall(NODE, OURS) is None


def _at(pod: dict[str, Any], version: int) -> dict[str, Any]:
    return {**pod, "metadata": {**pod["metadata"], "resourceVersion": str(version)}}


def test_a_listing_older_than_the_watch_does_not_bring_a_deleted_pod_back() -> None:
    """Found on a real API server: a node's pods were listed just before a bind while the
    watch delivered an evicted pod's deletion; the listing, read before the deletion, put
    the pod back as a holder, no later event removed it, and a pod of another job was
    refused a free GPU for good ('0 free')."""
    room = NodeRoom()
    evicted = a_pod("w", "3", node="n1", phase="Running")
    room.pod_changed(None, _at(evicted, 10))
    room.pod_changed(_at(evicted, 12), None)  # the watch: deleted at revision 12
    room.listed([_at(evicted, 11)])  # a listing read at revision 11, handled after
    assert room.shortfall(NODE, OURS) is None
    # a newer state the watch filed is not undone by an older listing either
    other = a_pod("v", "3", node="n1", phase="Running")
    room.pod_changed(None, _at(other, 20))
    room.pod_changed(_at(other, 20), _at({**other, "status": {"phase": "Succeeded"}}, 22))
    room.listed([_at(other, 21)])
    assert room.shortfall(NODE, OURS) is None
    # a pod of the same name made again (a later revision) is filed from a listing
    room.listed([_at(evicted, 30)])
    assert room.shortfall(NODE, OURS) is not None
    # without resource versions (a hand-made object) the listing is filed as given
    room.pod_changed(_at(evicted, 30), None)
    room.listed([a_pod("u", "3", node="n1", phase="Running")])
    assert room.shortfall(NODE, OURS) is not None


def test_an_unreadable_pod_holds_nothing_and_an_unreadable_node_is_not_refused() -> None:
    room = NodeRoom()
    bad = a_pod("w", "lots", node="n1")
    room.pod_changed(None, bad)
    assert room.shortfall(NODE, OURS) is None
    broken = {**NODE, "status": {"allocatable": {"cpu": "many"}}}
    room.pod_changed(None, a_pod("x", "4", node="n1"))
    assert room.shortfall(broken, OURS) is None


def _world(*others: dict[str, Any]) -> FakeKube:
    kube = FakeKube()
    kube.add(NODE)
    kube.add(OURS)
    for other in others:
        kube.add(other)
    kube.add(_request_for("p"))
    return kube


def _request_for(pod_name: str) -> dict[str, Any]:
    """The scheduler's BindRequest for ``pod_name`` on n1 (3 attempts)."""
    body = bind_request(pod_name, "n1", namespace="ns")
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": f"uid-{pod_name}"}
    body["metadata"]["ownerReferences"] = [owner]
    body["spec"]["backoffLimit"] = 3
    return body


def _watching(kube: FakeKube) -> Binder:
    """A binder whose watch caches hold what ``kube`` holds (as :meth:`Binder.run` fills them)."""
    b = Binder(kube, metrics=Metrics())
    b.caches = {kind: Store() for kind in ("Pod", "Node", BR[1])}
    b._synced = {kind: asyncio.Event() for kind in b.caches}
    for (_, kind, _, _), obj in kube.objects.items():
        if kind in b.caches:
            b.caches[kind].apply("ADDED", obj)
            if kind == "Pod":
                b._pod_changed(None, obj)
    for event in b._synced.values():
        event.set()
    return b


def _outcome(kube: FakeKube) -> tuple[str, dict[str, Any]]:
    pod = kube.stored("v1", "Pod", "ns", "p")
    request = kube.stored(*BR, "ns", "p")
    assert pod is not None
    assert request is not None
    return str(pod["spec"].get("nodeName") or ""), dict(request.get("status") or {})


def test_room_taken_since_the_decision_fails_the_request_for_good() -> None:
    kube = _world(a_pod("web", "3", node="n1", phase="Running"))
    b = _watching(kube)
    assert asyncio.run(b.reconcile("ns", "p")) is None  # no retry scheduled
    node, status = _outcome(kube)
    assert node == ""  # not bound: the kubelet would have failed it OutOfcpu
    assert status["phase"] == "Failed"
    assert "no room" in status["reason"]
    assert "cpu 2 requested, 1 free" in status["reason"]
    # finally failed: the scheduler's cache drops the request and decides again
    assert rules.bind_request_finally_failed({"backoffLimit": 3}, status)
    assert not [verb for verb, _ in kube.calls if verb == "bind"]


def test_room_held_for_a_nominated_preemptor_fails_the_request() -> None:
    kube = _world(a_pod("web", "3", nominated="n1"))
    b = _watching(kube)
    asyncio.run(b.reconcile("ns", "p"))
    assert _outcome(kube)[0] == ""


def test_room_still_there_binds() -> None:
    kube = _world(a_pod("web", "2", node="n1", phase="Running"))
    b = _watching(kube)
    asyncio.run(b.reconcile("ns", "p"))
    node, status = _outcome(kube)
    assert node == "n1"
    assert status["phase"] == "Succeeded"


def test_two_requests_for_the_last_room_bind_one() -> None:
    """Concurrent workers: the first bind holds the room before its call returns."""
    second = a_pod("q", scheduler="kai-scheduler")
    kube = _world(a_pod("web", "1", node="n1", phase="Running"), second)
    kube.add(_request_for("q"))
    b = _watching(kube)

    async def both() -> None:
        await asyncio.gather(b.reconcile("ns", "p"), b.reconcile("ns", "q"))

    asyncio.run(both())
    bound = [
        name
        for name in ("p", "q")
        if ((kube.stored("v1", "Pod", "ns", name) or {}).get("spec") or {}).get("nodeName")
    ]
    assert len(bound) == 1  # 1 + 2 + 2 > 4: one of them is refused


def test_a_pod_watch_still_listing_does_not_skip_the_check() -> None:
    """The binder runs its watches but the Pod watch has not synced yet (a loaded API
    server): the list of n1's pods made before the bind still finds ``web``, and ``p``
    is not bound where it no longer fits."""
    kube = _world(a_pod("web", "3", node="n1", phase="Running"))
    b = Binder(kube, metrics=Metrics())
    b.caches = {kind: Store() for kind in ("Pod", "Node", BR[1])}
    b._synced = {kind: asyncio.Event() for kind in b.caches}  # none set: still listing
    asyncio.run(b.reconcile("ns", "p"))
    node, status = _outcome(kube)
    assert node == ""
    assert "no room" in status.get("reason", "")


def test_without_a_synced_pod_watch_nothing_is_refused() -> None:
    """Called without run() (no watch caches), the binder binds as before."""
    kube = _world(a_pod("web", "3", node="n1", phase="Running"))
    b = Binder(kube, metrics=Metrics())
    asyncio.run(b.reconcile("ns", "p"))
    assert _outcome(kube)[0] == "n1"


def test_a_bind_the_watch_has_not_shown_yet_is_read_before_binding() -> None:
    """kube-scheduler bound ``web`` a moment ago; the binder's watch has not delivered it.
    The fresh list of n1's pods just before the bind finds it: 3 + 2 > 4, refused.
    (kube-scheduler is known to be about too: its ``other`` runs on n2.)"""
    kube = _world(a_pod("other", "1", node="n2", phase="Running"))
    b = _watching(kube)
    kube.add(a_pod("web", "3", node="n1", phase="Pending"))  # in the API server, not the watch
    asyncio.run(b.reconcile("ns", "p"))
    node, status = _outcome(kube)
    assert node == ""
    assert "cpu 2 requested, 1 free" in status["reason"]
    assert ("list", ("v1", "Pod", "", "")) in [
        (verb, (ref.api_version, ref.kind, ref.namespace, ref.name)) for verb, ref in kube.calls
    ]


def test_the_fresh_list_keeps_our_binds_in_flight_and_ignores_other_nodes() -> None:
    room = NodeRoom()
    in_flight = {**OURS, "metadata": {**OURS["metadata"], "name": "mine"}}
    room.pod_changed(None, {**in_flight, "spec": {**in_flight["spec"], "nodeName": "n1"}})
    room.listed([])  # not in the listing yet: still held
    assert room.shortfall(NODE, a_pod("p", "3", scheduler="kai-scheduler")) is not None
    room.listed([a_pod("x", "2", node="n2", phase="Running")])
    assert room.shortfall(NODE, OURS) is None  # 2 + 2 on n1; x is on n2


def _lists(kube: FakeKube) -> int:
    return sum(1 for verb, ref in kube.calls if verb == "list" and ref.kind == "Pod")


def test_the_node_is_listed_before_every_bind() -> None:
    """No other scheduler's pod has been seen, and one lists per bind all the same."""
    kube = _world()
    b = _watching(kube)
    asyncio.run(b.reconcile("ns", "p"))
    assert _outcome(kube)[0] == "n1"
    assert _lists(kube) == 1


def test_the_first_pod_of_another_scheduler_is_read_before_binding() -> None:
    """The watch has never shown another scheduler's pod, and kube-scheduler's very first
    one, ``web``, was bound to n1 a moment ago: the fresh list finds it all the same
    (3 + 2 > 4), so the bind is refused rather than overcommitting n1."""
    kube = _world()
    b = _watching(kube)
    kube.add(a_pod("web", "3", node="n1", phase="Pending"))  # in the API server, not the watch
    asyncio.run(b.reconcile("ns", "p"))
    node, status = _outcome(kube)
    assert node == ""
    assert "cpu 2 requested, 1 free" in status["reason"]


def _checked_at(caplog: pytest.LogCaptureFixture) -> list[object]:
    """``checked_at`` of each of the binder's ``bound`` lines."""
    return [
        vars(r).get("checked_at", "absent")
        for r in caplog.records
        if r.name == "podmuster.binder" and r.msg == "bound"
    ]


def test_the_bound_line_names_the_revision_the_check_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``checked_at`` is the resourceVersion of the list of n1's pods made before the bind:
    a bind of another scheduler's after it is one the check could not see (§5.10, Limits)."""
    kube = _world(a_pod("web", "2", node="n1", phase="Running"))
    b = _watching(kube)
    listed_at = str(kube.version)  # nothing is written between here and the list
    with caplog.at_level(logging.INFO, logger="podmuster.binder"):
        asyncio.run(b.reconcile("ns", "p"))
    assert _outcome(kube)[0] == "n1"
    assert _checked_at(caplog) == [listed_at]
    bound = kube.stored("v1", "Pod", "ns", "p")
    assert bound is not None
    assert int(listed_at) < int(bound["metadata"]["resourceVersion"])  # the bind came after


def test_a_failed_read_binds_on_the_watch_and_says_no_revision(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The list of n1's pods fails: the check runs on what the watch holds (room enough
    here), and the bound line's ``checked_at`` is None (no consistent read vouches for it)."""
    kube = _world(a_pod("web", "2", node="n1", phase="Running"))
    b = _watching(kube)
    kube.fail("list", TransientError("Pod", "unavailable", 503), kind="Pod")
    with caplog.at_level(logging.INFO, logger="podmuster.binder"):
        asyncio.run(b.reconcile("ns", "p"))
    assert _outcome(kube)[0] == "n1"
    assert _checked_at(caplog) == [None]
