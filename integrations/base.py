"""The values and protocols every framework adapter shares.

Why this module exists: adapters are pure functions from a workload (its top
owner, the pod being grouped, the owner chain and a few read-only lookups) to a
PodGroup description.  Keeping the input (:class:`GroupingContext`) and the
output (:class:`PodGroupSpec`) as small frozen values here lets the podgrouper,
the ``podmuster group`` CLI and the simulator share every adapter without any of
them importing a Kubernetes client.  The description carries what only the podgrouper
needs (which pods belong to which subgroup); the PodGroup itself is built through the
one model, :class:`crds.podgroup.PodGroup`, and ``to_manifest`` writes the exact
``scheduling.run.ai/v2alpha2`` body KAI's podgrouper writes.

Error tree::

    GroupingError            a workload cannot be grouped; names the object and field

:class:`GroupingWarning` is not raised: it is what offline synthesis reports when it
had to leave something out (a run-time decision, a field it does not understand), so
that a guess is never silent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

import pydantic
from pydantic.alias_generators import to_camel

from crds import errors, meta
from crds import podgroup as pg_api
from crds.names import DEFAULT_QUEUE, NODE_POOL_LABEL, QUEUE_LABEL

_M = TypeVar("_M", bound=pydantic.BaseModel)

RawObject = Mapping[str, Any]
"""A Kubernetes object as decoded JSON/YAML."""


class GroupingError(Exception):
    """A workload cannot be grouped.

    ``obj`` names the object (``Kind namespace/name``) and ``field`` the field path
    that is wrong, so the message can be shown to users unchanged.
    """

    def __init__(self, obj: str, field: str, problem: str) -> None:
        self.obj = obj
        self.field = field
        self.problem = problem
        where = f" field {field}" if field else ""
        super().__init__(f"{obj}{where}: {problem}")


@dataclass(frozen=True, slots=True)
class GroupingWarning:
    """Something about a workload that was not understood, and what was done instead.

    Same parts as :class:`GroupingError`; reported next to the result, never raised.
    """

    obj: str
    field: str
    problem: str

    def __str__(self) -> str:
        where = f" field {self.field}" if self.field else ""
        return f"{self.obj}{where}: {self.problem}"


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    """An API type; ``version`` may be ``*`` in registry keys."""

    group: str
    version: str
    kind: str

    @classmethod
    def of(cls, obj: RawObject) -> GroupVersionKind:
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        return cls(group, version, str(obj.get("kind", "")))

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version} {self.kind}"


@dataclass(frozen=True, slots=True)
class TopologyConstraint:
    """A Topology CR name plus the node-label keys of the required/preferred level."""

    topology: str = ""
    required_level: str = ""
    preferred_level: str = ""

    def to_model(self) -> pg_api.TopologyConstraint:
        return pg_api.TopologyConstraint(
            topology=self.topology or None,
            required_topology_level=self.required_level or None,
            preferred_topology_level=self.preferred_level or None,
        )


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """The single ownerReference a PodGroup carries (the object grouped on)."""

    api_version: str
    kind: str
    name: str
    uid: str

    def to_model(self) -> meta.OwnerReference:
        return meta.OwnerReference(
            api_version=self.api_version, kind=self.kind, name=self.name, uid=self.uid
        )


@dataclass(frozen=True, slots=True)
class SubGroupSpec:
    """One node of the subgroup tree; leaves are gang units (pod sets).

    ``pod_names`` lists the pods (of the reconciled set) that belong to this leaf;
    the podgrouper labels them ``kai.scheduler/subgroup-name``.  A leaf writes its
    ``minMember`` (0 included); a node with children writes ``min_sub_group`` (children
    that must be schedulable) instead, or nothing (all children required).
    """

    name: str
    min_member: int = 0
    parent: str | None = None
    topology: TopologyConstraint | None = None
    pod_names: tuple[str, ...] = ()
    min_sub_group: int | None = None

    def to_model(self, *, leaf: bool = True) -> pg_api.SubGroup:
        """The API subgroup: a leaf always says its ``minMember`` (0 included), a mid-level
        subgroup never (KAI's webhook refuses ``minMember`` there); ``minSubGroup`` only on
        a mid-level subgroup."""
        return pg_api.SubGroup(
            name=self.name,
            min_member=self.min_member if leaf else None,
            min_sub_group=None if leaf else self.min_sub_group,
            parent=self.parent,
            topology_constraint=self.topology.to_model() if self.topology is not None else None,
        )


@dataclass(frozen=True, slots=True)
class PodGroupSpec:
    """Everything the podgrouper needs to write one PodGroup."""

    name: str
    namespace: str
    owner: OwnerReference
    queue: str = ""
    priority_class_name: str = ""
    preemptibility: str = ""
    min_member: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    topology: TopologyConstraint = field(default_factory=TopologyConstraint)
    subgroups: tuple[SubGroupSpec, ...] = ()
    min_sub_group: int | None = None
    """Root subgroups that must be schedulable; when set, ``minMember`` is not written."""
    preemption_delay: str = ""
    """``spec.preemptionDelay`` as a Go duration string (empty: unset)."""
    staleness_grace_period: str = ""
    """``spec.stalenessGracePeriod`` as a Go duration string (empty: unset)."""

    def subgroup_of(self, pod_name: str) -> str | None:
        """The leaf subgroup that lists ``pod_name``, if any."""
        for subgroup in self.subgroups:
            if pod_name in subgroup.pod_names:
                return subgroup.name
        return None

    def to_model(self) -> pg_api.PodGroup:
        """The PodGroup (:class:`crds.podgroup.PodGroup`, validated) this description writes.

        A value the model refuses, or a PodGroup KAI's webhook refuses on create
        (:func:`crds.podgroup.admission_problems`: two subgroups of one name, ``minSubGroup``
        on a leaf, ...), is a :class:`GroupingError` naming the PodGroup and its field
        (``spec.subGroups[1].minMember``): whatever an adapter read past its own checks,
        one workload's invalid PodGroup is an error line, never a traceback, and never
        printed as if KAI could write it."""
        preemptibility = cast("pg_api.Preemptibility | None", self.preemptibility or None)
        parents = {s.parent for s in self.subgroups if s.parent}
        sub_groups = [
            self._validated(
                f"spec.subGroups[{i}]", functools.partial(s.to_model, leaf=s.name not in parents)
            )
            for i, s in enumerate(self.subgroups)
        ]
        metadata = self._validated(
            "metadata",
            lambda: meta.ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                labels=dict(sorted(self.labels.items())) or None,
                annotations=dict(sorted(self.annotations.items())) or None,
                owner_references=[self.owner.to_model()],
            ),
        )
        spec = self._validated(
            "spec",
            lambda: pg_api.PodGroupSpec(
                min_member=None if self.min_sub_group is not None else self.min_member,
                min_sub_group=self.min_sub_group,
                queue=self.queue or None,
                priority_class_name=self.priority_class_name or None,
                preemptibility=preemptibility,
                topology_constraint=self.topology.to_model(),
                sub_groups=sub_groups or None,
                preemption_delay=self.preemption_delay or None,
                staleness_grace_period=self.staleness_grace_period or None,
            ),
        )
        for field_path, problem in pg_api.admission_problems(spec)[0][:1]:
            raise self._invalid(field_path, problem)
        return pg_api.PodGroup(metadata=metadata, spec=spec)

    def _invalid(self, field_path: str, problem: str) -> GroupingError:
        """The error of a PodGroup refused at ``field_path``."""
        return GroupingError(
            f"PodGroup {self.namespace}/{self.name}",
            field_path,
            f"{problem} (the PodGroup made for the workload is not valid)",
        )

    def _validated(self, prefix: str, make: Callable[[], _M]) -> _M:
        """``make()``; a refused value is a :class:`GroupingError` at ``prefix`` + its path."""
        try:
            return make()
        except pydantic.ValidationError as exc:
            path, problem = errors.first_problem(exc)  # attribute names: built by keyword
            path = ".".join(to_camel(part) for part in path.split(".")) if path else ""
            raise self._invalid(f"{prefix}.{path}" if path else prefix, problem) from exc

    def to_manifest(self) -> dict[str, Any]:
        """The PodGroup object exactly as KAI's podgrouper writes it (KAI's key order)."""
        body = self.to_model().to_manifest()
        spec = body["spec"]
        spec["topologyConstraint"] = _kai_order(spec["topologyConstraint"])
        for subgroup in spec.get("subGroups") or ():
            if "topologyConstraint" in subgroup:
                subgroup["topologyConstraint"] = _kai_order(subgroup["topologyConstraint"])
        return body


def _kai_order(constraint: dict[str, Any]) -> dict[str, Any]:
    """A topology constraint's keys in the order KAI writes them (alphabetical)."""
    return dict(sorted(constraint.items()))


