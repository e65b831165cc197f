"""Workload manifests (Jobs, PyTorchJobs, RayClusters, ...) with arrival times and durations.

Why: "what if these exact workloads arrive" is best asked with the manifests
teams already have. Each workload carries two annotations::

    simulate.podmuster.io/arrival: 30s     # when it is submitted (default 0)
    simulate.podmuster.io/duration: 10m    # how long it runs once its gang's minimum runs

Its PodGroups and pods come from the podgrouper's adapters
(``integrations.grouping.group_workloads``), exactly as ``podmuster group``
makes them; each PodGroup is one simulated job with the workload's arrival and
duration. Queue, PriorityClass and Topology objects in the directory join the cluster;
(Cluster)TrainingRuntimes are read by every TrainJob that names one, as the live
trainer reads them from the cluster. A workload that cannot be read is recorded in
``Scenario.bad_objects`` and left out.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from crds import rules
from crds.documents import SourcedObject, load_documents
from crds.errors import InputError, object_error, shown
from crds.gpusharing import GPU_RESOURCE
from crds.metadata import metadata_map
from crds.names import POD_GROUP_ANNOTATION, SUBGROUP_LABEL
from crds.quantities import QuantityError, parse_quantity
from integrations import fields, templates, upstream_workload
from integrations.grouping import detail, group_workloads
from integrations.objects import ObjectIndex
from integrations.trainer import is_runtime
from scheduler.config import ConfigError, parse_duration
from simulator import objects
from simulator.model import Scenario, SimJob

ARRIVAL = "simulate.podmuster.io/arrival"
DURATION = "simulate.podmuster.io/duration"
_CLUSTER_KINDS = {"Queue": "queues", "PriorityClass": "priority_classes", "Topology": "topologies"}
_EXTENSIONS = (".yaml", ".yml", ".json")


def manifest_files(directory: str) -> list[str]:
    if not os.path.isdir(directory):
        raise InputError("not a directory of workload manifests", source=directory)
    files = sorted(
        os.path.join(directory, name)
        for name in os.listdir(directory)
        if name.endswith(_EXTENSIONS) and os.path.isfile(os.path.join(directory, name))
    )
    if not files:
        raise InputError("no .yaml, .yml or .json files", source=directory)
    return files


def _seconds(item: SourcedObject, key: str, default: float | None) -> float:
    try:  # checked on load too; read through the one reader all the same
        annotations = metadata_map(item.obj, "annotations")
    except InputError as exc:
        raise object_error(item.source, item.obj, exc.field, exc.message) from None
    raw = annotations.get(key)
    field = f"metadata.annotations[{key}]"
    if raw is None:
        if default is None:
            raise object_error(item.source, item.obj, field, "is required (e.g. 10m)")
        return default
    try:
        value = parse_duration(raw, key)
    except ConfigError:
        raise object_error(
            item.source, item.obj, field, f"expected a duration such as 90s or 1h, got {shown(raw)}"
        ) from None
    if value < 0:
        raise object_error(item.source, item.obj, field, f"must not be negative, got {shown(raw)}")
    return value


def _gpu_amount(name: str, raw: Any) -> Fraction:
    if name != GPU_RESOURCE:
        return Fraction(0)
    try:
        return parse_quantity(str(raw))
    except QuantityError:
        return Fraction(0)  # the engine reports the bad quantity naming the pod


def pod_gpus(pod: Mapping[str, Any]) -> float:
    """GPUs one pod asks for (:func:`crds.rules.pod_gpus`): its ``nvidia.com/gpu``, or its
    ``gpu-fraction`` times its devices; a gpu-memory pod counts 0 here (no node sizes it)."""
    whole = rules.pod_resources(pod.get("spec") or {}, _gpu_amount).get(GPU_RESOURCE, 0)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        shared = rules.shared_gpu(annotations)
    except rules.RuleError:
        return 0.0  # the engine reports the bad annotation naming the pod
    return rules.pod_gpus(float(whole), shared, None, on_node=False)


def _jobs_of(
    item: SourcedObject,
    scheduler_name: str,
    related: Sequence[Mapping[str, Any]] = (),
    *,
    recreate: bool | None = None,
    workload: str | None = None,
) -> list[SimJob]:
    """The jobs of workload ``item``, grouped with ``related`` objects (an upstream tree's
    groups and pods); ``recreate``: whether evicted pods come back (default: not for a pod);
    ``workload``: the name its jobs' results give (default: their PodGroup's owner)."""
    arrival = _seconds(item, ARRIVAL, 0.0)
    duration = _seconds(item, DURATION, None)
    result = group_workloads([item.obj, *related])
    if result.errors:
        error = result.errors[0]
        raise InputError(detail(error), source=item.source, obj=error.object)
    pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in result.pods}
    members: dict[str, list[dict[str, Any]]] = {}
    for assignment in result.assignments:
        pod = copy.deepcopy(pods[assignment.pod])
        meta = pod["metadata"]
        meta.setdefault("annotations", {})[POD_GROUP_ANNOTATION] = assignment.pod_group
        if assignment.sub_group is not None:
            meta.setdefault("labels", {})[SUBGROUP_LABEL] = assignment.sub_group
        meta["creationTimestamp"] = objects.rfc3339(arrival)
        meta.setdefault("uid", f"{meta['namespace']}/{meta['name']}")
        pod["status"] = {"phase": "Pending"}
        spec = pod.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise object_error(item.source, item.obj, "spec", f"expected a map, got {shown(spec)}")
        if spec.get("schedulerName") != scheduler_name:
            raise object_error(
                item.source,
                item.obj,
                "spec.schedulerName",
                f"its pods must use schedulerName {scheduler_name!r} to be simulated",
            )
        if spec.get("nodeName"):  # e.g. a pod exported from a running cluster
            raise object_error(
                item.source,
                item.obj,
                "spec.nodeName",
                f"is {spec['nodeName']!r}: Kubernetes runs such a pod on that node without a"
                " scheduler; remove it to simulate how the pod is scheduled",
            )
        members.setdefault(f"{meta['namespace']}/{assignment.pod_group}", []).append(pod)
    if recreate is None:
        recreate = item.obj.get("kind") != "Pod"
    jobs = []
    for group in result.pod_groups:
        meta = group["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        group_pods = members.get(key, [])
        if not group_pods:
            continue
        body = copy.deepcopy(group)
        body["metadata"]["creationTimestamp"] = objects.rfc3339(arrival)
        jobs.append(
            SimJob(
                key=key,
                queue=str((group.get("spec") or {}).get("queue") or ""),
                arrival=arrival,
                duration=duration,
                pod_group=body,
                pods=group_pods,
                pod_gpus=[pod_gpus(pod) for pod in group_pods],
                recreate=recreate,
                origin=f"{item.source}: {item.describe()}",
                workload=workload,
            )
        )
    return jobs


def _upstream_trees(
    items: list[SourcedObject],
) -> tuple[list[SourcedObject], list[tuple[SourcedObject, list[dict[str, Any]]]]]:
    """The items left once Kubernetes' own groups and the pods naming them are taken out,
    and each upstream tree's root item with the groups and pods it is grouped with.

    A pod whose group (or a parent) is missing stays among the items: grouping it alone
    reports what is missing.
    """
    upstream = [i for i in items if upstream_workload.is_upstream(i.obj)]
    if not upstream:
        return items, []
    index = ObjectIndex(i.obj for i in upstream)
    members: dict[int, list[dict[str, Any]]] = {}
    taken: set[int] = {id(i) for i in upstream}
    for item in items:
        if item.obj.get("kind") != "Pod" or not upstream_workload.scheduling_group(item.obj):
            continue
        root = upstream_workload.root_of(item.obj, index)
        if root is not None:
            members.setdefault(id(root), []).append(item.obj)
            taken.add(id(item))
    groups = [i.obj for i in upstream]
    trees = [(i, [*groups, *members[id(i.obj)]]) for i in upstream if id(i.obj) in members]
    return [i for i in items if id(i) not in taken], trees


def _once(jobs: list[SimJob], bad_objects: list[InputError]) -> list[SimJob]:
    """The jobs, each PodGroup once: a workload given twice (or two making the same
    PodGroup) keeps the first; the later one is a bad object, one line, left out."""
    first: dict[str, str] = {}
    reported: set[str] = set()
    kept = []
    for job in jobs:
        if job.key not in first:
            first[job.key] = job.origin
            kept.append(job)
        elif job.origin not in reported:
            reported.add(job.origin)
            message = f"makes PodGroup {job.key!r} again, after {first[job.key]}"
            bad_objects.append(InputError(message, obj=job.origin, field="metadata.name"))
    return kept


def _drop_orphan_queues(cluster: Scenario, given: dict[int, SourcedObject]) -> None:
    """A Queue of the directory whose parent is no queue of the cluster is a bad object,
    one line, left out (its jobs then wait with QueueDoesNotExist, as in a cluster); the
    cluster file's own queues were checked when it was read."""
    known = {str((q.get("metadata") or {}).get("name")) for q in cluster.queues}
    kept = []
    for queue in cluster.queues:
        item = given.get(id(queue))
        parent = (queue.get("spec") or {}).get("parentQueue") if item is not None else None
        problem = objects.missing_queue(str(parent), known) if parent else None
        if item is not None and problem is not None:
            cluster.bad_objects.append(item.error("spec.parentQueue", problem))
            continue
        kept.append(queue)
    cluster.queues = kept


