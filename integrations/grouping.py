"""Offline grouping: from any mix of manifests to PodGroups and pod assignments.

Why this module exists: ``podmuster group``, the demo and the simulator need "what
would the podgrouper make of these workloads" without a cluster.
:func:`group_workloads` normalizes the given objects (namespace, generated names,
stable uids), synthesizes the pods of workloads given without
any, walks every pod's owner chain, runs the registered adapter and collects the
PodGroups (deduplicated: the last pod's view wins, as the podgrouper's last update
would, labels and annotations merged) and each pod's PodGroup and subgroup.  One
bad workload is reported in ``errors`` and never stops the others; what could only
be guessed (a kind whose pods podmuster cannot make, a run-time decision) is reported
in ``warnings``, so no guess is silent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crds.names import POD_GROUP_ANNOTATION, SUBGROUP_LABEL
from integrations import (
    base,
    default,
    external,
    fields,
    objects,
    registry,
    resolution,
    synthesis,
    templates,
    upstream_workload,
)

CHART_PRIORITY_CLASSES = frozenset({"train", "build-preemptible", "build", "inference"})
"""The PriorityClasses KAI's chart installs; the default set of existing classes."""


@dataclass(frozen=True, slots=True)
class PodAssignment:
    """Which PodGroup (and leaf subgroup) one pod joins."""

    pod: str
    pod_group: str
    sub_group: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"pod": self.pod, "podGroup": self.pod_group, "subGroup": self.sub_group}


@dataclass(frozen=True, slots=True)
class ObjectError:
    """A workload (or pod) that could not be grouped, and why."""

    object: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"object": self.object, "message": self.message}


@dataclass(frozen=True, slots=True)
class ObjectWarning:
    """A workload that was grouped, but not entirely understood: what and why."""

    object: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"object": self.object, "message": self.message}


def detail(report: ObjectError | ObjectWarning) -> str:
    """A report's message without the object it starts with: what follows the object on an
    error line (``FILE: Kind ns/name: field F: problem``)."""
    if report.message.startswith(report.object):
        return report.message[len(report.object) :].lstrip(" :")
    return report.message


@dataclass(frozen=True, slots=True)
class GroupingResult:
    """PodGroup manifests (sorted by namespace/name), assignments and errors."""

    pod_groups: tuple[dict[str, Any], ...] = ()
    assignments: tuple[PodAssignment, ...] = ()
    errors: tuple[ObjectError, ...] = ()
    warnings: tuple[ObjectWarning, ...] = ()
    pods: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    """Every pod that was grouped, the synthesized ones included."""

    def to_list(self) -> dict[str, Any]:
        """The PodGroups as a ``v1 List`` (docs/cli.md §3)."""
        return {"apiVersion": "v1", "kind": "List", "items": list(self.pod_groups)}

    def assignment_dicts(self) -> list[dict[str, str | None]]:
        """``{pod: ns/name, podGroup: name, subGroup: name-or-null}`` per pod."""
        return [a.to_dict() for a in self.assignments]


def _priority_class_names(objs: Iterable[base.RawObject]) -> set[str]:
    return {
        fields.name(o)
        for o in objs
        if o.get("kind") == "PriorityClass"
        and str(o.get("apiVersion", "")).startswith("scheduling.k8s.io/")
    }


def _flatten(objs: Iterable[base.RawObject]) -> list[base.RawObject]:
    """The objects, with the ``items`` of any ``List`` (``kubectl get -o yaml``) inlined."""
    result: list[base.RawObject] = []
    for obj in objs:
        items = obj.get("items")
        if str(obj.get("kind", "")).endswith("List") and isinstance(items, list):
            result.extend(_flatten(i for i in items if isinstance(i, Mapping)))
        else:
            result.append(obj)
    return result


