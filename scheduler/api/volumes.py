"""Volumes as the engine sees them: claims, persistent volumes and storage classes.

Why: a pod with PersistentVolumeClaims may run only where its volumes are
reachable (a bound PV's node affinity), and an unbound ``WaitForFirstConsumer``
claim needs a node where a matching PV exists or where the class may provision
one. These small frozen records are parsed once by the cache
(:mod:`scheduler.cache.volume_reading`) and shared by every snapshot; the
session never changes them (reservations of PVs made during a cycle live in
the volume plugin's state).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

IMMEDIATE: Final = "Immediate"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
FILESYSTEM: Final = "Filesystem"
AVAILABLE: Final = "Available"
BOUND: Final = "Bound"


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    """A PersistentVolumeClaim: what it asks for and what it is bound to."""

    namespace: str
    name: str
    uid: str
    storage_class: str | None  # None: unset (the default class); "": no class
    volume_name: str  # spec.volumeName ("" while unbound)
    phase: str  # status.phase (Pending, Bound, Lost)
    request: int  # spec.resources.requests.storage, bytes
    access_modes: frozenset[str]
    volume_mode: str
    selector: Mapping[str, Any] | None = None
    deleting: bool = False
    selected_node: str = ""  # volume.kubernetes.io/selected-node

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    """A PersistentVolume: its capacity, class, node affinity and claim reference."""

    name: str
    storage_class: str
    capacity: int  # spec.capacity.storage, bytes
    access_modes: frozenset[str]
    volume_mode: str
    phase: str  # status.phase ("" when unset: treated as Available)
    node_affinity: Mapping[str, Any] | None = None  # spec.nodeAffinity.required
    claim_ref: tuple[str, str, str] | None = None  # (namespace, name, uid)
    labels: Mapping[str, str] = field(default_factory=dict)
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class StorageClassInfo:
    """A StorageClass: its provisioner, binding mode and allowed topologies."""

    name: str
    provisioner: str
    binding_mode: str  # Immediate | WaitForFirstConsumer
    allowed_topologies: tuple[Mapping[str, Any], ...] = ()
    is_default: bool = False


@dataclass(slots=True)
class VolumeState:
    """Every claim (by ``namespace/name``), PV and StorageClass (by name) of a snapshot."""

    claims: dict[str, ClaimInfo] = field(default_factory=dict)
    volumes: dict[str, VolumeInfo] = field(default_factory=dict)
    classes: dict[str, StorageClassInfo] = field(default_factory=dict)

    def class_of(self, claim: ClaimInfo) -> StorageClassInfo | None:
        """The claim's StorageClass: named, or the default one when unset; None if absent."""
        if claim.storage_class is None:
            defaults = sorted(c.name for c in self.classes.values() if c.is_default)
            return self.classes[defaults[0]] if defaults else None
        return self.classes.get(claim.storage_class)

    def class_name(self, claim: ClaimInfo) -> str:
        """The class name PVs must carry for ``claim`` ("" for no class)."""
        if claim.storage_class is not None:
            return claim.storage_class
        found = self.class_of(claim)
        return found.name if found is not None else ""
