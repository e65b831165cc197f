"""PersistentVolumeClaims, PersistentVolumes, StorageClasses and pod volumes as the cache reads them.

Why: a bad field must be refused naming it, and keep only that object out of a
live snapshot (one broken PV never hides the others); the choice of PV per claim
is one pure function the plugin and the binder share.
"""

from __future__ import annotations

from typing import Any

import pytest

from crds.names import SELECTED_NODE_ANNOTATION
from scheduler.api.nodes import NodeMeta
from scheduler.api.resources import ResourceSpace
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.cache.parsing import FieldError
from scheduler.cache.reading import read_pod
from scheduler.cache.volume_reading import (
    pod_claims,
    read_claim,
    read_storage_class,
    read_volume,
)
from scheduler.plugins.volume_matching import PROVISION, choose
from tests.kits.volumes import HOSTNAME, pv, pvc, storage_class, volume_state
from tests.kits.worlds import pod, sourced

GI = 1024**3


def test_claim_read() -> None:
    claim = read_claim(pvc("data", "5Gi", selected_node="n1"))
    assert (claim.key, claim.request, claim.storage_class) == ("default/data", 5 * GI, "local")
    assert claim.access_modes == {"ReadWriteOnce"}
    assert claim.volume_mode == "Filesystem"
    assert claim.selected_node == "n1"
    assert claim.phase == "Pending"
    assert not claim.volume_name
    assert read_claim(pvc("d", storage_class=None)).storage_class is None
    assert read_claim(pvc("d", storage_class="")).storage_class == ""


def test_volume_read() -> None:
    volume = read_volume(pv("pv1", "10Gi", node="n1", claim="data"))
    assert (volume.capacity, volume.phase, volume.claim_ref) == (
        10 * GI,
        "Available",
        ("default", "data", ""),
    )
    assert volume.node_affinity is not None


def test_storage_class_read() -> None:
    found = read_storage_class(storage_class("c", allowed={"zone": ["a"]}, default=True))
    assert found.binding_mode == "WaitForFirstConsumer"
    assert found.is_default
    assert len(found.allowed_topologies) == 1
    plain = {"kind": "StorageClass", "metadata": {"name": "p"}, "provisioner": "x"}
    assert read_storage_class(plain).binding_mode == "Immediate"


def _with(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    target = body
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return body


@pytest.mark.parametrize(
    ("reader", "body", "path", "value", "field"),
    [
        (
            read_claim,
            pvc("d"),
            "spec.resources.requests.storage",
            "lots",
            "spec.resources.requests.storage",
        ),
        (read_claim, pvc("d"), "spec.accessModes", "ReadWriteOnce", "spec.accessModes"),
        (read_claim, pvc("d"), "spec.storageClassName", 3, "spec.storageClassName"),
        (read_claim, pvc("d"), "spec.selector", "tier=gold", "spec.selector"),
        (read_volume, pv("p"), "spec.capacity.storage", "-1Gi", "spec.capacity.storage"),
        (
            read_volume,
            pv("p"),
            "spec.nodeAffinity.required",
            {"nodeSelectorTerms": []},
            "spec.nodeAffinity.required.nodeSelectorTerms",
        ),
        (read_volume, pv("p"), "spec.claimRef", "data", "spec.claimRef"),
        (read_storage_class, storage_class("c"), "volumeBindingMode", "Later", "volumeBindingMode"),
        (
            read_storage_class,
            storage_class("c"),
            "allowedTopologies",
            {"zone": "a"},
            "allowedTopologies",
        ),
    ],
)
def test_bad_volume_field_is_named(
    reader: Any, body: dict[str, Any], path: str, value: Any, field: str
) -> None:
    with pytest.raises(FieldError) as caught:
        reader(_with(body, path, value))
    assert caught.value.field == field


def test_broken_pv_never_stops_the_others() -> None:
    broken = _with(pv("bad"), "spec.capacity.storage", "many")
    cache = ClusterCache(strict=False)
    cache.upsert_all(sourced([broken, pv("good"), pvc("data"), storage_class("local")]))
    result = cache.snapshot()
    volumes = result.snapshot.volumes
    assert set(volumes.volumes) == {"good"}
    assert set(volumes.claims) == {"default/data"}
    assert set(volumes.classes) == {"local"}
    assert [e.field for e in result.errors] == ["spec.capacity.storage"]
    assert "bad" in str(result.errors[0])
    cache.delete("PersistentVolume", "good")
    assert not cache.snapshot().snapshot.volumes.volumes


def test_pod_claims_persistent_and_ephemeral() -> None:
    spec = {
        "volumes": [
            {"name": "scratch", "emptyDir": {}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
            {"name": "cache", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        ]
    }
    assert pod_claims(spec, "web-0") == ("data-0", "web-0-cache")
    body = pod("web-0")[0]
    body["spec"].update(spec)
    assert read_pod(body, ResourceSpace(), "kai-scheduler").claims == ("data-0", "web-0-cache")
    assert read_pod(pod("plain")[0], ResourceSpace(), "kai-scheduler").claims == ()


@pytest.mark.parametrize(
    ("volumes", "field"),
    [
        ({"name": "x"}, "spec.volumes"),
        (
            [{"name": "d", "persistentVolumeClaim": {}}],
            "spec.volumes[0].persistentVolumeClaim.claimName",
        ),
        (["d"], "spec.volumes[0]"),
    ],
)
def test_bad_pod_volume_is_named(volumes: Any, field: str) -> None:
    with pytest.raises(FieldError) as caught:
        pod_claims({"volumes": volumes}, "p")
    assert caught.value.field == field


N1 = NodeMeta(name="n1", labels={HOSTNAME: "n1"}, taints=(), unschedulable=False, ready=True)


def test_prebound_pv_wins_then_smallest() -> None:
    state = volume_state(
        storage_class("local"),
        pv("small", "6Gi", node="n1"),
        pv("mine", "100Gi", node="n1", claim="data"),
        pv("mid", "8Gi", node="n1"),
        pvc("data"),
        pvc("other"),
    )
    claims = [state.claims["default/data"], state.claims["default/other"]]
    assert choose(state, claims, N1) == {"default/data": "mine", "default/other": "small"}
    assert choose(state, claims, N1, taken={"small"}) == {
        "default/data": "mine",
        "default/other": "mid",
    }
    assert choose(state, claims, N1, taken={"small", "mid"}) is None


def test_provision_when_no_pv() -> None:
    state = volume_state(
        storage_class("fast", provisioner="csi.example.com"), pvc("data", storage_class="fast")
    )
    assert choose(state, [state.claims["default/data"]], N1) == {"default/data": PROVISION}


def test_selected_node_annotation_name() -> None:
    assert SELECTED_NODE_ANNOTATION == "volume.kubernetes.io/selected-node"


def test_another_schedulers_pod_claims_are_not_read() -> None:
    body = pod("theirs", scheduler_name="default-scheduler")[0]
    body["spec"]["volumes"] = [{"name": "d", "persistentVolumeClaim": {}}]  # not ours to judge
    assert read_pod(body, ResourceSpace(), "kai-scheduler").claims == ()
