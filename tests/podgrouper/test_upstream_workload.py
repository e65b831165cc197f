"""The podgrouper live on Kubernetes' own PodGroups: grouping through the fake API
(related objects read in rounds) and the status mirror writing upstream's conditions
through the narrow :class:`~podgrouper.upstream_status.StatusKube` (in-memory fake)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml
from podgrouper_objects import SETTINGS, fake, pod_group, reconcile

from crds import upstream_workload as up
from integrations import registry
from podgrouper import upstream_regroup, upstream_status
from tests.kits.fake_kube import FakeKube

FIXTURES = Path(__file__).resolve().parents[1] / "integrations" / "fixtures"
NOW = "2026-01-02T03:04:05Z"


def _objects(name: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all((FIXTURES / name).read_text()):
        result.extend(doc.get("items", [doc]))
    return result


def _kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def test_live_reconcile_walks_a_composite_tree_and_labels_the_subgroup() -> None:
    objs = _objects("upstream-composite.yaml")
    kube_ = fake(*objs)
    decode = next(p for p in _kind(objs, "Pod") if p["metadata"]["name"] == "decode-1")
    outcome = reconcile(kube_, decode)
    assert outcome.error == ""
    assert outcome.applied is not None
    group = pod_group(kube_, outcome.applied.pod_group, "infer")
    assert group["spec"]["minSubGroup"] == 2
    assert [o["kind"] for o in group["metadata"]["ownerReferences"]] == ["CompositePodGroup"]
    stored = kube_.stored("v1", "Pod", "infer", "decode-1")
    assert stored is not None
    assert stored["metadata"]["labels"]["kai.scheduler/subgroup-name"] == "serve-decode-1"


def test_live_reconcile_of_a_pod_whose_podgroup_is_missing_warns_on_the_pod() -> None:
    objs = [o for o in _objects("upstream-gang.yaml") if o["kind"] != "PodGroup"]
    kube_ = fake(*objs)
    outcome = reconcile(kube_, _kind(objs, "Pod")[0])
    assert "podgroups.scheduling.k8s.io team-a/trainer-workers not found" in outcome.error
    (event,) = kube_.events_for("Pod", "worker-0")
    assert event["reason"] == "PodGrouperWarning"


KAI_NAME = "pg-trainer-workers-6f0c6a52-0000-4000-8000-000000000002"


def _mirror_world(bound: int) -> FakeKube:
    kube_ = FakeKube()
    for obj in _objects("upstream-gang.yaml"):
        if obj["kind"] == "Pod":
            obj["metadata"]["annotations"] = {"pod-group-name": KAI_NAME}
            if int(obj["metadata"]["name"][-1]) < bound:
                obj["spec"]["nodeName"] = "node-a"
        kube_.add(obj)
    kube_.add(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": KAI_NAME, "namespace": "team-a"},
            "spec": {"minMember": 3},
        }
    )
    return kube_


def _mirror(kube_: FakeKube) -> up.Condition | None:
    return asyncio.run(upstream_status.mirror(kube_, "team-a", "trainer-workers", now=lambda: NOW))


def _conditions(kube_: FakeKube) -> list[dict[str, Any]]:
    stored = kube_.stored(up.V1BETA1, "PodGroup", "team-a", "trainer-workers")
    assert stored is not None
    return list((stored.get("status") or {}).get("conditions") or [])


def test_partly_bound_gang_without_a_verdict_writes_nothing() -> None:
    kube_ = _mirror_world(bound=2)
    assert _mirror(kube_) is None
    assert _conditions(kube_) == []


def test_unschedulable_kai_podgroup_becomes_initially_scheduled_false() -> None:
    kube_ = _mirror_world(bound=0)
    kai = kube_.stored("scheduling.run.ai/v2alpha2", "PodGroup", "team-a", KAI_NAME)
    assert kai is not None
    kai["status"] = {
        "schedulingConditions": [
            {
                "type": "UnschedulableOnNodePool",
                "nodePool": "default",
                "status": "True",
                "reasons": [{"reason": "Unschedulable", "message": "gang needs 3 pods, 1 fit"}],
            }
        ]
    }
    condition = _mirror(kube_)
    assert condition is not None
    (written,) = _conditions(kube_)
    assert written == {
        "type": "PodGroupInitiallyScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "gang needs 3 pods, 1 fit",
        "lastTransitionTime": NOW,
    }
    assert _mirror(kube_) is None  # unchanged: no second write
    assert [v for v, _ in kube_.calls].count("patch/status") == 1


def test_bound_gang_becomes_true_and_stays_true() -> None:
    kube_ = _mirror_world(bound=3)
    condition = _mirror(kube_)
    assert condition is not None
    (written,) = _conditions(kube_)
    assert (written["status"], written["reason"]) == ("True", "Scheduled")
    assert "3 of 3 pods" in written["message"]
    assert "podgroups.scheduling.run.ai" in written["message"]
    # an evicted pod does not take it back: True is terminal upstream, and the pods are
    # no longer read on every event
    kube_.remove("v1", "Pod", "team-a", "worker-2")
    lists = len([c for c in kube_.calls if c[0] == "list"])
    assert _mirror(kube_) is None
    assert len([c for c in kube_.calls if c[0] == "list"]) == lists
    assert _conditions(kube_)[0]["status"] == "True"


def test_mirror_for_a_kai_podgroup_finds_the_upstream_groups_of_its_pods() -> None:
    kube_ = _mirror_world(bound=3)
    kai = kube_.stored("scheduling.run.ai/v2alpha2", "PodGroup", "team-a", KAI_NAME)
    assert kai is not None
    assert asyncio.run(upstream_status.mirror_for_kai_podgroup(kube_, kai)) == 0  # not derived
    kai["metadata"]["ownerReferences"] = [
        {"apiVersion": up.V1BETA1, "kind": "PodGroup", "name": "trainer-workers", "uid": "u"}
    ]
    assert asyncio.run(upstream_status.mirror_for_kai_podgroup(kube_, kai)) == 1


def test_a_vanished_or_malformed_group_is_skipped() -> None:
    kube_ = _mirror_world(bound=3)
    stored = kube_.stored(up.V1BETA1, "PodGroup", "team-a", "trainer-workers")
    assert stored is not None
    stored["spec"]["schedulingPolicy"] = {}
    assert _mirror(kube_) is None
    kube_.remove(up.V1BETA1, "PodGroup", "team-a", "trainer-workers")
    assert _mirror(kube_) is None


def test_pods_created_before_their_podgroup_are_grouped_when_it_appears() -> None:
    objs = _objects("upstream-gang.yaml")
    upstream = next(o for o in objs if o["kind"] == "PodGroup")
    kube_ = fake(*[o for o in objs if o is not upstream])
    for member in _kind(objs, "Pod"):
        assert "not found" in reconcile(kube_, member).error
    kube_.add(upstream)
    groupers = registry.build_registry(settings=SETTINGS.grouping())
    outcomes = asyncio.run(upstream_regroup.regroup_waiting(upstream, kube_, groupers, SETTINGS))
    assert [o.applied is not None for o in outcomes] == [True, True, True]
    assert pod_group(kube_, KAI_NAME, "team-a")["spec"]["minMember"] == 3
    # none waiting now: one member is reconciled, so a changed minCount reaches the KAI group
    stored = kube_.stored(up.V1BETA1, "PodGroup", "team-a", "trainer-workers")
    assert stored is not None
    stored["spec"]["schedulingPolicy"]["gang"]["minCount"] = 2
    stored = kube_.add(stored)
    again = asyncio.run(upstream_regroup.regroup_waiting(stored, kube_, groupers, SETTINGS))
    assert len(again) == 1
    assert pod_group(kube_, KAI_NAME, "team-a")["spec"]["minMember"] == 2


def _composite_world(bound: set[str]) -> FakeKube:
    kube_ = FakeKube()
    for obj in _objects("upstream-composite.yaml"):
        if obj["kind"] == "Pod" and obj["metadata"]["name"] in bound:
            obj["spec"]["nodeName"] = "node-a"
        kube_.add(obj)
    return kube_


def _composite_status(kube_: FakeKube, name: str) -> str | None:
    stored = kube_.stored(up.COMPOSITE_API_VERSION, "CompositePodGroup", "infer", name)
    assert stored is not None
    conditions = (stored.get("status") or {}).get("conditions") or []
    assert all(c["type"] == "CompositePodGroupInitiallyScheduled" for c in conditions)
    return str(conditions[0]["status"]) if conditions else None


def test_composites_count_their_scheduled_children() -> None:
    # prefill's gang is bound, decode-0's pod is not: decode (basic) has no child
    # scheduled and the root (gang of 2 groups) only one
    kube_ = _composite_world({"prefill-0", "prefill-1"})
    assert asyncio.run(upstream_status.mirror_composites(kube_, "infer", now=lambda: NOW)) == 0
    assert _composite_status(kube_, "serve-server") is None
    kube_ = _composite_world({"prefill-0", "prefill-1", "decode-0"})
    assert asyncio.run(upstream_status.mirror_composites(kube_, "infer", now=lambda: NOW)) == 2
    assert _composite_status(kube_, "serve-decode") == "True"
    assert _composite_status(kube_, "serve-server") == "True"
    again = asyncio.run(upstream_status.mirror_composites(kube_, "infer", now=lambda: NOW))
    assert again == 0  # True is terminal: nothing more to write


def test_composite_of_an_unschedulable_tree_is_false_with_the_kai_message() -> None:
    kube_ = _composite_world(set())
    kube_.add(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {
                "name": "pg-serve-server-0d5e9a10-0000-4000-8000-000000000002",
                "namespace": "infer",
            },
            "status": {
                "schedulingConditions": [
                    {"type": "UnschedulableOnNodePool", "status": "True", "message": "no room"}
                ]
            },
        }
    )
    asyncio.run(upstream_status.mirror_composites(kube_, "infer", now=lambda: NOW))
    stored = kube_.stored(up.COMPOSITE_API_VERSION, "CompositePodGroup", "infer", "serve-server")
    assert stored is not None
    (condition,) = stored["status"]["conditions"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "no room",
    )
