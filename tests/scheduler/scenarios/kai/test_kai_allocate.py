"""KAI v0.17 allocate tests (``pkg/scheduler/actions/allocate``) as podmuster scenario rows.

Sources: ``allocate_test.go``, ``allocateGang_test.go``, ``allocateElastic_test.go`` and
``allocate_stuck_in_releasing_test.go``. Each row names its KAI test and the rule of
docs/semantics.md (§5.1 order, §5.2 allocate, §5.4 queue order, §5.6 placement) that
gives the expectation. KAI's "Binding" is a bind here, "Pipelined" a pipelined pod,
"Releasing" an eviction.
"""

from __future__ import annotations

import pytest
from disruption_kit import rfc3339, running
from kai_rows import (
    NODE_TYPE_LABEL,
    Disruption,
    check,
    department,
    gjob,
    gpu_node,
    leaf,
    mig_labels,
    row,
    shared_gpu,
    subgroup_job,
    type_in,
)

from crds.names import TASK_PRIORITY_LABEL
from tests.kits.worlds import job, node, pod, pod_group, topology, topology_constraint

A = ("allocate",)


def releasing_since(
    objects: list[dict[str, object]], seconds_ago: float
) -> list[dict[str, object]]:
    """``objects`` (a job of Releasing pods) with deletion ``seconds_ago`` before ``NOW``."""
    out = []
    for obj in objects:
        if obj.get("kind") == "Pod":
            meta = dict(obj["metadata"])  # type: ignore[arg-type]
            meta["deletionTimestamp"] = rfc3339(seconds_ago)
            obj = {**obj, "metadata": meta}
        out.append(obj)
    return out


# A pod asking for a MIG slice the old way, by annotation (docs/semantics.md §6: not read).
LEGACY_MIG = {"nvidia.com/mig-1g.10gb": "1"}

ROWS = [
    row(
        "Fraction job on MIG node",
        "§6 a MIG node (single strategy) takes no GPU fractions",
        Disruption(
            "kai-allocate-fraction-on-mig-node",
            [
                department(),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=2, labels=mig_labels("single")),
                gjob("pending_job0", "queue1", gpus=0.1),
            ],
            A,
            pending=["pending_job0"],
        ),
    ),
    row(
        "Do not allocate regular GPU task on dynamic MIG node",
        "§6 a mixed-strategy MIG node offers slices only, never a whole GPU",
        Disruption(
            "kai-allocate-whole-gpu-not-on-mixed-mig-node",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1, labels=mig_labels("mixed")),
                gjob("pending_job0", "queue0", gpus=1, priority_class="build"),
            ],
            A,
            pending=["pending_job0"],
        ),
    ),
    row(
        "1 job running on node0 from queue0, 3 pending jobs from queue1 and 1 pending job "
        "from queue0 - allocate them according to their the queue shares",
        "§5.4 queue order: starved queue first, then older queue on a tie (S1)",
        Disruption(
            "kai-allocate-by-queue-shares",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=2),
                node("node1", gpus=2),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue1", gpus=1),
                gjob("pending_job2", "queue1", gpus=1),
                gjob("pending_job3", "queue1", gpus=1),
            ],
            A,
            binds={
                "pending_job1-0": "node0",
                "pending_job0-0": "node1",
                "pending_job2-0": "node1",
            },
            pending=["pending_job3"],
        ),
    ),
    row(
        "1 job running on node0, 3 pending jobs - allocate them according to their order",
        "§5.1 job order: older job first; each goes where it fits (4 GPUs only on node1)",
        Disruption(
            "kai-allocate-in-job-order",
            [
                department(),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue1", gpus=4),
                gjob("pending_job1", "queue1", gpus=2),
                gjob("pending_job2", "queue1", gpus=2),
            ],
            A,
            binds={"pending_job0-0": "node1", "pending_job1-0": "node0"},
            pending=["pending_job2"],
        ),
    ),
    row(
        "1 job running on node0, 3 pending jobs - only build job should be allocated",
        "§5.1 higher priority first: the build job (0+2 <= deserved 2) takes the 2 free GPUs",
        Disruption(
            "kai-allocate-build-first",
            [
                department(),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                running("running_job0", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue1", gpus=4),
                gjob("pending_job1", "queue1", gpus=2),
                gjob("pending_job2", "queue1", gpus=2, priority_class="build"),
            ],
            A,
            binds={"pending_job2-0": "node0"},
            pending=["pending_job0", "pending_job1"],
        ),
    ),
    row(
        "1 job running on node0, 3 pending jobs, not enough deserved GPUs for build job - "
        "allocate train job",
        "§5.2 NonPreemptibleOverQuota: build job 0+2 > deserved 1 waits; train job may exceed",
        Disruption(
            "kai-allocate-build-over-deserved-waits",
            [
                department(),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=4),
                running("running_job0", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue1", gpus=4),
                gjob("pending_job1", "queue1", gpus=2),
                gjob("pending_job2", "queue1", gpus=2, priority_class="build"),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0", "pending_job2"],
        ),
    ),
    row(
        "1 build job running on 2 GPU, assign pending jobs of best effort",
        "§5.2 a pod asking for nothing fits a node whose GPUs are all used",
        Disruption(
            "kai-allocate-best-effort-on-full-node",
            [
                department(),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue1", "node0", gpus=2, priority_class="build"),
                gjob("pending_job0", "queue1", cpu=None, memory=None),
                gjob("pending_job1", "queue1", cpu=None, memory=None),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job1-0": "node0"},
        ),
    ),
    row(
        "Both queues have deserved of 2, overall 4 gpus, queue0 will pass the deserved if its "
        "pending jobs will be allocated - allocate a job from queue1",
        "§5.4 rule 2: queue1 (1+1 <= 2) is starved, queue0 (1+2 > 2) is not; 1 GPU is left",
        Disruption(
            "kai-allocate-starved-queue-first",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue1", "node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=2),
                gjob("pending_job1", "queue1", gpus=1),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "queue0 has deserved of 3, queue 1 has deserved of 2, they will both have a share of 1 "
        "if allocated their task, yet for fair convergence - queue1 should allocate the task",
        "§5.4 rules 5-6: equal dominant share with the job (1 and 1); without it 0 < 2/3",
        Disruption(
            "kai-allocate-lower-share-without-job",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue1", gpus=2),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "Both queues has the same share, give the one with smaller job - allocate jobs queue1",
        "§5.4 rule 7: shares tie (1 with, 1/2 without the job); queue1's smaller share wins",
        Disruption(
            "kai-allocate-smaller-allocatable-share",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=5),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue1", "node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=2),
                gjob("pending_job1", "queue1", gpus=1),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "Both queues has exactly the same share - give priority to the created 1st (queue0)",
        "§5.4 rule 8: every rule ties, the older queue0 takes the last GPU",
        Disruption(
            "kai-allocate-older-queue-on-tie",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=5),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue1", gpus=1),
            ],
            A,
            binds={"pending_job0-0": "node0"},
            pending=["pending_job1"],
        ),
    ),
    row(
        "queue0 has no deserved GPUs, queue1 has deserved - allocate jobs queue1",
        "§5.4 rules 2 and 4: queue1 is starved, queue0 has allocatableShare 0 and goes last",
        Disruption(
            "kai-allocate-deserved-queue-first",
            [
                department(),
                leaf("queue0"),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue1", gpus=1),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "No jobs",
        "an empty cycle decides nothing",
        Disruption(
            "kai-allocate-no-jobs", [department(), leaf("queue0"), node("node0", gpus=1)], A
        ),
    ),
    row(
        "No nodes",
        "§5.2 a job that fits no node stays pending",
        Disruption(
            "kai-allocate-no-nodes",
            [
                department(),
                leaf("queue0"),
                leaf("queue1", gpu_quota=1),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue1", gpus=1),
            ],
            A,
            pending=["pending_job0", "pending_job1"],
        ),
    ),
    row(
        "2 running jobs and 1 pending, allocate preemptible interactive with over quota",
        "§5.2 fair share does not cap allocation: a preemptible (75) job goes over deserved",
        Disruption(
            "kai-allocate-preemptible-over-quota",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=5),
                running("running_job0", "queue0", "node0", gpus=2),
                running(
                    "running_job1", "queue0", "node0", gpus=2, priority_class="build-preemptible"
                ),
                gjob("pending_job0", "queue0", gpus=1, priority_class="build-preemptible"),
            ],
            A,
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 running jobs and 1 build pending, allocate build interactive with over quota",
        "§5.2 NonPreemptibleOverQuota counts only non-preemptible allocation (0+2 <= 2)",
        Disruption(
            "kai-allocate-build-beside-preemptible",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=5),
                running(
                    "running_job0", "queue0", "node0", gpus=2, priority_class="build-preemptible"
                ),
                gjob("pending_job0", "queue0", gpus=2, priority_class="build"),
            ],
            A,
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Allocate task according to nodepack - to the node with the least free GPUs",
        "§5.6 binpack: the fuller node scores 9",
        Disruption(
            "kai-allocate-binpack",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                node("node1", gpus=2),
                running("running_job0", "queue0", "node1", gpus=1),
                gjob("pending_job0", "queue0", gpus=1),
            ],
            A,
            binds={"pending_job0-0": "node1"},
        ),
    ),
    row(
        "Allocate task according to nodespread - to the node with the most free GPUs",
        "§5.6 spread: free/capacity, the emptier node wins",
        Disruption(
            "kai-allocate-spread",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                node("node1", gpus=2),
                running("running_job0", "queue0", "node1", gpus=1),
                gjob("pending_job0", "queue0", gpus=1),
            ],
            A,
            binds={"pending_job0-0": "node0"},
            settings={"gpu_placement": "spread", "cpu_placement": "spread"},
        ),
    ),
    row(
        "Allocate inference before build",
        "§5.1 higher PodGroup priority first: inference (125) before build (100)",
        Disruption(
            "kai-allocate-inference-before-build",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=1, priority_class="build"),
                gjob("pending_job1", "queue0", gpus=1, priority_class="inference"),
                gjob("pending_job2", "queue0", gpus=1, priority_class="build"),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0", "pending_job2"],
        ),
    ),
    row(
        "Allocate inference before train",
        "§5.1 higher PodGroup priority first: inference (125) before train (50)",
        Disruption(
            "kai-allocate-inference-before-train",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=1),
                gjob("pending_job1", "queue0", gpus=1, priority_class="inference"),
                gjob("pending_job2", "queue0", gpus=1),
            ],
            A,
            binds={"pending_job1-0": "node0"},
            pending=["pending_job0", "pending_job2"],
        ),
    ),
    row(
        "Attempt to allocate inference over quota",
        "§5.2 NonPreemptibleOverQuota: an inference job 0+1 > deserved 0 waits",
        Disruption(
            "kai-allocate-inference-over-quota",
            [
                department(),
                leaf("queue0"),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=1),
                gjob("pending_job0", "queue0", gpus=1, priority_class="inference"),
            ],
            A,
            pending=["pending_job0"],
        ),
    ),
    row(
        "DRF - over quota",
        "§5.4 dominant-resource order interleaves the queues so all six main jobs fit",
        Disruption(
            "kai-allocate-drf-over-quota",
            [
                department(),
                leaf("queue0", cpu_quota=1500, memory_quota=1500),
                leaf("queue1", cpu_quota=1500, memory_quota=1500),
                node("node0", cpu="3", memory="30G"),
                *[job(f"pending_job{i}", "queue0", cpu="900m", memory="1G") for i in range(3)],
                job("oq_job0", "queue0", cpu="100m", memory="1G"),
                *[job(f"pending_job{i}", "queue1", cpu="100m", memory="9G") for i in (3, 4, 5)],
                job("oq_job1", "queue1", cpu="100m", memory="1G"),
            ],
            A,
            binds={f"pending_job{i}-0": "node0" for i in range(6)},
            pending=["oq_job0", "oq_job1"],
        ),
    ),
    row(
        "DRF - order",
        "§5.4 rule 5: queue1's dominant share with its job (1) is below queue0's (1700/1500)",
        Disruption(
            "kai-allocate-drf-order",
            [
                department(),
                leaf("queue0", cpu_quota=1500, memory_quota=1500),
                leaf("queue1", cpu_quota=1500, memory_quota=1500),
                node("node0", cpu="3", memory="30G"),
                running("running_job_a_0", "queue0", "node0", gpus=0, cpu="1", memory="1G"),
                job("pending_job_a_0", "queue0", cpu="700m", memory="1G"),
                running("running_job_b_0", "queue1", "node0", gpus=0, cpu="800m", memory="9G"),
                job("pending_job_b_0", "queue1", cpu="700m", memory="1G"),
            ],
            A,
            binds={"pending_job_b_0-0": "node0"},
            pending=["pending_job_a_0"],
        ),
    ),
]

