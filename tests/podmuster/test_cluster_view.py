"""What the dashboard and ``kubectl podmuster`` show, from objects fed to the informers.

Covers: the queue tree in order with the engine's deserved and fair share and the
queue controller's status beside them; a waiting gang with the scheduler's reasons
(from ``schedulingConditions``), its scale-up hint, its pods' ``PodScheduled``
messages and its queue's numbers; the gang gone once the engine's gang rule is met by
bound pods; evictions from the scheduler's ``Evict`` Events (newest first, other
Events ignored); a bad PodGroup or an unreadable hint never stops the rest; the page
escapes what users wrote; the plugin resolves a pod to its PodGroup and names what is
missing.
"""

from __future__ import annotations

import copy
import json
from typing import Any, cast

import pytest

from kubeapi.protocol import KubeWatcher
from podmuster import cluster_view, kubectl_plugin
from podmuster.cluster_watch import ClusterWatch
from podmuster.dashboard import server
from scheduler.cache.pools import NodePool
from scheduler.config import SchedulerConfig

GPU = "nvidia.com/gpu"
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
REASON = "Unschedulable: 0/1 nodes: 1 node(s) had insufficient nvidia.com/gpu"
DETAIL = REASON.removeprefix("Unschedulable: ")  # what is shown after the code


def queue(name: str, parent: str = "", gpu_quota: float = 1) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1},
            "cpu": UNLIMITED,
            "memory": UNLIMITED,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": spec,
        "status": {"allocated": {GPU: "2"}, "requested": {GPU: "5"}},
    }


def node(name: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": "1"},
        "status": {"allocatable": {"cpu": "32", "memory": "64Gi", GPU: str(gpus), "pods": "110"}},
    }


def group(name: str = "train", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": "1",
            "annotations": {
                "kai.scheduler/scale-up-hint": json.dumps(
                    {"nodes": 1, "pods": 1, "shape": {GPU: "2"}}
                )
            },
        },
        "spec": {"queue": "team", "minMember": 3},
        "status": {
            "schedulingConditions": [
                {
                    "type": "UnschedulableOnNodePool",
                    "nodePool": "default",
                    "status": "True",
                    "reasons": [{"reason": "Unschedulable", "message": REASON}],
                }
            ]
        },
        **extra,
    }


def pod(index: int, node_name: str = "", group_name: str = "train") -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{group_name}-{index}",
            "namespace": "ns",
            "uid": f"{group_name}-{index}",
            "resourceVersion": "1",
            "annotations": {"pod-group-name": group_name},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "resources": {"limits": {GPU: "1"}}}],
        },
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": REASON,
                }
            ],
        },
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
        obj["status"] = {"phase": "Running"}
    return obj


def evict_event(name: str, stamp: str, reason: str = "Evict") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": name,
            "annotations": {
                "evictor-action-type": "reclaim",
                "evictor-pod-group-name": "big",
                "evictor-pod-group-namespace": "other",
                "num-evicted-pods": "2",
            },
        },
        "involvedObject": {"kind": "PodGroup", "name": "old", "namespace": "ns"},
        "reason": reason,
        "message": "pod ns/old-0: Evicted by the reclaim action for pod group other/big",
        "lastTimestamp": stamp,
    }


@pytest.fixture
def watch() -> ClusterWatch:
    watch = ClusterWatch(cast(KubeWatcher, None), SchedulerConfig())
    for obj in [node("n0", 2), queue("org", gpu_quota=2), queue("team", "org"), group()]:
        watch.informers.observe("ADDED", obj)
    for index in range(3):
        watch.informers.observe("ADDED", pod(index))
    return watch


def test_queue_tree_with_the_engines_shares_and_the_controllers_status(watch: ClusterWatch) -> None:
    rows = watch.view().queues
    assert [(r["queue"], r["depth"]) for r in rows] == [("org", 0), ("team", 1)]
    team = rows[1]
    assert team["deserved"]["gpu"] == 1
    assert team["limit"]["gpu"] == -1
    assert team["fairShare"]["gpu"] == 2  # the engine's division: all of the cluster's 2
    assert team["status"]["allocated"] == {GPU: "2"}


