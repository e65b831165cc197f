"""Kubeflow Trainer TrainJob: skip to its JobSet; synthesize that JobSet from the runtime.

Why this module exists: a TrainJob is a wrapper — the trainer controller renders its
(Cluster)TrainingRuntime into a JobSet named like the TrainJob and owned by it, and
KAI groups on that JobSet, with the TrainJob's labels (e.g. the queue) filling gaps
(docs/semantics.md §4.3).  Offline, the JobSet is built from the runtime found through
the lookup: ``trainer.numNodes`` becomes the parallelism and completions of the
``node`` replicatedJob, ``resourcesPerNode`` its ``node`` container's resources.
"""

from __future__ import annotations

import copy
from typing import Any

from integrations import base, fields, templates

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
JOBSET_API = "jobset.x-k8s.io/v1alpha2"
NODE_JOB = "node"
TRAINJOB_NAME_LABEL = "trainer.kubeflow.org/trainjob-name"


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


def _shape_node_job(job: base.RawObject, runtime: base.RawObject, rj: dict[str, Any]) -> None:
    """``numNodes`` (TrainJob, else runtime) → parallelism/completions; resources per node."""
    nodes = fields.get_int(job, "spec.trainer.numNodes", minimum=1)
    if nodes is None:
        nodes = fields.get_int(runtime, "spec.mlPolicy.numNodes", minimum=1)
    spec = rj.setdefault("template", {}).setdefault("spec", {})
    if nodes is not None:
        spec["parallelism"] = spec["completions"] = nodes
    resources = fields.get_mapping(job, "spec.trainer.resourcesPerNode")
    for container in fields.get(spec, "template.spec.containers") or []:
        if isinstance(container, dict) and resources and container.get("name") == NODE_JOB:
            container["resources"] = copy.deepcopy(dict(resources))


def make_hook(lookup: base.ObjectLookup) -> templates.Hook:
    """The TrainJob synthesis hook, bound to a lookup that finds runtimes."""

    def hook(job: base.RawObject, expand: templates.Expand) -> list[dict[str, Any]]:
        runtime = find_runtime(job, lookup)
        spec = copy.deepcopy(dict(fields.get_mapping(runtime, "spec.template.spec")))
        for rj in spec.get("replicatedJobs") or []:
            if isinstance(rj, dict) and rj.get("name") == NODE_JOB:
                _shape_node_job(job, runtime, rj)
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