GANG = [
    row(
        "Allocate train gang job",
        "§5.2 gang: both pods fit one node; a preemptible gang may exceed deserved 1",
        Disruption(
            "kai-gang-train",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                gjob("pending_job0", "queue0", 2, gpus=1),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate build gang job",
        "§5.2 non-preemptible gang within deserved (0+2 <= 2) binds whole",
        Disruption(
            "kai-gang-build",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                gjob("pending_job0", "queue0", 2, gpus=1, priority_class="build"),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate build gang job on 2 nodes",
        "§5.2 a gang may span nodes; §5.6 ties go to the lowest node name",
        Disruption(
            "kai-gang-build-two-nodes",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=1),
                node("node1", gpus=1),
                gjob("pending_job0", "queue0", 2, gpus=1, priority_class="build"),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-1": "node1"},
        ),
    ),
    row(
        "Don't allocate gang job if not all tasks are allocatable",
        "§5.2 gang: one of two 2-GPU pods fits, so neither is placed",
        Disruption(
            "kai-gang-not-all-fit",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                gjob("pending_job0", "queue0", 2, gpus=2, priority_class="build"),
            ],
            A,
            pending=["pending_job0"],
        ),
    ),
    row(
        "Don't allocate gang interactive job if it will go over quota",
        "§5.2 NonPreemptibleOverQuota counts the whole gang: 0+4 > deserved 3",
        Disruption(
            "kai-gang-build-over-deserved",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=10),
                gjob("pending_job0", "queue0", 2, gpus=2, priority_class="build"),
            ],
            A,
            pending=["pending_job0"],
        ),
    ),
    row(
        "Pipeline if resource aren't currently allocatable",
        "§5.2 a gang that fits only with releasing room counted is pipelined whole",
        Disruption(
            "kai-gang-pipelined-on-releasing",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=4),
                gjob("running_job0", "queue0", gpus=1, states=["Releasing"], nodes=["node0"]),
                gjob("pending_job0", "queue0", 2, gpus=2),
            ],
            A,
            pipelined={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
]