def test_a_queue_the_scheduler_leaves_out_is_still_listed_with_why(watch: ClusterWatch) -> None:
    """Found on a real cluster: a queue whose parent was deleted vanished from
    `kubectl podmuster queues|top` and the page while its pods still held GPUs."""
    orphan = queue("team-c", "dept-2")
    orphan["status"] = {"allocated": {GPU: "4"}}
    watch.informers.observe("ADDED", orphan)
    rows = {row["queue"]: row for row in watch.view().queues}
    assert rows["team-c"]["problem"].startswith("parent queue 'dept-2' does not exist")
    assert rows["team-c"]["fairShare"]["gpu"] == 0
    assert "problem" not in rows["team"]
    text = kubectl_plugin.queues_text(watch.view().queues)
    assert "team-c: parent queue 'dept-2' does not exist" in text
    top = kubectl_plugin.top_text(kubectl_plugin.top_rows(watch.view().queues))
    assert f"{GPU}=4" in top  # what the queue controller says it holds
    watch.evictions.synced.set()
    for _, kind in watch.informers.watched:
        watch.informers._listed(kind, _empty_listing(watch, kind))
    assert "(QueueDoesNotExist)" in server.render("content.html.j2", watch, 2.0)


def test_waiting_gang_in_the_schedulers_words(watch: ClusterWatch) -> None:
    other = pod(2)
    other["metadata"]["resourceVersion"] = "2"
    other["status"]["conditions"][0]["message"] = "an older word"
    watch.informers.observe("MODIFIED", other)
    (entry,) = watch.view().pending
    assert entry["podGroup"] == "ns/train"
    assert entry["waiting"] is True
    assert entry["reasons"] == [
        {"nodePool": "default", "reason": "Unschedulable", "message": REASON, "detail": DETAIL}
    ]
    assert entry["scaleUpHint"]["nodes"] == 1
    assert entry["podMessages"] == ["an older word"]  # what repeats the reasons is left out
    assert (entry["pods"], entry["allocated"], entry["minMember"]) == (3, 0, 3)
    assert entry["queueNumbers"]["deserved"]["gpu"] == 1


def test_gang_leaves_when_its_pods_are_bound(watch: ClusterWatch) -> None:
    watch.informers.observe("ADDED", node("n1", 2))
    for index, name in enumerate(("n0", "n0", "n1")):
        watch.informers.observe(
            "MODIFIED",
            {**pod(index, name), "metadata": {**pod(index)["metadata"], "resourceVersion": "2"}},
        )
    assert watch.view().pending == []
    entry = watch.explain("ns/train")
    assert entry is not None
    assert (entry["waiting"], entry["allocated"]) == (False, 3)
    assert "not waiting, 3/3 pods allocated" in kubectl_plugin.explain_text(
        "PodGroup ns/train", entry
    )


def test_a_job_partly_running_still_waits_for_its_other_pods(watch: ClusterWatch) -> None:
    """Found on a real cluster: a Job's PodGroup has minMember 1, so once one of its pods
    ran, its pending pods (with the scheduler's reasons) dropped off the page and explain
    said "not waiting"; they wait, and the page says why."""
    job = group("job", spec={"queue": "team", "minMember": 1})
    watch.informers.observe("ADDED", job)
    watch.informers.observe("ADDED", pod(0, "n0", group_name="job"))
    watch.informers.observe("ADDED", pod(1, group_name="job"))
    entry = next(e for e in watch.view().pending if e["podGroup"] == "ns/job")
    assert (entry["waiting"], entry["allocated"], entry["pods"]) == (True, 1, 2)
    # without the scheduler's reasons (not looked at yet) it is not said to wait
    job["status"] = {}
    job["metadata"] = {**job["metadata"], "resourceVersion": "2"}
    watch.informers.observe("MODIFIED", job)
    assert "ns/job" not in {e["podGroup"] for e in watch.view().pending}


def test_a_group_whose_pod_the_scheduler_cannot_read_waits(watch: ClusterWatch) -> None:
    """Found on a real cluster: a pod with gpu-fraction 1.5 (no webhook) is left out of the
    snapshot; the scheduler now says why on the pod, and the page shows its group waiting
    ("0/0 pods allocated" was "not waiting")."""
    bad = pod(0, group_name="frac")
    bad["metadata"]["annotations"]["gpu-fraction"] = "1.5"
    bad["status"]["conditions"][0]["message"] = "InvalidObject: gpu-fraction 1.5"
    watch.informers.observe("ADDED", group("frac", status={}))
    watch.informers.observe("ADDED", bad)
    entry = next(e for e in watch.view().pending if e["podGroup"] == "ns/frac")
    assert entry["waiting"] is True
    assert entry["podMessages"] == ["InvalidObject: gpu-fraction 1.5"]


