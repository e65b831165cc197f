"""Skip-top-owner: group on the object below a wrapper (Argo Workflow, Kubeflow TrainJob).

Why this module exists: some top owners only wrap the real workload — an Argo
Workflow owns a PyTorchJob or plain step pods, a TrainJob owns a JobSet.  KAI then
groups on the second-to-top owner (or the pod itself when the wrapper owns it
directly), copies in the wrapper's labels and annotations that it lacks (then, as
labels, the default priority and preemptibility the defaults ConfigMap gives the
wrapper's kind; KAI lets those beat the wrapper's own labels), and
dispatches that object's **exact** GVK, else the default grouper; the owner chain
passed on excludes the wrapper (docs/semantics.md §4.3, Skip-top-owner).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from integrations import base, fields, resolution


class ExactLookup(Protocol):
    """The registry view the skipper dispatches through."""

    @property
    def default(self) -> base.WorkloadGrouper: ...

    def lookup_exact(self, gvk: base.GroupVersionKind) -> base.WorkloadGrouper | None: ...


def fill_gaps(
    target: Mapping[str, Any],
    wrapper: base.RawObject,
    defaults: Mapping[str, str] | None = None,
    *,
    defaults_win: bool = False,
) -> dict[str, Any]:
    """``target`` with the wrapper's labels/annotations, then ``defaults`` (labels), added
    where keys are missing: a label the user put on the wrapper beats its kind's default
    (``defaults_win``: KAI's order, the default beats it)."""
    merged = dict(target)
    meta = dict(fields.metadata(target))
    for key, source in (("labels", fields.labels), ("annotations", fields.annotations_of)):
        values = dict(defaults or {}) if key == "labels" else {}
        values.update(source(wrapper))
        if key == "labels" and defaults_win:
            values.update(defaults or {})
        values.update(source(target))
        if values:
            meta[key] = values
    merged["metadata"] = meta
    return merged


@dataclass(frozen=True, slots=True)
class SkipTopOwnerGrouper:
    registry: ExactLookup
    name: str = "skip-top-owner"

    def _inner(
        self, ctx: base.GroupingContext
    ) -> tuple[base.WorkloadGrouper, base.GroupingContext]:
        wrapper = ctx.top_owner
        below = ctx.owners[:-1] if ctx.owners else ()
        defaults = resolution.default_labels(ctx, wrapper)
        kai = ctx.settings.reproduce_kai_bugs
        subject = fill_gaps(below[-1] if below else ctx.pod, wrapper, defaults, defaults_win=kai)
        owners = (*below[:-1], subject) if below else ()
        grouper = self.registry.lookup_exact(base.GroupVersionKind.of(subject))
        inner = dataclasses.replace(ctx, top_owner=subject, owners=owners)
        return grouper or self.registry.default, inner

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """Whatever the grouper of the object below the wrapper needs."""
        grouper, inner = self._inner(ctx)
        if isinstance(grouper, base.NeedsRelatedObjects):
            return grouper.related_objects(inner)
        return ()

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        grouper, inner = self._inner(ctx)
        return grouper.group(inner)
