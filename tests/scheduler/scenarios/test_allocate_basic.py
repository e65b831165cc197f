"""Allocate basics: S1 (docs/semantics.md §9.4), job order, pod states on nodes (§1.3, §5.1).

Each scenario carries a comment naming the rule it checks and why the
expected decisions follow from it.
"""

from __future__ import annotations

import pytest

from scheduler.config import SchedulerConfig
from tests.kits.worlds import (
    Scenario,
    bind_request,
    check,
    job,
    node,
    pod,
    pod_group,
    queue,
)

GPU_ONLY = {"cpu": None, "memory": None}


def _failed_bind_request(pod_name: str, node_name: str) -> dict[str, object]:
    """A BindRequest that used up its retries (failedAttempts >= backoffLimit)."""
    body = bind_request(pod_name, node_name)
    body["spec"]["backoffLimit"] = 3
    body["status"] = {"phase": "Failed", "failedAttempts": 3}
    return body


GLOBAL_DEFAULT_80 = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "site-default"},
    "value": 80,
    "globalDefault": True,
}

SCENARIOS = [
    # §9.4 S1: queue1 is starved (0+1 <= deserved 1) so it goes first and binpack puts it
    # on the fuller node0; then queue0 and queue1 tie on every rule and the older queue0
    # wins; then queue1 again (lower share); the cluster is full for pending_job3.
    Scenario(
        "S1-allocate-by-queue-shares",
        [
            queue("default", gpu_quota=-1),
            queue("queue0", "default", gpu_quota=1),
            queue("queue1", "default", gpu_quota=1),
            node("node0", gpus=2),
            node("node1", gpus=2),
            job("running_job0", "queue0", gpus=1, states=["Running"], nodes=["node0"], **GPU_ONLY),
            job("pending_job0", "queue0", gpus=1, **GPU_ONLY),
            job("pending_job1", "queue1", gpus=1, **GPU_ONLY),
            job("pending_job2", "queue1", gpus=1, **GPU_ONLY),
            job("pending_job3", "queue1", gpus=1, **GPU_ONLY),
        ],
        binds={"pending_job1-0": "node0", "pending_job0-0": "node1", "pending_job2-0": "node1"},
        pending=["pending_job3"],
    ),
    # Minimal case: one pending pod, one node with room, so it binds there.
    Scenario(
        "single-pod-binds",
        [queue("q", gpu_quota=1), node("n0", gpus=1), job("j", "q", gpus=1)],
        binds={"j-0": "n0"},
    ),
    # §5.1 job order rule 1: the newer build-preemptible (75) job beats the older train (50)
    # job for the only GPU.
    Scenario(
        "job-order-priority-beats-age",
        [
            queue("q"),
            node("n0", gpus=1),
            job("old-train", "q", gpus=1, priority_class="train"),
            job("new-build-preemptible", "q", gpus=1, priority_class="build-preemptible"),
        ],
        binds={"new-build-preemptible-0": "n0"},
        pending=["old-train"],
    ),
    # §5.1 job order fallback: equal priority, the older PodGroup goes first.
    Scenario(
        "job-order-older-first",
        [
            queue("q"),
            node("n0", gpus=1),
            job("first", "q", gpus=1),
            job("second", "q", gpus=1),
        ],
        binds={"first-0": "n0"},
        pending=["second"],
    ),
    # §3: an unknown priority class resolves to 50 (train), so the known build-preemptible
    # (75) job goes first although it is newer.
    Scenario(
        "unknown-priority-class-is-50",
        [
            queue("q"),
            node("n0", gpus=1),
            job("unknown-class", "q", gpus=1, priority_class="no-such-class"),
            job("bp", "q", gpus=1, priority_class="build-preemptible"),
        ],
        binds={"bp-0": "n0"},
        pending=["unknown-class"],
    ),
    # §5.1 queueDepthPerAction: with depth 1 only the best job of each leaf enters allocate,
    # so the second job is not even tried although it would fit.
    Scenario(
        "queue-depth-caps-jobs-per-leaf",
        [queue("q"), node("n0", gpus=2), job("a", "q", gpus=1), job("b", "q", gpus=1)],
        binds={"a-0": "n0"},
        config=SchedulerConfig(actions=("allocate",), queue_depth_per_action={"allocate": 1}),
    ),
    # §1.3: a Succeeded pod uses nothing, so the node's only GPU is free.
    Scenario(
        "succeeded-pod-uses-nothing",
        [
            queue("q"),
            node("n0", gpus=1),
            job("done", "q", gpus=1, states=["Succeeded"], nodes=["n0"]),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n0"},
    ),
    # §2.1: a PodGroup without a priority class takes the globalDefault PriorityClass (80),
    # so it beats the older build-preemptible (75) job.
    Scenario(
        "global-default-priority-class",
        [
            GLOBAL_DEFAULT_80,
            queue("q"),
            node("n0", gpus=1),
            job("bp", "q", gpus=1, priority_class="build-preemptible"),
            job("plain", "q", gpus=1),
        ],
        binds={"plain-0": "n0"},
        pending=["bp"],
    ),
    # §2.4: a BindRequest that failed for good is not live; the pod is Pending again and is
    # placed anew (n0 by name).
    Scenario(
        "failed-bind-request-pod-pending-again",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            pod_group("g", "q"),
            *pod("p", "g", gpus=1),
            _failed_bind_request("p", "n1"),
        ],
        binds={"p": "n0"},
    ),
    # §1.3: a Failed pod uses nothing either.
    Scenario(
        "failed-pod-uses-nothing",
        [
            queue("q"),
            node("n0", gpus=1),
            job("crashed", "q", gpus=1, states=["Failed"]),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n0"},
    ),
    # §5.1 snapshot: a running pod of ours without a PodGroup is not scheduled but still
    # occupies its node, so the job goes to n1.
    Scenario(
        "ungrouped-running-pod-counts",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            *pod("loose", gpus=1, state="Running", node="n0"),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n1"},
    ),
    # Pod groups are namespaced: pods join the group of their own namespace, and keys carry
    # the namespace.
    Scenario(
        "namespaced-pod-groups",
        [
            queue("q"),
            node("n0", gpus=2),
            job("train", "q", gpus=1, namespace="team-a"),
            job("train", "q", gpus=1, namespace="team-b"),
        ],
        binds={"team-a/train-0": "n0", "team-b/train-0": "n0"},
    ),
    # §1.3: a Bound pod (nodeName set, phase Pending) occupies its node.
    Scenario(
        "bound-pod-occupies-node",
        [
            queue("q"),
            node("n0", gpus=1),
            job("bound", "q", gpus=1, states=["Bound"], nodes=["n0"]),
            job("new", "q", gpus=1),
        ],
        pending=["new"],
    ),
    # §1.3 / §13.1: a live BindRequest makes its pod Binding on the selected node: it uses
    # n0's GPU and is not bound again, so the new job goes to n1.
    Scenario(
        "bind-request-makes-pod-binding",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            job("binding", "q", gpus=1, states=["Binding"], nodes=["n0"]),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n1"},
    ),
    # §5.1 snapshot: pods of other schedulers count on their node, so n0 is full and the
    # job goes to n1 (binpack would otherwise pick n0 by name).
    Scenario(
        "foreign-pod-counts-on-node",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1),
            pod("web", gpus=1, state="Running", node="n0", scheduler_name="default-scheduler"),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n1"},
    ),
    # §1.3: a pod of another scheduler is never scheduled by us, even with room.
    Scenario(
        "foreign-pending-pod-not-scheduled",
        [
            queue("q"),
            node("n0", gpus=1),
            pod("web", gpus=1, scheduler_name="default-scheduler"),
        ],
    ),
    # §5.1 task order: Kubeflow master first. Only one pod of the elastic job (min 1) fits;
    # the newer master is placed before the older worker.
    Scenario(
        "task-order-kubeflow-master-first",
        [
            queue("q"),
            node("n0", gpus=1),
            job("tf", "q", 0, min_member=1),
            pod("tf-worker", "tf", gpus=1, labels={"training.kubeflow.org/job-role": "worker"}),
            pod("tf-master", "tf", gpus=1, labels={"training.kubeflow.org/job-role": "master"}),
        ],
        binds={"tf-master": "n0"},
    ),
    # §5.1 task order: Ray head first, over an older worker.
    Scenario(
        "task-order-ray-head-first",
        [
            queue("q"),
            node("n0", gpus=1),
            job("ray", "q", 0, min_member=1),
            pod("ray-worker", "ray", gpus=1, labels={"ray.io/node-type": "worker"}),
            pod("ray-head", "ray", gpus=1, labels={"ray.io/node-type": "head"}),
        ],
        binds={"ray-head": "n0"},
    ),
    # §5.1 task order rule 3: a labelled pod beats an unlabelled one, higher value first.
    Scenario(
        "task-order-task-priority-label",
        [
            queue("q"),
            node("n0", gpus=1),
            job("tp", "q", 0, min_member=1),
            pod("tp-plain", "tp", gpus=1),
            pod("tp-low", "tp", gpus=1, labels={"kai.scheduler/task-priority": "1"}),
            pod("tp-high", "tp", gpus=1, labels={"kai.scheduler/task-priority": "5"}),
        ],
        binds={"tp-high": "n0"},
    ),
    # §5.1 task order rule 3: labelled before unlabelled, and only then does an unparsable
    # value lose; so the newer pod with task-priority "abc" still beats the older unlabelled
    # pod.
    Scenario(
        "task-order-unparsable-label-still-labelled",
        [
            queue("q"),
            node("n0", gpus=1),
            job("tp", "q", 0, min_member=1),
            pod("tp-plain", "tp", gpus=1),
            pod("tp-bad", "tp", gpus=1, labels={"kai.scheduler/task-priority": "abc"}),
        ],
        binds={"tp-bad": "n0"},
    ),
    # §5.1 task order rule 3: a valid value beats an unparsable one.
    Scenario(
        "task-order-unparsable-label-loses-to-valid",
        [
            queue("q"),
            node("n0", gpus=1),
            job("tp", "q", 0, min_member=1),
            pod("tp-bad", "tp", gpus=1, labels={"kai.scheduler/task-priority": "abc"}),
            pod("tp-low", "tp", gpus=1, labels={"kai.scheduler/task-priority": "-5"}),
        ],
        binds={"tp-low": "n0"},
    ),
    # §5.1 task order fallback: same labels, the older pod first.
    Scenario(
        "task-order-older-pod-first",
        [
            queue("q"),
            node("n0", gpus=1),
            job("t", "q", 0, min_member=1),
            pod("t-older", "t", gpus=1),
            pod("t-newer", "t", gpus=1),
        ],
        binds={"t-older": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_basic(scenario: Scenario) -> None:
    check(scenario)