def test_evictions_newest_first_other_events_ignored(watch: ClusterWatch) -> None:
    feed = watch.evictions
    feed.event("ADDED", evict_event("e1", "2026-01-01T00:00:01Z"))
    feed.event("ADDED", evict_event("e2", "2026-01-01T00:00:02Z"))
    feed.event("ADDED", evict_event("e3", "2026-01-01T00:00:03Z", reason="Scheduled"))
    evictions = watch.view().evictions
    assert [e["time"] for e in evictions] == ["2026-01-01T00:00:02Z", "2026-01-01T00:00:01Z"]
    assert evictions[0]["action"] == "reclaim"
    assert evictions[0]["for"] == "other/big"
    assert evictions[0]["gangSize"] == "2"
    feed.event("DELETED", evict_event("e2", "2026-01-01T00:00:02Z"))
    assert len(watch.view().evictions) == 1


def test_bad_objects_never_stop_the_rest(watch: ClusterWatch) -> None:
    broken = group("broken")
    broken["spec"]["minMember"] = "many"  # the cache keeps the error, not the object
    broken["metadata"]["annotations"]["kai.scheduler/scale-up-hint"] = "{not json"
    watch.informers.observe("ADDED", broken)
    pending = {e["podGroup"]: e for e in watch.view().pending}
    assert "ns/train" in pending
    assert pending["ns/broken"]["scaleUpHint"] == {"raw": "{not json"}


def test_page_shows_the_gang_and_escapes_user_text(watch: ClusterWatch) -> None:
    watch.evictions.synced.set()
    for _, kind in watch.informers.watched:
        watch.informers._listed(kind, _empty_listing(watch, kind))
    hostile = copy.deepcopy(group("x"))
    hostile["status"]["schedulingConditions"][0]["reasons"][0]["message"] = (
        "<script>alert(1)</script>"
    )
    watch.informers.observe("ADDED", hostile)
    html = server.render("page.html.j2", watch, 2.0)
    assert 'data-podgroup="ns/train"' in html
    assert f'<span class="code">Unschedulable</span> {DETAIL}' in html  # the code once
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert 'data-queue="team"' in html


def test_page_says_it_is_listing_before_sync(watch: ClusterWatch) -> None:
    assert 'id="syncing"' in server.render("content.html.j2", watch, 2.0)


def test_plugin_resolves_a_pod_to_its_group_and_names_what_is_missing(watch: ClusterWatch) -> None:
    assert kubectl_plugin.resolve(watch, "ns", "pod/train-1")[0] == "ns/train"
    assert kubectl_plugin.resolve(watch, "ns", "train")[0] == "ns/train"
    with pytest.raises(kubectl_plugin.PluginError, match='pod "nope" not found in namespace "ns"'):
        kubectl_plugin.resolve(watch, "ns", "pod/nope")
    with pytest.raises(kubectl_plugin.PluginError, match="the kind must be pod or podgroup"):
        kubectl_plugin.resolve(watch, "ns", "deployment/x")
    # the names `kubectl get pg -o name` and `kubectl get pods -o name` print
    assert kubectl_plugin.resolve(watch, "ns", "podgroup.scheduling.run.ai/train")[0] == "ns/train"
    assert kubectl_plugin.resolve(watch, "ns", "pod/train-1")[0] == "ns/train"
    with pytest.raises(kubectl_plugin.PluginError, match="only pods and KAI's PodGroups"):
        kubectl_plugin.resolve(watch, "ns", "podgroup.scheduling.k8s.io/train")
    lonely = pod(9, group_name="train")
    del lonely["metadata"]["annotations"]
    lonely["metadata"]["name"] = "lonely"
    watch.informers.observe("ADDED", lonely)
    with pytest.raises(kubectl_plugin.PluginError, match="has no PodGroup yet"):
        kubectl_plugin.resolve(watch, "ns", "lonely")


def test_plugin_text_tables(watch: ClusterWatch) -> None:
    view = watch.view()
    text = kubectl_plugin.queues_text(view.queues)
    assert text.splitlines()[2].startswith("  team")
    assert "unlimited" in text
    top = kubectl_plugin.top_text(kubectl_plugin.top_rows(view.queues))
    assert f"{GPU}=2" in top
    explained = kubectl_plugin.explain_text("PodGroup ns/train", view.pending[0])
    assert f"  {REASON}\n" in explained  # the code once
    # KAI's messages often start with their code: the line says it once
    coded = {"nodePool": "", "reason": "QueueDoesNotExist", "message": "QueueDoesNotExist: no q"}
    entry = {**view.pending[0], "reasons": [{**coded, "detail": "no q"}]}
    assert "  QueueDoesNotExist: no q" in kubectl_plugin.explain_text("PodGroup ns/x", entry)
    assert cluster_view.shown_reason(
        "", "QueueDoesNotExist", "QueueDoesNotExist: no q"
    ) == coded | {"detail": "no q"}
    assert "Scale-up hint:" in explained


def _empty_listing(watch: ClusterWatch, kind: str) -> Any:
    from kubeapi.protocol import Listing

    return Listing(items=list(watch.informers.objects[kind].values()), resource_version="1")


