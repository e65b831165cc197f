"""JobSet: one PodGroup per set, a subgroup per replicatedJob and per Job replica (KAI v0.16).

Why this module exists: a JobSet is one workload made of several replicatedJobs, each
``replicas`` Jobs of ``parallelism`` pods.  KAI groups it as one PodGroup
``pg-<js>-<uid>`` whose subgroups form two levels: a parent per replicatedJob (its
``minSubGroup`` is ``replicas``: every Job replica must fit) and a leaf
``<rj>-replica-<i>`` per Job (its ``minMember`` the Job's pod count).  The root's
``minSubGroup`` says how many replicatedJobs must fit together: all of them
(``AnyOrder``, JobSet's default), one (``InOrder``: JobSet starts them one after
another), or the JobSet's ``kai.scheduler/batch-min-member`` (capped at their number).
The same annotation on a replicatedJob's template overrides its leaves' ``minMember``;
its ``kai.scheduler/topology*`` annotations constrain each leaf.  Pods join their
leaf by the ``replicatedjob-name`` and ``job-index`` labels JobSet puts on them.

podmuster differences (docs/integrations.md; ``reproduce_kai_bugs`` restores KAI's):

* a replicatedJob with ``dependsOn`` is only created once its dependency is ready or
  complete, so without an override the root's ``minSubGroup`` counts only the
  replicatedJobs without ``dependsOn`` — KAI's count includes jobs whose pods do not
  exist yet, and the gang can never be complete;
* a leaf's ``minMember`` is ``min(parallelism, completions)``: a Job never runs more
  pods than it has completions, and KAI's ``parallelism`` alone can never be met.

Upgrades: while a PodGroup of the JobSet without subgroups exists (``pg-<js>-<uid>`` or
``pg-<js>-<uid>-<replicatedJob>``, written before KAI v0.16 or by older podmuster), its
pods keep flat PodGroups as KAI's legacy grouper names them (per replicatedJob for
``InOrder``, else one), minMember the JobSet's ``batch-min-member`` or 1; podmuster
also keeps a pod in the per-replicatedJob PodGroup of its replicatedJob when that one
exists (older podmuster made them without a startup policy too).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crds.errors import shown
from crds.names import BATCH_MIN_MEMBER_ANNOTATION
from crds.podgroup import API_VERSION as PODGROUP_API_VERSION
from crds.podgroup import KIND as PODGROUP_KIND
from integrations import base, default, fields, resolution, templates
from integrations.k8s import controllers

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
IN_ORDER = "InOrder"


def replicated_jobs(js: base.RawObject) -> list[tuple[int, Mapping[str, Any]]]:
    """``spec.replicatedJobs`` with their indexes; one that is not a map is an error
    naming it (skipped, its Jobs' pods would be lost with no word)."""
    items = fields.get_list(js, "spec.replicatedJobs")
    for i, rj in enumerate(items):
        if not isinstance(rj, Mapping):
            raise base.GroupingError(
                fields.describe(js),
                f"spec.replicatedJobs[{i}]",
                f"expected an object, got {shown(rj)}",
            )
    return list(enumerate(items))


def leaf_name(rj_name: str, index: str | int) -> str:
    """The subgroup of one Job replica: ``<replicatedJob>-replica-<jobIndex>``."""
    return f"{rj_name}-replica-{index}"


def batch_min_member(obj: base.RawObject, annotations: Mapping[str, Any], path: str) -> int | None:
    """``kai.scheduler/batch-min-member`` from ``annotations`` (>= 1), if present."""
    value = annotations.get(BATCH_MIN_MEMBER_ANNOTATION)
    if value is None:
        return None
    field = f"{path}[{BATCH_MIN_MEMBER_ANNOTATION}]"
    return fields.as_int(value, obj=obj, path=field, minimum=1, text=True)


def _name_of(js: base.RawObject, index: int, rj: Mapping[str, Any]) -> str:
    name = rj.get("name")
    if not isinstance(name, str) or not name:
        raise base.GroupingError(
            fields.describe(js), f"spec.replicatedJobs[{index}].name", "is required"
        )
    return name


_NOTES = "template.metadata.annotations"


def _template_annotations(
    js: base.RawObject, index: int, rj: Mapping[str, Any]
) -> Mapping[str, str]:
    """The Job template's annotations of ``spec.replicatedJobs[index]`` (a map of strings)."""
    return fields.get_string_map(js, _NOTES, within=rj, prefix=f"spec.replicatedJobs[{index}].")


def _leaf_min(js: base.RawObject, index: int, rj: Mapping[str, Any], kai: bool) -> int:
    """Pods one Job replica must have: the template's override, else its pod count."""
    prefix = f"spec.replicatedJobs[{index}]."
    override = batch_min_member(js, _template_annotations(js, index, rj), f"{prefix}{_NOTES}")
    if override is not None:
        return override
    parallelism = fields.get_int(js, "template.spec.parallelism", 1, within=rj, prefix=prefix)
    completions = fields.get_int(js, "template.spec.completions", within=rj, prefix=prefix)
    assert parallelism is not None
    if not kai and completions is not None and completions < parallelism:
        return completions
    return parallelism


def _leaf_topology(
    js: base.RawObject, index: int, rj: Mapping[str, Any]
) -> base.TopologyConstraint | None:
    """The template's topology annotations; none without a name and a level."""
    found = resolution.topology_of(_template_annotations(js, index, rj))
    if not found.topology or not (found.required_level or found.preferred_level):
        return None
    return found


def root_min_sub_group(js: base.RawObject, kai: bool) -> int:
    """How many replicatedJobs must fit together (module docstring)."""
    jobs = replicated_jobs(js)
    override = batch_min_member(js, fields.annotations_of(js), "metadata.annotations")
    if override is not None:
        return min(override, len(jobs))
    if fields.get(js, "spec.startupPolicy.startupPolicyOrder") == IN_ORDER:
        return 1
    if kai:
        return len(jobs)
    return max(sum(1 for _, rj in jobs if not rj.get("dependsOn")), 1)


def subgroups(
    js: base.RawObject, pod_leaf: str, pod_name: str, kai: bool
) -> list[base.SubGroupSpec]:
    """The parent-per-replicatedJob, leaf-per-replica tree; ``pod_leaf`` lists the pod."""
    counts = {
        f"spec.replicatedJobs[{index}].replicas": fields.get_int(
            js, "replicas", 1, within=rj, prefix=f"spec.replicatedJobs[{index}]."
        )
        or 0
        for index, rj in replicated_jobs(js)
    }
    fields.subgroup_count(js, len(counts) + sum(counts.values()), fields.counts_read(counts))
    result: list[base.SubGroupSpec] = []
    for index, rj in replicated_jobs(js):
        rj_name = _name_of(js, index, rj)
        replicas = counts[f"spec.replicatedJobs[{index}].replicas"]
        leaf_min = _leaf_min(js, index, rj, kai)
        topology = _leaf_topology(js, index, rj)
        result.append(base.SubGroupSpec(rj_name, min_sub_group=replicas))
        for job_index in range(replicas):
            leaf = leaf_name(rj_name, job_index)
            result.append(
                base.SubGroupSpec(
                    leaf,
                    leaf_min,
                    parent=rj_name,
                    topology=topology,
                    pod_names=(pod_name,) if leaf == pod_leaf else (),
                )
            )
    return result


def _base_name(js: base.RawObject) -> str:
    return f"pg-{fields.name(js)}-{fields.uid(js)}"


def _legacy_names(js: base.RawObject) -> list[str]:
    """The flat PodGroups a JobSet may have from before KAI v0.16."""
    names = [_base_name(js)]
    for _, rj in replicated_jobs(js):
        if isinstance(rj.get("name"), str) and rj["name"]:
            names.append(f"{_base_name(js)}-{rj['name']}")
    return names


def _legacy(ctx: base.GroupingContext, rj_name: str) -> base.PodGroupSpec | None:
    """The flat PodGroup of an in-flight JobSet (module docstring), if it has one."""
    js = ctx.top_owner
    ns = fields.namespace(ctx.pod) or fields.namespace(js)
    existing = {
        name: found
        for name in _legacy_names(js)
        if (found := ctx.lookup.get(PODGROUP_API_VERSION, PODGROUP_KIND, ns, name)) is not None
    }
    if not any(not fields.get(pg, "spec.subGroups") for pg in existing.values()):
        return None
    own = f"{_base_name(js)}-{rj_name}"
    in_order = fields.get(js, "spec.startupPolicy.startupPolicyOrder") == IN_ORDER
    kai = ctx.settings.reproduce_kai_bugs
    name = own if in_order or (own in existing and not kai) else _base_name(js)
    override = batch_min_member(js, fields.annotations_of(js), "metadata.annotations")
    return default.build(ctx, subject=js, name=name, min_member=override or 1)


@dataclass(frozen=True, slots=True)
class JobSetGrouper:
    name: str = "jobset"

    def related_objects(self, ctx: base.GroupingContext) -> tuple[base.ObjectQuery, ...]:
        """The flat PodGroups the JobSet may still have (module docstring, Upgrades)."""
        js = ctx.top_owner
        ns = fields.namespace(ctx.pod) or fields.namespace(js)
        return tuple(
            base.ObjectQuery(PODGROUP_API_VERSION, PODGROUP_KIND, ns, name)
            for name in _legacy_names(js)
        )

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        js = ctx.top_owner
        pod_labels = fields.labels(ctx.pod)
        for label in (REPLICATED_JOB_LABEL, JOB_INDEX_LABEL):
            if not pod_labels.get(label):
                raise base.GroupingError(
                    fields.describe(ctx.pod), f"metadata.labels[{label}]", "is required"
                )
        if not replicated_jobs(js):
            raise base.GroupingError(fields.describe(js), "spec.replicatedJobs", "is empty")
        legacy = _legacy(ctx, str(pod_labels[REPLICATED_JOB_LABEL]))
        if legacy is not None:
            return legacy
        kai = ctx.settings.reproduce_kai_bugs
        pod_leaf = leaf_name(
            str(pod_labels[REPLICATED_JOB_LABEL]), str(pod_labels[JOB_INDEX_LABEL])
        )
        tree = subgroups(js, pod_leaf, fields.name(ctx.pod), kai)
        if not any(s.name == pod_leaf for s in tree):
            raise base.GroupingError(
                fields.describe(ctx.pod),
                f"metadata.labels[{JOB_INDEX_LABEL}]",
                f"names Job replica {pod_leaf!r}, which {fields.describe(js)} does not have",
            )
        spec = default.build(ctx, subject=js, name=_base_name(js), min_member=0)
        return dataclasses.replace(
            spec, min_sub_group=root_min_sub_group(js, kai), subgroups=tuple(tree)
        )


def synthesize_jobs(js: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Jobs ``<js>-<replicatedJob>-<i>`` (JobSet labels on Job and pod template), then pods."""
    jobs = []
    for index, rj in replicated_jobs(js):
        replicas = templates.count(js, rj.get("replicas"), f"spec.replicatedJobs[{index}].replicas")
        at = f"spec.replicatedJobs[{index}].template"
        job_template = templates.checked_template(js, rj.get("template"), at)
        job_spec = fields.get_mapping(job_template, "spec")
        pod_template = templates.checked_template(
            js, job_spec.get("template"), f"{at}.spec.template"
        )
        pods = controllers.parallel_pods(js, job_spec, f"{at}.spec.")
        jobs.append((str(rj.get("name", "")), replicas, pods, job_template, pod_template, at))
    templates.expect_pods(sum(replicas * pods for _, replicas, pods, *_ in jobs))
    result: list[dict[str, Any]] = []
    for rj_name, replicas, _, job_template, pod_template, at in jobs:
        for job_index in range(replicas):
            labels = {
                JOBSET_NAME_LABEL: fields.name(js),
                REPLICATED_JOB_LABEL: rj_name,
                JOB_INDEX_LABEL: str(job_index),
                REPLICAS_LABEL: str(replicas),
                JOBSET_UID_LABEL: fields.uid(js),
            }
            template_meta = job_template.get("metadata") or {}
            spec = dict(job_template.get("spec") or {})
            spec["template"] = templates.with_template_labels(pod_template, labels)
            job = templates.make_object(
                "batch/v1",
                "Job",
                f"{fields.name(js)}-{rj_name}-{job_index}",
                js,
                labels={**dict(template_meta.get("labels") or {}), **labels},
                annotations=template_meta.get("annotations"),
                spec=spec,
            )
            with templates.read_from(js, job, f"{at}.spec"):
                result.extend([job, *expand(job)])
    return result
