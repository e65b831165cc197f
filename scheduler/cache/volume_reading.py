"""Readers from raw PersistentVolumeClaims, PersistentVolumes and StorageClasses to records.

Why: the cluster cache parses each object once as it arrives; these pure functions
turn the volume kinds into :mod:`scheduler.api.volumes` records and raise
``FieldError`` naming the bad field, so one broken PV is reported and the others
are still served. The binder reads the same objects through the same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crds.errors import shown
from crds.names import SELECTED_NODE_ANNOTATION
from scheduler.api.volumes import (
    FILESYSTEM,
    IMMEDIATE,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimInfo,
    StorageClassInfo,
    VolumeInfo,
)
from scheduler.cache import parsing
from scheduler.cache.parsing import MAP, FieldError
from scheduler.cache.parsing import field_map as _map
from scheduler.cache.parsing import field_string as _string

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
_BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)


def _meta(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(body.get("metadata"), "metadata")


def _access_modes(raw: Any, field: str) -> frozenset[str]:
    if raw is None:
        return frozenset()
    if not isinstance(raw, list | tuple) or not all(isinstance(m, str) for m in raw):
        raise FieldError(field, f"expected a list of access modes, got {shown(raw)}")
    return frozenset(raw)


def _storage(raw: Any, field: str) -> int:
    if raw is None:
        return 0
    return parsing.amount("storage", raw, field)


def read_claim(body: Mapping[str, Any]) -> ClaimInfo:
    """A PersistentVolumeClaim (core/v1)."""
    meta = _meta(body)
    spec = _map(body.get("spec"), "spec")
    status = _map(body.get("status"), "status")
    resources = _map(spec.get("resources"), "spec.resources")
    requests = _map(resources.get("requests"), "spec.resources.requests")
    selector = spec.get("selector")
    if selector is not None and not isinstance(selector, MAP):
        raise FieldError("spec.selector", f"expected a label selector, got {shown(selector)}")
    raw_class = spec.get("storageClassName")
    annotations = parsing.string_map(meta.get("annotations"), "metadata.annotations")
    return ClaimInfo(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name")),
        uid=str(meta.get("uid") or ""),
        storage_class=None if raw_class is None else _string(raw_class, "spec.storageClassName"),
        volume_name=_string(spec.get("volumeName"), "spec.volumeName"),
        phase=_string(status.get("phase"), "status.phase", "Pending"),
        request=_storage(requests.get("storage"), "spec.resources.requests.storage"),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes"),
        volume_mode=_string(spec.get("volumeMode"), "spec.volumeMode", FILESYSTEM),
        selector=selector or None,
        deleting=bool(meta.get("deletionTimestamp")),
        selected_node=annotations.get(SELECTED_NODE_ANNOTATION, ""),
    )


def _node_affinity(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    affinity = _map(spec.get("nodeAffinity"), "spec.nodeAffinity")
    required = affinity.get("required")
    if required is None:
        return None
    field = "spec.nodeAffinity.required"
    required = _map(required, field)
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list | tuple) or not terms:
        raise FieldError(f"{field}.nodeSelectorTerms", "expected a non-empty list of terms")
    for i, term in enumerate(terms):
        if not isinstance(term, MAP):
            raise FieldError(
                f"{field}.nodeSelectorTerms[{i}]", f"expected a map, got {shown(term)}"
            )
        for part in ("matchExpressions", "matchFields"):
            exprs = term.get(part) or ()
            if not isinstance(exprs, list | tuple) or not all(isinstance(e, MAP) for e in exprs):
                raise FieldError(
                    f"{field}.nodeSelectorTerms[{i}].{part}", "expected a list of requirements"
                )
    return required


def read_volume(body: Mapping[str, Any]) -> VolumeInfo:
    """A PersistentVolume (core/v1)."""
    meta = _meta(body)
    spec = _map(body.get("spec"), "spec")
    status = _map(body.get("status"), "status")
    capacity = _map(spec.get("capacity"), "spec.capacity")
    ref = spec.get("claimRef")
    claim_ref = None
    if ref is not None:
        ref = _map(ref, "spec.claimRef")
        claim_ref = (
            _string(ref.get("namespace"), "spec.claimRef.namespace", "default"),
            _string(ref.get("name"), "spec.claimRef.name"),
            _string(ref.get("uid"), "spec.claimRef.uid"),
        )
    return VolumeInfo(
        name=str(meta.get("name")),
        storage_class=_string(spec.get("storageClassName"), "spec.storageClassName"),
        capacity=_storage(capacity.get("storage"), "spec.capacity.storage"),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes"),
        volume_mode=_string(spec.get("volumeMode"), "spec.volumeMode", FILESYSTEM),
        phase=_string(status.get("phase"), "status.phase"),
        node_affinity=_node_affinity(spec),
        claim_ref=claim_ref,
        labels=parsing.string_map(meta.get("labels"), "metadata.labels"),
        deleting=bool(meta.get("deletionTimestamp")),
    )


def read_storage_class(body: Mapping[str, Any]) -> StorageClassInfo:
    """A StorageClass (storage.k8s.io/v1); the binding mode defaults to Immediate."""
    meta = _meta(body)
    mode = _string(body.get("volumeBindingMode"), "volumeBindingMode", IMMEDIATE)
    if mode not in _BINDING_MODES:
        raise FieldError(
            "volumeBindingMode", f"expected one of {_BINDING_MODES}, got {shown(mode)}"
        )
    topologies = body.get("allowedTopologies") or ()
    if not isinstance(topologies, list | tuple) or not all(isinstance(t, MAP) for t in topologies):
        raise FieldError("allowedTopologies", "expected a list of topology selector terms")
    for i, term in enumerate(topologies):
        exprs = term.get("matchLabelExpressions") or ()
        if not isinstance(exprs, list | tuple) or not all(isinstance(e, MAP) for e in exprs):
            raise FieldError(
                f"allowedTopologies[{i}].matchLabelExpressions", "expected a list of requirements"
            )
    annotations = parsing.string_map(meta.get("annotations"), "metadata.annotations")
    return StorageClassInfo(
        name=str(meta.get("name")),
        provisioner=_string(body.get("provisioner"), "provisioner"),
        binding_mode=mode,
        allowed_topologies=tuple(topologies),
        is_default=annotations.get(DEFAULT_CLASS_ANNOTATION) == "true",
    )


def pod_claims(spec: Mapping[str, Any], pod_name: str) -> tuple[str, ...]:
    """Claim names of a pod's volumes: ``persistentVolumeClaim`` and generic ``ephemeral``.

    A generic ephemeral volume's claim is named ``<pod>-<volume>`` (Kubernetes' rule).
    """
    volumes = spec.get("volumes")
    if not volumes:
        return ()
    if not isinstance(volumes, list | tuple):
        raise FieldError("spec.volumes", "expected a list")
    claims: list[str] = []
    for i, volume in enumerate(volumes):
        if not isinstance(volume, MAP):
            raise FieldError(f"spec.volumes[{i}]", f"expected a map, got {shown(volume)}")
        source = volume.get("persistentVolumeClaim")
        if source is not None:
            field = f"spec.volumes[{i}].persistentVolumeClaim.claimName"
            name = _string(_map(source, field).get("claimName"), field)
            if not name:
                raise FieldError(field, "must name a claim")
            claims.append(name)
        elif volume.get("ephemeral") is not None:
            claims.append(f"{pod_name}-{_string(volume.get('name'), f'spec.volumes[{i}].name')}")
    return tuple(claims)
