"""PodGroup (``scheduling.run.ai/v2alpha2``): the gang the scheduler places.

A PodGroup is written by the podgrouper (or by hand) and read by the scheduler;
its status is written by the podgroup controller (``resourcesStatus``) and the
scheduler (``schedulingConditions``). Field names are KAI's, including
``subGroups`` (not ``subgroups``) and ``transitionID``.

Defaults KAI applies in code (never injected into dumps; use the helpers):

=====================  =============================================================
``minMember``          without ``subGroups``: one implicit pod set :data:`DEFAULT_SUBGROUP`
                       with min-available ``max(minMember, 1)``; on a leaf subgroup
                       its min-available as written (0: no gang)
``minSubGroup``        unset: every direct child is required
``markUnschedulable``  ``True``
``schedulingBackoff``  :data:`SCHEDULING_BACKOFF_NONE` (-1); the other documented
                       value is :data:`SCHEDULING_BACKOFF_ONCE` (1)
``preemptibility``     derived from the priority value
                       (:func:`crds.rules.is_preemptible`)
``priorityClassName``  unknown/empty ⇒ the ``globalDefault`` PriorityClass, else
                       :data:`crds.rules.DEFAULT_PRIORITY` (:func:`crds.rules.priority_of`)
=====================  =============================================================
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

from pydantic import Field

from crds import rules
from crds.errors import shown
from crds.meta import (
    CreatePattern,
    DateTime,
    Duration,
    Int32,
    KaiModel,
    ObjectMeta,
    ResourceList,
)

__all__ = [
    "API_VERSION",
    "CONDITION_UNSCHEDULABLE_ON_NODE_POOL",
    "DEFAULT_SUBGROUP",
    "KIND",
    "MIN_FIELDS_EXCLUSIVE",
    "MIN_MEMBER_MISSING",
    "MIN_MEMBER_ON_PARENT",
    "MIN_SUB_GROUP_ON_LEAF",
    "MIN_SUB_GROUP_OVER_CHILDREN",
    "MIN_SUB_GROUP_TOO_SMALL",
    "NON_PREEMPTIBLE",
    "PREEMPTIBLE",
    "QUEUE_REASONS",
    "REASONS_SEPARATOR",
    "REASON_ADMISSION_GATED",
    "REASON_CODES",
    "REASON_NON_PREEMPTIBLE_OVER_QUOTA",
    "REASON_OVER_LIMIT",
    "REASON_PREEMPTION_DELAY_NOT_ELAPSED",
    "REASON_QUEUE_DOES_NOT_EXIST",
    "SCHEDULER_READS_ANYWAY",
    "SCHEDULING_BACKOFF_NONE",
    "SCHEDULING_BACKOFF_ONCE",
    "SUBGROUP_NAME_PATTERN",
    "WARNINGS_ON_CREATE",
    "WARNINGS_ON_UPDATE",
    "PodGroup",
    "PodGroupCondition",
    "PodGroupResourcesStatus",
    "PodGroupSpec",
    "PodGroupStatus",
    "Preemptibility",
    "QueueDetails",
    "SchedulingCondition",
    "SubGroup",
    "TopologyConstraint",
    "UnschedulableDetails",
    "UnschedulableReason",
    "admission_problems",
    "marks_unschedulable",
    "min_definition_problems",
    "reason_code",
    "subgroup_problems",
]

API_VERSION: Final = "scheduling.run.ai/v2alpha2"
KIND: Final = "PodGroup"

PREEMPTIBLE: Final = "preemptible"
NON_PREEMPTIBLE: Final = "non-preemptible"
Preemptibility = Literal["preemptible", "non-preemptible"]

DEFAULT_SUBGROUP: Final = "default"
"""The implicit pod set of a PodGroup without subGroups (and of unlabelled pods)."""
SCHEDULING_BACKOFF_NONE: Final = -1
SCHEDULING_BACKOFF_ONCE: Final = 1

CONDITION_UNSCHEDULABLE_ON_NODE_POOL: Final = "UnschedulableOnNodePool"
REASON_NON_PREEMPTIBLE_OVER_QUOTA: Final = "NonPreemptibleOverQuota"
REASON_OVER_LIMIT: Final = "OverLimit"
REASON_QUEUE_DOES_NOT_EXIST: Final = "QueueDoesNotExist"
REASON_PREEMPTION_DELAY_NOT_ELAPSED: Final = "PreemptionDelayNotElapsed"
"""The PodGroup may not evict others yet (``spec.preemptionDelay``, KAI v0.17)."""
REASON_ADMISSION_GATED: Final = "AdmissionGated"
"""podmuster only: the gang is held at its queue's admission gate."""
REASON_CODES: Final = (
    REASON_NON_PREEMPTIBLE_OVER_QUOTA,
    REASON_OVER_LIMIT,
    REASON_QUEUE_DOES_NOT_EXIST,
    REASON_ADMISSION_GATED,
    REASON_PREEMPTION_DELAY_NOT_ELAPSED,
)
"""The ``reasons[].reason`` codes besides ``Unschedulable``; a reason's text starts with
its code (``OverLimit: ...``), after the gang member it names, if any."""
REASONS_SEPARATOR: Final = "; "
"""Between the reasons of one message (a pod's ``PodScheduled`` condition, a PodGroup's
scheduling condition), each said once."""
QUEUE_REASONS: Final = frozenset(
    {REASON_NON_PREEMPTIBLE_OVER_QUOTA, REASON_OVER_LIMIT, REASON_QUEUE_DOES_NOT_EXIST}
)
"""Reasons that no new node removes: the queue, not the cluster, holds the job back."""
_REASON_CODE: Final = re.compile(r"^(?:pod [^:]+: )?(\w+): ")


