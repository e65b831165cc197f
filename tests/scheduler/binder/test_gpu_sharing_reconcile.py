"""The binder's fractional-GPU path against kubeapi's in-memory API server: reservation
pods created and waited for, the pod labelled, its ConfigMap written, then bound; the
timeout; a shared group; a broken request; and the sync's deletes and Event."""

from __future__ import annotations

import asyncio
from typing import Any

from crds.bindrequest import KIND
from scheduler.binder.reconciler import POLL_SECONDS, Binder
from scheduler.binder.sharing import Settings, reservation_name
from scheduler.component.watching import Store
from scheduler.metrics.families import Metrics
from tests.kits.fake_kube import FakeKube

BR = ("scheduling.run.ai/v1alpha2", "BindRequest")
RNS = "kai-resource-reservation"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def add_pod(kube: FakeKube, name: str, annotations: dict[str, str] | None = None) -> None:
    """A sharing pod; by default mutated at admission (its ConfigMap annotation)."""
    if annotations is None:
        annotations = {"runai/shared-gpu-configmap": f"{name}-shared-gpu"}
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "annotations": annotations},
            "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main"}]},
        }
    )  # fmt: skip


def add_request(kube: FakeKube, pod: str, groups: list[str], portion: str = "0.50") -> None:
    kube.add(
        {
            "apiVersion": BR[0],
            "kind": BR[1],
            "metadata": {
                "name": pod,
                "namespace": "ns",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": f"uid-{pod}"}
                ],
            },
            "spec": {
                "podName": pod,
                "selectedNode": "n1",
                "backoffLimit": 3,
                "receivedResourceType": "Fraction",
                "receivedGPU": {"count": len(groups), "portion": portion},
                "selectedGPUGroups": groups,
            },
        }
    )


def world() -> FakeKube:
    kube = FakeKube()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    add_pod(kube, "p", {"runai/shared-gpu-configmap": "p-abc-shared-gpu"})
    add_request(kube, "p", ["g1"])
    return kube


def binder(kube: FakeKube, clock: Clock, **settings: Any) -> Binder:
    return Binder(kube, metrics=Metrics(), clock=clock, reservations=Settings(**settings))


def status(kube: FakeKube, name: str = "p") -> dict[str, Any]:
    stored = kube.stored(*BR, "ns", name)
    assert stored is not None
    return dict(stored.get("status") or {})


def pod(kube: FakeKube, name: str, namespace: str = "ns") -> dict[str, Any]:
    stored = kube.stored("v1", "Pod", namespace, name)
    assert stored is not None
    return stored


def report_gpu(kube: FakeKube, group: str, uuid: str) -> None:
    annotations = {"run.ai/reserve_for_gpu_index": uuid}
    name = reservation_name("n1", group)
    asyncio.run(kube.patch("v1", "Pod", RNS, name, {"metadata": {"annotations": annotations}}))


def test_reserves_waits_labels_writes_configmap_and_binds() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock)
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS
    reserved = pod(kube, reservation_name("n1", "g1"), RNS)
    assert reserved["spec"]["nodeName"] == "n1"
    assert reserved["metadata"]["labels"]["runai-gpu-group"] == "g1"
    assert not pod(kube, "p")["spec"].get("nodeName")
    assert status(kube) == {}
    # Not reported yet: still waiting, nothing created twice.
    clock.now += 5
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS
    assert len([c for c in kube.calls if c[0] == "create"]) == 1
    report_gpu(kube, "g1", "GPU-aaa")
    assert asyncio.run(b.reconcile("ns", "p")) is None
    bound = pod(kube, "p")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["labels"] == {"runai-gpu-group": "g1"}
    assert bound["metadata"]["annotations"]["received-resource-type"] == "Fraction"
    assert bound["metadata"]["annotations"]["podmuster.io/gpu-uuids"] == "GPU-aaa"
    cm = kube.stored("v1", "ConfigMap", "ns", "p-abc-shared-gpu")
    assert cm is not None
    assert cm["data"] == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-aaa",
        "GPU_PORTION": "0.50",
        "RUNAI_NUM_OF_GPUS": "0.50",
    }
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "uid-p"
    assert status(kube)["phase"] == "Succeeded"
    verbs = [c[0] for c in kube.calls]
    assert verbs.index("create") < verbs.index("bind")