def elastic(name: str, tasks: int, states: list[str] | None = None, **args: object) -> list:
    """KAI's ``DefaultSubGroup(1)`` job: ``tasks`` one-GPU pods, gang minimum 1."""
    nodes = ["node0" if s == "Running" else None for s in states] if states else None
    return gjob(name, "queue0", tasks, gpus=1, min_member=1, states=states, nodes=nodes, **args)


def sub_pods(sub: str, names: list[int], running_count: int) -> list:
    """Pods ``job0-<i>`` of subgroup ``sub``: the first ``running_count`` run on node0."""
    return [
        pod(
            f"job0-{i}",
            "job0",
            gpus=1,
            sub_group=sub,
            state="Running" if k < running_count else "Pending",
            node="node0" if k < running_count else None,
        )
        for k, i in enumerate(names)
    ]


ELASTIC = [
    row(
        "Allocate elastic job - full allocate",
        "§5.1 an elastic job gains its extras one at a time while room lasts",
        Disruption(
            "kai-elastic-full",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                elastic("pending_job0", 2),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate elastic job - partial allocate",
        "§5.9 an elastic job starts with its minimum; the extra waits for room",
        Disruption(
            "kai-elastic-partial",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                elastic("pending_job0", 2),
            ],
            A,
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Allocate elastic job - partial allocate - with priority",
        "§5.1 task order: higher kai.scheduler/task-priority goes first",
        Disruption(
            "kai-elastic-task-priority",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                pod_group("pending_job0", "queue0", min_member=1),
                pod(
                    "pending_job0-0",
                    "pending_job0",
                    gpus=1,
                    labels={TASK_PRIORITY_LABEL: "1"},
                ),
                pod(
                    "pending_job0-1",
                    "pending_job0",
                    gpus=1,
                    labels={TASK_PRIORITY_LABEL: "2"},
                ),
            ],
            A,
            binds={"pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate elastic job - full allocate - partially running",
        "§5.1 a job at its minimum with a pending extra is tried and grows",
        Disruption(
            "kai-elastic-grows",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                elastic("running_job0", 2, ["Running", "Pending"]),
            ],
            A,
            binds={"running_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate elastic job - partial allocate - some pods already running",
        "§5.1 growth stops when the node is full; the running pod keeps its place",
        Disruption(
            "kai-elastic-grows-partly",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                elastic("pending_job0", 3, ["Running", "Pending", "Pending"]),
            ],
            A,
            binds={"pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate 2 elastic jobs - full and partial allocate",
        "§5.1 elastic state then age: minimums first, then extras alternate, older first",
        Disruption(
            "kai-elastic-two-jobs-full-and-partial",
            [
                department(),
                leaf("queue0", gpu_quota=5),
                node("node0", gpus=5),
                elastic("pending_job0", 3),
                elastic("pending_job1", 3),
            ],
            A,
            binds={
                **{f"pending_job0-{i}": "node0" for i in range(3)},
                **{f"pending_job1-{i}": "node0" for i in range(2)},
            },
        ),
    ),
    row(
        "Allocate 2 elastic jobs - both partial allocate",
        "§5.1 extras alternate between the jobs, the older one taking the odd fifth GPU",
        Disruption(
            "kai-elastic-two-jobs-partial",
            [
                department(),
                leaf("queue0", gpu_quota=5),
                node("node0", gpus=5),
                elastic("pending_job0", 4),
                elastic("pending_job1", 4),
            ],
            A,
            binds={
                **{f"pending_job0-{i}": "node0" for i in range(3)},
                **{f"pending_job1-{i}": "node0" for i in range(2)},
            },
        ),
    ),
    row(
        "Elastic allocation: satisfied PodSets in two-parent tree, lower-ratio group wins "
        "consecutive extra slots",
        "§5.1 member order: group-cd (2 of 2 needed) before group-ab (2 of 1) for both extras",
        Disruption(
            "kai-elastic-lower-ratio-subgroup-wins",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=7),
                pod_group(
                    "job0",
                    "queue0",
                    min_member=None,
                    sub_groups=[
                        {"name": "group-ab", "minSubGroup": 1},
                        {"name": "sub-a", "minMember": 1, "parent": "group-ab"},
                        {"name": "sub-b", "minMember": 1, "parent": "group-ab"},
                        {"name": "group-cd"},
                        {"name": "sub-c", "minMember": 1, "parent": "group-cd"},
                        {"name": "sub-d", "minMember": 1, "parent": "group-cd"},
                    ],
                ),
                *sub_pods("sub-a", [0, 1, 2, 3], 2),
                *sub_pods("sub-b", [4], 1),
                *sub_pods("sub-c", [5, 6, 7], 1),
                *sub_pods("sub-d", [8], 1),
            ],
            A,
            binds={"job0-6": "node0", "job0-7": "node0"},
        ),
    ),
]

RELEASING = [
    row(
        "Releasing victim allows pipelining of pending pod",
        "§5.2 a pod that fits only on a Releasing pod's room is pipelined",
        Disruption(
            "kai-releasing-room-pipelines",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                gjob("victim_job", "queue0", gpus=1, states=["Releasing"], nodes=["node0"]),
                gjob("pending_job", "queue0", gpus=1),
            ],
            A,
            pipelined={"pending_job-0": "node0"},
        ),
    ),
    row(
        "StuckInReleasing victim does not allow pipelining",
        "KAI v0.17: a pod deleted more than 2 minutes ago offers no releasing room",
        Disruption(
            "kai-stuck-releasing-room-not-used",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                releasing_since(
                    gjob("victim_job", "queue0", gpus=1, states=["Releasing"], nodes=["node0"]), 300
                ),
                gjob("pending_job", "queue0", gpus=1),
            ],
            A,
            pending=["pending_job"],
        ),
    ),
]


def min_sub_group(group: dict[str, object], count: int) -> dict[str, object]:
    """``group`` (a PodGroup) needing only ``count`` of its top-level subgroups."""
    return {**group, "spec": {**group["spec"], "minSubGroup": count}}  # type: ignore[dict-item]


