"""Smoke tests: the real Job controller, pods/binding, and kwok's fake kubelet.

These prove the control plane behaves like a cluster before any podmuster
component runs on it: a Job makes pods, a bound pod turns Running, and a pod
asked to finish turns Succeeded, which completes its Job.
"""

from __future__ import annotations

import pytest

from .controlplane import Cluster
from .kube import Obj, wait_for
from .objects import bind, pod, pod_template, request_completion, wait_phase

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

JOB_LABEL = "batch.kubernetes.io/job-name"


def job(name: str, namespace: str, completions: int) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": completions,
            "completions": completions,
            "backoffLimit": 0,
            "template": pod_template(),
        },
    }


def job_pods(cluster: Cluster, namespace: str, name: str) -> list[Obj]:
    return cluster.kubectl.items("pods", "-n", namespace, "-l", f"{JOB_LABEL}={name}")


def test_job_controller_creates_pods(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.create(job("three", namespace, 3))
    pods = wait_for(
        "3 pods of Job three",
        lambda: (p := job_pods(cluster, namespace, "three")) and len(p) == 3 and p,
    )
    for p in pods:
        owner = p["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "three", True)
        assert p["status"]["phase"] == "Pending"
        assert "nodeName" not in p["spec"]


def test_bound_pod_runs_then_succeeds(cluster: Cluster, namespace: str, kwok_node: str) -> None:
    cluster.kubectl.create(pod("solo", namespace))
    bind(cluster, namespace, "solo", kwok_node)
    wait_phase(cluster, namespace, "solo", "Running")
    got = cluster.kubectl.get("pod", "solo", "-n", namespace)
    assert got["spec"]["nodeName"] == kwok_node
    assert got["status"].get("podIP")
    conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True"
    assert conditions["Ready"] == "True"
    request_completion(cluster, namespace, "solo")
    wait_phase(cluster, namespace, "solo", "Succeeded")


def test_job_completes_when_its_pods_succeed(
    cluster: Cluster, namespace: str, kwok_node: str
) -> None:
    cluster.kubectl.create(job("pair", namespace, 2))
    pods = wait_for(
        "2 pods of Job pair",
        lambda: (p := job_pods(cluster, namespace, "pair")) and len(p) == 2 and p,
    )
    names = [p["metadata"]["name"] for p in pods]
    for name in names:
        bind(cluster, namespace, name, kwok_node)
    for name in names:
        wait_phase(cluster, namespace, name, "Running")
        request_completion(cluster, namespace, name)

    def complete() -> bool:
        status = cluster.kubectl.get("job", "pair", "-n", namespace).get("status", {})
        conds = status.get("conditions", [])
        return any(c["type"] == "Complete" and c["status"] == "True" for c in conds)

    wait_for("Job pair Complete", complete, timeout=90)
    assert cluster.kubectl.get("job", "pair", "-n", namespace)["status"]["succeeded"] == 2