def test_a_second_pod_of_the_group_reuses_the_reservation_pod() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock)
    asyncio.run(b.reconcile("ns", "p"))
    report_gpu(kube, "g1", "GPU-aaa")
    asyncio.run(b.reconcile("ns", "p"))
    add_pod(kube, "q")
    add_request(kube, "q", ["g1"], portion="0.25")
    assert asyncio.run(b.reconcile("ns", "q")) is None
    assert len(kube.of_kind("Pod")) == 3  # p, q and one reservation pod
    cm = kube.stored("v1", "ConfigMap", "ns", "q-shared-gpu")
    assert cm is not None
    assert cm["data"] == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-aaa",
        "GPU_PORTION": "0.25",
        "RUNAI_NUM_OF_GPUS": "0.25",
    }
    assert pod(kube, "q")["metadata"]["annotations"]["runai/shared-gpu-configmap"] == "q-shared-gpu"


def test_several_devices_get_one_reservation_each() -> None:
    kube, clock = FakeKube(), Clock()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    add_pod(kube, "p")
    add_request(kube, "p", ["g1", "g2"])
    b = binder(kube, clock)
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS
    report_gpu(kube, "g1", "GPU-1")
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS
    report_gpu(kube, "g2", "GPU-2")
    assert asyncio.run(b.reconcile("ns", "p")) is None
    labels = pod(kube, "p")["metadata"]["labels"]
    assert labels == {
        "runai-gpu-group": "g1",
        "runai-gpu-group/g1": "g1",
        "runai-gpu-group/g2": "g2",
    }
    cm = kube.stored("v1", "ConfigMap", "ns", "p-shared-gpu")
    assert cm is not None
    assert cm["data"]["NVIDIA_VISIBLE_DEVICES"] == "GPU-1,GPU-2"


def test_a_reservation_that_never_reports_fails_the_request_for_good() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, timeout=10.0)
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS
    clock.now += 10
    assert asyncio.run(b.reconcile("ns", "p")) is None
    got = status(kube)
    assert got["phase"] == "Failed"
    assert got["failedAttempts"] == 3  # final: the scheduler places the pod again
    assert (
        "did not report a GPU (annotation run.ai/reserve_for_gpu_index) within 10s" in got["reason"]
    )
    assert not pod(kube, "p")["spec"].get("nodeName")
    assert "runai-gpu-group" not in (pod(kube, "p")["metadata"].get("labels") or {})
    assert b.metrics.sample("podmuster_binder_gpu_reservation_pods_total", event="created") == 1
    assert b.metrics.sample("podmuster_binder_gpu_reservation_pods_total", event="timed_out") == 1


def add_configmap(kube: FakeKube, owner: str, uid: str, data: dict[str, str]) -> None:
    """ConfigMap ``p-abc-shared-gpu`` (``p``'s, by its annotation) owned by pod ``owner``."""
    ref = {"apiVersion": "v1", "kind": "Pod", "name": owner, "uid": uid}
    meta = {"name": "p-abc-shared-gpu", "namespace": "ns", "ownerReferences": [ref]}
    kube.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


def test_an_existing_configmap_is_updated_and_owned_by_this_pod() -> None:
    kube, clock = world(), Clock()
    add_configmap(kube, "p", "an-older-pod", {"NVIDIA_VISIBLE_DEVICES": "GPU-old",
                                               "GPU_PORTION": "0.10"})  # fmt: skip
    b = binder(kube, clock)
    asyncio.run(b.reconcile("ns", "p"))
    report_gpu(kube, "g1", "GPU-new")
    assert asyncio.run(b.reconcile("ns", "p")) is None
    cm = kube.stored("v1", "ConfigMap", "ns", "p-abc-shared-gpu")
    assert cm is not None
    assert cm["data"] == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-new",
        "GPU_PORTION": "0.50",
        "RUNAI_NUM_OF_GPUS": "0.50",
    }
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "uid-p"