SUBGROUPS = [
    row(
        "Allocate job with SubGroups - full allocate",
        "§2.1 gang of subgroups: one pod of each subgroup (minimum 1) binds together",
        Disruption(
            "kai-allocate-job-with-subgroups-full-allocate",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                subgroup_job(
                    "pending_job0", "queue0", {"sub0": 1, "sub1": 1}, [("sub0", 1), ("sub1", 1)]
                ),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "Allocate job with SubGroups - partial allocation",
        "§5.1 tasks to allocate: each subgroup's minimum first; the extras wait for room",
        Disruption(
            "kai-allocate-job-with-subgroups-partial-allocation",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                subgroup_job(
                    "pending_job0",
                    "queue0",
                    {"sub0": 1, "sub1": 1},
                    [("sub0", 1), ("sub0", 1), ("sub1", 1), ("sub1", 1)],
                ),
            ],
            A,
            binds={"pending_job0-0": "node0", "pending_job0-2": "node0"},
        ),
    ),
    row(
        "Allocate job with SubGroups - allocate resource to unsatisfied sub group",
        "§5.1 member order: the unsatisfied subgroup gets its two pods before sub0's extra",
        Disruption(
            "kai-allocate-job-with-subgroups-allocate-resource-to-unsatisfied",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                subgroup_job(
                    "job0",
                    "queue0",
                    {"sub0": 2, "sub1": 2},
                    [
                        ("sub0", 1, "node0"),
                        ("sub0", 1, "node0"),
                        ("sub0", 1),
                        ("sub1", 1),
                        ("sub1", 1),
                    ],
                ),
            ],
            A,
            binds={"job0-3": "node0", "job0-4": "node0"},
        ),
    ),
    row(
        "Allocate job with SubGroups - allocate resource up to MinAvailable",
        "§5.1 tasks to allocate: pods up to each subgroup's minimum, no further",
        Disruption(
            "kai-allocate-job-with-subgroups-allocate-resource-up-to-minavail",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                subgroup_job(
                    "job0",
                    "queue0",
                    {"sub0": 2, "sub1": 1},
                    [
                        ("sub0", 2, "node0"),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub1", 1),
                        ("sub1", 1),
                    ],
                ),
            ],
            A,
            binds={"job0-1": "node0", "job0-5": "node0"},
        ),
    ),
    row(
        "Allocate job with SubGroups - allocate resource beyond MinAvailable",
        "§5.1 after the minimums an elastic extra of the lower-ratio subgroup binds",
        Disruption(
            "kai-allocate-job-with-subgroups-allocate-resource-beyond-minavai",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                subgroup_job(
                    "job0",
                    "queue0",
                    {"sub0": 2, "sub1": 1},
                    [
                        ("sub0", 1, "node0"),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub0", 1),
                        ("sub1", 1),
                        ("sub1", 1),
                    ],
                ),
            ],
            A,
            binds={"job0-1": "node0", "job0-2": "node0", "job0-5": "node0"},
        ),
    ),
    row(
        "Allocate job with SubGroups - unbalanced hierarchy structure",
        "§2.1 an unbalanced tree (a subgroup beside a pod set) starts whole",
        Disruption(
            "kai-allocate-job-with-subgroups-unbalanced-hierarchy-structure",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=8),
                pod_group(
                    "job0",
                    "queue0",
                    sub_groups=[
                        {"name": "sub-ab"},
                        {"name": "sub-a", "minMember": 2, "parent": "sub-ab"},
                        {"name": "sub-b", "minMember": 2, "parent": "sub-ab"},
                        {"name": "sub-c", "minMember": 1},
                    ],
                    min_member=None,
                ),
                pod("job0-0", "job0", sub_group="sub-a", gpus=1),
                pod("job0-1", "job0", sub_group="sub-a", gpus=1),
                pod("job0-2", "job0", sub_group="sub-b", gpus=1),
                pod("job0-3", "job0", sub_group="sub-b", gpus=1),
                pod("job0-4", "job0", sub_group="sub-c", gpus=4),
            ],
            A,
            binds={
                "job0-0": "node0",
                "job0-1": "node0",
                "job0-2": "node0",
                "job0-3": "node0",
                "job0-4": "node0",
            },
        ),
    ),
    row(
        "Allocate job with SubGroups - cannot satisfy sub group gang",
        "§5.2 gang: a subgroup whose minimum cannot fit blocks the whole job",
        Disruption(
            "kai-allocate-job-with-subgroups-cannot-satisfy-sub-group-gang",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                subgroup_job(
                    "pending_job0",
                    "queue0",
                    {"sub0": 1, "sub1": 2},
                    [("sub0", 3), ("sub0", 3), ("sub1", 1), ("sub1", 1)],
                ),
            ],
            A,
        ),
    ),
    row(
        "Allocate job with tree SubGroups and MinSubGroups - unsatisfied group gets priority",
        "§5.1 member order: the unsatisfied group gets its pods before extras elsewhere",
        Disruption(
            "kai-allocate-job-with-tree-subgroups-and-minsubgroups-unsatisfie",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                pod_group(
                    "job0",
                    "queue0",
                    sub_groups=[
                        {"name": "group-ab", "minSubGroup": 1},
                        {"name": "group-cd"},
                        {"name": "sub-a", "minMember": 1, "parent": "group-ab"},
                        {"name": "sub-b", "minMember": 1, "parent": "group-ab"},
                        {"name": "sub-c", "minMember": 1, "parent": "group-cd"},
                        {"name": "sub-d", "minMember": 1, "parent": "group-cd"},
                    ],
                    min_member=None,
                ),
                pod("job0-0", "job0", sub_group="sub-a", gpus=1, state="Running", node="node0"),
                pod("job0-1", "job0", sub_group="sub-b", gpus=1),
                pod("job0-2", "job0", sub_group="sub-b", gpus=1),
                pod("job0-3", "job0", sub_group="sub-c", gpus=1),
                pod("job0-4", "job0", sub_group="sub-c", gpus=1),
                pod("job0-5", "job0", sub_group="sub-d", gpus=1),
                pod("job0-6", "job0", sub_group="sub-d", gpus=1),
            ],
            A,
            binds={"job0-1": "node0", "job0-3": "node0", "job0-5": "node0"},
        ),
    ),
    row(
        "Allocate multiple jobs with SubGroups",
        "§5.1 two jobs each get their subgroups' minimums before any extra",
        Disruption(
            "kai-allocate-multiple-jobs-with-subgroups",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=4),
                subgroup_job(
                    "pending_job0",
                    "queue0",
                    {"sub0": 1, "sub1": 1},
                    [("sub0", 1), ("sub0", 1), ("sub1", 1), ("sub1", 1)],
                ),
                subgroup_job(
                    "pending_job1",
                    "queue0",
                    {"sub0": 1, "sub1": 1},
                    [("sub0", 1), ("sub0", 1), ("sub1", 1), ("sub1", 1)],
                ),
            ],
            A,
            binds={
                "pending_job0-0": "node0",
                "pending_job0-2": "node0",
                "pending_job1-0": "node0",
                "pending_job1-2": "node0",
            },
        ),
    ),
    row(
        "Allocate job with minSubGroup - only the first required member is scheduled in the gang phase",
        "§2.1 minSubGroup 1 at the root: only the first required member starts",
        Disruption(
            "kai-allocate-job-with-minsubgroup-only-the-first-required-member",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                min_sub_group(
                    pod_group(
                        "job0",
                        "queue0",
                        sub_groups=[
                            {"name": "group-a"},
                            {"name": "group-b"},
                            {"name": "sub-a1", "minMember": 1, "parent": "group-a"},
                            {"name": "sub-a2", "minMember": 1, "parent": "group-a"},
                            {"name": "sub-b1", "minMember": 1, "parent": "group-b"},
                            {"name": "sub-b2", "minMember": 1, "parent": "group-b"},
                        ],
                        min_member=None,
                    ),
                    1,
                ),
                pod("job0-0", "job0", sub_group="sub-a1", gpus=1),
                pod("job0-1", "job0", sub_group="sub-a2", gpus=1),
                pod("job0-2", "job0", sub_group="sub-b1", gpus=1),
                pod("job0-3", "job0", sub_group="sub-b2", gpus=1),
            ],
            A,
            binds={"job0-0": "node0", "job0-1": "node0"},
        ),
    ),
    row(
        "Allocate job with minSubGroup - elastic phase allocates one extra member",
        "§5.1 minSubGroup 1: after the gang phase one extra member is added",
        Disruption(
            "kai-allocate-job-with-minsubgroup-elastic-phase-allocates-one-ex",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=2),
                min_sub_group(
                    pod_group(
                        "job0",
                        "queue0",
                        sub_groups=[
                            {"name": "group-a"},
                            {"name": "group-b"},
                            {"name": "sub-a1", "minMember": 1, "parent": "group-a"},
                            {"name": "sub-b1", "minMember": 1, "parent": "group-b"},
                        ],
                        min_member=None,
                    ),
                    1,
                ),
                pod("job0-0", "job0", sub_group="sub-a1", gpus=1, state="Running", node="node0"),
                pod("job0-1", "job0", sub_group="sub-b1", gpus=1),
            ],
            A,
            binds={"job0-1": "node0"},
        ),
    ),
]


