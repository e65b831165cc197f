"""JobSet: one PodGroup per replicatedJob (InOrder startup) or one for the whole set.

Why this module exists: with ``startupPolicyOrder: InOrder`` (or no startup policy)
JobSet starts its replicatedJobs one after another, so each must be its own gang
(``pg-<js>-<uid>-<replicatedJob>``); otherwise all start together and form one
gang (``pg-<js>-<uid>``).  A replicatedJob's gang is ``replicas x
min(parallelism, completions)`` (docs/semantics.md §4.3).

podmuster difference: a JobSet whose replicatedJobs use ``dependsOn`` (the API that
replaced startupPolicy) also starts them one after another, so it gets one PodGroup
per replicatedJob whatever its startup policy; KAI would make one gang that can
never be complete (reproducible with ``reproduce_kai_bugs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from integrations import base, default, fields, templates

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
IN_ORDER = "InOrder"


def replicated_job_min(js: base.RawObject, index: int, rj: Mapping[str, Any]) -> int:
    """``replicas x min(parallelism, completions)``; replicas/parallelism <= 0 count as 1."""
    prefix = f"spec.replicatedJobs[{index}]."
    replicas = fields.get_int(js, "replicas", within=rj, prefix=prefix, minimum=None)
    parallelism = fields.get_int(
        js, "template.spec.parallelism", within=rj, prefix=prefix, minimum=None
    )
    completions = fields.get_int(
        js, "template.spec.completions", within=rj, prefix=prefix, minimum=None
    )
    replicas = replicas if replicas and replicas > 0 else 1
    parallelism = parallelism if parallelism and parallelism > 0 else 1
    if completions is not None and 0 < completions < parallelism:
        parallelism = completions
    return replicas * parallelism


def replicated_jobs(js: base.RawObject) -> list[tuple[int, Mapping[str, Any]]]:
    items = fields.get_list(js, "spec.replicatedJobs")
    return [(i, rj) for i, rj in enumerate(items) if isinstance(rj, Mapping)]


@dataclass(frozen=True, slots=True)
class JobSetGrouper:
    name: str = "jobset"

    def group(self, ctx: base.GroupingContext) -> base.PodGroupSpec:
        js = ctx.top_owner
        rj_name = fields.labels(ctx.pod).get(REPLICATED_JOB_LABEL)
        if not rj_name:
            raise base.GroupingError(
                fields.describe(ctx.pod), f"metadata.labels[{REPLICATED_JOB_LABEL}]", "is required"
            )
        base_name = f"pg-{fields.name(js)}-{fields.uid(js)}"
        order = fields.get(js, "spec.startupPolicy.startupPolicyOrder")
        jobs = replicated_jobs(js)
        sequential = any(rj.get("dependsOn") for _, rj in jobs)
        if sequential and ctx.settings.reproduce_kai_bugs:
            sequential = False
        if order is None or order == IN_ORDER or sequential:
            mins = [replicated_job_min(js, i, rj) for i, rj in jobs if rj.get("name") == rj_name]
            return default.build(
                ctx, subject=js, name=f"{base_name}-{rj_name}", min_member=mins[0] if mins else 1
            )
        total = sum(replicated_job_min(js, i, rj) for i, rj in jobs if rj.get("name"))
        return default.build(ctx, subject=js, name=base_name, min_member=max(total, 1))


JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"


def synthesize_jobs(js: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """Jobs ``<js>-<replicatedJob>-<i>`` (JobSet labels on Job and pod template), then pods."""
    result: list[dict[str, Any]] = []
    for index, rj in replicated_jobs(js):
        rj_name = str(rj.get("name", ""))
        path = f"spec.replicatedJobs[{index}].replicas"
        replicas = templates.count(js, rj.get("replicas"), path)
        job_template = fields.get_mapping(rj, "template")
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
            spec["template"] = templates.with_template_labels(spec.get("template") or {}, labels)
            job = templates.make_object(
                "batch/v1",
                "Job",
                f"{fields.name(js)}-{rj_name}-{job_index}",
                js,
                labels={**dict(template_meta.get("labels") or {}), **labels},
                annotations=template_meta.get("annotations"),
                spec=spec,
            )
            result.extend([job, *expand(job)])
    return result
