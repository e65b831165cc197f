"""Knative Service: one PodGroup per Revision (gang mode) or one per pod.

Why this module exists: a Knative Service rolls out Revisions, and each Revision's
pods serve together, so KAI groups on the pod's Revision (pod label
``serving.knative.dev/revision``): ``pg-<rev>-<revUID>``, owner = Revision, gang =
the Revision's min-scale, priority ``inference`` resolved on the Revision only.
With gang scheduling off each pod is its own PodGroup with the literal priority
``inference``.  No topology and no preemptibility in either mode (docs/semantics.md §4.3).

podmuster difference: the min-scale is read from ``autoscaling.knative.dev/min-scale``
and, failing that, from its older spelling ``autoscaling.knative.dev/minScale``,
which Knative still honours; KAI reads only the first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from integrations import base, default, fields, templates

REVISION_LABEL = "serving.knative.dev/revision"
MIN_SCALE = "autoscaling.knative.dev/min-scale"
MIN_SCALE_LEGACY = "autoscaling.knative.dev/minScale"
REVISION_API = "serving.knative.dev/v1"


def min_scale(revision: base.RawObject, *, kai_bug: bool) -> int:
    notes = fields.annotations_of(revision)
    keys = (MIN_SCALE,) if kai_bug else (MIN_SCALE, MIN_SCALE_LEGACY)
    for key in keys:
        value = fields.parse_int(notes.get(key))
        if value is not None:
            return max(value, 1)
    return 1


@dataclass(frozen=True, slots=True)
class KnativeGrouper:
    name: str = "knative"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The pod's Revision (gang mode only)."""
        revision_name = fields.labels(ctx.pod).get(REVISION_LABEL)
        if not ctx.settings.knative_gang_schedule or not revision_name:
            return ()
        return (
            base.ObjectQuery(
                REVISION_API, "Revision", fields.namespace(ctx.pod), str(revision_name)
            ),
        )

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        revision_name = fields.labels(ctx.pod).get(REVISION_LABEL)
        if not ctx.settings.knative_gang_schedule or not revision_name:
            spec = default.build(ctx, subject=ctx.pod, owners=(ctx.pod,))
            return dataclasses.replace(
                spec,
                priority_class_name=default.INFERENCE,
                preemptibility="",
                topology=base.TopologyConstraint(),
            )
        ns = fields.namespace(ctx.pod)
        revision = ctx.lookup.get(REVISION_API, "Revision", ns, str(revision_name))
        if revision is None:
            raise base.GroupingError(
                fields.describe(ctx.pod),
                f"metadata.labels[{REVISION_LABEL}]",
                f"Revision {ns}/{revision_name} not found",
            )
        spec = default.build(
            ctx,
            subject=revision,
            owners=(revision,),
            fallback_priority=default.INFERENCE,
            min_member=min_scale(revision, kai_bug=ctx.settings.reproduce_kai_bugs),
        )
        return dataclasses.replace(spec, preemptibility="", topology=base.TopologyConstraint())


SERVICE_LABEL = "serving.knative.dev/service"
CONFIGURATION_LABEL = "serving.knative.dev/configuration"


def synthesize_revision(service: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Configuration ``<svc>`` → Revision ``<svc>-00001`` → Deployment → ReplicaSet → pods.

    The Revision takes the template's labels and annotations (min-scale included);
    the initial pod count is the min-scale, at least 1.
    """
    name = fields.name(service)
    template = templates.checked_template(
        service, fields.get(service, "spec.template"), "spec.template"
    )
    template_meta = template.get("metadata") or {}
    config = templates.make_object(
        REVISION_API,
        "Configuration",
        name,
        service,
        labels={**fields.labels(service), SERVICE_LABEL: name},
        spec={"template": template},
    )
    revision_name = str(template_meta.get("name") or f"{name}-00001")
    serving = {SERVICE_LABEL: name, CONFIGURATION_LABEL: name}
    revision = templates.make_object(
        REVISION_API,
        "Revision",
        revision_name,
        config,
        labels={**dict(template_meta.get("labels") or {}), **serving},
        annotations=template_meta.get("annotations"),
        spec=template.get("spec") or {},
    )
    pod_labels = {
        **serving,
        REVISION_LABEL: revision_name,
        "serving.knative.dev/revisionUID": fields.uid(revision),
        "app": revision_name,
    }
    pod_template = templates.with_template_labels(
        {"metadata": template_meta, "spec": template.get("spec") or {}}, pod_labels
    )
    deployment = templates.make_object(
        "apps/v1",
        "Deployment",
        f"{revision_name}-deployment",
        revision,
        labels=pod_labels,
        spec={"replicas": min_scale(revision, kai_bug=False), "template": pod_template},
    )
    return [config, revision, deployment, *expand(deployment)]