def test_a_broken_fraction_request_fails_naming_the_field() -> None:
    kube, clock = FakeKube(), Clock()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    add_pod(kube, "p")
    add_request(kube, "p", [])
    asyncio.run(binder(kube, clock).reconcile("ns", "p"))
    got = status(kube)
    assert got["phase"] == "Failed"
    assert got["reason"].startswith("spec.selectedGPUGroups:")
    assert not kube.of_kind("ConfigMap")


def load_caches(b: Binder, kube: FakeKube) -> None:
    """The binder's watch caches as a list fills them: each pod through its change hook."""
    b.caches = {KIND: Store(), "Pod": Store()}
    for kind in b.caches:
        b.caches[kind].replace(kube.of_kind(kind))
    for pod in b.caches["Pod"].values():
        b._pod_changed(None, pod)
    b._synced = {kind: asyncio.Event() for kind in b.caches}
    for event in b._synced.values():
        event.set()


def test_sync_deletes_the_reservation_of_an_emptied_group() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    run_p(kube, b)
    load_caches(b, kube)
    asyncio.run(b.sync())
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is not None
    kube.remove("v1", "Pod", "ns", "p")
    load_caches(b, kube)
    asyncio.run(b.sync())
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None
    assert b.metrics.sample("podmuster_binder_gpu_reservation_pods_total", event="deleted") == 1


def run_p(kube: FakeKube, b: Binder) -> None:
    """p bound and Running on GPU-aaa, its reservation pod in RNS."""
    asyncio.run(b.reconcile("ns", "p"))
    report_gpu(kube, "g1", "GPU-aaa")
    asyncio.run(b.reconcile("ns", "p"))
    asyncio.run(kube.patch("v1", "Pod", "ns", "p", {"status": {"phase": "Running"}}))


def lose_the_reservation(kube: FakeKube, b: Binder) -> None:
    """p bound and Running on GPU-aaa; then its reservation pod is gone (an uninstall)."""
    run_p(kube, b)
    kube.remove("v1", "Pod", RNS, reservation_name("n1", "g1"))


def test_sync_restores_a_lost_reservation_on_the_gpu_its_pods_use() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    lose_the_reservation(kube, b)
    kube.remove("v1", "ConfigMap", "ns", "p-abc-shared-gpu")  # the uninstall cleanup's too
    load_caches(b, kube)
    asyncio.run(b.sync())
    assert kube.stored("v1", "Pod", "ns", "p") is not None  # not deleted: restored first
    again = pod(kube, reservation_name("n1", "g1"), RNS)
    assert again["metadata"]["annotations"]["podmuster.io/restored-for-gpu"] == "GPU-aaa"
    assert again["spec"]["nodeName"] == "n1"
    assert b.metrics.sample("podmuster_binder_gpu_reservation_pods_total", event="restored") == 1
    report_gpu(kube, "g1", "GPU-aaa")  # the device plugin gave it the same GPU
    sync_a_while(b, kube, clock)
    assert kube.stored("v1", "Pod", "ns", "p") is not None
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is not None
    assert not kube.events


def sync_a_while(b: Binder, kube: FakeKube, clock: Clock) -> None:
    """Three syncs a minute apart: every grace and timeout runs out."""
    for _ in range(3):
        clock.now += 60
        load_caches(b, kube)
        asyncio.run(b.sync())


def test_sync_deletes_a_sharing_pod_whose_restore_got_another_gpu_with_an_event() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    lose_the_reservation(kube, b)
    load_caches(b, kube)
    asyncio.run(b.sync())  # restore created
    report_gpu(kube, "g1", "GPU-bbb")  # another GPU: p's GPU is not held
    load_caches(b, kube)
    asyncio.run(b.sync())
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None
    assert kube.stored("v1", "Pod", "ns", "p") is None
    assert (
        b.metrics.sample("podmuster_binder_gpu_reservation_pods_total", event="orphan_deleted") == 1
    )
    [event] = kube.events
    assert event["reason"] == "GPUReservationLost"
    assert event["involvedObject"]["name"] == "p"
    assert "ns/p deleted: its GPU group g1 lost its reservation pod" in event["message"]
    load_caches(b, kube)
    asyncio.run(b.sync())  # tried once: no second restore
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None