def load(directory: str, cluster: Scenario, scheduler_name: str) -> Scenario:
    """``cluster`` with the jobs of every workload in ``directory``."""
    items = load_documents(manifest_files(directory), problems=cluster.bad_objects)
    jobs: list[SimJob] = []
    items, trees = _upstream_trees(items)
    # what a TrainJob is expanded from: given with every workload, like the live cluster's
    runtimes = [item.obj for item in items if is_runtime(item.obj)]
    for root, related in trees:
        try:  # arrival and duration on the root group; its pods are bare, not recreated
            jobs.extend(_jobs_of(root, scheduler_name, related, recreate=False))
        except InputError as error:
            cluster.bad_objects.append(error)
    for item in items:
        kind = item.obj.get("kind")
        if kind in _CLUSTER_KINDS:
            getattr(cluster, _CLUSTER_KINDS[str(kind)]).append(item.obj)
            cluster.sources[item.describe()] = item.source
            continue
        if (item.obj.get("metadata") or {}).get("ownerReferences") or is_runtime(item.obj):
            continue  # grouped with its owner; a runtime is read by the TrainJobs naming it
        try:
            # named as written (a TrainJob, not the JobSet its PodGroup's owner is), with the
            # namespace the grouping gives it
            workload = fields.describe(templates.normalized(item.obj))
            jobs.extend(_jobs_of(item, scheduler_name, runtimes, workload=workload))
        except InputError as error:  # this workload is left out, the others are simulated
            cluster.bad_objects.append(error)
    _drop_orphan_queues(cluster, {id(item.obj): item for item in items})
    jobs = _once(jobs, cluster.bad_objects)
    if not jobs and not cluster.bad_objects:
        raise InputError("no workloads to simulate", source=directory)
    named = {str(q["metadata"]["name"]) for q in cluster.queues}
    if not named:
        cluster.queues = [objects.queue(name) for name in sorted({job.queue for job in jobs})]
    cluster.jobs = jobs
    cluster.source = directory
    return cluster