GPU_MEMORY = [
    row(
        "Non preemptible job requests gpu memory over deserved quota",
        "§5.2 NonPreemptibleOverQuota: three 40 MiB build pods exceed deserved 1",
        Disruption(
            "kai-non-preemptible-job-requests-gpu-memory-over-deserved-quota",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=3),
                pod("pending_job-0-0", "pending_job-0", **shared_gpu(memory=40)),
                pod("pending_job-0-1", "pending_job-0", **shared_gpu(memory=40)),
                pod("pending_job-0-2", "pending_job-0", **shared_gpu(memory=40)),
            ],
            ("allocate",),
            pending=["pending_job-0"],
        ),
    ),
    row(
        "Preemptible job requests gpu memory over queue limit",
        "§5.2 OverLimit: the gpu-memory gang exceeds the queue's limit of 1 GPU",
        Disruption(
            "kai-preemptible-job-requests-gpu-memory-over-queue-limit",
            [
                department(),
                leaf("queue0", gpu_quota=1, gpu_limit=1),
                gpu_node("node0", 2),
                pod_group("pending_job-0", "queue0", min_member=3),
                pod("pending_job-0-0", "pending_job-0", **shared_gpu(memory=40)),
                pod("pending_job-0-1", "pending_job-0", **shared_gpu(memory=40)),
                pod("pending_job-0-2", "pending_job-0", **shared_gpu(memory=40)),
            ],
            ("allocate",),
            pending=["pending_job-0"],
        ),
    ),
    row(
        "Basic request gpu by memory when cluster is empty",
        "§6 a 50 MiB request gets half of a 100 MiB device",
        Disruption(
            "kai-basic-request-gpu-by-memory-when-cluster-is-empty",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", **shared_gpu(memory=50)),
            ],
            ("allocate",),
            binds={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Pending job requests gpu memory while other job terminates",
        "§6 CPU memory held by a Releasing pod makes the gpu-memory pod pipelined",
        Disruption(
            "kai-pending-job-requests-gpu-memory-while-other-job-terminates",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1, memory="2000"),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", memory="1500", **shared_gpu(memory=50)),
                pod_group("running_job-0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    memory="1000",
                    state="Releasing",
                    node="node0",
                ),
            ],
            ("allocate",),
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Pending job requests GPU memory, assigned to an already shared GPU device, memory resource cannot be allocated",
        "§6 joining a shared device still needs CPU memory, only released room has it: pipelined",
        Disruption(
            "kai-pending-job-requests-gpu-memory-assigned-to-an-already-share",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1, memory="2000"),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", memory="750", **shared_gpu(memory=50)),
                pod_group("running_job-0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    memory="1000",
                    **shared_gpu(memory=25, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job-1", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-1-0",
                    "running_job-1",
                    memory="500",
                    state="Releasing",
                    node="node0",
                ),
            ],
            ("allocate",),
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Pending job requests gpu memory, new shared GPU device selected, memory cannot be allocated",
        "§6 a new shared device: CPU memory only after the Releasing pod goes, so pipelined",
        Disruption(
            "kai-pending-job-requests-gpu-memory-new-shared-gpu-device-select",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1, memory="2000"),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", memory="750", **shared_gpu(memory=50)),
                pod_group("running_job-0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-0-0", "running_job-0", memory="1000", state="Running", node="node0"
                ),
                pod_group("running_job-1", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-1-0",
                    "running_job-1",
                    memory="500",
                    state="Releasing",
                    node="node0",
                ),
            ],
            ("allocate",),
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "pending job requests gpu memory - overlimit on available nodes, not overlimit on full largest-memory node",
        "§5.2/§6 per node, 350 MiB is 0.88 or 0.58 of a device, over deserved 0.5; the "
        "2000 MiB node, where it is 0.18, is full",
        Disruption(
            "kai-pending-job-requests-gpu-memory-overlimit-on-available-nodes",
            [
                department(),
                leaf("queue0", gpu_quota=0.5),
                leaf("queue1", gpu_quota=2),
                gpu_node("node-small", 1, device_memory=400),
                gpu_node("node-medium", 1, device_memory=600),
                gpu_node("node-large", 2, device_memory=2000),
                gjob(
                    "running-job",
                    "queue1",
                    2,
                    gpus=1,
                    states=["Running", "Running"],
                    nodes=["node-large", "node-large"],
                ),
                pod_group("pending-job", "queue0", priority_class="build", min_member=1),
                pod("pending-job-0", "pending-job", **shared_gpu(memory=350)),
            ],
            ("allocate",),
            pending=["pending-job"],
        ),
    ),
    row(
        "2-device GPU memory job blocked by non-preemptible quota",
        "§5.2 NonPreemptibleOverQuota: 2 devices x 0.6 > deserved 1",
        Disruption(
            "kai-2-device-gpu-memory-job-blocked-by-non-preemptible-quota",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2, device_memory=100),
                pod_group("pending_job", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0", "pending_job", **shared_gpu(memory=60, devices=2)),
            ],
            ("allocate",),
            pending=["pending_job"],
        ),
    ),
]