def test_sync_restores_from_the_configmap_for_a_pod_an_older_binder_bound() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    lose_the_reservation(kube, b)
    no_record = {"metadata": {"annotations": {"podmuster.io/gpu-uuids": None}}}
    asyncio.run(kube.patch("v1", "Pod", "ns", "p", no_record))
    load_caches(b, kube)
    asyncio.run(b.sync())
    again = pod(kube, reservation_name("n1", "g1"), RNS)
    assert again["metadata"]["annotations"]["podmuster.io/restored-for-gpu"] == "GPU-aaa"


def test_sync_deletes_a_sharing_pod_whose_gpu_is_unknown() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    lose_the_reservation(kube, b)
    kube.remove("v1", "ConfigMap", "ns", "p-abc-shared-gpu")
    no_record = {"metadata": {"annotations": {"podmuster.io/gpu-uuids": None}}}
    asyncio.run(kube.patch("v1", "Pod", "ns", "p", no_record))  # bound by an older binder
    load_caches(b, kube)
    asyncio.run(b.sync())  # cannot restore: tried
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None
    load_caches(b, kube)
    asyncio.run(b.sync())
    assert kube.stored("v1", "Pod", "ns", "p") is None


def test_sync_leaves_another_schedulers_sharing_pod_alone() -> None:
    kube, clock = world(), Clock()
    b = binder(kube, clock, grace=0.0)
    lose_the_reservation(kube, b)
    other = binder(kube, clock, grace=0.0, scheduler_name="podmuster")
    for _ in range(3):
        load_caches(other, kube)
        asyncio.run(other.sync())
    assert kube.stored("v1", "Pod", "ns", "p") is not None
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None  # no restore


def test_the_running_binder_is_woken_by_the_reservation_pod() -> None:
    kube = world()

    async def main() -> None:
        b = Binder(kube, metrics=Metrics(), reservations=Settings())
        task = asyncio.create_task(b.run())
        name = reservation_name("n1", "g1")
        for _ in range(200):
            await asyncio.sleep(0.01)
            if kube.stored("v1", "Pod", RNS, name) is not None:
                break
        annotations = {"run.ai/reserve_for_gpu_index": "GPU-x"}
        await kube.patch("v1", "Pod", RNS, name, {"metadata": {"annotations": annotations}})
        for _ in range(100):  # well under POLL_SECONDS: the watch event wakes it
            await asyncio.sleep(0.01)
            if status(kube).get("phase") == "Succeeded":
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    assert status(kube)["phase"] == "Succeeded"
    assert pod(kube, "p")["spec"]["nodeName"] == "n1"


def kai_reservation(kube: FakeKube, group: str, uuid: str, node: str = "n1") -> str:
    """A reservation pod as KAI's binder leaves it: its own name, only KAI's labels."""
    name = "gpu-reservation-612cd9d364a5c1a2"
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": RNS, "uid": "uid-kai",
                         "labels": {"app": "kai-resource-reservation", "runai-gpu-group": group},
                         "annotations": {"run.ai/reserve_for_gpu_index": uuid}},
            "spec": {"nodeName": node, "containers": [{"name": "resource-reservation"}]},
        }
    )  # fmt: skip
    return name


def test_a_group_whose_reservation_pod_kai_made_reuses_it() -> None:
    # Finding 3: the reservation pod is found by its group label, not by podmuster's name.
    kube, clock = world(), Clock()
    kai_reservation(kube, "g1", "GPU-kai")
    assert asyncio.run(binder(kube, clock).reconcile("ns", "p")) is None
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None  # no 2nd GPU
    assert [
        p["metadata"]["name"] for p in kube.of_kind("Pod") if p["metadata"]["namespace"] == RNS
    ] == ["gpu-reservation-612cd9d364a5c1a2"]
    cm = kube.stored("v1", "ConfigMap", "ns", "p-abc-shared-gpu")
    assert cm is not None
    assert cm["data"]["NVIDIA_VISIBLE_DEVICES"] == "GPU-kai"
    assert pod(kube, "p")["spec"]["nodeName"] == "n1"


