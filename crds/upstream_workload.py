"""Kubernetes' own workload-aware scheduling kinds (``scheduling.k8s.io``), typed once.

Why this module exists: Kubernetes 1.37 serves ``Workload`` and ``PodGroup`` in
``scheduling.k8s.io/v1beta1`` (feature gate ``GenericWorkload``) and
``CompositePodGroup`` in ``scheduling.k8s.io/v1alpha3`` (gate ``CompositePodGroup``).
A pod joins one of these PodGroups through ``spec.schedulingGroup.podGroupName``.
The podgrouper's upstream adapter reads them and the status mirror writes the
PodGroup's ``status.conditions``; both go through the models here.  This is
upstream's schema, not ours: no CRD is generated from it.

The upstream ``PodGroup`` is not KAI's: ``podgroups.scheduling.k8s.io`` here,
``podgroups.scheduling.run.ai`` in :mod:`crds.podgroup`.  :data:`PODGROUP` and
:data:`KAI_PODGROUP` name each so that messages never leave the reader guessing.

Condition types and reasons are upstream's exact names (``PodGroupStatus`` doc
comment in ``k8s.io/api/scheduling/v1beta1``).
"""

from __future__ import annotations

from typing import Final, Literal, Self

from pydantic import Field, model_validator

from crds.meta import DateTime, Int32, KaiModel, ObjectMeta

__all__ = [
    "COMPOSITE_API_VERSION",
    "COMPOSITE_KIND",
    "COMPOSITE_PODGROUP",
    "CONDITION_COMPOSITE_INITIALLY_SCHEDULED",
    "CONDITION_DISRUPTION_TARGET",
    "CONDITION_INITIALLY_SCHEDULED",
    "GROUP",
    "KAI_PODGROUP",
    "PODGROUP",
    "PODGROUP_KIND",
    "REASON_PREEMPTION_BY_SCHEDULER",
    "REASON_SCHEDULED",
    "REASON_SCHEDULER_ERROR",
    "REASON_UNSCHEDULABLE",
    "V1BETA1",
    "WORKLOAD",
    "WORKLOAD_KIND",
    "CompositePodGroup",
    "Condition",
    "PodGroup",
    "SchedulingPolicy",
    "Workload",
    "find_condition",
]

GROUP: Final = "scheduling.k8s.io"
V1BETA1: Final = "scheduling.k8s.io/v1beta1"
COMPOSITE_API_VERSION: Final = "scheduling.k8s.io/v1alpha3"
WORKLOAD_KIND: Final = "Workload"
PODGROUP_KIND: Final = "PodGroup"
COMPOSITE_KIND: Final = "CompositePodGroup"

WORKLOAD: Final = "workloads.scheduling.k8s.io"
PODGROUP: Final = "podgroups.scheduling.k8s.io"
COMPOSITE_PODGROUP: Final = "compositepodgroups.scheduling.k8s.io"
KAI_PODGROUP: Final = "podgroups.scheduling.run.ai"
"""Resource names as users see them in ``kubectl get``; used in every message."""

CONDITION_INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"
"""True once the group's scheduling requirement was met; never goes back to False."""
CONDITION_COMPOSITE_INITIALLY_SCHEDULED: Final = "CompositePodGroupInitiallyScheduled"
"""The same for a CompositePodGroup's subtree."""
CONDITION_DISRUPTION_TARGET: Final = "DisruptionTarget"
"""The group is about to be terminated by a disruption such as preemption."""
REASON_SCHEDULED: Final = "Scheduled"
"""The reason kube-scheduler gives a True PodGroupInitiallyScheduled."""
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"
REASON_PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"


class _Empty(KaiModel):
    """A union member with no fields (``basic: {}``, ``single: {}``)."""


class GangPolicy(KaiModel):
    min_count: Int32 = Field(ge=1)
    """Pods that must be schedulable together for the group to be admitted."""


class CompositeGangPolicy(KaiModel):
    min_group_count: Int32 = Field(ge=1)
    """Child groups that must be schedulable together for the composite to be admitted."""


def _exactly_one(model: KaiModel, names: tuple[str, ...], what: str) -> None:
    chosen = [name for name in names if getattr(model, name) is not None]
    if len(chosen) != 1:
        raise ValueError(f"{what}: exactly one of {', '.join(names)} must be set, got {chosen}")


class SchedulingPolicy(KaiModel):
    """``schedulingPolicy`` of a PodGroup: ``basic`` (pod by pod) or ``gang``."""

    basic: _Empty | None = None
    gang: GangPolicy | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        _exactly_one(self, ("basic", "gang"), "schedulingPolicy")
        return self


class CompositeSchedulingPolicy(KaiModel):
    """``schedulingPolicy`` of a CompositePodGroup: ``basic`` or ``gang`` over child groups."""

    basic: _Empty | None = None
    gang: CompositeGangPolicy | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        _exactly_one(self, ("basic", "gang"), "schedulingPolicy")
        return self