def _merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the labels/annotations of ``old`` it lacks (the podgrouper merges them)."""
    merged = {**new, "metadata": dict(new["metadata"])}
    for key in ("labels", "annotations"):
        values = {**old["metadata"].get(key, {}), **new["metadata"].get(key, {})}
        if values:
            merged["metadata"][key] = dict(sorted(values.items()))
    return merged


class _Run:
    """The state of one :func:`group_workloads` call."""

    def __init__(
        self,
        given: Sequence[base.RawObject],
        priority_classes: frozenset[str],
        settings: base.GroupingSettings,
        default_priorities: tuple[base.DefaultPriority, ...],
        groupers: registry.GrouperRegistry | None = None,
    ) -> None:
        self.settings = settings
        self.registry = groupers or registry.build_registry(settings=settings)
        self.index = objects.ObjectIndex()
        self.errors: dict[tuple[str, str], None] = {}
        self.warnings: dict[tuple[str, str], None] = {}
        self.normalized = [templates.normalized(o) for o in _flatten(given) if self.named(o)]
        for obj in self.normalized:
            self.index.add(obj)
        self.priority_classes = priority_classes | _priority_class_names(self.normalized)
        self.default_priorities = default_priorities + self._configmap_defaults()

    def named(self, obj: base.RawObject) -> bool:
        """Whether ``obj``'s ``metadata`` is a map (or absent); otherwise it is an error and
        the object is left out, never given a made-up name in place of what it said."""
        try:
            fields.checked_metadata(obj)
        except base.GroupingError as exc:
            self.errors[(exc.obj, str(exc))] = None
            return False
        return True

    def _configmap_defaults(self) -> tuple[base.DefaultPriority, ...]:
        ref = self.settings.default_priorities_configmap
        if not ref:
            return ()
        namespace, _, name = ref.rpartition("/")
        return resolution.default_priorities(self.index.get("v1", "ConfigMap", namespace, name))

    def error(self, obj: base.RawObject, exc: base.GroupingError) -> None:
        self.errors[(fields.describe(obj), str(exc))] = None

    def warn(self, warning: base.GroupingWarning) -> None:
        self.warnings[(warning.obj, str(warning))] = None

    def top_of(self, pod: base.RawObject) -> base.RawObject | None:
        try:
            chain = self.index.owner_chain(pod)
        except base.GroupingError:
            return None
        return chain[-1] if chain else pod

    def synthesize_missing(self) -> None:
        """Add the pods of every top-level workload that has none among the objects.

        When intermediate owners of the workload are given (a RayJob with its
        RayCluster, a Deployment with its ReplicaSet), the deepest given ones are
        expanded instead of the workload, so no second copy is invented.
        """
        pods = [o for o in self.index if objects.is_pod(o)]
        with_pods = {fields.uid(top) for top in map(self.top_of, pods) if top is not None}
        children: dict[str, list[base.RawObject]] = {}
        for obj in self.normalized:
            refs = fields.owner_references(obj)
            if refs and not objects.is_pod(obj):
                children.setdefault(str(refs[0].get("uid", "")), []).append(obj)
        for obj in self.normalized:
            if objects.is_pod(obj) or fields.owner_references(obj) or not objects.is_workload(obj):
                continue
            if fields.uid(obj) in with_pods:
                continue
            self.expand_deepest(obj, children)

    def expand_deepest(
        self, obj: base.RawObject, children: Mapping[str, list[base.RawObject]]
    ) -> None:
        below = children.get(fields.uid(obj), [])
        if below:
            for child in below:
                self.expand_deepest(child, children)
            return
        try:
            created = synthesis.synthesize(obj, self.index, self.warn)
        except base.GroupingError as exc:
            self.error(obj, exc)
            return
        for child in created:
            self.index.add(child)

    def context(
        self, pod: base.RawObject, chain: tuple[base.RawObject, ...]
    ) -> base.GroupingContext:
        return base.GroupingContext(
            top_owner=chain[-1] if chain else pod,
            pod=pod,
            owners=chain,
            lookup=self.index,
            priority_classes=self.priority_classes,
            default_priorities=self.default_priorities,
            settings=self.settings,
        )

    def run(self) -> GroupingResult:
        self.synthesize_missing()
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        assignments: list[PodAssignment] = []
        pods = sorted(
            (o for o in self.index if objects.is_pod(o)),
            key=lambda p: (fields.namespace(p), fields.name(p)),
        )
        grouped_tops: set[str] = set()
        for pod in pods:
            top: base.RawObject = pod
            ref = f"{fields.namespace(pod)}/{fields.name(pod)}"
            try:
                user_group = fields.annotations_of(pod).get(POD_GROUP_ANNOTATION)
                ours = upstream_workload.scheduling_group(pod)  # grouped by its upstream group
                if user_group and not fields.owner_references(pod) and not ours:
                    # an owner-less pod that names its PodGroup is left alone (user-managed)
                    subgroup = fields.labels(pod).get(SUBGROUP_LABEL)
                    assignments.append(PodAssignment(ref, str(user_group), subgroup))
                    continue
                chain = self.index.owner_chain(pod)
                top = chain[-1] if chain else pod
                if self.left_alone(pod, chain, ref, assignments):
                    continue
                spec = self.registry.group(self.context(pod, chain))
                manifest = spec.to_manifest()
            except base.GroupingError as exc:
                self.error(top, exc)
                continue
            grouped_tops.add(fields.uid(top))
            key = (spec.namespace, spec.name)
            groups[key] = _merge(groups[key], manifest) if key in groups else manifest
            assignments.append(PodAssignment(ref, spec.name, spec.subgroup_of(fields.name(pod))))
        self.group_podless(grouped_tops, groups)
        for warning in upstream_workload.gang_shortfalls(self.index):
            self.warn(warning)
        return GroupingResult(
            pod_groups=tuple(groups[k] for k in sorted(groups)),
            assignments=tuple(assignments),
            errors=tuple(ObjectError(o, m) for o, m in self.errors),
            warnings=tuple(ObjectWarning(o, m) for o, m in self.warnings),
            pods=tuple(dict(p) for p in pods),
        )

    def left_alone(
        self,
        pod: base.RawObject,
        chain: tuple[base.RawObject, ...],
        ref: str,
        assignments: list[PodAssignment],
    ) -> bool:
        """An external-PodGroup pod: assigned to the PodGroup it names, never grouped."""
        asking = external.skipped_by((pod, *chain))
        if asking is None:
            return False
        user_group = fields.annotations_of(pod).get(POD_GROUP_ANNOTATION)
        if user_group:
            subgroup = fields.labels(pod).get(SUBGROUP_LABEL)
            assignments.append(PodAssignment(ref, str(user_group), subgroup))
        else:
            self.warn(
                base.GroupingWarning(
                    fields.describe(pod),
                    f"metadata.annotations[{POD_GROUP_ANNOTATION}]",
                    f"is missing: {external.reason(asking)}, so the pod joins no PodGroup"
                    " and is not scheduled until it names one",
                )
            )
        return True

    def group_podless(
        self, grouped: set[str], groups: dict[tuple[str, str], dict[str, Any]]
    ) -> None:
        """Workloads of kinds with no adapter and no pods still get their default PodGroup."""
        for obj in self.normalized:
            if fields.uid(obj) in grouped or fields.owner_references(obj) or objects.is_pod(obj):
                continue
            if not objects.is_workload(obj) or synthesis.has_hook(obj):
                continue
            grouper = self.registry.lookup(base.GroupVersionKind.of(obj))
            if not isinstance(grouper, default.DefaultGrouper):
                continue
            placeholder = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"namespace": fields.namespace(obj)},
            }
            try:
                if external.requests_skip(obj):
                    continue
                spec = self.registry.group(self.context(placeholder, (obj,)))
                groups[(spec.namespace, spec.name)] = spec.to_manifest()
            except base.GroupingError as exc:
                self.error(obj, exc)
                continue
            self.warn(
                base.GroupingWarning(
                    fields.describe(obj),
                    "",
                    f"podmuster does not know which pods {obj.get('kind')} creates"
                    " (no adapter and no spec.template); shown with the default grouping,"
                    " minMember 1, which may not be what its controller needs",
                )
            )


def group_workloads(
    objs: Sequence[Mapping[str, Any]],
    *,
    priority_classes: Iterable[str] | None = None,
    settings: base.GroupingSettings | None = None,
    default_priorities: Iterable[base.DefaultPriority] = (),
    groupers: registry.GrouperRegistry | None = None,
) -> GroupingResult:
    """The PodGroups and pod assignments the podgrouper would produce for ``objs``.

    ``objs`` may mix workloads, intermediate owners and pods (raw dicts).  Workloads
    without pods get synthesized ones.  ``priority_classes`` are the names of the
    existing PriorityClasses (default: KAI's chart classes); PriorityClass objects in
    ``objs`` are added to them.  ``groupers`` replaces the built-in registry (e.g. one
    with user adapters from ``podgrouper.adapters.build_registry``).  Nothing is
    mutated; no I/O.
    """
    existing = CHART_PRIORITY_CLASSES if priority_classes is None else frozenset(priority_classes)
    run = _Run(
        objs,
        existing,
        settings or base.GroupingSettings(),
        tuple(default_priorities),
        groupers,
    )
    return run.run()
