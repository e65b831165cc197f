"""Kubeflow Trainer TrainJob: skip to its JobSet; synthesize that JobSet from the runtime.

Why this module exists: a TrainJob is a wrapper — the trainer controller renders its
(Cluster)TrainingRuntime into a JobSet named like the TrainJob and owned by it, and
KAI groups on that JobSet, with the TrainJob's labels (e.g. the queue) filling gaps
(docs/semantics.md §4.3).  Offline, the JobSet is built from the runtime found through
the lookup: ``trainer.numNodes`` becomes the parallelism and completions of the
trainer's replicatedJob, ``resourcesPerNode`` its trainer container's resources.

Which replicatedJob is the trainer's is what the trainer itself reads: the one labelled
``trainer.kubeflow.org/trainjob-ancestor-step: trainer``; runtimes without that label
name it ``node`` (or ``trainer-node``, as some upstream runtimes do).  Its container
is the one named ``node``, else named like the replicatedJob, else its only one.  When
no replicatedJob or container can be told apart, the runtime's JobSet is kept as
written and a warning says that ``numNodes``/``resourcesPerNode`` were not applied,
instead of silently giving one GPU-less pod.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from integrations import base, fields, templates

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
NODE_JOB = "node"
NODE_JOB_NAMES = (NODE_JOB, "trainer-node")
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR = "trainer"
RUNTIME_KINDS = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})
"""The kinds a TrainJob's ``spec.runtimeRef`` names: its pods' templates live there."""


def is_runtime(obj: base.RawObject) -> bool:
    """Whether ``obj`` is a (Cluster)TrainingRuntime, which TrainJobs are expanded from."""
    api_version = str(obj.get("apiVersion") or "")
    return api_version.partition("/")[0] == TRAINER_API.partition("/")[0] and (
        obj.get("kind") in RUNTIME_KINDS
    )


def find_runtime(job: base.RawObject, lookup: base.ObjectLookup) -> base.RawObject:
    ref = fields.get_mapping(job, "spec.runtimeRef")
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    name = str(ref.get("name") or "")
    namespace = fields.namespace(job) if kind == "TrainingRuntime" else ""
    runtime = lookup.get(TRAINER_API, kind, namespace, name)
    if runtime is None:
        raise base.GroupingError(
            fields.describe(job), "spec.runtimeRef", f"{kind} {name!r} not found"
        )
    return runtime


def trainer_job(runtime: base.RawObject, replicated_jobs: list[Any]) -> dict[str, Any] | None:
    """The trainer's replicatedJob of ``runtime``: by the ancestor label (its Job
    template's labels, a map of strings), else by name (``node`` first)."""
    jobs = [rj for rj in replicated_jobs if isinstance(rj, dict)]
    for index, rj in enumerate(replicated_jobs):
        at = f"spec.template.spec.replicatedJobs[{index}]."
        labels = fields.get_string_map(runtime, "template.metadata.labels", within=rj, prefix=at)
        if isinstance(rj, dict) and labels.get(ANCESTOR_LABEL) == TRAINER_ANCESTOR:
            return rj
    for name in NODE_JOB_NAMES:
        for rj in jobs:
            if rj.get("name") == name:
                return rj
    return None


def _trainer_container(rj: Mapping[str, Any], containers: list[Any]) -> dict[str, Any] | None:
    named = [c for c in containers if isinstance(c, dict)]
    for wanted in (NODE_JOB, rj.get("name")):
        for container in named:
            if container.get("name") == wanted:
                return container
    return named[0] if len(named) == 1 else None


def _shape_node_job(
    job: base.RawObject, runtime: base.RawObject, rj: dict[str, Any], warn: templates.Warn
) -> None:
    """``numNodes`` (TrainJob, else runtime) → parallelism/completions; resources per node."""
    nodes = fields.get_int(job, "spec.trainer.numNodes", minimum=1)
    if nodes is None:
        nodes = fields.get_int(runtime, "spec.mlPolicy.numNodes", minimum=1)
    spec = rj.setdefault("template", {}).setdefault("spec", {})
    if nodes is not None:
        spec["parallelism"] = spec["completions"] = nodes
    resources = fields.get_mapping(job, "spec.trainer.resourcesPerNode")
    if not resources:
        return
    container = _trainer_container(rj, fields.get(spec, "template.spec.containers") or [])
    if container is None:
        warn(
            base.GroupingWarning(
                fields.describe(job),
                "spec.trainer.resourcesPerNode",
                f"not applied: replicatedJob {rj.get('name')!r} of {fields.describe(runtime)}"
                f" has no container named {NODE_JOB!r} or {rj.get('name')!r} and more than one",
            )
        )
        return
    container["resources"] = copy.deepcopy(dict(resources))


def make_hook(
    lookup: base.ObjectLookup, warn: templates.Warn = templates.ignore_warning
) -> templates.Hook:
    """The TrainJob synthesis hook, bound to a lookup that finds runtimes."""

    def hook(job: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
        runtime = find_runtime(job, lookup)
        spec = copy.deepcopy(dict(fields.get_mapping(runtime, "spec.template.spec")))
        rj = trainer_job(runtime, spec.get("replicatedJobs") or [])
        if rj is not None:
            _shape_node_job(job, runtime, rj, warn)
        else:
            warn(
                base.GroupingWarning(
                    fields.describe(job),
                    "spec.trainer",
                    f"numNodes and resourcesPerNode not applied: no replicatedJob of"
                    f" {fields.describe(runtime)} is labelled {ANCESTOR_LABEL}="
                    f"{TRAINER_ANCESTOR} or named {' or '.join(NODE_JOB_NAMES)};"
                    " its JobSet is shown as the runtime writes it",
                )
            )
        jobset = templates.make_object(
            JOBSET_API,
            "JobSet",
            fields.name(job),
            job,
            labels={TRAINJOB_NAME_LABEL: fields.name(job)},
            spec=spec,
        )
        return [jobset, *expand(jobset)]

    return hook
