"""Kubernetes 1.37's own workload-aware scheduling API, scheduled by podmuster.

Pods name a ``podgroups.scheduling.k8s.io`` object in ``spec.schedulingGroup``; the
podgrouper derives one ``podgroups.scheduling.run.ai`` PodGroup from it (or from the
tree under a ``compositepodgroups.scheduling.k8s.io``), the scheduler places it whole,
and the podgrouper mirrors the outcome into the upstream PodGroup's
``PodGroupInitiallyScheduled`` condition.

The session's API server serves the API (``WORKLOAD_API_ARGS`` in controlplane.py).
The Job controller's own Workloads (``WorkloadWithJob`` on kube-controller-manager) would
change how every other test's Jobs are grouped, so that test starts a control plane of
its own with the gate on; the last test starts one that does not serve the API at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from .conftest import NodeFactory, QueueFactory, create_kwok_node, podmuster_crd_files
from .controlplane import Binaries, Cluster, LocalControlPlane
from .frameworks import apply_crds
from .kube import NotYet, Obj, wait_for
from .live import pipeline
from .objects import (
    POOL_LABEL,
    QUEUE_LABEL,
    batch_job,
    bind_requests,
    ensure_priority_classes,
    group_of,
    kai_queue,
    kai_template,
    live_pods,
    pod_group,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

V1BETA1 = "scheduling.k8s.io/v1beta1"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
PODGROUPS = "podgroups.scheduling.k8s.io"
COMPOSITE = "compositepodgroups.scheduling.k8s.io"


def workload(name: str, namespace: str, queue: str, spec: Obj) -> Obj:
    return {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
        "spec": spec,
    }


def upstream_group(
    name: str, namespace: str, workload_name: str, template: str, min_count: int, parent: str = ""
) -> Obj:
    spec: Obj = {
        "workloadRef": {"workloadName": workload_name, "templateName": template},
        "schedulingPolicy": {"gang": {"minCount": min_count}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": V1BETA1,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def composite(
    name: str, namespace: str, workload_name: str, template: str, policy: Obj, parent: str = ""
) -> Obj:
    spec: Obj = {
        "workloadRef": {"workloadName": workload_name, "templateName": template},
        "schedulingPolicy": policy,
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": V1ALPHA3,
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def member(name: str, namespace: str, group: str, template: Obj) -> Obj:
    """A pod naming upstream PodGroup ``group``; no queue label of its own."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"e2e-group": group}},
        "spec": {**template["spec"], "schedulingGroup": {"podGroupName": group}},
    }


def condition(
    cluster: Cluster, namespace: str, name: str, status: str, resource: str = PODGROUPS
) -> Obj | NotYet:
    """The upstream group's ``…InitiallyScheduled`` condition once it has ``status``."""
    group = cluster.kubectl.get(resource, name, "-n", namespace)
    wanted = INITIALLY_SCHEDULED if resource == PODGROUPS else f"Composite{INITIALLY_SCHEDULED}"
    for found in (group.get("status") or {}).get("conditions") or []:
        if found["type"] == wanted and found["status"] == status:
            return dict(found)
    return NotYet(f"conditions {(group.get('status') or {}).get('conditions')}")