def test_a_recent_view_is_served_again_within_max_age(watch: ClusterWatch) -> None:
    first = watch.view(max_age=3600)
    watch.informers.observe("ADDED", group("later"))
    assert watch.view(max_age=3600) is first
    assert "ns/later" in {e["podGroup"] for e in watch.view().pending}


def test_a_node_pools_view_shows_only_that_pool() -> None:
    watch = ClusterWatch(
        cast(KubeWatcher, None), SchedulerConfig(), pool=NodePool("a", "kai.scheduler/node-pool")
    )
    ours = group("ours")
    ours["metadata"]["labels"] = {"kai.scheduler/node-pool": "a"}
    for obj in [queue("team"), ours, group("theirs")]:
        watch.informers.observe("ADDED", obj)
    assert [e["podGroup"] for e in watch.view().pending] == ["ns/ours"]


def failed_bind(pod_name: str, reason: str, attempts: int, limit: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v1alpha2",
        "kind": "BindRequest",
        "metadata": {"name": pod_name, "namespace": "ns", "resourceVersion": "1"},
        "spec": {"podName": pod_name, "selectedNode": "n0", "backoffLimit": limit},
        "status": {"phase": "Failed", "reason": reason, "failedAttempts": attempts},
    }


def test_a_gang_whose_bind_fails_says_the_binders_reason(watch: ClusterWatch) -> None:
    """Found on a real cluster: with a missing RuntimeClass every fractional bind failed,
    the reason was only on the BindRequest, and explain said "the scheduler has not
    considered it yet"."""
    watch.informers.observe("ADDED", group("frac", status={}))
    placed = pod(0, group_name="frac")
    placed["status"] = {"phase": "Pending"}  # no PodScheduled condition: it was placed
    watch.informers.observe("ADDED", placed)
    reason = 'creating reservation pod x: pod rejected: RuntimeClass "nvidia" not found'
    watch.informers.observe("ADDED", failed_bind("frac-0", reason, 3))
    watch.informers.observe("ADDED", failed_bind("train-9", "not in a group", 1))
    entry = next(e for e in watch.view().pending if e["podGroup"] == "ns/frac")
    assert entry["waiting"] is True
    assert entry["bindFailures"] == [
        {"pod": "frac-0", "node": "n0", "reason": reason, "attempts": 3, "final": True}
    ]
    explained = watch.explain("ns/frac")
    assert explained is not None
    assert explained["bindFailures"] == entry["bindFailures"]
    text = kubectl_plugin.explain_text("Pod ns/frac-0 (PodGroup ns/frac)", explained)
    assert "not considered" not in text
    assert "Why: the scheduler placed its pods, but binding them failed (below)" in text
    assert f"  pod frac-0 on node n0: {reason} (attempt 3; no retry left" in text
    assert (
        next(e for e in watch.view().pending if e["podGroup"] == "ns/train")["bindFailures"] == []
    )  # a failed request of a pod that does not exist names no group
    watch.evictions.synced.set()
    for _, kind in watch.informers.watched:
        watch.informers._listed(kind, _empty_listing(watch, kind))
    page = server.render("content.html.j2", watch, 2.0)
    assert "pod frac-0 on node n0: creating reservation pod x: pod rejected: RuntimeClass" in page
    assert "&#34;nvidia&#34; not found (attempt 3; no retry left)" in page


def test_a_retrying_bind_is_shown_as_retrying(watch: ClusterWatch) -> None:
    watch.informers.observe("ADDED", failed_bind("train-0", "apiserver busy", 1))
    entry = watch.explain("ns/train")
    assert entry is not None
    assert entry["bindFailures"][0]["final"] is False
    text = kubectl_plugin.explain_text("PodGroup ns/train", entry)
    assert "  pod train-0 on node n0: apiserver busy (attempt 1; the binder retries)" in text
    assert "Why (the scheduler's reasons):" in text  # its own reasons still come first


def test_a_refused_bind_request_is_explained_by_the_pods_condition(watch: ClusterWatch) -> None:
    """The scheduler could not create train-0's BindRequest (an admission policy): the
    group has no condition, its pod's PodScheduled=False/BindingError says why."""
    entry = watch.explain("ns/train")
    assert entry is not None
    message = "Failed to bind pod ns/train-0 to node n0. BindRequest ns/train-0: denied"
    refused = {**entry, "reasons": [], "bindFailures": [], "podMessages": [message]}
    text = kubectl_plugin.explain_text("PodGroup ns/train", refused)
    assert "Why: the group has no scheduling condition; its pods say (below)" in text
    assert "not considered it yet" not in text
    assert f"  {message}" in text
