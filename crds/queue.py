"""Queue (``scheduling.run.ai/v2``, cluster-scoped): quotas and the fair-share tree.

Queues form a tree through ``parentQueue``; only leaves accept jobs. Each of
gpu/cpu/memory carries ``quota`` (deserved), ``overQuotaWeight`` and ``limit``.
Units are KAI's: GPU in devices (fractions allowed), CPU in **millicores**,
memory in **MB (10^6 bytes)**.

Defaults and special values KAI applies in code (the schema has none; the
helpers below apply them, dumps never contain them):

========================  ==========================================================
``priority``              :data:`DEFAULT_QUEUE_PRIORITY` (100)
``quota`` unset           0 (no guarantee); :data:`UNLIMITED` (-1) = unlimited deserved
``limit`` unset           **0, a hard cap of zero**; :data:`UNLIMITED` (-1) = no limit
below -1, or in (-1, 0)   refused (KAI clamps memory to -1 and takes cpu/gpu literally)
``overQuotaWeight`` unset 0
``resources`` absent      KAI's webhook rejects the queue; without the webhook it
                          behaves as all-zero
========================  ==========================================================
"""

from __future__ import annotations

from fractions import Fraction
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from crds import quantities
from crds.meta import DateTime, KaiModel, Number, ObjectMeta, ResourceList

__all__ = [
    "API_VERSION",
    "CONDITION_ORPHAN",
    "CONDITION_OVER_QUOTA",
    "DEFAULT_QUEUE_PRIORITY",
    "KIND",
    "QUEUE_RESOURCE_NAMES",
    "UNLIMITED",
    "Queue",
    "QueueCondition",
    "QueueResource",
    "QueueResources",
    "QueueSpec",
    "QueueStatus",
]

API_VERSION: Final = "scheduling.run.ai/v2"
KIND: Final = "Queue"

DEFAULT_QUEUE_PRIORITY: Final = 100
UNLIMITED: Final = -1
"""``quota: -1`` = unlimited deserved share; ``limit: -1`` = no limit."""
QUEUE_RESOURCE_NAMES: Final = ("gpu", "cpu", "memory")

CONDITION_ORPHAN: Final = "Orphan"
CONDITION_OVER_QUOTA: Final = "OverQuota"


def _unlimited_or_not_negative(number: Number) -> Number:
    if UNLIMITED < number < 0:
        raise ValueError(f"must be {UNLIMITED} (unlimited) or >= 0")
    return number


QuotaOrLimit = Annotated[Number, Field(ge=UNLIMITED), AfterValidator(_unlimited_or_not_negative)]
"""A quota or limit: :data:`UNLIMITED` (-1) or >= 0. The CRD can say only ``minimum: -1``."""
Weight = Annotated[Number, Field(ge=0)]


def _number(raw: Number | None) -> Fraction:
    return Fraction(0) if raw is None else quantities.parse_quantity(raw)


class QueueResource(KaiModel):
    """``quota`` / ``overQuotaWeight`` / ``limit`` of one resource (Go float64)."""

    quota: QuotaOrLimit | None = None
    """Deserved amount; -1 unlimited, unset 0."""
    over_quota_weight: Weight | None = None
    """Share of surplus capacity; unset 0."""
    limit: QuotaOrLimit | None = None
    """Hard cap; -1 no limit, unset 0 (a cap of zero)."""

    def quota_or_default(self) -> Fraction:
        """Deserved amount; 0 when unset, :data:`UNLIMITED` stays -1."""
        return _number(self.quota)

    def over_quota_weight_or_default(self) -> Fraction:
        return _number(self.over_quota_weight)

    def limit_or_default(self) -> Fraction:
        """Hard cap; **0 when unset** (KAI's rule), :data:`UNLIMITED` stays -1."""
        return _number(self.limit)


class QueueResources(KaiModel):
    gpu: QueueResource | None = None
    """GPU devices; fractions allowed."""
    cpu: QueueResource | None = None
    """CPU in millicores (1000 = 1 CPU)."""
    memory: QueueResource | None = None
    """Memory in MB (1 = 10^6 bytes)."""

    def get(self, resource: Literal["gpu", "cpu", "memory"]) -> QueueResource:
        """The entry for ``resource``; an empty one (all defaults) when absent."""
        entry: QueueResource | None = getattr(self, resource)
        return entry if entry is not None else QueueResource()

    def limit_or_default(self, resource: Literal["gpu", "cpu", "memory"]) -> Fraction:
        """The limit of ``resource``: 0 when unset, :data:`UNLIMITED` stays -1."""
        return self.get(resource).limit_or_default()


class QueueSpec(KaiModel):
    display_name: str | None = None
    """Display only."""
    parent_queue: str | None = None
    """Parent queue name; unset for a top-level queue."""
    priority: int | None = None
    """Higher gets over-quota first and is reclaimed last (code default 100)."""
    preempt_min_runtime: str | None = None
    """Minimum runtime before a job of this queue may be preempted."""
    reclaim_min_runtime: str | None = None
    """Minimum runtime before a job of this queue may be reclaimed."""
    resources: QueueResources | None = None
    """Quotas per resource."""

    def priority_or_default(self) -> int:
        return DEFAULT_QUEUE_PRIORITY if self.priority is None else self.priority

    def resources_or_default(self) -> QueueResources:
        """``resources``, or all-zero ones (what KAI does without its webhook)."""
        return self.resources if self.resources is not None else QueueResources()


class QueueCondition(KaiModel):
    type: str
    status: str
    last_probe_time: DateTime | None = None
    last_transition_time: DateTime | None = None
    reason: str | None = None
    message: str | None = None


class QueueStatus(KaiModel):
    """Written by the queue controller: sums over child queues and own PodGroups."""

    conditions: list[QueueCondition] | None = None
    child_queues: list[str] | None = None
    """Queues naming this queue as parent."""
    allocated: ResourceList | None = None
    """Allocated by this queue and its children."""
    allocated_non_preemptible: ResourceList | None = None
    """Allocated by non-preemptible jobs of this queue and its children."""
    requested: ResourceList | None = None
    """Requested by this queue and its children."""


class Queue(KaiModel):
    """A KAI Queue object."""

    api_version: Literal["scheduling.run.ai/v2"] = API_VERSION
    """APIVersion of this object."""
    kind: Literal["Queue"] = KIND
    """Kind of this object."""
    metadata: ObjectMeta
    spec: QueueSpec = Field(default_factory=QueueSpec)
    """Desired state of the Queue."""
    status: QueueStatus | None = None
    """Observed state, written by the queue controller."""

    def parent(self) -> str | None:
        """The parent queue's name, or ``None`` for a top-level queue."""
        return self.spec.parent_queue or None
