"""The live scheduler against a real API server: BindRequests out, reasons written back.

``podmuster run scheduler`` runs as a subprocess on the cluster's kubeconfig (leader
election on). PodGroups and annotated pods are created by hand (no podgrouper runs);
assertions are on BindRequests, pod conditions, PodGroup status and Events, never on
bound pods, so the tests do not depend on the binder.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from crds.names import CREATED_BY_LABEL

from .controlplane import Cluster
from .kube import KubectlError, Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION, unschedulable
from .procs import ManagedProcess

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster) -> Iterator[ManagedProcess]:
    flags = ["--leader-elect", "--leader-elect-namespace=default", "--schedule-period=0.5",
             "--log-format=json"]  # fmt: skip
    with component(cluster, "scheduler", flags) as proc:
        yield proc


def queue(name: str, gpu_quota: float = 0) -> Obj:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {
            "resources": {
                "gpu": {"quota": gpu_quota, "limit": -1, "overQuotaWeight": 1},
                "cpu": unlimited,
                "memory": unlimited,
            }
        },
    }


def gang(namespace: str, name: str, queue_name: str, node: str, pods: int, cpu: str) -> list[Obj]:
    group: Obj = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue_name, "minMember": pods},
    }
    members: list[Obj] = []
    for index in range(pods):
        spec: dict[str, Any] = {
            "schedulerName": "kai-scheduler",
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [KWOK_TOLERATION],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}},
                }
            ],
        }
        members.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{index}",
                    "namespace": namespace,
                    "annotations": {"pod-group-name": name},
                    "labels": {"kai.scheduler/queue": queue_name},
                },
                "spec": spec,
            }
        )
    return [group, *members]


def bind_requests(cluster: Cluster, namespace: str) -> dict[str, Obj]:
    items = cluster.kubectl.items("bindrequests.scheduling.run.ai", "-n", namespace)
    return {item["metadata"]["name"]: item for item in items}


def wait_for_bind_request(cluster: Cluster, namespace: str, pod: str) -> None:
    wait_for(
        f"a BindRequest for {pod}", lambda: pod in bind_requests(cluster, namespace), timeout=30
    )


def invalid_event(cluster: Cluster, namespace: str, kind: str, name: str) -> Obj | None:
    """The InvalidObject Event on object ``kind``/``name``, once there is one."""
    for event in cluster.kubectl.items("events", "-n", namespace):
        involved = event["involvedObject"]
        if (involved["kind"], involved["name"], event["reason"]) == (kind, name, "InvalidObject"):
            return dict(event)
    return None


@pytest.fixture
def queue_name(cluster: Cluster) -> Iterator[str]:
    name = f"q-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(queue(name))
    yield name
    cluster.kubectl.run("delete", "queue.scheduling.run.ai", name, "--ignore-not-found")


def test_gang_that_fits_gets_bind_requests_and_one_that_does_not_is_explained(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    for obj in gang(namespace, "fits", queue_name, kwok_node, 2, "1"):
        cluster.kubectl.create(obj)
    for obj in gang(namespace, "big", queue_name, kwok_node, 2, "20"):  # 40 CPU > 32
        cluster.kubectl.create(obj)

    found = wait_for(
        "BindRequests for fits-0 and fits-1",
        lambda: (lambda b: b if {"fits-0", "fits-1"} <= set(b) else None)(
            bind_requests(cluster, namespace)
        ),
        timeout=30,
    )
    for name in ("fits-0", "fits-1"):
        request = found[name]
        assert request["spec"]["selectedNode"] == kwok_node
        assert request["spec"]["podName"] == name
        assert request["metadata"]["labels"]["selected-node"] == kwok_node
        assert request["metadata"]["labels"][CREATED_BY_LABEL] == "scheduler"  # for cleanup
        assert request["metadata"]["ownerReferences"][0]["kind"] == "Pod"
        assert request["spec"]["receivedGPU"] == {"count": 0, "portion": "0.00"}
    assert not {"big-0", "big-1"} & set(found)

    condition = wait_for(
        "PodScheduled=False on big-0", partial(unschedulable, cluster, namespace, "big-0"), 30
    )
    assert condition["reason"] == "Unschedulable"
    group = cluster.kubectl.get("podgroup.scheduling.run.ai", "big", "-n", namespace)
    (scheduling,) = group["status"]["schedulingConditions"]
    assert scheduling["type"] == "UnschedulableOnNodePool"
    assert scheduling["nodePool"] == "default"
    assert scheduling["reasons"]
    events = cluster.kubectl.items("events", "-n", namespace)
    assert any(
        e["reason"] == "Unschedulable" and e["involvedObject"]["name"] == "big" for e in events
    )
    assert set(bind_requests(cluster, namespace)) == {"fits-0", "fits-1"}  # none duplicated


def test_a_broken_queue_is_reported_while_others_are_scheduled(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    broken = f"broken-{uuid.uuid4().hex[:6]}"
    # the schema can only say minimum -1; between -1 and 0 is ours to refuse
    cluster.kubectl.create(queue(broken, gpu_quota=-0.5))
    try:
        for obj in gang(namespace, "ok", queue_name, kwok_node, 1, "1"):
            cluster.kubectl.create(obj)
        for obj in gang(namespace, "stuck", broken, kwok_node, 1, "1"):
            cluster.kubectl.create(obj)
        wait_for_bind_request(cluster, namespace, "ok-0")

        event = wait_for(
            f"an InvalidObject Event on Queue {broken}",
            partial(invalid_event, cluster, "default", "Queue", broken),
            timeout=30,
        )
        assert event["reason"] == "InvalidObject"
        assert "spec.resources.gpu.quota" in event["message"]

        def stuck_reasons() -> list[Any] | None:
            group = cluster.kubectl.get("podgroup.scheduling.run.ai", "stuck", "-n", namespace)
            conditions = group.get("status", {}).get("schedulingConditions") or []
            return conditions[0]["reasons"] if conditions else None

        reasons = wait_for("a scheduling condition on stuck", stuck_reasons, timeout=30)
        assert reasons[0]["reason"] == "QueueDoesNotExist"
        assert "stuck-0" not in bind_requests(cluster, namespace)
    finally:
        cluster.kubectl.run("delete", "queue.scheduling.run.ai", broken, "--ignore-not-found")


def test_a_gang_whose_bind_request_is_refused_is_evicted_as_stale_and_told(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    """A ValidatingAdmissionPolicy refuses one member's BindRequest, every time: the pod
    gets KAI's Warning FailedBinding Event (once, not every cycle), and the gang, running
    below its minimum, is evicted as stale after its grace period (2 s here)."""
    policy = f"deny-{namespace}"[:63]
    refuse = f"object.metadata.namespace != '{namespace}' || object.spec.podName != 'vg-3'"
    cluster.kubectl.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": policy},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": ["scheduling.run.ai"],
                            "apiVersions": ["*"],
                            "operations": ["CREATE"],
                            "resources": ["bindrequests"],
                        }
                    ]
                },
                "validations": [{"expression": refuse, "message": "e2e: refused"}],
            },
        }
    )
    cluster.kubectl.create(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": policy},
            "spec": {"policyName": policy, "validationActions": ["Deny"]},
        }
    )
    try:
        probe = {
            "apiVersion": "scheduling.run.ai/v1alpha2",
            "kind": "BindRequest",
            "metadata": {"name": "vg-3", "namespace": namespace},
            "spec": {"podName": "vg-3", "selectedNode": kwok_node},
        }

        def enforced() -> bool:
            try:
                cluster.kubectl.create(probe, "--dry-run=server")
            except KubectlError as err:
                return "e2e: refused" in err.stderr
            return False

        wait_for("the policy enforced", enforced, timeout=30)
        group, *members = gang(namespace, "vg", queue_name, kwok_node, 4, "1")
        group["spec"]["stalenessGracePeriod"] = "2s"
        cluster.kubectl.create(group)
        for member in members[:3]:  # already running: bound by hand
            member["spec"]["nodeName"] = kwok_node
        # vg-3 comes once vg-0..2 run
        for member in members[:3]:
            cluster.kubectl.create(member)

        def running() -> bool:
            pods = cluster.kubectl.items("pods", "-n", namespace)
            phases = [str(p.get("status", {}).get("phase")) for p in pods]
            return phases.count("Running") == 3

        wait_for("vg-0..2 Running", running, timeout=60)

        def refused_event() -> Obj | None:
            for event in cluster.kubectl.items("events", "-n", namespace):
                if event["reason"] == "FailedBinding":
                    return dict(event)
            return None

        cluster.kubectl.create(members[3])
        event = wait_for("a FailedBinding Event on vg-3", refused_event, timeout=60)
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "vg-3"
        assert "e2e: refused" in event["message"]

        def evicted() -> bool:
            pods = cluster.kubectl.items("pods", "-n", namespace)
            alive = [
                p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")
            ]
            return alive == ["vg-3"]

        wait_for("vg-0..2 evicted as stale", evicted, timeout=60)
        events = cluster.kubectl.items("events", "-n", namespace)
        assert sum(e["reason"] == "FailedBinding" for e in events) == 1  # said once
        assert any(e["reason"] == "Evict" and e["involvedObject"]["name"] == "vg-0" for e in events)
        assert "vg-3" not in bind_requests(cluster, namespace)
    finally:
        cluster.kubectl.run(
            "delete", "validatingadmissionpolicybinding", policy, "--ignore-not-found"
        )
        cluster.kubectl.run("delete", "validatingadmissionpolicy", policy, "--ignore-not-found")


def test_a_non_ascii_gpu_annotation_is_reported_and_the_scheduler_keeps_running(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    """``gpu-memory: "²"`` passed ``str.isdigit`` and ``int()`` raised: the scheduler exited
    and crash-looped while the pod existed. Now it is one bad pod, reported by an Event."""
    group, bad = gang(namespace, "superscript", queue_name, kwok_node, 1, "1")
    bad["metadata"]["annotations"]["gpu-memory"] = "\u00b2"
    cluster.kubectl.create(group)
    cluster.kubectl.create(bad)

    event = wait_for(
        "an InvalidObject Event on Pod superscript-0",
        partial(invalid_event, cluster, namespace, "Pod", "superscript-0"),
        timeout=30,
    )
    assert "metadata.annotations[gpu-memory]: must be a positive integer" in event["message"]
    for obj in gang(namespace, "after", queue_name, kwok_node, 1, "1"):
        cluster.kubectl.create(obj)
    wait_for_bind_request(cluster, namespace, "after-0")
    assert "superscript-0" not in bind_requests(cluster, namespace)
    scheduler.check_alive()
