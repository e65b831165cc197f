"""minSubGroup and the v0.17 PodGroup rules, live: the scheduler against a real API server.

``podmuster run scheduler`` runs on the cluster's kubeconfig with one kwok node
(32 CPUs). A PodGroup needing 2 of its 3 subgroups, one of which cannot fit,
gets BindRequests for the other two; a PodGroup breaking KAI's
minMember/minSubGroup rules is reported by a Warning Event naming the field
while the others are scheduled. Assertions are on BindRequests and Events only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from . import test_live_scheduler
from .controlplane import Cluster
from .kube import Obj, wait_for
from .live import component
from .objects import KWOK_TOLERATION
from .procs import ManagedProcess
from .test_live_scheduler import bind_requests

pytestmark = pytest.mark.e2e

queue_name = test_live_scheduler.queue_name  # the fixture: a fresh Queue per test


@pytest.fixture(scope="module")
def scheduler(cluster: Cluster) -> Iterator[ManagedProcess]:
    flags = ["--schedule-period=0.5", "--log-format=json"]
    with component(cluster, "scheduler", flags) as proc:
        yield proc


def member(namespace: str, group: str, name: str, sub: str | None, node: str, cpu: str) -> Obj:
    labels = {"kai.scheduler/queue": "unused"}
    if sub is not None:
        labels["kai.scheduler/subgroup-name"] = sub
    spec: dict[str, Any] = {
        "schedulerName": "kai-scheduler",
        "nodeSelector": {"kubernetes.io/hostname": node},
        "tolerations": [KWOK_TOLERATION],
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
        ],
    }
    meta = {
        "name": name,
        "namespace": namespace,
        "annotations": {"pod-group-name": group},
        "labels": labels,
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def podgroup(namespace: str, name: str, queue_name: str, spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue_name, **spec},
    }


def test_two_of_three_subgroups_start_when_one_cannot_fit(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    subgroups = [{"name": n, "minMember": 2} for n in ("a", "b", "c")]
    spec = {"minSubGroup": 2, "subGroups": subgroups}
    cluster.kubectl.create(podgroup(namespace, "g", queue_name, spec))
    for sub, cpu in (("a", "40"), ("b", "1"), ("c", "1")):  # a's pods exceed the 32-CPU node
        for index in range(2):
            cluster.kubectl.create(member(namespace, "g", f"{sub}-{index}", sub, kwok_node, cpu))
    wanted = {"b-0", "b-1", "c-0", "c-1"}
    found = wait_for(
        "BindRequests for b and c",
        lambda: (lambda b: b if wanted <= set(b) else None)(bind_requests(cluster, namespace)),
        timeout=30,
    )
    assert set(found) == wanted


def test_a_podgroup_breaking_the_min_rules_is_reported_while_others_run(
    cluster: Cluster, scheduler: ManagedProcess, namespace: str, kwok_node: str, queue_name: str
) -> None:
    broken = podgroup(
        namespace, "broken", queue_name, {"subGroups": [{"name": "a", "minSubGroup": 1}]}
    )
    cluster.kubectl.create(broken)
    cluster.kubectl.create(member(namespace, "broken", "broken-0", "a", kwok_node, "1"))
    cluster.kubectl.create(podgroup(namespace, "ok", queue_name, {"minMember": 0}))
    cluster.kubectl.create(member(namespace, "ok", "ok-0", None, kwok_node, "1"))
    wait_for("a BindRequest for ok-0", lambda: "ok-0" in bind_requests(cluster, namespace), 30)

    def invalid_event() -> Obj | None:
        for event in cluster.kubectl.items("events", "-n", namespace):
            involved = event["involvedObject"]
            if (involved["kind"], involved["name"], event["reason"]) == (
                "PodGroup",
                "broken",
                "InvalidObject",
            ):
                return dict(event)
        return None

    event = wait_for("an InvalidObject Event on PodGroup broken", invalid_event, timeout=30)
    assert "spec.subGroups[0].minSubGroup" in event["message"]
    assert "broken-0" not in bind_requests(cluster, namespace)