def test_gang_waits_whole_then_starts_whole(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    """minCount 3 of 1 CPU each on a 2-CPU node: none binds, Unschedulable upstream;
    a second node: all three start and the condition turns True."""
    kwok_nodes.add(cpu="2")
    queue = kai_queues.add("wl")
    template = kai_template(kwok_nodes.pool, cpu="1")
    spec = {
        "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]
    }
    cluster.kubectl.create(workload("train", namespace, queue, spec))
    cluster.kubectl.create(upstream_group("train-workers", namespace, "train", "workers", 3))
    for index in range(3):
        cluster.kubectl.create(member(f"w-{index}", namespace, "train-workers", template))

    waiting = wait_for(
        "upstream PodGroup Unschedulable",
        lambda: condition(cluster, namespace, "train-workers", "False"),
        timeout=120,
    )
    assert waiting["reason"] == "Unschedulable"
    pods = live_pods(cluster, namespace, "e2e-group=train-workers")
    assert len({group_of(p) for p in pods}) == 1
    kai_name = group_of(pods[0])
    kai = pod_group(cluster, namespace, kai_name)
    assert kai["spec"]["minMember"] == 3
    assert kai["spec"]["queue"] == queue  # the Workload's label
    owner = kai["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["name"]) == (
        V1BETA1,
        "PodGroup",
        "train-workers",
    )
    assert not [p for p in pods if p["spec"].get("nodeName")]
    assert not bind_requests(cluster, namespace)

    kwok_nodes.add(cpu="2")
    wait_running(cluster, namespace, "e2e-group=train-workers", 3, timeout=120)
    scheduled = wait_for(
        "upstream PodGroup scheduled",
        lambda: condition(cluster, namespace, "train-workers", "True"),
        timeout=60,
    )
    assert scheduled["reason"] == "Scheduled"
    assert kai_name in scheduled["message"]

    # minCount is mutable upstream (workload scaling): the KAI PodGroup follows
    patch = '{"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}'
    cluster.kubectl.run(
        "patch", PODGROUPS, "train-workers", "-n", namespace, "--type=merge", "-p", patch
    )
    wait_for(
        "KAI PodGroup minMember 2",
        lambda: pod_group(cluster, namespace, kai_name)["spec"]["minMember"] == 2,
    )


def test_composite_tree_of_two_levels(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    """root (gang of 2 groups) -> prefill (gang 2) and decode (basic) -> decode-0 (gang 1);
    the pods are created before their groups."""
    kwok_nodes.add(cpu="8")
    queue = kai_queues.add("serve")
    template = kai_template(kwok_nodes.pool, cpu="1", restart="Always")
    spec = {
        "compositePodGroupTemplates": [
            {
                "name": "server",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "podGroupTemplates": [
                    {"name": "prefill", "schedulingPolicy": {"gang": {"minCount": 2}}}
                ],
                "compositePodGroupTemplates": [
                    {
                        "name": "decode",
                        "schedulingPolicy": {"basic": {}},
                        "podGroupTemplates": [
                            {"name": "decoder", "schedulingPolicy": {"gang": {"minCount": 1}}}
                        ],
                    }
                ],
            }
        ]
    }
    kubectl = cluster.kubectl
    # the pods first (upstream allows it): they are grouped once their PodGroups appear
    for name, group in (("p-0", "prefill"), ("p-1", "prefill"), ("d-0", "decode-0")):
        kubectl.create(member(name, namespace, group, template))
    kubectl.create(workload("serve", namespace, queue, spec))
    kubectl.create(composite("root", namespace, "serve", "server", {"gang": {"minGroupCount": 2}}))
    kubectl.create(composite("decode", namespace, "serve", "decode", {"basic": {}}, "root"))
    kubectl.create(upstream_group("prefill", namespace, "serve", "prefill", 2, "root"))
    kubectl.create(upstream_group("decode-0", namespace, "serve", "decoder", 1, "decode"))

    found = wait_running(cluster, namespace, "e2e-group", 3, timeout=120)
    groups = {group_of(p) for p in found}
    assert len(groups) == 1, groups
    kai = pod_group(cluster, namespace, groups.pop())
    assert kai["spec"]["minSubGroup"] == 2
    subgroups = {s["name"]: s for s in kai["spec"]["subGroups"]}
    assert subgroups["decode"].get("minSubGroup") == 1
    assert subgroups["prefill"]["minMember"] == 2
    assert subgroups["decode-0"] == {"name": "decode-0", "minMember": 1, "parent": "decode"}
    by_pod = {p["metadata"]["name"]: p["metadata"]["labels"].get("kai.scheduler/subgroup-name")
              for p in found}  # fmt: skip
    assert by_pod == {"p-0": "prefill", "p-1": "prefill", "d-0": "decode-0"}
    for name in ("prefill", "decode-0"):
        wait_for(f"{name} scheduled", partial(condition, cluster, namespace, name, "True"))
    for name in ("root", "decode"):
        found = wait_for(
            f"composite {name} scheduled",
            partial(condition, cluster, namespace, name, "True", COMPOSITE),
        )
        assert found["reason"] == "Scheduled"


# --- the Job controller's own Workloads: a control plane of this test's own ----------------


@pytest.fixture(scope="module")
def job_cluster(binaries: Binaries) -> Iterator[Cluster]:
    """etcd, kube-apiserver, kube-controller-manager with ``WorkloadWithJob``, kwok."""
    gates = "--feature-gates=GenericWorkload=true,WorkloadWithJob=true"
    plane = LocalControlPlane(binaries, controller_manager_args=[gates])
    own = plane.start()
    try:
        apply_crds(own.kubectl, podmuster_crd_files())
        ensure_priority_classes(own)
        yield own
    finally:
        own.stop()
        own.cleanup()


def test_job_controller_workload_is_gang_started(job_cluster: Cluster) -> None:
    """A plain Job with ``spec.scheduling`` gang 3: kube-controller-manager makes the
    Workload and PodGroup and sets the pods' schedulingGroup; podmuster starts them whole."""
    if "kwok" not in job_cluster.processes:
        pytest.skip("kwok is not running")
    kubectl = job_cluster.kubectl
    namespace = f"e2e-jobwl-{uuid.uuid4().hex[:5]}"
    pool = f"pool-{uuid.uuid4().hex[:6]}"
    kubectl.run("create", "namespace", namespace)
    wait_for(
        "default ServiceAccount",
        lambda: kubectl.exists("serviceaccount", "default", "-n", namespace),
    )
    create_kwok_node(job_cluster, f"{pool}-n0", {"cpu": "8", "memory": "64Gi", "pods": "110"},
                     {POOL_LABEL: pool})  # fmt: skip
    kubectl.create(kai_queue("jobs"))
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "gang", "namespace": namespace, "labels": {QUEUE_LABEL: "jobs"}},
        "spec": {
            "parallelism": 3,
            "completions": 3,
            "template": kai_template(pool, cpu="1"),
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        },
    }
    kubectl.create(job)
    with pipeline(job_cluster) as procs:
        found = wait_running(job_cluster, namespace, "job-name=gang", 3, timeout=180)
        names = {p["spec"].get("schedulingGroup", {}).get("podGroupName") for p in found}
        assert len(names) == 1, names
        upstream_name = names.pop()
        assert upstream_name
        groups = {group_of(p) for p in found}
        assert len(groups) == 1, groups
        kai = pod_group(job_cluster, namespace, groups.pop())
        assert kai["spec"]["minMember"] == 3
        assert kai["spec"]["queue"] == "jobs"  # the Job's label, through the pods' owner
        wait_for(
            "Job's upstream PodGroup scheduled",
            lambda: condition(job_cluster, namespace, upstream_name, "True"),
        )
        for proc in procs.values():
            proc.check_alive()