def test_a_kai_reservation_pod_is_found_in_the_watch_cache_too() -> None:
    kube, clock = world(), Clock()
    kai_reservation(kube, "g1", "GPU-kai")
    b = binder(kube, clock)
    load_caches(b, kube)
    assert asyncio.run(b.reconcile("ns", "p")) is None
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None
    assert pod(kube, "p")["metadata"]["annotations"]["podmuster.io/gpu-uuids"] == "GPU-kai"


def test_a_group_held_by_a_reservation_pod_on_another_node_fails_naming_it() -> None:
    kube, clock = world(), Clock()
    name = kai_reservation(kube, "g1", "GPU-kai", node="n2")
    asyncio.run(binder(kube, clock).reconcile("ns", "p"))
    assert (
        f"reservation pod {RNS}/{name} of GPU group g1 is on node n2, not n1"
        in status(kube)["reason"]
    )
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is None


def test_a_configmap_another_live_pod_owns_fails_the_bind_and_is_left_alone() -> None:
    # Finding 9: two live pods given one ConfigMap name; the second must not take it over.
    kube, clock = world(), Clock()
    add_pod(kube, "other", {"runai/shared-gpu-configmap": "p-abc-shared-gpu"})
    theirs = {"NVIDIA_VISIBLE_DEVICES": "GPU-theirs", "GPU_PORTION": "0.50"}
    add_configmap(kube, "other", "uid-other", theirs)
    kai_reservation(kube, "g1", "GPU-mine")
    assert asyncio.run(binder(kube, clock).reconcile("ns", "p")) is None
    got = status(kube)
    assert got["phase"] == "Failed"
    assert got["reason"] == (
        "ConfigMap ns/p-abc-shared-gpu (annotation runai/shared-gpu-configmap) belongs to pod "
        "ns/other, which still exists: two pods cannot share one GPU ConfigMap; delete this "
        "pod so it is created again with another name"
    )
    cm = kube.stored("v1", "ConfigMap", "ns", "p-abc-shared-gpu")
    assert cm is not None
    assert cm["data"] == theirs
    assert cm["metadata"]["ownerReferences"][0]["uid"] == "uid-other"
    assert not pod(kube, "p")["spec"].get("nodeName")
    assert "runai-gpu-group" not in (pod(kube, "p")["metadata"].get("labels") or {})


def kai_mutated(kube: FakeKube, name: str, prefix: str) -> None:
    """A pod as KAI's admission leaves it: the annotation holds a prefix; the first
    container reads ``<prefix>-0`` (env), ``<prefix>-0-evar`` (envFrom) and a volume."""
    env = [
        {"name": key, "valueFrom": {"configMapKeyRef": {"name": f"{prefix}-0", "key": key}}}
        for key in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    ]
    container = {"name": "main", "env": env,
                 "envFrom": [{"configMapRef": {"name": f"{prefix}-0-evar"}},
                             {"configMapRef": {"name": "users-own"}}]}  # fmt: skip
    volumes = [{"name": f"{prefix}-0-vol", "configMap": {"name": f"{prefix}-0"}}]
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "annotations": {"runai/shared-gpu-configmap": prefix}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [container],
                     "volumes": volumes},
        }
    )  # fmt: skip


def test_a_pod_admitted_by_kais_webhook_gets_the_configmaps_it_reads() -> None:
    # Finding 4: KAI's contract: <prefix>-<index> with the env, <prefix>-<index>-evar.
    kube, clock = FakeKube(), Clock()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    kai_mutated(kube, "kmut1", "kmut1-ab12cd3-shared-gpu")
    add_request(kube, "kmut1", ["g1"])
    kai_reservation(kube, "g1", "GPU-kai")
    assert asyncio.run(binder(kube, clock).reconcile("ns", "kmut1")) is None
    assert status(kube, "kmut1")["phase"] == "Succeeded"
    names = sorted(c["metadata"]["name"] for c in kube.of_kind("ConfigMap"))
    assert names == ["kmut1-ab12cd3-shared-gpu-0", "kmut1-ab12cd3-shared-gpu-0-evar"]
    env = kube.stored("v1", "ConfigMap", "ns", "kmut1-ab12cd3-shared-gpu-0")
    assert env is not None
    assert env["data"] == {
        "NVIDIA_VISIBLE_DEVICES": "GPU-kai", "GPU_PORTION": "0.50", "RUNAI_NUM_OF_GPUS": "0.50"
    }  # fmt: skip
    evar = kube.stored("v1", "ConfigMap", "ns", "kmut1-ab12cd3-shared-gpu-0-evar")
    assert evar is not None
    assert evar["data"] == {}
    assert evar["metadata"]["ownerReferences"][0]["uid"] == "uid-kmut1"