FRACTIONAL = [
    row(
        "allocate job with multiple pods but does not allow it because project goes over allowance",
        "§5.2 OverLimit at the leaf: the gang of fractions exceeds the queue's limit",
        Disruption(
            "kai-allocate-job-with-multiple-pods-but-does-not-allow-it-becaus",
            [
                department("department-a", gpu_quota=1, gpu_limit=1, gpu_weight=1),
                leaf("queue0", "department-a", gpu_quota=1, gpu_weight=1, gpu_limit=1),
                gpu_node("node0", 4),
                gjob("pending_job0", "queue0", 3, gpus=0.5),
            ],
            ("allocate",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "allocate job with multiple pods but does not allow it because department to go over allowance",
        "§5.2 OverLimit at the department: the parent's limit refuses the gang",
        Disruption(
            "kai-allocate-job-with-multiple-pods-but-does-not-allow-it-becaus-2",
            [
                department("department-a", gpu_quota=1, gpu_limit=1, gpu_weight=1),
                leaf("queue0", "department-a", gpu_quota=1, gpu_weight=1),
                gpu_node("node0", 4),
                gjob("pending_job0", "queue0", 3, gpus=0.5),
            ],
            ("allocate",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "1 shared gpu job running, 1 pending interactive shared gpu job, allocate to same gpu",
        "§6 a half GPU joins the running half on the same device",
        Disruption(
            "kai-1-shared-gpu-job-running-1-pending-interactive-shared-gpu-jo",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_shared_gpu_job1-0": "node0"},
        ),
    ),
    row(
        "1 shared gpu job running, 1 pending interactive shared gpu job, allocate to same gpu - even if multiple nodes, to check gpusharingorder plugin",
        "§6/§5.3 +1,000 for a node with a fitting shared group, even among several nodes",
        Disruption(
            "kai-1-shared-gpu-job-running-1-pending-interactive-shared-gpu-jo-2",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                gpu_node("node1", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node1",
                ),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_shared_gpu_job1-0": "node1"},
        ),
    ),
    row(
        "1 shared gpu job running, 1 pending interactive shared gpu job - allocate to new gpu",
        "§6 a half GPU that does not fit the shared device takes a new device",
        Disruption(
            "kai-1-shared-gpu-job-running-1-pending-interactive-shared-gpu-jo-3",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.6, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_shared_gpu_job1-0": "node0"},
        ),
    ),
    row(
        "1 shared gpu job running, 1 pending interactive shared gpu job - queue will be overused, don't allocate",
        "§5.2 NonPreemptibleOverQuota counts fractions: 1 + 0.5 > deserved 1",
        Disruption(
            "kai-1-shared-gpu-job-running-1-pending-interactive-shared-gpu-jo-4",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.6, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            pending=["pending_shared_gpu_job1"],
        ),
    ),
    row(
        "1 shared gpu job running, 1 pending interactive shared gpu job - queue will be overused, don't allocate",
        "§5.2 NonPreemptibleOverQuota counts fractions: 1 + 0.5 > deserved 1",
        Disruption(
            "kai-fraction-build-over-deserved-second-picture",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.6, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            pending=["pending_shared_gpu_job1"],
        ),
    ),
    row(
        "1 whole gpu job running, 1 pending interactive shared gpu job - allocate",
        "§6 a half GPU beside a whole-GPU job takes a free device",
        Disruption(
            "kai-1-whole-gpu-job-running-1-pending-interactive-shared-gpu-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_shared_gpu_job1-0": "node0"},
        ),
    ),
    row(
        "1 shared gpu interactive job running, 1 pending whole gpu job - allocate",
        "§6 a whole-GPU job beside a shared device takes the other device",
        Disruption(
            "kai-1-shared-gpu-interactive-job-running-1-pending-whole-gpu-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_whole_gpu_job1", "queue0", 1, gpus=1),
            ],
            ("allocate",),
            binds={"pending_whole_gpu_job1-0": "node0"},
        ),
    ),
    row(
        "1 interactive shared gpu job running, 4 pending interactive shared gpus pending - allocate 3 of the shared GPUs jobs",
        "§6 fractions fill shared devices: three of four half-GPU jobs fit",
        Disruption(
            "kai-1-interactive-shared-gpu-job-running-4-pending-interactive-s",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group(
                    "running_shared_gpu_job0", "queue0", priority_class="build", min_member=1
                ),
                pod(
                    "running_shared_gpu_job0-0",
                    "running_shared_gpu_job0",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_shared_gpu_job0", "queue0", 1, priority_class="build", gpus=0.6),
                gjob("pending_shared_gpu_job1", "queue0", 1, priority_class="build", gpus=0.5),
                gjob("pending_shared_gpu_job2", "queue0", 1, priority_class="build", gpus=0.5),
                gjob("pending_shared_gpu_job3", "queue0", 1, priority_class="build", gpus=0.3),
            ],
            ("allocate",),
            binds={
                "pending_shared_gpu_job0-0": "node0",
                "pending_shared_gpu_job1-0": "node0",
                "pending_shared_gpu_job3-0": "node0",
            },
            pending=["pending_shared_gpu_job2"],
        ),
    ),
    row(
        "Verify allocated fractional GPU jobs are counted in the overall number of GPUs the default department will have",
        "§5.4 fractional jobs count in the department's allocation",
        Disruption(
            "kai-verify-allocated-fractional-gpu-jobs-are-counted-in-the-over",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group("running_job0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Pipeline fractional interactive gpu task when a task is evicting - dont allocate a new gpu",
        "§6 a fraction waiting on a device being freed is pipelined, not given a new device",
        Disruption(
            "kai-pipeline-fractional-interactive-gpu-task-when-a-task-is-evic",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group("running_job0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("releasing_job0", "queue0", priority_class="build", min_member=1),
                pod(
                    "releasing_job0-0",
                    "releasing_job0",
                    **shared_gpu(0.5, "0"),
                    state="Releasing",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=0.5),
            ],
            ("allocate",),
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Allow allocation of fractional training when over quota with fractional jobs",
        "§5.2 a preemptible fraction may exceed deserved",
        Disruption(
            "kai-allow-allocation-of-fractional-training-when-over-quota-with",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2),
                pod_group("running_job0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job1", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job1-0",
                    "running_job1",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Allow allocation of fractional training when over quota with fractional jobs",
        "§5.2 a preemptible fraction may exceed deserved beside a build job",
        Disruption(
            "kai-fraction-train-over-quota-beside-build",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 2),
                gjob(
                    "running_job0",
                    "queue0",
                    1,
                    priority_class="build",
                    gpus=1,
                    states=["Running"],
                    nodes=["node0"],
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.5),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Pack jobs on nodes",
        "§5.6 binpack: the fraction goes to the node already holding a shared device",
        Disruption(
            "kai-pack-jobs-on-nodes",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                gpu_node("node0", 2),
                gpu_node("node1", 2),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.2),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Pack jobs on GPUs",
        "§6 binpack device order: the fullest shared group first",
        Disruption(
            "kai-pack-jobs-on-gpus",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job1", "queue0", min_member=1),
                pod(
                    "running_job1-0",
                    "running_job1",
                    **shared_gpu(0.7, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.2),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Spread jobs across GPUs",
        "§6 spread device order: whole devices before shared groups",
        Disruption(
            "kai-spread-jobs-across-gpus",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job1", "queue0", min_member=1),
                pod(
                    "running_job1-0",
                    "running_job1",
                    **shared_gpu(0.7, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.2),
            ],
            ("allocate",),
            settings={"gpu_placement": "spread"},
            binds={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Spread jobs across free GPUs",
        "§6 spread device order: free devices first",
        Disruption(
            "kai-spread-jobs-across-free-gpus",
            [
                department(),
                leaf("queue0", gpu_quota=8),
                gpu_node("node0", 8),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job1", "queue0", min_member=1),
                pod(
                    "running_job1-0",
                    "running_job1",
                    **shared_gpu(0.7, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=0.2),
            ],
            ("allocate",),
            settings={"gpu_placement": "spread"},
            binds={"pending_job0-0": "node0"},
        ),
    ),
]


MIG = [
    row(
        "MIG job requesting unavailable MIG device",
        "§6 a slice size the node does not offer cannot be placed",
        Disruption(
            "kai-mig-job-requesting-unavailable-mig-device",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.5gb": "1"}, labels=mig_labels("mixed")),
                pod_group("pending_job", "queue0", min_member=1),
                pod("pending_job-0", "pending_job", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("allocate",),
            pending=["pending_job"],
        ),
    ),
    row(
        "MIG job requesting single MIG device",
        "§6 a mixed-strategy node offers its slices as extended resources",
        Disruption(
            "kai-mig-job-requesting-single-mig-device",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "1"}, labels=mig_labels("mixed")),
                pod_group("pending_job-0", "queue0", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("allocate",),
            binds={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "MIG job requesting MIG device on node with no available MIG devices",
        "§6 all slices of the node are used: the request waits",
        Disruption(
            "kai-mig-job-requesting-mig-device-on-node-with-no-available-mig-",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "0"}, labels=mig_labels("mixed")),
                pod_group("pending_job-0", "queue0", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("allocate",),
            pending=["pending_job-0"],
        ),
    ),
    row(
        "MIG job requesting MIG device on node with Legacy MIG jobs",
        "podmuster differs (§6): the legacy MIG annotation is not read, so the running legacy pod holds no slice and the new job binds",
        Disruption(
            "kai-mig-job-requesting-mig-device-on-node-with-legacy-mig-jobs",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "2"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    annotations=LEGACY_MIG,
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue0", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("allocate",),
            binds={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Pending legacy MIG job",
        "podmuster differs (§6): the legacy MIG annotation is not read; the pod asks for nothing and binds",
        Disruption(
            "kai-pending-legacy-mig-job",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "2"}, labels=mig_labels("mixed")),
                pod_group("pending_job-0", "queue0", min_member=1),
                pod("pending_job-0-0", "pending_job-0", annotations=LEGACY_MIG),
            ],
            ("allocate",),
            binds={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "MIG job with multiple tasks requesting MIG device",
        "§5.1/§6 jobs in order take the slices of each size that remain",
        Disruption(
            "kai-mig-job-with-multiple-tasks-requesting-mig-device",
            [
                department(),
                leaf("queue0", gpu_quota=5),
                node(
                    "node0",
                    extended={"nvidia.com/mig-1g.5gb": "2", "nvidia.com/mig-1g.10gb": "3"},
                    labels=mig_labels("mixed"),
                ),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=3),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "2"}),
                pod("pending_job-0-1", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
                pod("pending_job-0-2", "pending_job-0", extended={"nvidia.com/mig-1g.5gb": "1"}),
                pod_group("pending_job-1", "queue0", min_member=2),
                pod("pending_job-1-0", "pending_job-1", extended={"nvidia.com/mig-1g.10gb": "1"}),
                pod("pending_job-1-1", "pending_job-1", extended={"nvidia.com/mig-1g.5gb": "1"}),
                pod_group("pending_job-2", "queue0", min_member=1),
                pod("pending_job-2-0", "pending_job-2", extended={"nvidia.com/mig-1g.5gb": "1"}),
            ],
            ("allocate",),
            binds={
                "pending_job-0-0": "node0",
                "pending_job-0-1": "node0",
                "pending_job-0-2": "node0",
                "pending_job-2-0": "node0",
            },
            pending=["pending_job-1"],
        ),
    ),
]


RACK_PREFERRED = topology_constraint("cluster-topology", preferred="k8s.io/rack")

TOPOLOGY = [
    row(
        "Required topology level - schedule all tasks on the same rack",
        "§5.8 required rack: both pods in the one rack with room for both (rack2)",
        Disruption(
            "kai-required-topology-level-schedule-all-tasks-on-the-same-rack",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack"),
                node("node0", gpus=1, labels={"k8s.io/rack": "rack1"}),
                node("node1", gpus=1, labels={"k8s.io/rack": "rack1"}),
                node("node2", gpus=1, labels={"k8s.io/rack": "rack2"}),
                node("node3", gpus=1, labels={"k8s.io/rack": "rack2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint("cluster-topology", required="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node2", "pending_job0-1": "node3"},
        ),
    ),
    row(
        "Required topology level - could not schedule on first domain due to affinity, goes to next",
        "§5.8 a pod's node affinity rules out rack1: the next candidate rack is used",
        Disruption(
            "kai-required-topology-level-could-not-schedule-on-first-domain-d",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack"),
                node("node0", gpus=1, labels={"k8s.io/rack": "rack1"}),
                node("node1", gpus=1, labels={"k8s.io/rack": "rack1"}),
                node(
                    "node2",
                    gpus=1,
                    labels={"k8s.io/rack": "rack2", "kai.scheduler/type": "affinity1"},
                ),
                node(
                    "node3",
                    gpus=1,
                    labels={"k8s.io/rack": "rack2", "kai.scheduler/type": "affinity1"},
                ),
                pod_group(
                    "pending_job0",
                    "queue0",
                    topology=topology_constraint("cluster-topology", required="k8s.io/rack"),
                    min_member=2,
                ),
                pod("pending_job0-0", "pending_job0", gpus=1, affinity=type_in("affinity1")),
                pod("pending_job0-1", "pending_job0", gpus=1),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node2", "pending_job0-1": "node3"},
        ),
    ),
    row(
        "Required topology with multiple levels - schedule all tasks on the same spine",
        "§5.8 required spine: the gang stays inside one spine",
        Disruption(
            "kai-required-topology-with-multiple-levels-schedule-all-tasks-on",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint("cluster-topology", required="k8s.io/spine"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node1", "pending_job0-1": "node1"},
        ),
    ),
    row(
        "Required topology with multiple levels - schedule all tasks on the same rack",
        "§5.8 required rack at the deepest level: both pods in one rack",
        Disruption(
            "kai-required-topology-with-multiple-levels-schedule-all-tasks-on-2",
            [
                department("department-a", gpu_quota=8, gpu_weight=8),
                leaf("queue0", "department-a", gpu_quota=8, gpu_weight=1, gpu_limit=8),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                node("node2", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine1"}),
                node("node3", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    4,
                    topology=topology_constraint("cluster-topology", required="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={
                "pending_job0-0": "node2",
                "pending_job0-1": "node2",
                "pending_job0-2": "node3",
                "pending_job0-3": "node3",
            },
        ),
    ),
    row(
        "Required topology with multiple levels - schedule all tasks on the same partially occupied rack",
        "§5.8 a partly used rack with room for the whole gang is a candidate",
        Disruption(
            "kai-required-topology-with-multiple-levels-schedule-all-tasks-on-3",
            [
                department("department-a", gpu_quota=8, gpu_weight=8),
                leaf("queue0", "department-a", gpu_quota=8, gpu_weight=1, gpu_limit=8),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint("cluster-topology", required="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node0", "pending_job0-1": "node1"},
        ),
    ),
    row(
        "Required topology with multiple levels - job remains pending as no available rack can be found",
        "§5.8 no rack can hold the whole gang: it stays pending",
        Disruption(
            "kai-required-topology-with-multiple-levels-job-remains-pending-a",
            [
                department("department-a", gpu_quota=8, gpu_weight=8),
                leaf("queue0", "department-a", gpu_quota=8, gpu_weight=1, gpu_limit=8),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                node("node2", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine1"}),
                node("node3", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob("running_job1", "queue0", 1, gpus=1, states=["Running"], nodes=["node2"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    4,
                    topology=topology_constraint("cluster-topology", required="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "Preferred topology - schedule job on the same rack",
        "§5.8 preferred rack: inside the domain the preferred sub-domain fills first",
        Disruption(
            "kai-preferred-topology-schedule-job-on-the-same-rack",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint("cluster-topology", preferred="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node1", "pending_job0-1": "node1"},
        ),
    ),
    row(
        "Preferred topology - schedule job even if preferred constraint can't be met",
        "§5.8 a preferred level that cannot be met does not block the gang",
        Disruption(
            "kai-preferred-topology-schedule-job-even-if-preferred-constraint",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack2"}),
                gjob("running_job0", "queue0", 1, gpus=1, states=["Running"], nodes=["node0"]),
                gjob("running_job1", "queue0", 1, gpus=1, states=["Running"], nodes=["node1"]),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint("cluster-topology", preferred="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node1", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "Combined preferred and required topology constraints - schedule job although preferred constraint cannot be satisfied",
        "§5.8 required spine with preferred rack unmet: placed inside the spine",
        Disruption(
            "kai-combined-preferred-and-required-topology-constraints-schedul",
            [
                department("department-a", gpu_quota=8, gpu_weight=8),
                leaf("queue0", "department-a", gpu_quota=8, gpu_weight=1, gpu_limit=8),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                node("node2", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine1"}),
                node("node3", gpus=2, labels={"k8s.io/rack": "rack2", "k8s.io/spine": "spine2"}),
                gjob(
                    "running_job0",
                    "queue0",
                    5,
                    gpus=1,
                    states=["Running", "Running", "Running", "Running", "Running"],
                    nodes=["node0", "node0", "node1", "node2", "node3"],
                ),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    topology=topology_constraint(
                        "cluster-topology", required="k8s.io/rack", preferred="k8s.io/spine"
                    ),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node3", "pending_job0-1": "node2"},
        ),
    ),
    row(
        "Combined preferred and required topology constraints - preferred level respected when possible",
        "§5.8 required zone, preferred rack: the pods share a rack where possible",
        Disruption(
            "kai-combined-preferred-and-required-topology-constraints-preferr",
            [
                department("department-a", gpu_quota=8, gpu_weight=8),
                leaf("queue0", "department-a", gpu_quota=8, gpu_weight=1, gpu_limit=8),
                topology("cluster-topology", "k8s.io/rack", "k8s.io/spine"),
                node("node0", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node1", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine1"}),
                node("node2", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                node("node3", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine2"}),
                node("node4", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine3"}),
                node("node5", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine3"}),
                node("node6", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine4"}),
                node("node7", gpus=1, labels={"k8s.io/rack": "rack1", "k8s.io/spine": "spine4"}),
                gjob(
                    "pending_job0",
                    "queue0",
                    3,
                    topology=topology_constraint(
                        "cluster-topology", required="k8s.io/rack", preferred="k8s.io/spine"
                    ),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node6", "pending_job0-1": "node7", "pending_job0-2": "node4"},
        ),
    ),
    row(
        "Elastic subgroups with required topology constraints",
        "§5.8 subgroups with preferred racks grow one pod at a time across racks",
        Disruption(
            "kai-elastic-subgroups-with-required-topology-constraints",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", "k8s.io/rack"),
                node("node0", gpus=2, labels={"k8s.io/rack": "rack1"}),
                node("node1", gpus=2, labels={"k8s.io/rack": "rack2"}),
                pod_group(
                    "pending_job0",
                    "queue0",
                    sub_groups=[
                        {
                            "name": "subgroup-a",
                            "minMember": 1,
                            "topologyConstraint": RACK_PREFERRED,
                        },
                        {
                            "name": "subgroup-b",
                            "minMember": 1,
                            "topologyConstraint": RACK_PREFERRED,
                        },
                    ],
                    min_member=None,
                ),
                pod("pending_job0-0", "pending_job0", gpus=1, sub_group="subgroup-a"),
                pod("pending_job0-1", "pending_job0", gpus=1, sub_group="subgroup-a"),
                pod("pending_job0-2", "pending_job0", gpus=1, sub_group="subgroup-b"),
                pod("pending_job0-3", "pending_job0", gpus=1, sub_group="subgroup-b"),
            ],
            ("allocate",),
            binds={
                "pending_job0-0": "node0",
                "pending_job0-1": "node1",
                "pending_job0-2": "node0",
                "pending_job0-3": "node1",
            },
        ),
    ),
    row(
        "Bin Packing - Pack Top-Most domain first",
        "§5.8 domain order: the tightest top-most domain (spine2) before the looser one",
        Disruption(
            "kai-bin-packing-pack-top-most-domain-first",
            [
                department("department-a", gpu_quota=5, gpu_weight=5),
                leaf("queue0", "department-a", gpu_quota=5, gpu_weight=1, gpu_limit=5),
                topology("cluster-topology", "k8s.io/zone", "k8s.io/spine", "k8s.io/rack"),
                node(
                    "node0",
                    gpus=1,
                    labels={
                        "k8s.io/zone": "zone1",
                        "k8s.io/spine": "spine1",
                        "k8s.io/rack": "rack1",
                    },
                ),
                node(
                    "node1",
                    gpus=1,
                    labels={
                        "k8s.io/zone": "zone1",
                        "k8s.io/spine": "spine1",
                        "k8s.io/rack": "rack2",
                    },
                ),
                node(
                    "node2",
                    gpus=1,
                    labels={
                        "k8s.io/zone": "zone1",
                        "k8s.io/spine": "spine1",
                        "k8s.io/rack": "rack3",
                    },
                ),
                node(
                    "node3",
                    gpus=1,
                    labels={
                        "k8s.io/zone": "zone1",
                        "k8s.io/spine": "spine2",
                        "k8s.io/rack": "rack4",
                    },
                ),
                node(
                    "node4",
                    gpus=1,
                    labels={
                        "k8s.io/zone": "zone1",
                        "k8s.io/spine": "spine2",
                        "k8s.io/rack": "rack4",
                    },
                ),
                gjob(
                    "pending_job0",
                    "queue0",
                    1,
                    topology=topology_constraint("cluster-topology", preferred="k8s.io/rack"),
                    gpus=1,
                ),
            ],
            ("allocate",),
            binds={"pending_job0-0": "node3"},
        ),
    ),
]


ZONE = "topology.kubernetes.io/zone"
DATABASE = {"app": "database"}


def typed_node(name: str, zone: str, gpus: int) -> dict[str, object]:
    """A node labelled with its zone and, as KAI's test nodes are, its own name as type."""
    return node(name, gpus=gpus, labels={ZONE: zone, NODE_TYPE_LABEL: name})


def database_pod(name: str, where: str) -> list[dict[str, object]]:
    """A running one-GPU job whose pod carries ``app: database``."""
    return running(name, "queue0", where, gpus=1, labels=DATABASE)


def affinity_job(*, anti: bool) -> list[dict[str, object]]:
    """``affinity-job``: required affinity to a database pod in its zone and, if ``anti``,
    required anti-affinity to one on its node (KAI's test pods carry the labels they select)."""
    term = {"labelSelector": {"matchLabels": DATABASE}}
    affinity: dict[str, object] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{**term, "topologyKey": ZONE}]
        }
    }
    if anti:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {**term, "topologyKey": NODE_TYPE_LABEL}
            ]
        }
    return gjob("affinity-job", "queue0", gpus=1, labels=DATABASE, affinity=affinity)


AFFINITY = [
    row(
        "Pod anti affinity scheduling",
        "§14 required affinity (same zone as a database) and anti-affinity (not its node): node0",
        Disruption(
            "kai-pod-anti-affinity",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                typed_node("node0", "east", 2),
                typed_node("node1", "east", 2),
                affinity_job(anti=True),
                database_pod("existing-database", "node1"),
            ],
            A,
            binds={"affinity-job-0": "node0"},
        ),
    ),
    row(
        "Pod affinity and anti-affinity scheduling makes job stay pending",
        "§14 every east node holds a database (anti-affinity), west has none (affinity)",
        Disruption(
            "kai-pod-affinity-and-anti-affinity-pending",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                typed_node("node0", "east", 2),
                typed_node("node1", "east", 2),
                typed_node("node2", "west", 2),
                affinity_job(anti=True),
                database_pod("existing-database", "node1"),
                database_pod("existing-web-server", "node0"),
            ],
            A,
            pending=["affinity-job"],
        ),
    ),
    row(
        "Pod affinity condition makes job stay pending",
        "§14 the east nodes are full and the west zone holds no database",
        Disruption(
            "kai-pod-affinity-pending",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                typed_node("node0", "east", 1),
                typed_node("node1", "east", 1),
                typed_node("node2", "west", 1),
                affinity_job(anti=False),
                database_pod("existing-database", "node1"),
                database_pod("existing-web-server", "node0"),
            ],
            A,
            pending=["affinity-job"],
        ),
    ),
]


@pytest.mark.parametrize(
    "case",
    ROWS
    + GANG
    + ELASTIC
    + RELEASING
    + SUBGROUPS
    + GPU_MEMORY
    + FRACTIONAL
    + MIG
    + TOPOLOGY
    + AFFINITY,
)
def test_kai_allocate(case: Disruption) -> None:
    check(case)
