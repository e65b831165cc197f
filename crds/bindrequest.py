"""BindRequest (``scheduling.run.ai/v1alpha2``): the scheduler → binder contract.

The scheduler never binds a pod itself: it creates a BindRequest named after
the pod (same namespace, owner = the pod, label :data:`SELECTED_NODE_LABEL`),
and the binder performs the binding and reports in ``status``. While a
BindRequest has not finally failed (:func:`crds.rules.bind_request_finally_failed`),
the scheduler treats its pod as *Binding* on ``selectedNode``.

Where podmuster differs from KAI: KAI never sets ``backoffLimit`` and persists
only the first ``failedAttempts`` increment (both KAI bugs); podmuster's
scheduler sets a limit and its binder persists every attempt. The schema also
adds an enum on ``receivedResourceType`` (KAI: free string) — every value KAI
writes is in it.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from crds.meta import Int32, KaiModel, ObjectMeta

__all__ = [
    "API_VERSION",
    "BINDING_ERROR_REASON",
    "BOUND_REASON",
    "KIND",
    "PHASE_FAILED",
    "PHASE_PENDING",
    "PHASE_SUCCEEDED",
    "POD_BOUND_CONDITION",
    "RESOURCE_TYPE_FRACTION",
    "RESOURCE_TYPE_MIG_INSTANCE",
    "RESOURCE_TYPE_REGULAR",
    "SELECTED_NODE_LABEL",
    "BindRequest",
    "BindRequestSpec",
    "BindRequestStatus",
    "ReceivedGPU",
    "ReceivedResourceType",
    "ResourceClaimAllocation",
]

API_VERSION: Final = "scheduling.run.ai/v1alpha2"
KIND: Final = "BindRequest"

SELECTED_NODE_LABEL: Final = "selected-node"

RESOURCE_TYPE_REGULAR: Final = "Regular"
RESOURCE_TYPE_FRACTION: Final = "Fraction"
RESOURCE_TYPE_MIG_INSTANCE: Final = "MigInstance"
ReceivedResourceType = Literal["Regular", "Fraction", "MigInstance"]

PHASE_PENDING: Final = "Pending"
PHASE_SUCCEEDED: Final = "Succeeded"
PHASE_FAILED: Final = "Failed"

POD_BOUND_CONDITION: Final = "PodBound"
"""The pod condition KAI's binder writes: ``True``/``Bound`` or ``False``/``BindingError``."""
BOUND_REASON: Final = "Bound"
BINDING_ERROR_REASON: Final = "BindingError"
"""The reason of a failed bind, on the pod's ``PodBound`` condition and its Warning Event
(the binder's), and on its ``PodScheduled=False`` condition when the scheduler could not
write the BindRequest (as KAI's scheduler; its Event is ``FailedBinding`` then)."""


class ReceivedGPU(KaiModel):
    """GPUs given to the pod: ``count`` devices, each with ``portion`` (e.g. ``"0.50"``)."""

    count: int | None = None
    """Number of GPU devices."""
    portion: str | None = None
    """Portion of each device, a decimal such as "0.50"."""


class ResourceClaimAllocation(KaiModel):
    """A DRA claim to bind: ``allocation`` is a ``resource.k8s.io`` AllocationResult, kept raw."""

    name: str | None = None
    """Name of the pod's resource claim entry."""
    allocation: dict[str, Any] | None = None
    """A resource.k8s.io AllocationResult, passed through unchanged."""


class BindRequestSpec(KaiModel):
    pod_name: str | None = None
    """Pod to bind (same namespace)."""
    selected_node: str | None = None
    """Node to bind the pod to."""
    received_resource_type: ReceivedResourceType | None = None
    """How GPUs were received."""
    received_gpu: ReceivedGPU | None = Field(default=None, alias="receivedGPU")
    """GPUs given to the pod."""
    selected_gpu_groups: list[str] | None = Field(default=None, alias="selectedGPUGroups")
    """GPU-sharing groups, for Fraction."""
    resource_claim_allocations: list[ResourceClaimAllocation] | None = None
    """DRA claims to allocate before binding."""
    backoff_limit: Int32 | None = None
    """Failed attempts allowed before the request is failed for good."""


class BindRequestStatus(KaiModel):
    """Written by the binder: ``phase`` is Pending/Succeeded/Failed, ``reason`` the error."""

    phase: str | None = None
    """Pending, Succeeded or Failed."""
    reason: str | None = None
    """Error text of the last failure."""
    failed_attempts: Int32 | None = None
    """Number of failed attempts so far."""


class BindRequest(KaiModel):
    """A KAI BindRequest object."""

    api_version: Literal["scheduling.run.ai/v1alpha2"] = API_VERSION
    """APIVersion of this object."""
    kind: Literal["BindRequest"] = KIND
    """Kind of this object."""
    metadata: ObjectMeta
    spec: BindRequestSpec = Field(default_factory=BindRequestSpec)
    """What the scheduler decided for one pod."""
    status: BindRequestStatus | None = None
    """Observed state, written by the binder."""
