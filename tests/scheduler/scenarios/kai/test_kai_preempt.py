"""KAI v0.17 preempt tests (``pkg/scheduler/actions/preempt``) as podmuster scenario rows.

Sources: ``preempt_test.go``, ``preemptGang_test.go``, ``preempt_elastic_test.go``,
``preempt_subgroups_test.go`` and ``preempt_gang_full_drain_test.go``. Each row names
its KAI test and the rule of docs/semantics.md (§5.2 preempt and the shared solver, §5.7
minimum runtime) that gives the expectation. KAI's "Releasing" is an eviction here,
"Pipelined" a pipelined pod.
"""

from __future__ import annotations

import pytest
from disruption_kit import priority_class, running
from kai_rows import (
    DELAY_10M,
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
)

from tests.kits.worlds import node, pod, pod_group

PREEMPT = [
    row(
        "3 train job running, 1 build job pending for the same queue - no need to preempt both",
        "§9.4 S4: the half-GPU jobs fit again on their shared device; only the whole-GPU job goes",
        Disruption(
            "kai-3-train-job-running-1-build-job-pending-for-the-same-queue-n",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    cpu=None,
                    memory=None,
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                running("running_job1", "queue0", "node0", gpus=1),
                pod_group("running_job2", "queue0", min_member=1),
                pod(
                    "running_job2-0",
                    "running_job2",
                    cpu=None,
                    memory=None,
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job1-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 train job running, 1 build job pending for the same queue - preempt",
        "§5.2 preempt: a higher-priority job evicts a lower one of the same queue",
        Disruption(
            "kai-1-train-job-running-1-build-job-pending-for-the-same-queue-p",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "pending build job within preemption delay - don't preempt",
        "§5.2 preemption delay: a 1-minute-old job with a 10m delay evicts nobody",
        Disruption(
            "kai-pending-build-job-within-preemption-delay-don-t-preempt",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob(
                    "pending_job0",
                    "queue0",
                    1,
                    priority_class="build",
                    spec=DELAY_10M,
                    age=60,
                    gpus=1,
                ),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "pending build job with elapsed preemption delay - preempt",
        "§5.2 preemption delay elapsed (job 30m old): it preempts",
        Disruption(
            "kai-pending-build-job-with-elapsed-preemption-delay-preempt",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob(
                    "pending_job0",
                    "queue0",
                    1,
                    priority_class="build",
                    spec=DELAY_10M,
                    age=1800,
                    gpus=1,
                ),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "running job with preemption delay is still evictable as victim - preempt",
        "§5.2 a victim's own preemptionDelay does not protect it",
        Disruption(
            "kai-running-job-with-preemption-delay-is-still-evictable-as-vict",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                gjob(
                    "running_job0",
                    "queue0",
                    1,
                    spec=DELAY_10M,
                    age=60,
                    gpus=1,
                    states=["Running"],
                    nodes=["node0"],
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 train job running, 1 train job pending for the same queue - don't preempt",
        "§5.2 preempt needs strictly lower priority: equal train jobs stay",
        Disruption(
            "kai-1-train-job-running-1-train-job-pending-for-the-same-queue-d",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, gpus=1),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "1 train job running, 1 build job pending for the different queue - don't preempt",
        "§5.2 preempt stays in the leaf queue: another queue's job is no victim",
        Disruption(
            "kai-1-train-job-running-1-build-job-pending-for-the-different-qu",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue1", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "2 train jobs running, 1 build job with 2 GPUs pending for the same queue - preempt",
        "§5.2 two one-GPU victims make room for a two-GPU job",
        Disruption(
            "kai-2-train-jobs-running-1-build-job-with-2-gpus-pending-for-the",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0", "running_job1-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "2 train jobs running require 2 GPUs, 1 build job with 2 GPUs pending - preempt",
        "§5.2 only the preemptor's own queue yields; queue1's job stays",
        Disruption(
            "kai-2-train-jobs-running-require-2-gpus-1-build-job-with-2-gpus-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 train requires 1 GPU for queue0, 1 train that requires 2 GPU for queue1, 1 build job with 2 GPUs pending - preempt",
        "§5.2 the free GPU plus queue0's one-GPU job make room; queue1's job stays",
        Disruption(
            "kai-1-train-requires-1-gpu-for-queue0-1-train-that-requires-2-gp",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                leaf("queue1", gpu_quota=2),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue1", "node0", gpus=2),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 train, 1 preemptible interactive jobs running, 1 build job with 1 GPUs pending for the same queue - preempt train",
        "§5.2 victim order: lowest priority first, train (50) before build-preemptible (75)",
        Disruption(
            "kai-1-train-1-preemptible-interactive-jobs-running-1-build-job-w",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", gpus=1),
                running(
                    "running_job1", "queue0", "node0", priority_class="build-preemptible", gpus=1
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "2 preemptible interactive jobs running, 1 build job with 1 GPUs pending for the same queue - preempt",
        "§5.2 victim order: equal priority, the newest job goes first",
        Disruption(
            "kai-2-preemptible-interactive-jobs-running-1-build-job-with-1-gp",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running(
                    "running_job0", "queue0", "node0", priority_class="build-preemptible", gpus=1
                ),
                running(
                    "running_job1", "queue0", "node0", priority_class="build-preemptible", gpus=1
                ),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job1-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "1 train job, 1 preemptible interactive job with 1 GPUs pending for the same queue - preempt",
        "§5.2 build-preemptible (75) preempts train (50)",
        Disruption(
            "kai-1-train-job-1-preemptible-interactive-job-with-1-gpus-pendin",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build-preemptible", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference shouldn't preempt interactive",
        "§5.2 a build job is non-preemptible: inference does not preempt it",
        Disruption(
            "kai-inference-shouldn-t-preempt-interactive",
            [
                department(),
                leaf("queue0", gpu_quota=10),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", priority_class="build", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=1),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "Interactive shouldn't preempt inference",
        "§5.2 inference is non-preemptible and higher: build cannot preempt it",
        Disruption(
            "kai-interactive-shouldn-t-preempt-inference",
            [
                department(),
                leaf("queue0", gpu_quota=10),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", priority_class="inference", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=1),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "Inference should preempt train",
        "§5.2 inference (125) preempts train (50)",
        Disruption(
            "kai-inference-should-preempt-train",
            [
                department(),
                leaf("queue0", gpu_quota=10),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
]

GANG = [
    row(
        "Don't preempt if not all tasks can be allocated",
        "§5.2 gang: two pods cannot fit a one-GPU node, so nothing is evicted",
        Disruption(
            "kai-don-t-preempt-if-not-all-tasks-can-be-allocated",
            [
                department(),
                leaf("queue0", gpu_quota=2, gpu_weight=2),
                node("node0", gpus=1),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 2, priority_class="build", gpus=1),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "Preempt if all tasks can be allocated",
        "§5.2 gang: both pods fit once the one victim goes",
        Disruption(
            "kai-preempt-if-all-tasks-can-be-allocated",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 2, priority_class="build", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0", "pending_job0-1": "node0"},
        ),
    ),
    row(
        "don't preempt if will go over quota",
        "§5.2 NonPreemptibleOverQuota before searching: a build gang of 4 GPUs > deserved 3",
        Disruption(
            "kai-don-t-preempt-if-will-go-over-quota",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 2, priority_class="build", gpus=2),
            ],
            ("preempt",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "preempt gang job",
        "§5.2 chunks: a victim gang goes whole",
        Disruption(
            "kai-preempt-gang-job",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", 2, gpus=2),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0", "running_job0-1"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
]

ELASTIC = [
    row(
        "Inference job preempts single task from elastic train job",
        "§5.2 chunks: one extra pod of an elastic victim is enough",
        Disruption(
            "kai-inference-job-preempts-single-task-from-elastic-train-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-1"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference job preempts several tasks from elastic train job",
        "§5.2 chunks: two extra pods go, the elastic victim keeps its minimum",
        Disruption(
            "kai-inference-job-preempts-several-tasks-from-elastic-train-job",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", 4, min_member=1, gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-2", "running_job0-3"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference job preempts all tasks from elastic train job",
        "§5.2 chunks: the elastic victim goes whole when its extras are not enough",
        Disruption(
            "kai-inference-job-preempts-all-tasks-from-elastic-train-job",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0", "running_job0-1"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference job preempts running job and a single task from elastic train job",
        "§5.2 victim order: the elastic job's extra pod first, then the other job",
        Disruption(
            "kai-inference-job-preempts-running-job-and-a-single-task-from-el",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=3),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                running("running_job1", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-1", "running_job1-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference job preempts single task from several elastic train jobs",
        "§5.2 victim order: one extra pod from each elastic job before any core",
        Disruption(
            "kai-inference-job-preempts-single-task-from-several-elastic-trai",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                running("running_job1", "queue0", "node0", 2, min_member=1, gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-1", "running_job1-1"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Inference job preempts several jobs (one of them is elastic)",
        "§5.2 every job goes for a four-GPU preemptor",
        Disruption(
            "kai-inference-job-preempts-several-jobs-one-of-them-is-elastic",
            [
                department(),
                leaf("queue0", gpu_quota=4),
                node("node0", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue0", "node0", 2, min_member=1, gpus=1),
                running("running_job2", "queue0", "node0", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=4),
            ],
            ("preempt",),
            evicted=["running_job0-0", "running_job1-0", "running_job1-1", "running_job2-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Elastic inference job preempts train job",
        "§5.2 an elastic preemptor takes room for its minimum only; its extra waits",
        Disruption(
            "kai-elastic-inference-job-preempts-train-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job0", "queue0", "node0", gpus=2),
                gjob("pending_job0", "queue0", 2, priority_class="inference", min_member=1, gpus=1),
            ],
            ("preempt",),
            evicted=["running_job0-0"],
            pipelined={"pending_job0-0": "node0"},
        ),
    ),
    row(
        "Elastic inference job preempts task from train job in favor of a single task",
        "§5.2 a growing elastic preemptor takes one extra pod of the victim",
        Disruption(
            "kai-elastic-inference-job-preempts-task-from-train-job-in-favor-",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", gpus=3),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    priority_class="inference",
                    min_member=1,
                    gpus=1,
                    states=["Running", "Pending"],
                    nodes=["node0", None],
                ),
            ],
            ("preempt",),
            evicted=["running_job0-1"],
            pipelined={"pending_job0-1": "node0"},
        ),
    ),
    row(
        "Inference job preempts single task, moves one task from elastic train job",
        "§5.2 solver: a victim job is placed again in allocation order, so its first pod in task order survives on node1's free GPU",
        Disruption(
            "kai-inference-job-preempts-single-task-moves-one-task-from-elast",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                node("node1", gpus=1),
                running("running_job0", "queue0", "node0", 2, min_member=1, gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="inference", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job0-0", "running_job0-1"],
            pipelined={"pending_job0-0": "node0", "running_job0-0": "node1"},
        ),
    ),
]

SUBGROUPS = [
    row(
        "Job with sub groups preempts low priority job",
        "§5.2 a preemptor with two subgroups of one pod fits once both victims go",
        Disruption(
            "kai-job-with-sub-groups-preempts-low-priority-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job", "queue0", "node0", 2, gpus=1),
                subgroup_job(
                    "pending_job",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [("sub-0", 1), ("sub-1", 1)],
                    priority_class="build",
                ),
            ],
            ("preempt",),
            evicted=["running_job-0", "running_job-1"],
            pipelined={"pending_job-0": "node0", "pending_job-1": "node0"},
        ),
    ),
    row(
        "Job with sub groups cannot preempts low priority job - cannot satisfy sub group gang",
        "§5.2 two-GPU pods cannot both fit a two-GPU node: no eviction",
        Disruption(
            "kai-job-with-sub-groups-cannot-preempts-low-priority-job-cannot-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job", "queue0", "node0", 2, gpus=1),
                subgroup_job(
                    "pending_job",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [("sub-0", 2), ("sub-1", 2)],
                    priority_class="build",
                ),
            ],
            ("preempt",),
        ),
    ),
    row(
        "Job with sub groups preempts low priority job - partial allocation of the pending job",
        "§5.1 tasks to allocate: one pod per subgroup (each minimum 1) after both victims go",
        Disruption(
            "kai-job-with-sub-groups-preempts-low-priority-job-partial-alloca",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                running("running_job", "queue0", "node0", 2, gpus=1),
                subgroup_job(
                    "pending_job",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [("sub-0", 1), ("sub-0", 1), ("sub-1", 1), ("sub-1", 1)],
                    priority_class="build",
                ),
            ],
            ("preempt",),
            evicted=["running_job-0", "running_job-1"],
            pipelined={"pending_job-0": "node0", "pending_job-2": "node0"},
        ),
    ),
    row(
        "Preempt job with sub groups - partial eviction",
        "§5.2 chunks: one extra pod from each subgroup of the victim, cores stay",
        Disruption(
            "kai-preempt-job-with-sub-groups-partial-eviction",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                pod_group(
                    "running_job",
                    "queue0",
                    sub_groups=[
                        {"name": "sub-0", "minMember": 1},
                        {"name": "sub-1", "minMember": 1},
                    ],
                    min_member=None,
                ),
                pod(
                    "running_job-0",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-0",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-1",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-0",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-2",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-1",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-3",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-1",
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job-1", "running_job-3"],
            pipelined={"pending_job-0": "node0"},
        ),
    ),
    row(
        "Preempt job with sub groups - complete eviction",
        "§5.2 chunks: subgroups at their minimum 2 make the victim go whole",
        Disruption(
            "kai-preempt-job-with-sub-groups-complete-eviction",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                pod_group(
                    "running_job",
                    "queue0",
                    sub_groups=[
                        {"name": "sub-0", "minMember": 2},
                        {"name": "sub-1", "minMember": 2},
                    ],
                    min_member=None,
                ),
                pod(
                    "running_job-0",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-0",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-1",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-0",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-2",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-1",
                    state="Running",
                    node="node0",
                ),
                pod(
                    "running_job-3",
                    "running_job",
                    cpu=None,
                    memory=None,
                    gpus=1,
                    sub_group="sub-1",
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("preempt",),
            evicted=["running_job-0", "running_job-1", "running_job-2", "running_job-3"],
            pipelined={"pending_job-0": "node0"},
        ),
    ),
]

# Built with loops in KAI; restated here from their facts.
GENERATED = [
    row(
        "flaky scenario",
        "§5.2 node by node: the preemptor's pods are pinned to node1 and node3, so their "
        "victims job-1-0 and job-3-0 go and nobody else moves (KAI also evicts job-2-0 to move "
        "job-1-0 onto node2, a restart for nothing; its test checks only the preemptor)",
        Disruption(
            "kai-gang-preemptor-pinned-to-scattered-nodes",
            [
                department(),
                leaf("queue", gpu_weight=1),
                *[node(f"node{i}", gpus=1, labels={"name": f"node{i}"}) for i in range(4)],
                # job-i-0 runs on node i and is i minutes old (job-0-0 is the newest)
                *[
                    gjob(
                        f"job-{i}-0",
                        "queue",
                        gpus=1,
                        states=["Running"],
                        nodes=[f"node{i}"],
                        age=60 * i,
                    )
                    for i in range(4)
                ],
                pod_group("preemptor", "queue", min_member=2, priority_class="build-preemptible"),
                *[
                    pod(
                        f"preemptor-{k}",
                        "preemptor",
                        gpus=1,
                        cpu=None,
                        memory=None,
                        node_selector={"name": f"node{i}"},
                    )
                    for k, i in enumerate((1, 3))
                ],
            ],
            ("preempt",),
            evicted=["job-1-0-0", "job-3-0-0"],
            pipelined={"preemptor-0": "node1", "preemptor-1": "node3"},
        ),
    ),
    row(
        "issue-1591 reproducer: 11-pod gang of 4-GPU pods, fully-packed 11-node \u00d7 4-GPU "
        "cluster, 1-GPU victims",
        "§5.2 node by node: a gang needing every node whole evicts all 44 one-GPU victims",
        Disruption(
            "kai-gang-preemptor-drains-every-node",
            [
                department(),
                leaf("queue0", gpu_quota=44, gpu_weight=1),
                *[node(f"node{i}", gpus=4) for i in range(11)],
                *[
                    gjob(
                        f"victim-n{i}-g{j}",
                        "queue0",
                        gpus=1,
                        states=["Running"],
                        nodes=[f"node{i}"],
                    )
                    for i in range(11)
                    for j in range(4)
                ],
                gjob("gang-preemptor", "queue0", 11, gpus=4, priority_class="build"),
            ],
            ("preempt",),
            evicted=[f"victim-n{i}-g{j}-0" for i in range(11) for j in range(4)],
            # pods in task order (oldest first) take nodes in name order (node10 before node2)
            pipelined=dict(
                zip(
                    [f"gang-preemptor-{i}" for i in range(11)],
                    sorted(f"node{i}" for i in range(11)),
                    strict=True,
                )
            ),
        ),
    ),
]


GPU_MEMORY = [
    row(
        "build preempts train based on gpu memory",
        "§6 a gpu-memory build job (55 of 100 MiB) preempts the 60 MiB train job on the one device",
        Disruption(
            "kai-build-preempts-train-based-on-gpu-memory",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1),
                pod_group("running_train", "queue0", min_member=1),
                pod(
                    "running_train-0",
                    "running_train",
                    **shared_gpu(memory=60, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_build", "queue0", priority_class="build", min_member=1),
                pod("pending_build-0", "pending_build", **shared_gpu(memory=55)),
            ],
            ("preempt",),
            evicted=["running_train-0"],
            pipelined={"pending_build-0": "node0"},
        ),
    ),
    row(
        "minimal victim preemption by priority",
        "§5.2 victim order: only the lower-priority (49) 50 MiB job goes; 30 + 55 fit",
        Disruption(
            "kai-minimal-victim-preemption-by-priority",
            [
                priority_class("p49", 49),
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1),
                pod_group("running_train_a", "queue0", min_member=1),
                pod(
                    "running_train_a-0",
                    "running_train_a",
                    **shared_gpu(memory=30, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_train_b", "queue0", priority_class="p49", min_member=1),
                pod(
                    "running_train_b-0",
                    "running_train_b",
                    **shared_gpu(memory=50, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_build", "queue0", priority_class="build", min_member=1),
                pod("pending_build-0", "pending_build", **shared_gpu(memory=55)),
            ],
            ("preempt",),
            evicted=["running_train_b-0"],
            pipelined={"pending_build-0": "node0"},
        ),
    ),
    row(
        "fractional build preempts whole gpu train",
        "§6 a 50 MiB request preempts a job holding the whole device",
        Disruption(
            "kai-fractional-build-preempts-whole-gpu-train",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1),
                pod_group("running_whole_train", "queue0", min_member=1),
                pod(
                    "running_whole_train-0",
                    "running_whole_train",
                    **shared_gpu(memory=100, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_build", "queue0", priority_class="build", min_member=1),
                pod("pending_build-0", "pending_build", **shared_gpu(memory=50)),
            ],
            ("preempt",),
            evicted=["running_whole_train-0"],
            pipelined={"pending_build-0": "node0"},
        ),
    ),
    row(
        "multi task build preempts across gpus",
        "§5.2 two 80 MiB pods need both devices: both victims go",
        Disruption(
            "kai-multi-task-build-preempts-across-gpus",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                gpu_node("node0", 2),
                pod_group("running_train_gpu0", "queue0", min_member=1),
                pod(
                    "running_train_gpu0-0",
                    "running_train_gpu0",
                    **shared_gpu(memory=70, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_train_gpu1", "queue0", min_member=1),
                pod(
                    "running_train_gpu1-0",
                    "running_train_gpu1",
                    **shared_gpu(memory=80, group="1"),
                    state="Running",
                    node="node0",
                ),
                pod_group(
                    "pending_build_two_tasks", "queue0", priority_class="build", min_member=2
                ),
                pod(
                    "pending_build_two_tasks-0", "pending_build_two_tasks", **shared_gpu(memory=80)
                ),
                pod(
                    "pending_build_two_tasks-1", "pending_build_two_tasks", **shared_gpu(memory=80)
                ),
            ],
            ("preempt",),
            evicted=["running_train_gpu0-0", "running_train_gpu1-0"],
            pipelined={"pending_build_two_tasks-0": "node0", "pending_build_two_tasks-1": "node0"},
        ),
    ),
    row(
        "no preemption on same priority",
        "§5.2 preempt needs strictly lower priority: equal train jobs stay",
        Disruption(
            "kai-no-preemption-on-same-priority",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                gpu_node("node0", 1),
                pod_group("running_train", "queue0", min_member=1),
                pod(
                    "running_train-0",
                    "running_train",
                    **shared_gpu(memory=60, group="0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_train", "queue0", min_member=1),
                pod("pending_train-0", "pending_train", **shared_gpu(memory=50)),
            ],
            ("preempt",),
            pending=["pending_train"],
        ),
    ),
]


MIG = [
    row(
        "Build preempts train",
        "§5.2 preempt: a build job takes the slice of a train job",
        Disruption(
            "kai-build-preempts-train",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "1"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("preempt",),
            evicted=["running_job-0-0"],
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Inference preempts train",
        "§5.2 preempt: an inference job takes the slice of a train job",
        Disruption(
            "kai-inference-preempts-train",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "1"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue0", priority_class="inference", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("preempt",),
            evicted=["running_job-0-0"],
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Several jobs with different priorities preempt one",
        "§5.2 only the preemptible lower-priority slice holder goes",
        Disruption(
            "kai-several-jobs-with-different-priorities-preempt-one",
            [
                department(),
                leaf("queue0", gpu_quota=3),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "3"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job-1", "queue0", min_member=1),
                pod(
                    "running_job-1-0",
                    "running_job-1",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job-2", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-2-0",
                    "running_job-2",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("preempt",),
            evicted=["running_job-1-0"],
            pipelined={"pending_job-0-0": "node0"},
        ),
    ),
    row(
        "Lower priority job should not preempt",
        "§5.2 preempt needs strictly higher priority",
        Disruption(
            "kai-lower-priority-job-should-not-preempt",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "1"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", priority_class="build", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue0", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("preempt",),
            pending=["pending_job-0"],
        ),
    ),
    row(
        "Train job runs in a different queue - should not preempt",
        "§5.2 preempt stays in the leaf queue",
        Disruption(
            "kai-train-job-runs-in-a-different-queue-should-not-preempt",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                leaf("queue1", gpu_quota=1),
                node("node0", extended={"nvidia.com/mig-1g.10gb": "1"}, labels=mig_labels("mixed")),
                pod_group("running_job-0", "queue0", min_member=1),
                pod(
                    "running_job-0-0",
                    "running_job-0",
                    extended={"nvidia.com/mig-1g.10gb": "1"},
                    state="Running",
                    node="node0",
                ),
                pod_group("pending_job-0", "queue1", priority_class="build", min_member=1),
                pod("pending_job-0-0", "pending_job-0", extended={"nvidia.com/mig-1g.10gb": "1"}),
            ],
            ("preempt",),
            pending=["pending_job-0"],
        ),
    ),
]


@pytest.mark.parametrize(
    "case", PREEMPT + GANG + ELASTIC + SUBGROUPS + GENERATED + GPU_MEMORY + MIG
)
def test_kai(case: Disruption) -> None:
    check(case)
