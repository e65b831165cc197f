"""KAI v0.17 consolidation tests (``pkg/scheduler/actions/consolidation``) as scenario rows.

Sources: ``consolidation_test.go`` and ``consolidation_subgroups_test.go``. Each row names
its KAI test and the rule of docs/semantics.md (§5.2 consolidation and the shared solver)
that gives the expectation. KAI's "Pipelined" for a running job is a move here: the pod is
evicted and pipelined onto its new node.
"""

from __future__ import annotations

import pytest
from kai_rows import Disruption, check, department, gjob, leaf, row, shared_gpu, subgroup_job

from tests.kits.worlds import node, pod, pod_group, topology, topology_constraint
from tests.scheduler.scenarios.disruption_kit import running

RACK = "k8s.io/rack"

CONSOLIDATION = [
    row(
        "2 jobs of 1 task running on different GPUs, two pending jobs, only first can be consolidated",
        "§5.2 consolidation: one 2-GPU job moves beside the other so the 3-GPU job fits; the 2-GPU job then finds 1 GPU",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-two-pending-jobs-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=2),
                gjob("pending_job0", "queue0", 1, gpus=3),
                gjob("pending_job1", "queue0", 1, gpus=2),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node0", "pending_job0-0": "node1"},
            pending=["pending_job1"],
        ),
    ),
    row(
        "2 jobs of 2 & 1 GPUs running, two pending jobs, only second can be consolidated",
        "§5.2 the 2-pod job cannot fit even after moving (free GPUs 3 < 4); the 3-GPU job can",
        Disruption(
            "kai-2-jobs-of-2-1-gpus-running-two-pending-jobs-only-second-can-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=1),
                running("running_job2", "queue0", "node1", gpus=2),
                gjob("pending_job0", "queue0", 2, gpus=2),
                gjob("pending_job1", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job2-0"],
            pipelined={"running_job2-0": "node0", "pending_job1-0": "node1"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "2 jobs of 1 task running on different GPUs, 2 pending jobs, only second can be consolidated",
        "§5.2 free GPUs (4) are fewer than the 5-GPU job asks: skipped; the 3-GPU job fits after one move",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-2-pending-jobs-on",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=2),
                gjob("pending_job0", "queue0", 1, gpus=5),
                gjob("pending_job1", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node0", "pending_job1-0": "node1"},
            pending=["pending_job0"],
        ),
    ),
    row(
        "2 jobs of 1 task running on different GPUs, 2 pending jobs with multiple tasks, one job can partially be allocated",
        "§5.2 an elastic pending job gets its minimum (one 3-GPU pod) after one move",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-2-pending-jobs-wi",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=2),
                running("running_job2", "queue0", "node1", gpus=1),
                gjob("pending_job0", "queue0", 1, gpus=4),
                gjob("pending_job1", "queue0", 2, min_member=1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node0", "pending_job1-0": "node1"},
        ),
    ),
    row(
        "2 jobs of 1 task running on different GPUs, two pending jobs - can't Consolidate",
        "§5.2 3+3 on two 4-GPU nodes cannot be packed: nothing moves",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-two-pending-jobs-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=3),
                running("running_job1", "queue0", "node1", gpus=3),
                gjob("pending_job0", "queue0", 1, gpus=2),
                gjob("pending_job1", "queue0", 1, gpus=2),
            ],
            ("consolidation",),
            pending=["pending_job0", "pending_job1"],
        ),
    ),
    row(
        "2 jobs of 1 task running on different GPUs, 1 job of 3 gpus is pending - can't Consolidate",
        "§5.2 a 3-GPU job cannot fit whatever moves: nothing moves",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-1-job-of-3-gpus-i",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=3),
                running("running_job1", "queue0", "node1", gpus=3),
                gjob("pending_job0", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "3 jobs are running on different GPUs, 1 job pending - Consolidate and verify not all preemptors are evicted as well",
        "§5.2 only the job that must move moves; the others stay",
        Disruption(
            "kai-3-jobs-are-running-on-different-gpus-1-job-pending-consolida",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=3),
                running("running_job1", "queue0", "node1", gpus=1),
                running("running_job2", "queue0", "node1", gpus=2),
                gjob("pending_job0", "queue0", 1, gpus=2),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node0", "pending_job0-0": "node1"},
        ),
    ),
    row(
        "2 build jobs are running on different GPUs - never consoliate",
        "§5.2 consolidation is for preemptible jobs: a build job is not tried",
        Disruption(
            "kai-2-build-jobs-are-running-on-different-gpus-never-consoliate",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                node("node1", gpus=2),
                running("running_job0", "queue0", "node0", priority_class="build", gpus=1),
                running("running_job1", "queue0", "node1", priority_class="build", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("consolidation",),
        ),
    ),
    row(
        "2 jobs running on different nodes - verify build job allocation isn't handled by consolidation",
        "§5.2 consolidation is for preemptible jobs: a build job is not tried",
        Disruption(
            "kai-2-jobs-running-on-different-nodes-verify-build-job-allocatio",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue0", "node1", gpus=1),
                gjob("pending_job0", "queue0", 1, priority_class="build", gpus=2),
            ],
            ("consolidation",),
        ),
    ),
    row(
        "2 queues with different share, pending job will attempt to reallocate before the reallocated jobs, 2 running jobs from queue1, 1 pending job from queue0 - don't consolidate",
        "§5.2 every victim must land again: moving queue1's jobs frees no whole room, nothing moves",
        Disruption(
            "kai-2-queues-with-different-share-pending-job-will-attempt-to-re",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=2),
                node("node1", gpus=2),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue1", "node0", gpus=1),
                running("running_job2", "queue1", "node1", gpus=2),
                gjob("pending_job0", "queue0", 1, gpus=1),
            ],
            ("consolidation",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "2 queues with different share, pending job will attempt to reallocate before the reallocated jobs - 1 running job from queue0, 2 running jobs from queue1, 1 pending job from queue0 - consolidate",
        "§5.2 victims of any queue: queue1's job moves so queue0's 2-GPU job fits",
        Disruption(
            "kai-2-queues-with-different-share-pending-job-will-attempt-to-re",
            [
                department(),
                leaf("queue0", gpu_quota=1),
                leaf("queue1", gpu_quota=1),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue1", "node0", gpus=1),
                running("running_job2", "queue1", "node1", gpus=3),
                gjob("pending_job0", "queue0", 1, gpus=2),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node1", "pending_job0-0": "node0"},
        ),
    ),
    row(
        "2 jobs of 1 task running on different GPUs, 1 task is preemptible interactive job, 1 job of 2 gpus is pending - consolidate without killing the preemptible interactive",
        "§5.2 victim order: the train job moves, the build-preemptible one stays",
        Disruption(
            "kai-2-jobs-of-1-task-running-on-different-gpus-1-task-is-preempt",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running(
                    "running_job1", "queue0", "node1", priority_class="build-preemptible", gpus=2
                ),
                gjob("pending_job0", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job0-0"],
            pipelined={"running_job0-0": "node1", "pending_job0-0": "node0"},
        ),
    ),
    row(
        "2 jobs of 0.5 task running on different GPUs, 1 job of 1 gpus is pending - Consolidate and run the pending job",
        "§5.2 consolidation packs two half GPUs onto one device so a whole GPU is free",
        Disruption(
            "kai-2-jobs-of-0-5-task-running-on-different-gpus-1-job-of-1-gpus",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=2),
                pod_group("running_job0", "queue0", min_member=1),
                pod(
                    "running_job0-0",
                    "running_job0",
                    **shared_gpu(0.5, "0"),
                    state="Running",
                    node="node0",
                ),
                pod_group("running_job1", "queue0", min_member=1),
                pod(
                    "running_job1-0",
                    "running_job1",
                    **shared_gpu(0.5, "1"),
                    state="Running",
                    node="node0",
                ),
                gjob("pending_job0", "queue0", 1, gpus=1),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={"running_job1-0": "node0", "pending_job0-0": "node0"},
        ),
        gap="consolidation skips a job when whole free GPUs are fewer than it asks, so free halves of shared devices never count (reported as a bug)",
    ),
    row(
        "1 elastic job running on different GPUs, 1 job of 3 gpus is pending - Consolidate and run the pending job",
        "§5.2 an elastic victim's pod on node1 moves to node0; the 3-GPU job takes node1",
        Disruption(
            "kai-1-elastic-job-running-on-different-gpus-1-job-of-3-gpus-is-p",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=3),
                running("running_job0", "queue0", ["node0", "node1"], min_member=1, gpus=2),
                gjob("pending_job0", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job0-1"],
            pipelined={"running_job0-1": "node0", "pending_job0-0": "node1"},
        ),
    ),
    row(
        "1 elastic job running on different GPUs, 1 job of 3 gpus is pending - do not consolidate (not all pods can stay alive)",
        "§5.2 every victim must land again: not all of the elastic job's pods can",
        Disruption(
            "kai-1-elastic-job-running-on-different-gpus-1-job-of-3-gpus-is-p",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=3),
                running(
                    "running_job0", "queue0", ["node0", "node0", "node1"], min_member=1, gpus=2
                ),
                gjob("pending_job0", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
        ),
    ),
    row(
        "2 elastic jobs running on different GPUs, 1 job of 3 gpus is pending -  consolidate ",
        "§5.2 extra pods of two elastic jobs move; the 3-GPU pod of the second job is not pending work here",
        Disruption(
            "kai-2-elastic-jobs-running-on-different-gpus-1-job-of-3-gpus-is-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=6),
                running(
                    "running_job0",
                    "queue0",
                    ["node0", "node0", "node0", "node1"],
                    min_member=1,
                    gpus=1,
                ),
                gjob(
                    "running_job1",
                    "queue0",
                    2,
                    min_member=1,
                    gpus=3,
                    states=["Running", "Pending"],
                    nodes=["node1", None],
                ),
            ],
            ("consolidation",),
            evicted=["running_job0-3"],
            pipelined={"running_job0-3": "node0", "running_job1-1": "node1"},
        ),
    ),
    row(
        "jump over full nodes pods",
        "§5.2 victims on full nodes are skipped; the 2-GPU job on node2 moves to node1",
        Disruption(
            "kai-jump-over-full-nodes-pods",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                node("node2", gpus=4),
                node("node3", gpus=4),
                running("running_job0", "queue0", "node0", gpus=4),
                running("running_job1", "queue0", "node1", gpus=2),
                running("running_job2", "queue0", "node2", gpus=2),
                running("running_job3", "queue0", "node3", gpus=4),
                gjob("pending_job0", "queue0", 1, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job2-0"],
            pipelined={"running_job2-0": "node1", "pending_job0-0": "node2"},
        ),
    ),
    row(
        "1 jobs of 2 tasks that cannot sit together on the same node",
        "§5.2 a two-pod job of 3 GPUs per pod needs two emptied nodes: two 1-GPU jobs move to node0",
        Disruption(
            "kai-1-jobs-of-2-tasks-that-cannot-sit-together-on-the-same-node",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                node("node2", gpus=4),
                node("node3", gpus=4),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue0", "node1", gpus=1),
                running("running_job2", "queue0", "node2", gpus=1),
                running("running_job3", "queue0", "node3", gpus=1),
                running("running_job4", "queue0", "node0", gpus=1),
                running("running_job5", "queue0", "node1", gpus=1),
                running("running_job6", "queue0", "node2", gpus=1),
                running("running_job7", "queue0", "node3", gpus=1),
                gjob("pending_job0", "queue0", 2, gpus=3),
            ],
            ("consolidation",),
            evicted=["running_job6-0", "running_job7-0"],
            pipelined={
                "running_job6-0": "node0",
                "running_job7-0": "node0",
                "pending_job0-0": "node2",
                "pending_job0-1": "node3",
            },
        ),
    ),
    row(
        "MPI jobs consolidation",
        "§5.2 pods asking for different GPU counts: the MPI-shaped jobs cannot be packed tighter",
        Disruption(
            "kai-mpi-jobs-consolidation",
            [
                department(),
                leaf("queue0", gpu_quota=6, gpu_limit=6),
                node("node0", gpus=6),
                node("node1", gpus=6),
                pod_group("running_job0", "queue0", min_member=3),
                pod("running_job0-0", "running_job0", state="Running", node="node1"),
                pod("running_job0-1", "running_job0", gpus=1, state="Running", node="node0"),
                pod("running_job0-2", "running_job0", gpus=1, state="Running", node="node0"),
                pod_group("running_job1", "queue0", min_member=3),
                pod("running_job1-0", "running_job1", state="Running", node="node1"),
                pod("running_job1-1", "running_job1", gpus=1, state="Running", node="node0"),
                pod("running_job1-2", "running_job1", gpus=1, state="Running", node="node0"),
                pod_group("running_job2", "queue0", min_member=3),
                pod("running_job2-0", "running_job2", state="Running", node="node1"),
                pod("running_job2-1", "running_job2", gpus=1, state="Running", node="node0"),
                pod("running_job2-2", "running_job2", gpus=1, state="Running", node="node0"),
                pod_group("pending_job", "queue0", min_member=3),
                pod("pending_job-0", "pending_job"),
                pod("pending_job-1", "pending_job", gpus=1),
                pod("pending_job-2", "pending_job", gpus=1),
            ],
            ("consolidation",),
        ),
    ),
    row(
        "Required topology with multiple levels - job pipelined as no available rack can be found unless consolidate",
        "§5.8 a rack-constrained gang: node1's job moves to node0 so both pods fit rack2",
        Disruption(
            "kai-required-topology-with-multiple-levels-job-pipelined-as-no-a",
            [
                department("department-a", gpu_quota=4, gpu_weight=4),
                leaf("queue0", "department-a", gpu_quota=4, gpu_weight=1, gpu_limit=4),
                topology("cluster-topology", RACK),
                node("node0", gpus=2, labels={RACK: "rack1"}),
                node("node1", gpus=2, labels={RACK: "rack2"}),
                running("running_job0", "queue0", "node0", gpus=1),
                running("running_job1", "queue0", "node1", gpus=1),
                gjob(
                    "pending_job0",
                    "queue0",
                    2,
                    gpus=1,
                    topology=topology_constraint("cluster-topology", required=RACK),
                ),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={
                "running_job1-0": "node0",
                "pending_job0-0": "node1",
                "pending_job0-1": "node1",
            },
        ),
    ),
]

