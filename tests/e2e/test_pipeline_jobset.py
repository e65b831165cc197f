"""A JobSet grouped live as KAI v0.16 groups it: one PodGroup, two levels of subgroups.

JobSet's controller is not served by the module proxy (docs/e2e.md), so the test plays
it: it creates the JobSet (its CRD from the corpus) and the Jobs JobSet would create
(``<js>-<rj>-<i>``, owned by the JobSet, with JobSet's labels on the pod template); the
real Job controller creates the pods. The podgrouper must then write one PodGroup
``pg-<js>-<uid>`` with a parent subgroup per replicatedJob and a leaf per Job replica,
and label every pod with its leaf (``kai.scheduler/subgroup-name``); the scheduler then
runs the whole set on a node with room for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .frameworks import install_corpus_crds
from .kube import Obj, wait_for
from .objects import QUEUE_LABEL, group_of, kai_template, pod_group
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
RJ_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
INDEX_LABEL = "jobset.sigs.k8s.io/job-index"


def job_spec(template: Obj, parallelism: int) -> dict[str, Any]:
    return {"parallelism": parallelism, "completions": parallelism, "template": template}


def test_jobset_is_one_podgroup_with_a_leaf_per_job(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    install_corpus_crds(cluster, "jobset")
    kwok_nodes.add(cpu="8")
    queue = kai_queues.add("js")
    template = kai_template(kwok_nodes.pool, cpu="100m")
    jobs = {"driver": (1, 1), "workers": (2, 2)}  # replicatedJob: (replicas, parallelism)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "replicatedJobs": [
                {"name": rj, "replicas": replicas, "template": {"spec": job_spec(template, par)}}
                for rj, (replicas, par) in jobs.items()
            ]
        },
    }
    cluster.kubectl.create(jobset)
    uid = cluster.kubectl.get("jobset", "train", "-n", namespace)["metadata"]["uid"]
    owner = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "train",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for rj, (replicas, par) in jobs.items():
        for index in range(replicas):
            labels = {RJ_LABEL: rj, INDEX_LABEL: str(index)}
            pod_template = {
                **template,
                "metadata": {"labels": {**template["metadata"]["labels"], **labels}},
            }
            job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"train-{rj}-{index}",
                    "namespace": namespace,
                    "labels": labels,
                    "ownerReferences": [owner],
                },
                "spec": job_spec(pod_template, par),
            }
            cluster.kubectl.create(job)

    def labelled() -> list[Obj] | None:
        pods = cluster.kubectl.items("pods", "-n", namespace, "-l", RJ_LABEL)
        done = [p for p in pods if SUBGROUP_LABEL in (p["metadata"].get("labels") or {})]
        return done if len(pods) == len(done) == 5 else None

    pods = wait_for("5 JobSet pods in their subgroups", labelled, timeout=120)
    name = f"pg-train-{uid}"
    for member in pods:
        labels = member["metadata"]["labels"]
        assert group_of(member) == name
        assert labels[SUBGROUP_LABEL] == f"{labels[RJ_LABEL]}-replica-{labels[INDEX_LABEL]}"
    spec = pod_group(cluster, namespace, name)["spec"]
    assert spec["queue"] == queue
    assert spec["minSubGroup"] == 2  # no startupPolicy: AnyOrder, both replicatedJobs
    assert "minMember" not in spec
    assert spec["subGroups"] == [
        {"name": "driver", "minSubGroup": 1},
        {"name": "driver-replica-0", "minMember": 1, "parent": "driver"},
        {"name": "workers", "minSubGroup": 2},
        {"name": "workers-replica-0", "minMember": 2, "parent": "workers"},
        {"name": "workers-replica-1", "minMember": 2, "parent": "workers"},
    ]

    def running() -> bool:
        pods = cluster.kubectl.items("pods", "-n", namespace, "-l", RJ_LABEL)
        return sum(p["status"].get("phase") == "Running" for p in pods) == 5

    wait_for("the JobSet's 5 pods Running", running, timeout=120)