# --- a cluster that does not serve the API (Kubernetes before 1.37, or gates off) ---------


def test_podgrouper_works_where_the_api_is_not_served(binaries: Binaries) -> None:
    """The podgrouper watches podgroups.scheduling.k8s.io; where the API server does not
    serve it, a Job is still grouped, scheduled and started, and nothing fails."""
    off = (
        "--feature-gates=GenericWorkload=false,CompositePodGroup=false,"
        "TopologyAwareWorkloadScheduling=false,WorkloadWithJob=false",
        "--runtime-config=scheduling.k8s.io/v1beta1=false,scheduling.k8s.io/v1alpha3=false",
    )
    own = LocalControlPlane(binaries, apiserver_args=off).start()
    try:
        if "kwok" not in own.processes:
            pytest.skip("kwok is not running")
        assert "workloads" not in own.kubectl.run("api-resources", "--api-group=scheduling.k8s.io")
        apply_crds(own.kubectl, podmuster_crd_files())
        ensure_priority_classes(own)
        namespace, pool = "plain", f"pool-{uuid.uuid4().hex[:6]}"
        own.kubectl.run("create", "namespace", namespace)
        wait_for("default ServiceAccount",
                 lambda: own.kubectl.exists("serviceaccount", "default", "-n", namespace))  # fmt: skip
        create_kwok_node(own, f"{pool}-n0", {"cpu": "8", "memory": "64Gi", "pods": "110"},
                         {POOL_LABEL: pool})  # fmt: skip
        own.kubectl.create(kai_queue("plain"))
        with pipeline(own) as procs:
            own.kubectl.create(batch_job("job", namespace, "plain", kai_template(pool), 2))
            found = wait_running(own, namespace, "job-name=job", 2, timeout=180)
            assert all(group_of(p) for p in found)
            for proc in procs.values():
                proc.check_alive()
    finally:
        own.stop()
        own.cleanup()