def test_a_restore_reads_the_gpu_from_the_configmap_a_kai_bound_pod_reads() -> None:
    kube, clock = FakeKube(), Clock()
    kai_mutated(kube, "kold", "kold-ab12cd3-shared-gpu")
    kube.add(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kold-ab12cd3-shared-gpu-0", "namespace": "ns"},
            "data": {"NVIDIA_VISIBLE_DEVICES": "GPU-kai0000000001"},
        }
    )
    b = binder(kube, clock)
    assert asyncio.run(b._gpus_of([pod(kube, "kold")])) == ["GPU-kai0000000001"]


def test_a_look_alike_reservation_pod_in_another_namespace_is_never_used() -> None:
    """A user's pod labelled as the group's reservation pod, in its own namespace, with a
    GPU of its choosing: the binder reads only its reservation namespace, as KAI's does,
    so p's GPU comes from the real reservation pod."""
    kube, clock = world(), Clock()
    fake = kai_reservation(kube, "g1", "GPU-chosen-by-tenant")
    stored = kube.stored("v1", "Pod", RNS, fake)
    assert stored is not None
    kube.remove("v1", "Pod", RNS, fake)
    kube.add({**stored, "metadata": {**stored["metadata"], "namespace": "tenant-b"}})
    b = binder(kube, clock)
    load_caches(b, kube)
    assert asyncio.run(b.reconcile("ns", "p")) == POLL_SECONDS  # its own reservation pod
    assert kube.stored("v1", "Pod", RNS, reservation_name("n1", "g1")) is not None


def test_a_pod_the_mutation_never_saw_is_not_bound() -> None:
    # Finding 16: no runai/shared-gpu-configmap annotation, so no GPU env: the bind fails
    # for good naming the annotation and the webhook, before any reservation pod is made.
    kube, clock = FakeKube(), Clock()
    kube.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    add_pod(kube, "p", {})
    add_request(kube, "p", ["g1"])
    assert asyncio.run(binder(kube, clock).reconcile("ns", "p")) is None
    assert not pod(kube, "p")["spec"].get("nodeName")
    assert [p["metadata"]["name"] for p in kube.of_kind("Pod")] == ["p"]
    assert kube.of_kind("ConfigMap") == []
    reason = status(kube)["reason"]
    assert status(kube)["phase"] == "Failed"
    assert (
        "pod ns/p asks for a shared GPU but has no annotation runai/shared-gpu-configmap" in reason
    )
    assert "the pod webhook must mutate it at creation" in reason
    [event] = kube.events
    assert event["reason"] == "BindingError"
    assert "no annotation runai/shared-gpu-configmap" in event["message"]
    [condition] = pod(kube, "p")["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("PodBound", "False")
    assert "no annotation runai/shared-gpu-configmap" in condition["message"]


def test_the_reservation_index_follows_the_pod_watch() -> None:
    """A bind looks up its group's reservation pods in an index the Pod watch keeps, not by
    scanning every pod of the cluster: added, moved to another group, deleted."""
    kube, clock = world(), Clock()
    b = binder(kube, clock)
    load_caches(b, kube)

    def reservation(group: str, name: str = "r") -> dict[str, Any]:
        labels = {"app": "kai-resource-reservation", "runai-gpu-group": group}
        meta = {"name": name, "namespace": RNS, "labels": labels}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": "n1"}}

    def found(group: str) -> list[str]:
        pod = asyncio.run(b._reservation_of(group, "n1"))
        return [] if pod is None else [pod["metadata"]["name"]]

    first = reservation("ga")
    b._pod_changed(None, first)
    assert (found("ga"), found("gb")) == (["r"], [])
    moved = reservation("gb")
    b._pod_changed(first, moved)
    assert (found("ga"), found("gb")) == ([], ["r"])
    b._pod_changed(moved, None)
    assert found("gb") == []
    assert b._reservations == {}