@dataclass(frozen=True, slots=True)
class DefaultPriority:
    """One entry of the default-priorities ConfigMap (``types`` key)."""

    type_name: str
    group: str = ""
    priority_name: str = ""
    preemptibility: str = ""


@dataclass(frozen=True, slots=True)
class GroupingSettings:
    """Podgrouper settings the adapters read."""

    queue_label_key: str = QUEUE_LABEL
    nodepool_label_key: str = NODE_POOL_LABEL
    default_queue: str = DEFAULT_QUEUE
    knative_gang_schedule: bool = True
    default_priorities_configmap: str = ""
    """``namespace/name`` of the default-priorities ConfigMap (offline grouping reads it
    from the given objects; empty: none)."""
    reproduce_kai_bugs: bool = False
    """Follow KAI where docs/semantics.md marks its behaviour as a bug (for A/B tests)."""


class ObjectLookup(Protocol):
    """Read-only access to related objects (the RayCluster behind a RayJob, ...)."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> RawObject | None:
        """The object, or ``None`` when it does not exist."""
        ...

    def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> Sequence[RawObject]:
        """Objects of that type in ``namespace`` whose labels include ``labels``."""
        ...


class EmptyLookup:
    """An :class:`ObjectLookup` that knows no objects."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> RawObject | None:
        return None

    def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> Sequence[RawObject]:
        return ()


