"""An in-memory object store for offline grouping: the owner walk and the lookup.

Why this module exists: offline grouping receives loose manifests; this index gives
them the two services the live podgrouper gets from the API server — walking a
pod's ownerReferences to its top owner (docs/semantics.md §4.1 "Top owner") and a
read-only :class:`~integrations.base.ObjectLookup` for related objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from integrations import base, fields

NON_WORKLOAD_KINDS = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "Endpoints"),
        ("", "LimitRange"),
        ("", "ResourceQuota"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("scheduling.k8s.io", "Workload"),
        ("scheduling.k8s.io", "PodGroup"),
        ("scheduling.k8s.io", "CompositePodGroup"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    }
)
NON_WORKLOAD_GROUPS = frozenset(
    {
        "scheduling.run.ai",
        "kai.scheduler",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "policy",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
    }
)


def is_pod(obj: base.RawObject) -> bool:
    gvk = base.GroupVersionKind.of(obj)
    return gvk.group == "" and gvk.kind == "Pod"


def is_workload(obj: base.RawObject) -> bool:
    """Whether a top-level object can own pods (not config, not scheduling API objects)."""
    gvk = base.GroupVersionKind.of(obj)
    return gvk.group not in NON_WORKLOAD_GROUPS and (gvk.group, gvk.kind) not in NON_WORKLOAD_KINDS


def _key(api_version: str, kind: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    group = api_version.rpartition("/")[0]
    return (group, kind, namespace, name)


class ObjectIndex:
    """Objects by (group, kind, namespace, name); versions of one type are one object."""

    def __init__(self, objects: Iterable[base.RawObject] = ()) -> None:
        self._objects: dict[tuple[str, str, str, str], base.RawObject] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: base.RawObject) -> None:
        key = _key(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            fields.namespace(obj),
            fields.name(obj),
        )
        self._objects[key] = obj

    def __iter__(self) -> Any:
        return iter(self._objects.values())

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> base.RawObject | None:
        return self._objects.get(_key(api_version, kind, namespace, name))

    def list(
        self, api_version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> Sequence[base.RawObject]:
        group = api_version.rpartition("/")[0]
        return [
            obj
            for (g, k, ns, _), obj in sorted(self._objects.items())
            if (g, k, ns) == (group, kind, namespace)
            and all(fields.labels(obj).get(key) == value for key, value in labels.items())
        ]

    def owner_of(self, obj: base.RawObject, ref: Mapping[str, Any]) -> base.RawObject:
        """The object ``ref`` (an ownerReference of ``obj``) points at."""
        found = self.get(
            str(ref.get("apiVersion", "")),
            str(ref.get("kind", "")),
            fields.namespace(obj),
            str(ref.get("name", "")),
        )
        where = f"{ref.get('kind')} {fields.namespace(obj)}/{ref.get('name')}"
        if found is None:
            raise base.GroupingError(
                fields.describe(obj), "metadata.ownerReferences", f"owner {where} not found"
            )
        if ref.get("uid") and fields.uid(found) != ref.get("uid"):
            raise base.GroupingError(
                fields.describe(obj), "metadata.ownerReferences", f"owner {where} has another uid"
            )
        return found

    def owner_chain(self, pod: base.RawObject) -> tuple[base.RawObject, ...]:
        """The owners of ``pod`` bottom→top; empty for an owner-less pod.

        Starts from the pod's first ownerReference; an intermediate owner with more
        than one owner is an error, as are missing owners and ownership cycles.
        """
        refs = fields.owner_references(pod)
        if not refs:
            return ()
        chain = [self.owner_of(pod, refs[0])]
        while True:
            current = chain[-1]
            refs = fields.owner_references(current)
            if not refs:
                return tuple(chain)
            if len(refs) > 1:
                raise base.GroupingError(
                    fields.describe(current), "metadata.ownerReferences", "has more than one owner"
                )
            following = self.owner_of(current, refs[0])
            if any(following is seen for seen in chain) or len(chain) > 50:
                raise base.GroupingError(
                    fields.describe(current), "metadata.ownerReferences", "ownership cycle"
                )
            chain.append(following)
