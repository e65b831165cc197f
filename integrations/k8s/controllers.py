"""Pod synthesis for the built-in controllers: Job, CronJob, Deployment, ReplicaSet, StatefulSet.

Why this module exists: offline grouping needs the pods (and intermediate owners)
these controllers would create, with the names, labels and ownerReferences the real
controllers use, so that the owner walk and the adapters see what they see live.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from integrations import base, fields, templates

JOB_NAME = "batch.kubernetes.io/job-name"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def parallel_pods(owner: base.RawObject, spec: Mapping[str, Any], at: str) -> int:
    """The pods a Job of ``spec`` (field ``at`` of ``owner``, e.g. a JobSet's Job
    template) runs at once: ``min(parallelism, completions)``, parallelism defaulting to 1."""
    parallelism = templates.count(owner, spec.get("parallelism"), f"{at}parallelism")
    completions = spec.get("completions")
    if completions is not None:
        parallelism = min(parallelism, templates.count(owner, completions, f"{at}completions"))
    return parallelism


def job_pods(job: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """``min(parallelism, completions)`` pods (parallelism defaults to 1)."""
    parallelism = parallel_pods(job, fields.get_mapping(job, "spec"), "spec.")
    indexed = fields.get(job, "spec.completionMode") == "Indexed"
    name, uid = fields.name(job), fields.uid(job)
    template = templates.checked_template(job, fields.get(job, "spec.template"), "spec.template")
    pods = []
    for index in range(parallelism):
        labels = {JOB_NAME: name, CONTROLLER_UID: uid, "job-name": name, "controller-uid": uid}
        stem = name
        if indexed:
            labels[COMPLETION_INDEX] = str(index)
            stem = f"{name}-{index}"
        pod_name = templates.generated_name(stem, f"{uid}/{index}")
        pods.append(templates.make_pod(template, pod_name, job, labels=labels))
    return pods


def cronjob_children(cronjob: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """One run: a Job from ``jobTemplate`` (its metadata included), then its pods."""
    at = "spec.jobTemplate"
    template = templates.checked_template(cronjob, fields.get(cronjob, at), at)
    meta = template.get("metadata") or {}
    job = templates.make_object(
        "batch/v1",
        "Job",
        f"{fields.name(cronjob)}-{templates.digits(fields.uid(cronjob))}",
        cronjob,
        labels=meta.get("labels"),
        annotations=meta.get("annotations"),
        spec=template.get("spec") or {},
    )
    with templates.read_from(cronjob, job, f"{at}.spec"):
        return [job, *expand(job)]


def replicaset_pods(rs: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    replicas = templates.count(rs, fields.get(rs, "spec.replicas"), "spec.replicas")
    template = templates.checked_template(rs, fields.get(rs, "spec.template"), "spec.template")
    return [
        templates.make_pod(
            template, templates.generated_name(fields.name(rs), f"{fields.uid(rs)}/{i}"), rs
        )
        for i in range(replicas)
    ]


def deployment_children(dep: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    """A ReplicaSet ``<dep>-<pod-template-hash>`` and its pods."""
    template_hash = templates.suffix(f"{fields.uid(dep)}/template", 10)
    template = templates.with_template_labels(
        templates.checked_template(dep, fields.get(dep, "spec.template"), "spec.template"),
        {"pod-template-hash": template_hash},
    )
    spec = {**fields.get_mapping(dep, "spec"), "template": template}
    rs = templates.make_object(
        "apps/v1",
        "ReplicaSet",
        f"{fields.name(dep)}-{template_hash}",
        dep,
        labels=template["metadata"]["labels"],
        spec=spec,
    )
    with templates.read_from(dep, rs, "spec"):
        return [rs, *replicaset_pods(rs, expand)]


def statefulset_pods(sts: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
    replicas = templates.count(sts, fields.get(sts, "spec.replicas"), "spec.replicas")
    template = templates.checked_template(sts, fields.get(sts, "spec.template"), "spec.template")
    name = fields.name(sts)
    return [
        templates.make_pod(
            template,
            f"{name}-{i}",
            sts,
            labels={
                "statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                "apps.kubernetes.io/pod-index": str(i),
            },
        )
        for i in range(replicas)
    ]