def reason_code(reason: str) -> str:
    """The API reason of a pending reason's text: its ``Code:`` prefix if it is one of
    :data:`REASON_CODES`, else ``Unschedulable``."""
    match = _REASON_CODE.match(reason)
    if match and match.group(1) in REASON_CODES:
        return match.group(1)
    return "Unschedulable"


SUBGROUP_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A subgroup's ``name`` and ``parent``: a DNS label (RFC 1123), as KAI v0.17's CRD says;
enforced on create (:func:`admission_problems`), not on reading: podmuster's earlier CRD
had no pattern, and PodGroups stored under it are still scheduled, as KAI's scheduler
reads them."""
_SUBGROUP_NAME: Final = CreatePattern(SUBGROUP_NAME_PATTERN)

MinMember = Annotated[Int32, Field(ge=0)]
MinSubGroup = Annotated[Int32, Field(ge=0)]


class TopologyConstraint(KaiModel):
    """Placement constraint; applied only when ``topology`` names a Topology."""

    topology: str | None = None
    """Name of the Topology object to place against; the constraint applies only when set."""
    required_topology_level: str | None = None
    """Node-label key of the level all pods must share a domain of."""
    preferred_topology_level: str | None = None
    """Node-label key of the level the scheduler tries to keep pods within."""


class SubGroup(KaiModel):
    """A node of the subgroup tree: a pod set when it has no children."""

    name: Annotated[str, _SUBGROUP_NAME] = Field(min_length=1)
    """Unique subgroup name (a DNS label); pods join a leaf subgroup with label
    kai.scheduler/subgroup-name."""
    min_member: MinMember | None = None
    """Gang size of a leaf subgroup (0: no gang); exclusive with minSubGroup."""
    min_sub_group: MinSubGroup | None = None
    """Children that must be schedulable for this subgroup to be; exclusive with minMember."""
    parent: Annotated[str, _SUBGROUP_NAME] | None = None
    """Name of the parent subgroup; unset means under the PodGroup root."""
    topology_constraint: TopologyConstraint | None = None
    """Placement constraint for this subgroup."""

    def min_available(self) -> int:
        """Gang size of this subgroup when it is a pod set: ``minMember`` (0 or unset: each pod
        alone, as KAI's scheduler reads it)."""
        return self.min_member or 0


class PodGroupSpec(KaiModel):
    """``spec``: all fields optional, as in KAI's schema."""

    min_member: MinMember | None = None
    """Gang size without subGroups (0: no gang requirement); exclusive with minSubGroup."""
    min_sub_group: MinSubGroup | None = None
    """Root subgroups that must be schedulable for the PodGroup to be; exclusive with minMember."""
    queue: str | None = None
    """Leaf queue name; a missing queue leaves the PodGroup unscheduled."""
    priority_class_name: str | None = None
    """PriorityClass name; unknown or empty means the globalDefault class, else 50."""
    preemptibility: Preemptibility | None = None
    """preemptible or non-preemptible; unset means derived from the priority (< 100 is
    preemptible)."""
    parallelism: Int32 | None = None
    """Informational; not read by the scheduler."""
    completions: Int32 | None = None
    """Informational; not read by the scheduler."""
    backoff_limit: Int32 | None = None
    """Informational; not read by the scheduler."""
    mark_unschedulable: bool | None = None
    """Set PodScheduled=False on pods that cannot be scheduled (code default true)."""
    scheduling_backoff: Int32 | None = None
    """-1 (code default): retry every cycle; 1: skip once marked unschedulable on this node pool."""
    topology_constraint: TopologyConstraint | None = None
    """Placement constraint for the whole PodGroup."""
    sub_groups: list[SubGroup] | None = None
    """Tree of subgroups; leaves are pod sets with their own gang size."""
    preemption_delay: Duration | None = None
    """Least time pending (since creation or last eviction) before this PodGroup may evict."""
    staleness_grace_period: Duration | None = None
    """Time stale before eviction (negative: never; unset: the scheduler's default)."""

    def mark_unschedulable_or_default(self) -> bool:
        return marks_unschedulable(self.mark_unschedulable)

    def scheduling_backoff_or_default(self) -> int:
        if self.scheduling_backoff is None:
            return SCHEDULING_BACKOFF_NONE
        return self.scheduling_backoff

    def default_min_available(self) -> int:
        """Min-available of the implicit :data:`DEFAULT_SUBGROUP` (used without subGroups)."""
        return max(self.min_member or 0, 1)

    def preemptibility_for(self, priority: int) -> Preemptibility:
        """The explicit ``preemptibility``, else the one derived from ``priority``
        (:func:`crds.rules.is_preemptible`)."""
        if rules.is_preemptible(self.preemptibility, priority):
            return PREEMPTIBLE
        return NON_PREEMPTIBLE


def subgroup_problems(spec: PodGroupSpec) -> list[tuple[str, str]]:
    """``(field, message)`` for each way ``spec.subGroups`` fails to form a tree.

    Names are unique; every ``parent`` names a subgroup of the same PodGroup
    (compared without case, as the scheduler links them); following parents never
    comes back to a subgroup. The CRD schema cannot say this; the webhook and the
    scheduler both apply it.
    """
    problems: list[tuple[str, str]] = []
    first_index: dict[str, int] = {}
    for index, sub in enumerate(spec.sub_groups or ()):
        if sub.name in first_index:
            also = f"spec.subGroups[{first_index[sub.name]}]"
            message = f"duplicate subgroup name {sub.name!r} (also {also})"
            problems.append((f"spec.subGroups[{index}].name", message))
        else:
            first_index[sub.name] = index
    by_lower = {name.lower(): index for name, index in first_index.items()}
    parents: dict[str, str] = {}
    for name, index in first_index.items():
        parent = (spec.sub_groups or [])[index].parent
        if not parent:
            continue
        if parent.lower() not in by_lower:
            problems.append((f"spec.subGroups[{index}].parent", f"no subgroup named {parent!r}"))
        else:
            parents[name.lower()] = parent.lower()
    reported: set[str] = set()
    names = {name.lower(): name for name in first_index}
    for start in parents:
        cycle = _cycle_from(start, parents)
        if cycle and not reported & set(cycle):
            reported |= set(cycle)
            path = " -> ".join(names[n] for n in [*cycle, cycle[0]])
            field = f"spec.subGroups[{by_lower[cycle[0]]}].parent"
            problems.append((field, f"subgroup parents form a cycle: {path}"))
    return problems


MIN_FIELDS_EXCLUSIVE: Final = "minFieldsExclusive"
"""minMember and minSubGroup both set on one object (an error)."""
MIN_SUB_GROUP_ON_LEAF: Final = "minSubGroupOnLeaf"
"""minSubGroup on a subgroup without children (an error)."""
MIN_MEMBER_MISSING: Final = "minMemberMissing"
"""A leaf subgroup without minMember (an error)."""
MIN_MEMBER_ON_PARENT: Final = "minMemberOnParent"
"""minMember on a mid-level subgroup: an error on create, a warning on update (ignored)."""
MIN_SUB_GROUP_TOO_SMALL: Final = "minSubGroupTooSmall"
"""spec.minSubGroup below 1 (an error)."""
MIN_SUB_GROUP_OVER_CHILDREN: Final = "minSubGroupOverChildren"
"""minSubGroup above the number of direct children: a warning (the group never runs)."""
WARNINGS_ON_CREATE: Final = frozenset({MIN_SUB_GROUP_OVER_CHILDREN})
"""Kinds the webhook admits with a warning on create (KAI v0.17's choice)."""
WARNINGS_ON_UPDATE: Final = frozenset({MIN_SUB_GROUP_OVER_CHILDREN, MIN_MEMBER_ON_PARENT})
"""Kinds the webhook admits with a warning on update (KAI v0.17's choice)."""
SCHEDULER_READS_ANYWAY: Final = frozenset({MIN_MEMBER_MISSING, MIN_MEMBER_ON_PARENT})
"""Kinds the scheduler reads as KAI's does rather than refusing the PodGroup: a leaf
without minMember needs 0 pods, minMember on a mid-level subgroup is ignored."""


def min_definition_problems(spec: PodGroupSpec) -> list[tuple[str, str, str]]:
    """``(field, message, kind)`` for each misuse of ``minMember``/``minSubGroup`` (KAI v0.17).

    Only meaningful once :func:`subgroup_problems` is empty (the subgroups form a
    tree). The rules: the two fields are mutually exclusive on the spec and on
    each subgroup; a leaf subgroup needs ``minMember`` and may not have
    ``minSubGroup``; a mid-level subgroup may not have ``minMember``;
    ``spec.minSubGroup`` is at least 1; no ``minSubGroup`` exceeds the number of
    direct children (root subgroups for the spec). ``kind`` is one of the
    ``MIN_*`` constants; :data:`WARNINGS_ON_CREATE` and :data:`WARNINGS_ON_UPDATE`
    say which the webhook only warns about.
    """
    problems: list[tuple[str, str, str]] = []
    subgroups = spec.sub_groups or []
    if spec.min_member is not None and spec.min_sub_group is not None:
        message = "minMember and minSubGroup are mutually exclusive: set one of them"
        problems.append(("spec.minSubGroup", message, MIN_FIELDS_EXCLUSIVE))
    children: dict[str, int] = {}
    for sub in subgroups:
        key = sub.parent.lower() if sub.parent else ""
        children[key] = children.get(key, 0) + 1
    for index, sub in enumerate(subgroups):
        where = f"spec.subGroups[{index}]"
        count = children.get(sub.name.lower(), 0)
        if sub.min_member is not None and sub.min_sub_group is not None:
            message = f"subgroup {sub.name!r}: minMember and minSubGroup are mutually exclusive"
            problems.append((f"{where}.minSubGroup", message, MIN_FIELDS_EXCLUSIVE))
            continue
        if count == 0:
            if sub.min_sub_group is not None:
                message = f"subgroup {sub.name!r} has no child subgroups: minSubGroup not allowed"
                problems.append((f"{where}.minSubGroup", message, MIN_SUB_GROUP_ON_LEAF))
            if sub.min_member is None:
                message = f"subgroup {sub.name!r} has no child subgroups: minMember is required"
                problems.append((f"{where}.minMember", message, MIN_MEMBER_MISSING))
            continue
        if sub.min_member is not None:
            message = (
                f"subgroup {sub.name!r} has child subgroups: minMember not allowed"
                " (use minSubGroup)"
            )
            problems.append((f"{where}.minMember", message, MIN_MEMBER_ON_PARENT))
        if sub.min_sub_group is not None and sub.min_sub_group > count:
            message = (
                f"subgroup {sub.name!r}: minSubGroup ({sub.min_sub_group}) exceeds its"
                f" {count} direct child subgroups"
            )
            problems.append((f"{where}.minSubGroup", message, MIN_SUB_GROUP_OVER_CHILDREN))
    if spec.min_sub_group is not None and spec.min_member is None:
        roots = children.get("", 0)
        if spec.min_sub_group < 1:
            message = "must be at least 1 on the PodGroup"
            problems.append(("spec.minSubGroup", message, MIN_SUB_GROUP_TOO_SMALL))
        elif spec.min_sub_group > roots:
            message = f"minSubGroup ({spec.min_sub_group}) exceeds the {roots} root subgroups"
            problems.append(("spec.minSubGroup", message, MIN_SUB_GROUP_OVER_CHILDREN))
    return problems


def _name_problems(spec: PodGroupSpec) -> list[tuple[str, str]]:
    """Subgroup names and parents that are no DNS label (the CRD's pattern, on create)."""
    problems = []
    for index, sub in enumerate(spec.sub_groups or ()):
        for field, value in (("name", sub.name), ("parent", sub.parent)):
            if value is not None and not _SUBGROUP_NAME.matches(value):
                message = (
                    f"must be a DNS label (lower case letters, digits and '-'), got {shown(value)}"
                )
                problems.append((f"spec.subGroups[{index}].{field}", message))
    return problems


def admission_problems(
    spec: PodGroupSpec, *, update: bool = False
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(errors, warnings)``, each ``(field, message)``, of a PodGroup ``spec`` the model
    accepted, by KAI v0.17's webhook rules on create (or ``update``): the subgroups form a
    tree (:func:`subgroup_problems`; when they do not, that is all that is said), then
    :func:`min_definition_problems`, of which :data:`WARNINGS_ON_CREATE` (or
    :data:`WARNINGS_ON_UPDATE`) are only warnings."""
    tree = [*_name_problems(spec), *subgroup_problems(spec)]
    if tree:
        return tree, []
    soft = WARNINGS_ON_UPDATE if update else WARNINGS_ON_CREATE
    errors: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    for field, message, kind in min_definition_problems(spec):
        (warnings if kind in soft else errors).append((field, message))
    return errors, warnings


def _cycle_from(start: str, parents: dict[str, str]) -> list[str]:
    """The cycle reached by following parents from ``start`` (in order), or []."""
    seen: list[str] = []
    node: str | None = start
    while node is not None and node not in seen:
        seen.append(node)
        node = parents.get(node)
    if node is None:
        return []
    return seen[seen.index(node) :]


class PodGroupCondition(KaiModel):
    """``status.conditions[]`` (in the API; KAI writes none at the reference HEAD)."""

    type: str | None = None
    status: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: DateTime | None = None
    reason: str | None = None
    message: str | None = None


class QueueDetails(KaiModel):
    """Queue accounting at the time a PodGroup was found unschedulable."""

    name: str | None = None
    """Queue name."""
    queue_requested_resources: ResourceList | None = None
    queue_deserved_resources: ResourceList | None = None
    queue_allocated_resources: ResourceList | None = None
    queue_allocated_non_preemptible_resources: ResourceList | None = None
    queue_resource_limits: ResourceList | None = None
    pod_group_requested_resources: ResourceList | None = None
    pod_group_requested_non_preemptible_resources: ResourceList | None = None


class UnschedulableDetails(KaiModel):
    """``reasons[].details``: structured data for specific reasons."""

    queue_details: QueueDetails | None = None
    """Queue accounting when the PodGroup was found unschedulable."""


class UnschedulableReason(KaiModel):
    """One ``reasons[]`` entry of a scheduling condition."""

    reason: str | None = None
    """NonPreemptibleOverQuota, OverLimit, QueueDoesNotExist or a fit error."""
    message: str | None = None
    details: UnschedulableDetails | None = None


class SchedulingCondition(KaiModel):
    """``status.schedulingConditions[]``, type :data:`CONDITION_UNSCHEDULABLE_ON_NODE_POOL`."""

    type: str | None = None
    """UnschedulableOnNodePool."""
    node_pool: str | None = None
    """Node pool the condition was observed on."""
    reason: str | None = None
    """Deprecated: use reasons."""
    message: str | None = None
    """Deprecated: use reasons."""
    reasons: list[UnschedulableReason] | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: DateTime | None = None
    status: str | None = None


class PodGroupResourcesStatus(KaiModel):
    """GPU in fractions, CPU in millicores, memory in MB (KAI's units)."""

    allocated: ResourceList | None = None
    """GPU in fractions, CPU in millicores, memory in MB."""
    allocated_non_preemptible: ResourceList | None = None
    """Allocated resources of a non-preemptible PodGroup."""
    requested: ResourceList | None = None
    """Requested resources of the PodGroup's pods."""


class PodGroupStatus(KaiModel):
    phase: str | None = None
    conditions: list[PodGroupCondition] | None = None
    scheduling_conditions: list[SchedulingCondition] | None = None
    running: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    pending: Int32 | None = None
    resources_status: PodGroupResourcesStatus | None = None


class PodGroup(KaiModel):
    """A KAI PodGroup object."""

    api_version: Literal["scheduling.run.ai/v2alpha2"] = API_VERSION
    """APIVersion of this object."""
    kind: Literal["PodGroup"] = KIND
    """Kind of this object."""
    metadata: ObjectMeta
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    """Desired state of the PodGroup. Every field is optional."""
    status: PodGroupStatus | None = None
    """Observed state, written by podmuster's controllers and scheduler."""

    def has_subgroups(self) -> bool:
        return bool(self.spec.sub_groups)


def marks_unschedulable(value: object) -> bool:
    """``spec.markUnschedulable`` as KAI reads it (``GetMarkUnschedulableValue``): only an
    explicit ``false`` keeps ``PodScheduled=False`` off the group's pending pods, so that
    autoscalers, which act on that condition, leave the gang alone."""
    return value is not False
