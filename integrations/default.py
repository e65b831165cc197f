"""The default grouper: one PodGroup per top owner with minMember 1 (docs/semantics.md §4.2).

Why this module exists: it is both the fallback for every kind without an adapter
and the base every framework adapter is composed from — adapters call
:func:`build` with the object they group on and override what is special.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from integrations import base, fields, resolution

TRAIN = "train"
BUILD = "build"
INFERENCE = "inference"


def build(
    ctx: base.GroupingContext,
    *,
    subject: base.RawObject,
    owners: Sequence[base.RawObject] = (),
    fallback_priority: str = TRAIN,
    name: str | None = None,
    owner: base.RawObject | None = None,
    min_member: int = 1,
) -> base.PodGroupSpec:
    """The PodGroup grouped on ``subject``.

    ``owners`` (bottom→top) feed priority and preemptibility; when empty, ``subject``
    alone is used.  ``name`` defaults to ``pg-<subject>-<subjectUID>`` and ``owner``
    (the PodGroup's ownerReference) to ``subject``.
    """
    chain = tuple(owners) or (subject,)
    return base.PodGroupSpec(
        name=name if name is not None else f"pg-{fields.name(subject)}-{fields.uid(subject)}",
        namespace=fields.namespace(ctx.pod) or fields.namespace(subject),
        owner=fields.owner_reference(owner if owner is not None else subject),
        queue=resolution.resolve_queue(ctx, subject),
        priority_class_name=resolution.resolve_priority(ctx, chain, fallback_priority),
        preemptibility=resolution.resolve_preemptibility(ctx, chain),
        min_member=min_member,
        labels=resolution.pod_group_labels(ctx, subject),
        annotations=resolution.pod_group_annotations(ctx, subject),
        topology=resolution.topology_of(fields.annotations_of(subject)),
        preemption_delay=resolution.resolve_preemption_delay(ctx, chain),
        staleness_grace_period=resolution.resolve_staleness_grace_period(ctx, chain),
    )


@dataclass(frozen=True, slots=True)
class DefaultGrouper:
    """One PodGroup per top owner; priority over the whole owner chain.

    ``top_owner_only`` restricts priority/preemptibility resolution to the top owner
    (Deployment, Notebook); ``fallback_priority`` is the kind's default.
    """

    name: str = "default"
    fallback_priority: str = TRAIN
    top_owner_only: bool = False

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        owners = (ctx.top_owner,) if self.top_owner_only else ctx.owners
        return build(
            ctx, subject=ctx.top_owner, owners=owners, fallback_priority=self.fallback_priority
        )
