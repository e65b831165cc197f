"""Dynamic Resource Allocation (``resource.k8s.io/v1``) as the engine sees it.

Why: a pod with ``spec.resourceClaims`` may run only where free devices published in
ResourceSlices satisfy its claims' requests, and the scheduler (as kube-scheduler
and KAI do) chooses those devices. These small frozen records are parsed once by
the cache (:mod:`scheduler.cache.dra_reading`) and shared by every snapshot; the
devices a cycle takes live in the DRA plugin's arrays
(:mod:`scheduler.plugins.dra`), never here.

A claim or device class that cannot be used (a CEL expression that does not
compile, a request form podmuster does not allocate) keeps its ``problem``: the
pods using it stay pending with that reason, naming the object and field, and
nothing else is affected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

API_VERSION: Final = "resource.k8s.io/v1"
EXACT_COUNT: Final = "ExactCount"
ALL: Final = "All"
GPU_CLASS_MARK: Final = "gpu"
"""A device class whose name contains this (any case) holds GPUs: its devices count
against the queue's GPU quota (KAI's convention, e.g. ``gpu.nvidia.com``)."""


def is_gpu_class(device_class: str) -> bool:
    """True for device classes whose devices count as GPUs in queue quota."""
    return GPU_CLASS_MARK in device_class.lower()


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a ResourceSlice, with where it can be reached."""

    driver: str
    pool: str
    name: str
    # qualified attribute name ("domain/name") -> bool | int | str (versions as str)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    # qualified capacity name -> value in the quantity's base unit (a Fraction)
    capacity: Mapping[str, Any] = field(default_factory=dict)
    node_name: str = ""  # the slice's (or device's) nodeName; "" when not node-local
    node_selector: Mapping[str, Any] | None = None  # a core NodeSelector
    all_nodes: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)


@dataclass(frozen=True, slots=True)
class DeviceClassInfo:
    """A DeviceClass: its CEL selectors (every one must match)."""

    name: str
    selectors: tuple[str, ...] = ()
    problem: str = ""  # why the class cannot be used ("" when it can)


@dataclass(frozen=True, slots=True)
class DeviceRequestInfo:
    """One ``spec.devices.requests[]`` entry (``exactly``)."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    mode: str = EXACT_COUNT
    count: int = 1
    field: str = ""  # where it sits in the claim (``…exactly``), for reasons
    # ``firstAvailable``: the alternatives in order of preference, each named
    # "<request>/<subrequest>" (the request's own class and count are the first one's)
    alternatives: tuple[DeviceRequestInfo, ...] = ()

    @property
    def choices(self) -> tuple[DeviceRequestInfo, ...]:
        """What may serve the request, best first: its alternatives, or itself."""
        return self.alternatives or (self,)


@dataclass(frozen=True, slots=True)
class DeviceConstraintInfo:
    """``spec.devices.constraints[]``: the devices of ``requests`` (all when empty) must
    share (``match``) or must not share (``distinct``) the value of ``attribute``."""

    requests: tuple[str, ...]
    attribute: str  # fully qualified: "<domain>/<name>"
    distinct: bool = False

    def covers(self, request: str) -> bool:
        """Whether the constraint applies to ``request`` (``<request>/<alternative>`` too)."""
        return not self.requests or request.split("/", 1)[0] in self.requests


def attribute_of(device: Device, qualified: str) -> Any:
    """The device's value of a fully qualified attribute (None when it has none); a name
    the slice published without a domain belongs to the driver's."""
    if qualified in device.attributes:
        return device.attributes[qualified]
    domain, _, name = qualified.rpartition("/")
    return device.attributes.get(name) if domain == device.driver else None


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    request: str
    driver: str
    pool: str
    device: str


@dataclass(frozen=True, slots=True)
class ResourceClaimInfo:
    """A ResourceClaim: what it asks for and what is allocated to it."""

    namespace: str
    name: str
    uid: str
    requests: tuple[DeviceRequestInfo, ...] = ()
    constraints: tuple[DeviceConstraintInfo, ...] = ()
    allocated: tuple[AllocatedDevice, ...] | None = None  # None: not allocated
    node_selector: Mapping[str, Any] | None = None  # status.allocation.nodeSelector
    reserved_for: tuple[str, ...] = ()  # consumer uids
    deleting: bool = False
    problem: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class DraState:
    """Every ResourceClaim (``ns/name``), ResourceSlice's devices and DeviceClass."""

    claims: dict[str, ResourceClaimInfo] = field(default_factory=dict)
    slices: dict[str, tuple[Device, ...]] = field(default_factory=dict)
    classes: dict[str, DeviceClassInfo] = field(default_factory=dict)

    def gpu_devices(self, claim: ResourceClaimInfo) -> int:
        """GPUs the claim counts in queue quota: its allocated devices of GPU-class
        requests, or before allocation each GPU request's count (``All``: 1, as KAI;
        ``firstAvailable``: its first alternative's)."""
        if claim.allocated is not None:
            gpu_names = {
                choice.name
                for request in claim.requests
                for choice in request.choices
                if is_gpu_class(choice.device_class)
            }
            return sum(1 for d in claim.allocated if d.request in gpu_names)
        return sum(
            r.count if r.mode == EXACT_COUNT else 1
            for r in claim.requests
            if is_gpu_class(r.device_class)  # firstAvailable: its first alternative
        )
