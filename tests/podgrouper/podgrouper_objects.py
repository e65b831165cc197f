"""Keyword builders for the podgrouper tests: owned objects, pods, a FakeKube to run on."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from integrations import registry
from podgrouper import reconciling, settings
from tests.kits import podgrouper_kube as testing

T = TypeVar("T")
SETTINGS = settings.PodGrouperSettings()
PRIORITY_CLASSES = ("train", "build-preemptible", "build", "inference")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def owner_ref(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }


def obj(
    api_version: str,
    kind: str,
    name: str,
    *,
    namespace: str = "ns",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    owners: tuple[dict[str, Any], ...] = (),
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    if owners:
        meta["ownerReferences"] = [owner_ref(o) for o in owners]
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    if spec is not None:
        body["spec"] = spec
    body.update(extra)
    return body


def pod(
    name: str,
    *owners: dict[str, Any],
    scheduler: str = "kai-scheduler",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    namespace: str = "ns",
) -> dict[str, Any]:
    return obj(
        "v1",
        "Pod",
        name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        owners=owners,
        spec={"schedulerName": scheduler, "containers": [{"name": "main", "image": "x"}]},
    )


def fake(*objects: dict[str, Any]) -> testing.FakeKube:
    """A FakeKube with the chart's PriorityClasses and ``objects``."""
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": n},
            "value": 1,
        }
        for n in PRIORITY_CLASSES
    ]
    return testing.FakeKube([*classes, *objects])


def reconcile(
    kube: testing.FakeKube,
    pod_: dict[str, Any],
    config: settings.PodGrouperSettings = SETTINGS,
) -> reconciling.Outcome:
    """Reconcile the stored copy of ``pod_`` (as a watch event would deliver it)."""
    stored = kube.stored("v1", "Pod", pod_["metadata"]["namespace"], pod_["metadata"]["name"])
    groupers = registry.build_registry(settings=config.grouping())
    return run(reconciling.reconcile_pod(stored or pod_, kube, groupers, config))


def pod_group(kube: testing.FakeKube, name: str, namespace: str = "ns") -> dict[str, Any]:
    found = kube.stored("scheduling.run.ai/v2alpha2", "PodGroup", namespace, name)
    assert found is not None, f"PodGroup {namespace}/{name} missing"
    return found
