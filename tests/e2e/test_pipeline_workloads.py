"""The whole pipeline on real workloads: podgrouper -> scheduler -> binder -> controllers.

podmuster runs as one ``podmuster run all`` process for the module (or one process
per component on a tree without it). Workloads go through their real controllers
(the Job controller in kube-controller-manager, the KubeRay operator, the Kubeflow
training operator); pods bound to kwok nodes turn Running. Each test has its own
namespace, its own queues and its own nodes (a pool label its pods select), so the
tests do not see each other's capacity.

Gangs are shown whole-or-nothing the same way each time: the workload is submitted
when its pods do not fit together, the scheduler explains why (a scheduling
condition on the PodGroup) and binds none of them; a second node arrives and all of
them are bound.
"""

from __future__ import annotations

import re
from functools import partial

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import NotYet, Obj, wait_for
from .objects import (
    QUEUE_LABEL,
    batch_job,
    bind_requests,
    events,
    group_of,
    kai_bare_pod,
    kai_template,
    live_pods,
    pod_group,
    scheduling_reasons,
    wait_running,
)
from .procs import ManagedProcess

BATCH_MIN_MEMBER_ANNOTATION = "kai.scheduler/batch-min-member"

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def grouped_pod(cluster: Cluster, namespace: str, job: str) -> Obj | NotYet:
    """The one live pod of Job ``job``, once the podgrouper has put it in a PodGroup."""
    found = live_pods(cluster, namespace, f"job-name={job}")
    if len(found) == 1 and group_of(found[0]):
        return found[0]
    return NotYet(f"{len(found)} pods, groups {[group_of(p) for p in found]}")


def assert_gang_waits(cluster: Cluster, namespace: str, selector: str, pods: int) -> str:
    """All ``pods`` exist in one PodGroup of that size, are explained and none is bound."""

    def grouped() -> list[Obj] | NotYet:
        found = live_pods(cluster, namespace, selector)
        groups = {group_of(p) for p in found}
        if len(found) == pods and len(groups) == 1 and "" not in groups:
            return found
        return NotYet(f"{len(found)} pods in groups {sorted(groups)}")

    members = wait_for(f"{pods} pods {selector} in one PodGroup", grouped, timeout=120)
    group = group_of(members[0])
    assert pod_group(cluster, namespace, group)["spec"]["minMember"] == pods
    reasons = wait_for(
        f"why {group} waits", lambda: scheduling_reasons(cluster, namespace, group), timeout=30
    )
    assert reasons, reasons
    assert not [p["metadata"]["name"] for p in live_pods(cluster, namespace, selector)
                if p["spec"].get("nodeName")]  # fmt: skip
    assert not bind_requests(cluster, namespace), "no member of a gang that does not fit binds"
    return group


def test_batch_job_through_the_job_controller(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    node = kwok_nodes.add(cpu="8")
    queue = kai_queues.add("batch")
    template = kai_template(kwok_nodes.pool, cpu="1")
    job = batch_job("train", namespace, queue, template, parallelism=3)
    job["metadata"]["annotations"] = {BATCH_MIN_MEMBER_ANNOTATION: "3"}  # a gang of 3
    cluster.kubectl.create(job)

    found = wait_running(cluster, namespace, "job-name=train", 3)
    job_uid = cluster.kubectl.get("job", "train", "-n", namespace)["metadata"]["uid"]
    group = f"pg-train-{job_uid}"  # one PodGroup per Job (KAI v0.15)
    requests = bind_requests(cluster, namespace)
    for member in found:
        name = member["metadata"]["name"]
        assert member["spec"]["nodeName"] == node
        assert group_of(member) == group
        assert requests[name]["spec"]["selectedNode"] == node
        assert requests[name]["status"]["phase"] == "Succeeded"
    spec = pod_group(cluster, namespace, group)
    assert spec["spec"]["queue"] == queue
    assert spec["spec"]["minMember"] == 3
    assert spec["spec"]["priorityClassName"] == "train"
    owner = spec["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Job", "train")

    def allocated_is(cpu: str) -> bool:
        status = pod_group(cluster, namespace, group).get("status") or {}
        return bool((status.get("resourcesStatus") or {}).get("allocated", {}).get("cpu") == cpu)

    wait_for(f"PodGroup {group} allocated 3 CPUs", partial(allocated_is, "3000"))

    def queue_allocated() -> str:
        status = cluster.kubectl.get("queues.scheduling.run.ai", queue).get("status") or {}
        return str((status.get("allocated") or {}).get("cpu", ""))

    wait_for(f"Queue {queue} allocated 3 CPUs", lambda: queue_allocated() == "3000")


def raycluster(name: str, namespace: str, queue: str, pool: str, workers: int) -> Obj:
    """Head 1 CPU, ``workers`` workers of 2 CPUs (min ``workers``, up to two more)."""
    head = kai_template(pool, cpu="1", container="ray-head", restart="Always")
    worker = kai_template(pool, cpu="2", container="ray-worker", restart="Always")
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": workers,
                    "maxReplicas": workers + 2,
                    "rayStartParams": {},
                    "template": worker,
                }
            ],
        },
    }


