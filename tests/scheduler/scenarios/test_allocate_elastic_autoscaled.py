"""Elastic gangs shaped as the podgrouper makes them for autoscaled workloads (§7, §5.9):
a RayCluster (subgroups ``headgroup`` 1 and a worker group at its minimum) and an elastic
PyTorchJob (``master`` 1, ``worker`` at elasticPolicy.minReplicas - 1). The gang minimum
is placed together; the workers the autoscaler added beyond it are granted one at a time
as room allows, interleaved with other queues by fairness; a scale-up hint counts only
the gang minimum.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue, run_objects


def ray(
    name: str,
    queue_name: str,
    workers: int,
    min_workers: int,
    states: list[str] | None = None,
    node_name: str = "n0",
) -> list[Any]:
    """A RayCluster's PodGroup and pods: head (CPU) + ``workers`` 1-GPU workers."""
    states = states or ["Pending"] * (1 + workers)
    out: list[Any] = [
        pod_group(
            name,
            queue_name,
            min_member=1 + min_workers,
            sub_groups=[("headgroup", 1), ("gpu-group", min_workers)],
        )
    ]
    for i, state in enumerate(states):
        head = i == 0
        out.extend(
            pod(
                f"{name}-head" if head else f"{name}-worker-{i - 1}",
                name,
                gpus=0 if head else 1,
                sub_group="headgroup" if head else "gpu-group",
                state=state,
                node=node_name if state == "Running" else None,
            )
        )
    return out


def pytorch(name: str, queue_name: str, workers: int, min_replicas: int) -> list[Any]:
    out: list[Any] = [
        pod_group(
            name,
            queue_name,
            min_member=min_replicas,
            sub_groups=[("master", 1), ("worker", min_replicas - 1)],
        )
    ]
    out.extend(pod(f"{name}-master-0", name, gpus=1, sub_group="master"))
    for i in range(workers):
        out.extend(pod(f"{name}-worker-{i}", name, gpus=1, sub_group="worker"))
    return out


SCENARIOS = [
    # Autoscaler raised replicas to 4 (minReplicas 2): the gang (head + 2) and then one
    # extra per pop while room lasts: 3 GPUs -> 3 workers, the fourth waits.
    Scenario(
        "ray-extras-as-room-allows",
        [queue("q"), node("n0", gpus=3), ray("rc", "q", workers=4, min_workers=2)],
        binds={"rc-head": "n0", "rc-worker-0": "n0", "rc-worker-1": "n0", "rc-worker-2": "n0"},
    ),
    # Room for 2 GPUs only: below the gang minimum (head + 2 workers fits, but
    # minReplicas 3 needs 3 GPUs), nothing starts.
    Scenario(
        "ray-minimum-pinned-by-min-replicas",
        [queue("q"), node("n0", gpus=2), ray("rc", "q", workers=4, min_workers=3)],
        pending=["rc"],
    ),
    # The gang runs; the autoscaler added 2 workers while another queue waits: both queues
    # have fair share 2 of the 4 GPUs, so the free 2 go to the other queue's job, not to
    # the Ray extras.
    Scenario(
        "ray-extras-yield-to-fair-share",
        [
            queue("qa", gpu_weight=1),
            queue("qb", gpu_weight=1),
            node("n0", gpus=4),
            ray(
                "rc",
                "qa",
                workers=4,
                min_workers=2,
                states=["Running", "Running", "Running", "Pending", "Pending"],
            ),
            job("b", "qb", 2, gpus=1, min_member=1),
        ],
        binds={"b-0": "n0", "b-1": "n0"},
        pending=["rc"],
    ),
    # Elastic PyTorchJob (minReplicas 2 = master + 1 worker, 4 workers): 3 GPUs give the
    # master, the minimum worker and one extra.
    Scenario(
        "pytorch-elastic-extras-as-room-allows",
        [queue("q"), node("n0", gpus=3), pytorch("pt", "q", workers=4, min_replicas=2)],
        binds={"pt-master-0": "n0", "pt-worker-0": "n0", "pt-worker-1": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_elastic_autoscaled(scenario: Scenario) -> None:
    check(scenario)


def test_scale_up_hint_counts_only_the_gang_minimum() -> None:
    """A Ray gang of head + 3 (of 6) workers on a full 4-GPU node: the head fits the node's
    CPU, the 3 minimum workers (not the 3 extras) need one more node."""
    result = run_objects(
        [
            queue("q"),
            node("n0", gpus=4),
            job("busy", "q", 4, gpus=1, states=["Running"] * 4, nodes=["n0"] * 4),
            ray("rc", "q", workers=6, min_workers=3),
        ]
    )
    (outcome,) = [g for g in result.pod_groups if g.pod_group == "default/rc"]
    assert outcome.scale_up_hint is not None
    assert (outcome.scale_up_hint.nodes, outcome.scale_up_hint.pods) == (1, 3)
