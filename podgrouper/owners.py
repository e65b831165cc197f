"""Top-owner resolution: walk ``ownerReferences`` from a pod to its top owner.

Why this module exists: which adapter groups a pod depends on its top owner, and the
walk is the only I/O on the grouping path besides related objects (docs/semantics.md §4.1):

* start from the pod's first ownerReference (other pod owners are ignored);
* read each owner as metadata only; its uid must equal the reference's;
* stop at an object without owners; an intermediate object with several owners is an
  error; otherwise follow its single owner;
* a Forbidden read stops the walk at the last reachable owner (the pod itself if none);
  any other read error, NotFound included, fails;
* an owner-less pod is its own top owner, with an empty owner list.

Structural problems raise :class:`OwnerError` (a
:class:`~integrations.base.GroupingError`: retrying cannot fix them); API errors
propagate as :class:`~podgrouper.kube.ApiError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from integrations import base, fields
from kubeapi.errors import ForbiddenError
from kubeapi.objects import Object
from kubeapi.protocol import KubeReader

MAX_DEPTH = 32
"""Longer chains are taken for an ownerReference cycle."""


class OwnerError(base.GroupingError):
    """The owner chain is malformed (uid mismatch, several owners, a cycle)."""


@dataclass(frozen=True, slots=True)
class OwnerChain:
    """The pod's owners bottom→top (metadata only); empty for an owner-less pod."""

    pod: Mapping[str, Any]
    owners: tuple[Object, ...] = ()
    stopped_by: ForbiddenError | None = None
    """The Forbidden read that cut the walk short, if any."""

    @property
    def top(self) -> Mapping[str, Any]:
        return self.owners[-1] if self.owners else self.pod


async def resolve_owners(pod: Mapping[str, Any], reader: KubeReader) -> OwnerChain:
    """Walk from ``pod`` to its top owner (rules in the module docstring)."""
    namespace = fields.namespace(pod)
    owners: list[Object] = []
    current: Mapping[str, Any] = pod
    refs = fields.owner_references(pod)[:1]
    while refs:
        if len(owners) >= MAX_DEPTH:
            raise OwnerError(fields.describe(pod), "metadata.ownerReferences", "owner cycle")
        ref = refs[0]
        api_version, kind, name = (str(ref.get(k) or "") for k in ("apiVersion", "kind", "name"))
        try:
            owner = await reader.get_metadata(api_version, kind, namespace, name)
        except ForbiddenError as exc:
            return OwnerChain(pod, tuple(owners), exc)
        expected = str(ref.get("uid") or "")
        if fields.uid(owner) != expected:
            raise OwnerError(
                fields.describe(current),
                "metadata.ownerReferences[0].uid",
                f"refers to {kind} {name} uid {expected}, but it has uid {fields.uid(owner)}",
            )
        owners.append(owner)
        refs = fields.owner_references(owner)
        if len(refs) > 1:
            raise OwnerError(
                fields.describe(owner),
                "metadata.ownerReferences",
                f"has {len(refs)} owners; the podgrouper follows one",
            )
        current = owner
    return OwnerChain(pod, tuple(owners))