@dataclass(frozen=True, slots=True)
class GroupingContext:
    """The input of one grouping decision: one pod and what owns it.

    ``owners`` is the owner chain bottom→top, ending with ``top_owner``; it is empty
    for an owner-less pod (which is then its own top owner).
    """

    top_owner: RawObject
    pod: RawObject
    owners: tuple[RawObject, ...] = ()
    lookup: ObjectLookup = field(default_factory=EmptyLookup)
    priority_classes: frozenset[str] = frozenset()
    default_priorities: tuple[DefaultPriority, ...] = ()
    settings: GroupingSettings = field(default_factory=GroupingSettings)


@dataclass(frozen=True, slots=True)
class ObjectQuery:
    """A related object a grouper reads: one by ``name``, or a list selected by ``labels``."""

    api_version: str
    kind: str
    namespace: str
    name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class WorkloadGrouper(Protocol):
    """Turns one pod of a workload into the description of its PodGroup."""

    @property
    def name(self) -> str:
        """A short name for messages (KAI's plugin name)."""
        ...

    def group(self, ctx: GroupingContext) -> PodGroupSpec:
        """The PodGroup for ``ctx.pod``; raises :class:`GroupingError`."""
        ...


@runtime_checkable
class NeedsRelatedObjects(Protocol):
    """Optional capability: a grouper that reads objects besides the owner chain.

    The podgrouper fetches what :meth:`related_objects` names (``ctx.lookup`` may be
    empty at that point) and passes them through the lookup of the real call.
    """

    def related_objects(self, ctx: GroupingContext) -> tuple[ObjectQuery, ...]:
        """The objects :meth:`WorkloadGrouper.group` may look up for ``ctx``."""
        ...