class DisruptionMode(KaiModel):
    """``single`` (children disrupted independently; upstream's default) or ``all``."""

    single: _Empty | None = None
    all: _Empty | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        _exactly_one(self, ("single", "all"), "disruptionMode")
        return self


class TopologyConstraint(KaiModel):
    key: str = Field(min_length=1)
    """Node-label key of the domain all pods of the group must share."""


class SchedulingConstraints(KaiModel):
    topology: list[TopologyConstraint] | None = None
    """At most one constraint in 1.37."""


class ResourceClaim(KaiModel):
    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]


class _GroupFields(KaiModel):
    """Fields a PodGroup and its template share (upstream copies one into the other)."""

    scheduling_constraints: SchedulingConstraints | None = None
    resource_claims: list[ResourceClaim] | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    preemption_policy: PreemptionPolicy | None = None


class PodGroupTemplate(_GroupFields):
    name: str = Field(min_length=1)
    scheduling_policy: SchedulingPolicy


class CompositePodGroupTemplate(KaiModel):
    name: str = Field(min_length=1)
    scheduling_policy: CompositeSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    preemption_policy: PreemptionPolicy | None = None
    pod_group_templates: list[PodGroupTemplate] | None = None
    composite_pod_group_templates: list[CompositePodGroupTemplate] | None = None


class ControllerRef(KaiModel):
    api_group: str | None = None
    kind: str
    name: str


class WorkloadSpec(KaiModel):
    controller_ref: ControllerRef | None = None
    pod_group_templates: list[PodGroupTemplate] | None = None
    composite_pod_group_templates: list[CompositePodGroupTemplate] | None = None


class Workload(KaiModel):
    """``scheduling.k8s.io/v1beta1 Workload``: the templates a controller makes groups from."""

    api_version: Literal["scheduling.k8s.io/v1beta1"] = V1BETA1
    kind: Literal["Workload"] = WORKLOAD_KIND
    metadata: ObjectMeta
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)

    def template_names(self) -> set[str]:
        """Every (composite) pod group template name, at any depth."""
        names: set[str] = set()
        pending: list[CompositePodGroupTemplate] = list(
            self.spec.composite_pod_group_templates or ()
        )
        names |= {t.name for t in self.spec.pod_group_templates or ()}
        while pending:
            composite = pending.pop()
            names.add(composite.name)
            names |= {t.name for t in composite.pod_group_templates or ()}
            pending.extend(composite.composite_pod_group_templates or ())
        return names


class WorkloadReference(KaiModel):
    workload_name: str = Field(min_length=1)
    template_name: str = Field(min_length=1)


class Condition(KaiModel):
    """``metav1.Condition``."""

    type: str
    status: Literal["True", "False", "Unknown"]
    observed_generation: int | None = None
    last_transition_time: DateTime
    reason: str
    message: str


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    """The condition of type ``type_``, or ``None``."""
    return next((c for c in conditions or () if c.type == type_), None)


class ResourceClaimStatus(KaiModel):
    name: str
    resource_claim_name: str | None = None


class PodGroupSpec(_GroupFields):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference | None = None
    scheduling_policy: SchedulingPolicy


class PodGroupStatus(KaiModel):
    conditions: list[Condition] | None = None
    resource_claim_statuses: list[ResourceClaimStatus] | None = None


class PodGroup(KaiModel):
    """``scheduling.k8s.io/v1beta1 PodGroup`` (:data:`PODGROUP`), not KAI's."""

    api_version: Literal["scheduling.k8s.io/v1beta1"] = V1BETA1
    kind: Literal["PodGroup"] = PODGROUP_KIND
    metadata: ObjectMeta
    spec: PodGroupSpec
    status: PodGroupStatus | None = None

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.status.conditions if self.status else None, type_)


class CompositePodGroupSpec(KaiModel):
    parent_composite_pod_group_name: str | None = None
    workload_ref: WorkloadReference
    scheduling_policy: CompositeSchedulingPolicy
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    priority_class_name: str | None = None
    priority: Int32 | None = None
    preemption_policy: PreemptionPolicy | None = None


class CompositePodGroupStatus(KaiModel):
    conditions: list[Condition] | None = None


class CompositePodGroup(KaiModel):
    """``scheduling.k8s.io/v1alpha3 CompositePodGroup``: a node above PodGroups."""

    api_version: Literal["scheduling.k8s.io/v1alpha3"] = COMPOSITE_API_VERSION
    kind: Literal["CompositePodGroup"] = COMPOSITE_KIND
    metadata: ObjectMeta
    spec: CompositePodGroupSpec
    status: CompositePodGroupStatus | None = None

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.status.conditions if self.status else None, type_)