def test_raycluster_gang_then_autoscaled_worker(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    kuberay: str,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    kwok_nodes.add(cpu="4")  # head 1 + workers 2 x 2 = 5 CPUs: not on one node
    queue = kai_queues.add("ray")
    cluster.kubectl.create(raycluster("ray", namespace, queue, kwok_nodes.pool, workers=2))
    selector = "ray.io/cluster=ray"
    group = assert_gang_waits(cluster, namespace, selector, 3)
    spec = pod_group(cluster, namespace, group)["spec"]
    assert spec["queue"] == queue
    assert {s["name"]: s["minMember"] for s in spec.get("subGroups") or []} in (
        {},
        {"headgroup": 1, "workers": 2},
    )

    kwok_nodes.add(cpu="4")
    found = wait_running(cluster, namespace, selector, 3)
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in found) == [
        "head",
        "worker",
        "worker",
    ]

    # The Ray autoscaler asks for one more worker by raising the group's replicas.
    patch = '[{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}]'
    cluster.kubectl.run("patch", "raycluster", "ray", "-n", namespace, "--type=json", "-p", patch)
    found = wait_running(cluster, namespace, selector, 4)
    assert {group_of(p) for p in found} == {group}
    assert pod_group(cluster, namespace, group)["spec"]["minMember"] == 3  # minReplicas holds


def pytorchjob(name: str, namespace: str, queue: str, pool: str, workers: int) -> Obj:
    """Master 1 CPU and ``workers`` workers of 2 CPUs."""

    def replica(count: int, cpu: str) -> Obj:
        template = kai_template(pool, cpu=cpu, container="pytorch")  # the operator's name
        return {"replicas": count, "restartPolicy": "Never", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "pytorchReplicaSpecs": {"Master": replica(1, "1"), "Worker": replica(workers, "2")}
        },
    }


def test_pytorchjob_gang_binds_together(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    training_operator: str,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    kwok_nodes.add(cpu="4")
    queue = kai_queues.add("torch")
    cluster.kubectl.create(pytorchjob("torch", namespace, queue, kwok_nodes.pool, workers=2))
    selector = "training.kubeflow.org/job-name=torch"
    group = assert_gang_waits(cluster, namespace, selector, 3)
    assert pod_group(cluster, namespace, group)["spec"]["queue"] == queue

    kwok_nodes.add(cpu="4")
    found = wait_running(cluster, namespace, selector, 3)
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in found)
    assert roles == ["master", "worker", "worker"]
    requests = bind_requests(cluster, namespace)
    assert {r["status"]["phase"] for r in requests.values()} == {"Succeeded"}
    assert {p["metadata"]["name"] for p in found} == set(requests)


def test_broken_podgroups_and_queues_are_reported_while_others_run(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    kwok_nodes.add(cpu="8")
    pool = kwok_nodes.pool
    good = kai_queues.add("good")
    orphan = kai_queues.add("orphan", parent=f"{kai_queues.prefix}-missing")
    loop_a = kai_queues.add("loop-a", parent=f"{kai_queues.prefix}-loop-b")
    kai_queues.add("loop-b", parent=loop_a)
    template = kai_template(pool)
    queues = {"lost": f"{kai_queues.prefix}-nowhere", "orphan": orphan, "loop": loop_a}
    for name, queue in queues.items():
        cluster.kubectl.create(batch_job(name, namespace, queue, template))
    # A user-managed PodGroup (owner-less pod, pod-group-name set: the podgrouper leaves
    # it alone) that the schema admits and the engine rejects: a sub-group's parent
    # names no sub-group.
    cluster.kubectl.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "odd", "namespace": namespace},
            "spec": {
                "queue": good,
                "minMember": 1,
                "subGroups": [{"name": "a", "minMember": 1, "parent": "no-such-group"}],
            },
        }
    )
    odd = kai_bare_pod("odd-0", namespace, good, template)
    odd["metadata"]["annotations"] = {"pod-group-name": "odd"}
    cluster.kubectl.create(odd)
    cluster.kubectl.create(batch_job("fine", namespace, good, template, parallelism=2))

    wait_running(cluster, namespace, "job-name=fine", 2)

    expected = {
        "lost": "does not exist",
        "orphan": "its parent queue",
        "loop": "parent cycle",
    }
    for job, words in expected.items():
        member = wait_for(
            f"{job}'s pod in a PodGroup", partial(grouped_pod, cluster, namespace, job)
        )
        group = group_of(member)
        reasons = wait_for(
            f"why {group} waits", partial(scheduling_reasons, cluster, namespace, group)
        )
        assert reasons[0]["reason"] == "QueueDoesNotExist", reasons
        assert words in reasons[0]["message"], reasons
        warned = [e for e in events(cluster, namespace, "PodGroup", group)
                  if e["reason"] == "Unschedulable"]  # fmt: skip
        assert warned, f"no Unschedulable Event on {group}"
        assert not live_pods(cluster, namespace, f"job-name={job}")[0]["spec"].get("nodeName")

    def invalid_event() -> Obj | None:
        found = events(cluster, namespace, "PodGroup", "odd")
        return next((e for e in found if e["reason"] == "InvalidObject"), None)

    event = wait_for("an InvalidObject Event on PodGroup odd", invalid_event, timeout=30)
    assert "spec.subGroups[0].parent" in event["message"]
    assert "odd-0" not in bind_requests(cluster, namespace)
    log = podmuster["all" if "all" in podmuster else "scheduler"].tail(400)
    assert re.search(r'"invalid_objects": [1-9]', log), log[-2000:]  # the cycle log line

    # The broken Queues themselves say why they are not used (Events of cluster-scoped
    # objects live in the default namespace).
    for queue, words in ((orphan, "does not exist"), (loop_a, "parent cycle")):
        # loop-a is created before loop-b, so a cycle may first see its parent missing
        # and report that; the cycle is reported as a second Event once both exist.
        def queue_event(queue: str = queue, words: str = words) -> Obj | None:
            found = events(cluster, "default", "Queue", queue)
            return next(
                (e for e in found
                 if e["reason"] == "InvalidObject" and words in e["message"]),
                None,
            )  # fmt: skip

        event = wait_for(f"an InvalidObject Event on Queue {queue}", queue_event, timeout=30)
        assert "spec.parentQueue" in event["message"], event["message"]
        assert words in event["message"], event["message"]
