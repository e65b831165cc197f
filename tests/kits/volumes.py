"""A test kit for volumes: PersistentVolumes, claims, StorageClasses and pods using them.

Why: the volume scenarios, the cache tests and the binder tests all need the
same raw objects; building them here keeps each test a short picture. Sizes are
quantity strings (``"10Gi"``); a PV is reachable from one node when ``node`` is
given (``kubernetes.io/hostname In [node]``, as a local PV is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crds.names import NO_PROVISIONER, SELECTED_NODE_ANNOTATION
from scheduler.api.volumes import VolumeState
from scheduler.cache.volume_reading import read_claim, read_storage_class, read_volume
from tests.kits.worlds import NAMESPACE, Obj, job, node

HOSTNAME = "kubernetes.io/hostname"


def storage_class(
    name: str,
    *,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = NO_PROVISIONER,
    allowed: Mapping[str, Sequence[str]] | None = None,
    default: bool = False,
) -> Obj:
    body: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if default:
        body["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if allowed:
        body["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": key, "values": list(values)} for key, values in allowed.items()
                ]
            }
        ]
    return body


def node_affinity(node: str) -> Obj:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
            ]
        }
    }


def pv(
    name: str,
    size: str = "10Gi",
    *,
    storage_class: str = "local",
    node: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    phase: str = "Available",
    claim: str | None = None,
    labels: Mapping[str, str] | None = None,
    volume_mode: str | None = None,
) -> Obj:
    spec: Obj = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
        "local": {"path": f"/mnt/{name}"},
    }
    if node is not None:
        spec["nodeAffinity"] = node_affinity(node)
    if claim is not None:
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": NAMESPACE, "name": claim}
    if volume_mode is not None:
        spec["volumeMode"] = volume_mode
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    size: str = "5Gi",
    *,
    storage_class: str | None = "local",
    volume: str | None = None,
    modes: Sequence[str] = ("ReadWriteOnce",),
    selector: Mapping[str, Any] | None = None,
    selected_node: str | None = None,
    deleting: bool = False,
    namespace: str = NAMESPACE,
) -> Obj:
    spec: Obj = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume is not None:
        spec["volumeName"] = volume
    if selector is not None:
        spec["selector"] = dict(selector)
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if selected_node is not None:
        meta["annotations"] = {SELECTED_NODE_ANNOTATION: selected_node}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Bound" if volume else "Pending"},
    }


def with_claims(objects: list[Obj], *claims: Sequence[str]) -> list[Obj]:
    """``objects`` (a ``job``) with the i-th pod mounting the claims ``claims[i]``."""
    pods = [obj for obj in objects if obj["kind"] == "Pod"]
    for pod, names in zip(pods, claims, strict=True):
        pod["spec"]["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}}
            for i, claim in enumerate(names)
        ]
    return objects


def volume_job(name: str, queue: str, *claims: Sequence[str], **kwargs: Any) -> list[Obj]:
    """A gang ``job`` of ``len(claims)`` pods, pod i mounting ``claims[i]``."""
    return with_claims(job(name, queue, len(claims), **kwargs), *claims)


def host(name: str, **kwargs: Any) -> Obj:
    """A ``worlds.node`` labelled ``kubernetes.io/hostname: <name>``, as real nodes are."""
    labels = {HOSTNAME: name, **kwargs.pop("labels", {})}
    return node(name, labels=labels, **kwargs)


def volume_state(*objects: Obj) -> VolumeState:
    """The engine's :class:`VolumeState` of raw PVs, claims and StorageClasses."""
    state = VolumeState()
    for body in objects:
        if body["kind"] == "PersistentVolume":
            state.volumes[body["metadata"]["name"]] = read_volume(body)
        elif body["kind"] == "PersistentVolumeClaim":
            claim = read_claim(body)
            state.claims[claim.key] = claim
        else:
            found = read_storage_class(body)
            state.classes[found.name] = found
    return state
