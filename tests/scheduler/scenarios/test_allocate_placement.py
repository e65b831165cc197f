"""Node placement scores (docs/semantics.md §5.3, §5.6): binpack, spread, resource type,
availability, ties by node name.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.config import SchedulerConfig
from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue

SPREAD = SchedulerConfig(actions=("allocate",), gpu_placement="spread", cpu_placement="spread")
GPU_SPREAD_CPU_BINPACK = SchedulerConfig(
    actions=("allocate",), gpu_placement="spread", cpu_placement="binpack"
)
GPU_ONLY = {"cpu": None, "memory": None}


def _nominated(objects: list[dict[str, Any]], node_name: str) -> list[dict[str, Any]]:
    """The pod (first object) with status.nominatedNodeName set."""
    objects[0]["status"]["nominatedNodeName"] = node_name
    return objects


SCENARIOS = [
    # Binpack: n1 has 2 of 4 GPUs free, n0 4 of 4; the fuller n1 scores 9, n0 0.
    Scenario(
        "binpack-fuller-node",
        [
            queue("q"),
            node("n0", gpus=4),
            node("n1", gpus=4),
            job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n1"] * 2),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
    ),
    # Spread: free/capacity, n1 = 1.0 beats n0 = 0.5.
    Scenario(
        "spread-emptier-node",
        [
            queue("q"),
            node("n0", gpus=4),
            node("n1", gpus=4),
            job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n0"] * 2),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
        config=SPREAD,
    ),
    # Binpack gang: both tasks go to the same (first by name) empty node; after the first
    # task n0 is fuller.
    Scenario(
        "binpack-gang-packs",
        [queue("q"), node("n0", gpus=2), node("n1", gpus=2), job("g", "q", 2, gpus=1)],
        binds={"g-0": "n0", "g-1": "n0"},
    ),
    # Spread gang: after the first task n0 is at 0.5, n1 at 1.0, so the second goes to n1.
    Scenario(
        "spread-gang-spreads",
        [queue("q"), node("n0", gpus=2), node("n1", gpus=2), job("g", "q", 2, gpus=1)],
        binds={"g-0": "n0", "g-1": "n1"},
        config=SPREAD,
    ),
    # GPU and CPU tasks use their own strategy: GPU spread sends the GPU pod to the emptier
    # GPU node g1; CPU binpack sends the CPU pod to the fuller CPU-only node c1.
    Scenario(
        "gpu-spread-cpu-binpack",
        [
            queue("q"),
            node("c0"),
            node("c1"),
            node("g0", gpus=4),
            node("g1", gpus=4),
            job("cpu-run", "q", cpu="10", states=["Running"], nodes=["c1"]),
            job("gpu-run", "q", gpus=2, states=["Running"], nodes=["g0"], **GPU_ONLY),
            job("gpu", "q", gpus=1, **GPU_ONLY),
            job("cpu", "q", cpu="1"),
        ],
        binds={"gpu-0": "g1", "cpu-0": "c1"},
        config=GPU_SPREAD_CPU_BINPACK,
    ),
    # Resource type: +10 for a CPU-only task on a CPU-only node beats binpack (<= 9), so the
    # CPU pod goes to the empty CPU-only node c0 rather than the fuller GPU node g0.
    Scenario(
        "cpu-task-prefers-cpu-only-node",
        [
            queue("q"),
            node("c0"),
            node("g0", gpus=4),
            job("cpu-run", "q", cpu="10", states=["Running"], nodes=["g0"]),
            job("cpu", "q", cpu="1"),
        ],
        binds={"cpu-0": "c0"},
    ),
    # Resource type does not apply to GPU tasks; and a CPU-only node lacks GPUs anyway.
    Scenario(
        "gpu-task-ignores-cpu-only-node",
        [queue("q"), node("a-cpu"), node("b-gpu", gpus=1), job("j", "q", gpus=1)],
        binds={"j-0": "b-gpu"},
    ),
    # A mixed gang: the CPU-only launcher (first in task order) gets the resource-type bonus
    # on the CPU-only node c0; the GPU workers pack onto g0.
    Scenario(
        "mixed-gang-launcher-on-cpu-node",
        [
            queue("q"),
            node("c0"),
            node("g0", gpus=2),
            pod_group("mpi", "q", min_member=3),
            pod("mpi-w0", "mpi", gpus=1),
            pod("mpi-w1", "mpi", gpus=1),
            pod("mpi-launcher", "mpi", labels={"training.kubeflow.org/job-role": "launcher"}),
        ],
        binds={"mpi-launcher": "c0", "mpi-w0": "g0", "mpi-w1": "g0"},
    ),
    # CPU spread: the emptier CPU-only node c0 wins over the half-used c1.
    Scenario(
        "cpu-spread",
        [
            queue("q"),
            node("c0"),
            node("c1"),
            pod("other", cpu="10", state="Running", node="c1", scheduler_name="default-scheduler"),
            job("j", "q", cpu="1"),
        ],
        binds={"j-0": "c0"},
        config=SPREAD,
    ),
    # Availability: +100 for fitting on idle. n0's only GPU is releasing (binpack would like
    # n0, free 1 < 4), but n1 fits on idle, so the pod binds on n1 instead of pipelining.
    Scenario(
        "idle-beats-releasing",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=4),
            job("old", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
    ),
    # §5.3 nominatednode: +1,000,000 for the pod's status.nominatedNodeName outweighs
    # binpack (which prefers the fuller n0).
    Scenario(
        "nominated-node-wins",
        [
            queue("q"),
            node("n0", gpus=2),
            node("n1", gpus=2),
            job("run", "q", gpus=1, states=["Running"], nodes=["n0"]),
            pod_group("g", "q"),
            _nominated(pod("p", "g", gpus=1), "n1"),
        ],
        binds={"p": "n1"},
    ),
    # Ties by node name: three identical empty nodes listed out of order; "node-a" wins.
    Scenario(
        "tie-by-node-name",
        [
            queue("q"),
            node("node-c", gpus=2),
            node("node-a", gpus=2),
            node("node-b", gpus=2),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "node-a"},
    ),
    # Spread ties by name as well: equal free ratios, lowest name.
    Scenario(
        "spread-tie-by-node-name",
        [queue("q"), node("z", gpus=2), node("m", gpus=2), job("j", "q", gpus=1)],
        binds={"j-0": "m"},
        config=SPREAD,
    ),
    # Spread uses the nvidia.com/gpu.count label as capacity when present: n0 reports 8
    # devices (4 allocatable, so 4/8 = 0.5); n1 has 3 of 4 free (0.75) and wins.
    Scenario(
        "spread-gpu-count-label",
        [
            queue("q"),
            node("n0", gpus=4, labels={"nvidia.com/gpu.count": "8"}),
            node("n1", gpus=4),
            job("run", "q", gpus=1, states=["Running"], nodes=["n1"]),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n1"},
        config=SPREAD,
    ),
    # CPU binpack among CPU-only nodes: the fuller c1 wins.
    Scenario(
        "cpu-binpack",
        [
            queue("q"),
            node("c0"),
            node("c1"),
            pod("other", cpu="5", state="Running", node="c1", scheduler_name="default-scheduler"),
            job("j", "q", cpu="1"),
        ],
        binds={"j-0": "c1"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_placement(scenario: Scenario) -> None:
    check(scenario)