SUBGROUPS = [
    row(
        "job with sub groups consolidates a running job",
        "§5.2 subgroups 1 + 3 GPUs: one 2-GPU job moves so node1 holds both",
        Disruption(
            "kai-job-with-sub-groups-consolidates-a-running-job",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=2),
                subgroup_job(
                    "pending_job0", "queue0", {"sub-0": 1, "sub-1": 1}, [("sub-0", 1), ("sub-1", 3)]
                ),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={
                "running_job1-0": "node0",
                "pending_job0-0": "node1",
                "pending_job0-1": "node1",
            },
        ),
        gap="issue 17 item 5: pipelining onto exactly the freed node",
    ),
    row(
        "Job with sub groups consolidates another job up to MinAvailable",
        "§5.1 tasks to allocate: one pod per subgroup minimum (2+2 GPUs) after one move",
        Disruption(
            "kai-job-with-sub-groups-consolidates-another-job-up-to-minavaila",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=3),
                running("running_job1", "queue0", "node1", gpus=1),
                subgroup_job(
                    "pending_job0",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [
                        ("sub-0", 2),
                        ("sub-0", 2),
                        ("sub-0", 2),
                        ("sub-1", 2),
                        ("sub-1", 2),
                        ("sub-1", 2),
                    ],
                ),
            ],
            ("consolidation",),
            evicted=["running_job1-0"],
            pipelined={
                "running_job1-0": "node0",
                "pending_job0-0": "node1",
                "pending_job0-3": "node1",
            },
        ),
    ),
    row(
        "job with sub groups cannot consolidate a running job - cannot satisfy sub group gang",
        "§5.2 two 3-GPU subgroup pods cannot both fit after any move: nothing moves",
        Disruption(
            "kai-job-with-sub-groups-cannot-consolidate-a-running-job-cannot-",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                running("running_job0", "queue0", "node0", gpus=2),
                running("running_job1", "queue0", "node1", gpus=2),
                subgroup_job(
                    "pending_job0", "queue0", {"sub-0": 1, "sub-1": 1}, [("sub-0", 3), ("sub-1", 3)]
                ),
            ],
            ("consolidation",),
            pending=["pending_job0"],
        ),
    ),
    row(
        "job with sub groups consolidated by a pending job - partial eviction",
        "§5.2 a subgroup victim at its requirement moves whole; the 4-GPU job takes node1",
        Disruption(
            "kai-job-with-sub-groups-consolidated-by-a-pending-job-partial-ev",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                subgroup_job(
                    "running_job",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [("sub-0", 1, "node0"), ("sub-1", 3, "node1")],
                ),
                gjob("pending_job", "queue0", 1, gpus=4),
            ],
            ("consolidation",),
            evicted=["running_job-1"],
            pipelined={"running_job-1": "node0", "pending_job-0": "node1"},
        ),
        gap="issue 17 item 5: pipelining onto exactly the freed node",
    ),
    row(
        "job with sub groups consolidated by a pending job - complete eviction",
        "§5.2 a victim with subgroups moves whole onto node0 so the 4-GPU pods take node1 and node2",
        Disruption(
            "kai-job-with-sub-groups-consolidated-by-a-pending-job-complete-e",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                node("node2", gpus=4),
                pod_group("running_job0", "queue0", min_member=1),
                pod("running_job0-0", "running_job0", gpus=2, state="Running", node="node0"),
                subgroup_job(
                    "running_job1",
                    "queue0",
                    {"sub-0": 1, "sub-1": 1},
                    [("sub-0", 1, "node1"), ("sub-1", 1, "node2")],
                ),
                gjob("pending_job", "queue0", 2, gpus=4),
            ],
            ("consolidation",),
            evicted=["running_job1-0", "running_job1-1"],
            pipelined={
                "running_job1-0": "node0",
                "running_job1-1": "node0",
                "pending_job-0": "node1",
                "pending_job-1": "node2",
            },
        ),
    ),
    row(
        "job with sub groups above minAvailable consolidated by a pending job - complete eviction",
        "§5.2 a victim above its minimum moves its pod on node1 to node0",
        Disruption(
            "kai-job-with-sub-groups-above-minavailable-consolidated-by-a-pen",
            [
                department(),
                leaf("queue0", gpu_quota=2),
                node("node0", gpus=4),
                node("node1", gpus=4),
                subgroup_job(
                    "running_job0",
                    "queue0",
                    {"sub-0": 1},
                    [("sub-0", 1, "node0"), ("sub-0", 1, "node1")],
                ),
                gjob("pending_job", "queue0", 1, gpus=4),
            ],
            ("consolidation",),
            evicted=["running_job0-1"],
            pipelined={"running_job0-1": "node0", "pending_job-0": "node1"},
        ),
    ),
]


@pytest.mark.parametrize("case", CONSOLIDATION + SUBGROUPS)
def test_kai(case: Disruption) -> None:
    check(case)
