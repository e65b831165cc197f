"""KAI v0.17's victim rules, each case worked out by hand from the rule written beside it.

Why: the shared solver (docs/semantics.md §5.2) must take victims as KAI's
victim queue does, not as an approximation of it. The rules checked here:

- V1 *the rest of a job queues again*: after a chunk, what a victim job still
  runs is ranked again in its leaf under the job order it now gives; so an
  elastic job brought down to its minimum waits behind the other jobs' surplus
  pods (KAI's accumulated scenario builder pushes the rest back into the queue);
- V2 *which surplus pod*: from the pod set KAI's subgroup order puts last: an
  optional pod set (minimum 0) first, else the highest ratio of running pods to
  minimum, last in task order within it;
- V3 *queue by queue*: consolidation ranks the victims' leaf queues as reclaim
  does (most over-served first), not one flat job order over all queues;
- V4 *whole nodes*: a gang that needs several nodes emptied, every pod on them,
  still finds its victims;
- V5 *signatures*: a job with the same node constraints as one that failed in
  the action is skipped only when it needs, task for task, at least what the
  failed one needed (KAI skips unless the first differing task, sorted, is
  smaller; podmuster keeps trying a job that KAI's rule would skip although it
  could start, see docs/semantics.md §5.2);
- V6 *a victim that still fits where it runs stays*: podmuster re-places a
  victim on its own node first, and on any node else (KAI re-places it on the
  best-scored node, which may restart it elsewhere for nothing, and for a GPU
  preemptor only on nodes with free GPUs or victims; docs/semantics.md §5.2);
- V7 *the preemptor goes onto the freed node*: when the gang fits whole on the
  nodes its victims ran on, it is placed there, and the free room elsewhere
  stays for a victim that must move.

Every job is 1 GPU per pod unless stated; ``train`` is preemptible and lower
than ``build``; jobs listed later are newer.
"""

from __future__ import annotations

import pytest
from disruption_kit import Disruption, check, running

from tests.kits.worlds import Item, Obj, job, node, pod, pod_group, queue

P = ("preempt",)
R = ("reclaim",)
C = ("consolidation",)


def _two_elastic(pending_gpus: int) -> list[Item]:
    """n0 (6 GPUs) runs e2 (older) and e1 (newer), each 3 pods with minimum 1."""
    return [
        node("n0", gpus=6),
        queue("q", gpu_quota=6),
        running("e2", "q", "n0", 3, min_member=1),
        running("e1", "q", "n0", 3, min_member=1),
        job("b", "q", gpus=pending_gpus, priority_class="build"),
    ]


V1 = [
    # Victim order e1 (newer, above minimum): e1-2, e1-1; e1 is then at its minimum, so
    # e2 (above minimum) comes before it: e2-2, e2-1. Four GPUs free: both keep one pod.
    # (Taking e1 whole first, as one job after another would, kills e1 for nothing.)
    Disruption(
        "v1-surplus-of-every-job-before-a-core",
        _two_elastic(4),
        P,
        evicted=["e1-1", "e1-2", "e2-1", "e2-2"],
        pipelined={"b-0": "n0"},
    ),
    # Five GPUs: after the four surplus pods the newer core (e1-0) is the next chunk.
    Disruption(
        "v1-then-the-newer-core",
        _two_elastic(5),
        P,
        evicted=["e1-0", "e1-1", "e1-2", "e2-1", "e2-2"],
        pipelined={"b-0": "n0"},
    ),
    # Reclaim, the same rule across the rest of a job: qb's e1 and e2 give their surplus
    # (e1-2, e1-1, e2-2, e2-1) before either core.
    Disruption(
        "v1-reclaim-surplus-before-cores",
        [
            node("n0", gpus=6),
            queue("qa", gpu_quota=4),
            queue("qb", gpu_quota=2),
            running("e2", "qb", "n0", 3, min_member=1),
            running("e1", "qb", "n0", 3, min_member=1),
            job("a", "qa", gpus=4),
        ],
        R,
        evicted=["e1-1", "e1-2", "e2-1", "e2-2"],
        pipelined={"a-0": "n0"},
    ),
]


V1 += [
    # e (3 pods, minimum 1) runs e-0, e-1 on n0 (3 GPUs, 1 free) and e-2 on n1 (2 GPUs, 1
    # free); b needs 2 GPUs in one pod. The surplus pod last in task order, e-2, goes and
    # b is pipelined onto exactly the node it freed; e-2 itself is placed again on n0's
    # free GPU (evicted, and pipelined there).
    Disruption(
        "v1-preemptor-onto-the-freed-node",
        [
            node("n0", gpus=3),
            node("n1", gpus=2),
            queue("q", gpu_quota=5),
            running("e", "q", ["n0", "n0", "n1"], min_member=1),
            job("b", "q", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["e-2"],
        pipelined={"b-0": "n1", "e-2": "n0"},
    ),
]


V2 = [
    # h runs 2 of minimum 1 (ratio 2), w 5 of minimum 3 (ratio 5/3): h gives first, though
    # w has more pods above its minimum (2 against 1).
    Disruption(
        "v2-highest-ratio-gives-first",
        [
            node("n0", gpus=7),
            queue("q", gpu_quota=7),
            pod_group("e", "q", min_member=None, sub_groups=[("h", 1), ("w", 3)]),
            *pod("e-h0", "e", gpus=1, state="Running", node="n0", sub_group="h"),
            *pod("e-h1", "e", gpus=1, state="Running", node="n0", sub_group="h"),
            *[
                item
                for i in range(5)
                for item in pod(f"e-w{i}", "e", gpus=1, state="Running", node="n0", sub_group="w")
            ],
            job("b", "q", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["e-h1"],
        pipelined={"b-0": "n0"},
    ),
    # An optional pod set (minimum 0) gives before any required one: o (1 of 0) before
    # w (3 of 1, ratio 3).
    Disruption(
        "v2-optional-pod-set-first",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=4),
            pod_group("e", "q", min_member=None, sub_groups=[("o", 0), ("w", 1)]),
            *pod("e-o0", "e", gpus=1, state="Running", node="n0", sub_group="o"),
            *pod("e-w0", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            *pod("e-w1", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            *pod("e-w2", "e", gpus=1, state="Running", node="n0", sub_group="w"),
            job("b", "q", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["e-o0"],
        pipelined={"b-0": "n0"},
    ),
]


def _one_of(name: str, sub_groups: list[tuple[str, int]]) -> Obj:
    """A train PodGroup in q that needs only one of its ``sub_groups`` (minSubGroup 1)."""
    group = pod_group(name, "q", min_member=None, sub_groups=sub_groups, priority_class="train")
    group["spec"]["minSubGroup"] = 1
    return group


V2 += [
    # v needs one of a (3 pods, minimum 3) and b (1 pod, minimum 1); no pod can go alone.
    # podmuster drops the smallest optional member: b, and h (1 GPU) starts. (KAI drops the
    # member its subgroup order puts last: both at ratio 1, the one declared first, a:
    # three pods gone where one would do; docs/semantics.md §5.2.)
    Disruption(
        "v2-the-smallest-optional-member-goes",
        [
            node("n0", gpus=4),
            queue("q", gpu_quota=8),
            _one_of("v", [("a", 3), ("b", 1)]),
            *[
                item
                for sub, count in (("a", 3), ("b", 1))
                for i in range(count)
                for item in pod(
                    f"{sub}-{i}", "v", gpus=1, state="Running", node="n0", sub_group=sub
                )
            ],
            job("h", "q", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["b-0"],
        pipelined={"h-0": "n0"},
    ),
]


V3 = [
    # g (qc, one 2-GPU pod) fits nowhere, though 2 GPUs are free (n0 1, n1 1): consolidation.
    # qb (quota 0) holds 2 GPUs, qa (quota 2) holds 2: qb is the over-served queue, so its
    # jobs are the first victims, newest first: b2 (n2 would offer only 1), then b1: n1
    # offers 2; b1 moves to n0's free GPU and g takes n1. The flat newest-first order of
    # all jobs would have moved a1 (the newest job, of qa, within its quota) instead.
    Disruption(
        "v3-consolidation-moves-the-over-served-queue-first",
        [
            node("n0", gpus=2),
            node("n1", gpus=2),
            node("n2", gpus=2),
            queue("qa", gpu_quota=2),
            queue("qb"),
            queue("qc", gpu_quota=2),
            running("a2", "qa", "n2"),
            running("b1", "qb", "n1"),
            running("b2", "qb", "n2"),
            running("a1", "qa", "n0"),
            job("g", "qc", gpus=2),
        ],
        C,
        evicted=["b1-0"],
        pipelined={"b1-0": "n0", "g-0": "n1"},
    ),
]


V3 += [
    # Departments: D (quota 2) has leaves a and b (quota 1 each), each running 2 GPUs; E
    # (quota 2) has leaf e running 3; f (F, quota 4) needs 4 and 1 is free. Rule 5 counts
    # what was taken from a queue's whole subtree: D 4-1 > E 3-1: D, its newer leaf b: b2.
    # D 4-1-1 = E 3-1, rule 6 (4/2 > 3/2): D, now leaf a (2-1 > 2-1-1): a2. D 4-2-1 < E 3-1:
    # E: e3. Both departments end at their quota. (KAI subtracts only the chosen leaf's
    # victims from a department, so after b2 and a2 it sees D at 4-1-1 = E's 2 and takes b1
    # third: D down to 1 below its quota, E left at 3 above it.)
    Disruption(
        "v3-reclaim-counts-a-departments-whole-subtree",
        [
            node("n0", gpus=8),
            queue("D", gpu_quota=2),
            queue("a", "D", gpu_quota=1),
            queue("b", "D", gpu_quota=1),
            queue("E", gpu_quota=2),
            queue("e", "E", gpu_quota=2),
            queue("F", gpu_quota=4),
            queue("f", "F", gpu_quota=4),
            running("a1", "a", "n0"),
            running("a2", "a", "n0"),
            running("b1", "b", "n0"),
            running("b2", "b", "n0"),
            running("e1", "e", "n0"),
            running("e2", "e", "n0"),
            running("e3", "e", "n0"),
            job("g", "f", gpus=4),
        ],
        R,
        evicted=["a2-0", "b2-0", "e3-0"],
        pipelined={"g-0": "n0"},
    ),
]


def _full_nodes(count: int) -> list[Item]:
    """``count`` 2-GPU nodes n0.., each running two 1-GPU train jobs a<i> and b<i>."""
    out: list[Item] = [node(f"n{i}", gpus=2) for i in range(count)]
    out.append(queue("q", gpu_quota=2 * count))
    for i in range(count):
        out += [running(f"a{i}", "q", f"n{i}"), running(f"b{i}", "q", f"n{i}")]
    return out


V4 = [
    # Three 2-GPU tasks need three whole nodes. Victim order b3, b2, b1, b0, a3, ...: the
    # recorded victims first cover three whole nodes at a3 (n3 offers 2, then a2 gives n2
    # 2, a1 n1 2); the fewest nodes: n3, n2, n1 with every pod on them.
    Disruption(
        "v4-gang-drains-three-whole-nodes",
        [*_full_nodes(4), job("g", "q", 3, gpus=2, priority_class="build")],
        P,
        evicted=["a1-0", "a2-0", "a3-0", "b1-0", "b2-0", "b3-0"],
        pipelined={"g-0": "n1", "g-1": "n2", "g-2": "n3"},
    ),
    # Victims that each span two nodes: x (n0, n1), y (n1, n2), z (n0, n2). Emptying the
    # three nodes takes all three jobs whole.
    Disruption(
        "v4-victims-spanning-nodes-drain-whole-nodes",
        [
            node("n0", gpus=2),
            node("n1", gpus=2),
            node("n2", gpus=2),
            queue("q", gpu_quota=6),
            running("x", "q", ["n0", "n1"]),
            running("y", "q", ["n1", "n2"]),
            running("z", "q", ["n0", "n2"]),
            job("g", "q", 3, gpus=2, priority_class="build"),
        ],
        P,
        evicted=["x-0", "x-1", "y-0", "y-1", "z-0", "z-1"],
        pipelined={"g-0": "n0", "g-1": "n1", "g-2": "n2"},
    ),
    # The same with CPU only: 2 pods of 4 CPUs on 4-CPU nodes each running two 2-CPU jobs.
    # A gang without GPUs is tried with every recorded victim: b2, b1, b0, a2 empty only
    # n2; a1 empties n1 too. g goes to n1 and n2; b0 still fits on n0 and stays (it is
    # kept home before b2 may look for another node, V6).
    Disruption(
        "v4-cpu-gang-drains-whole-nodes",
        [
            node("n0", cpu="4"),
            node("n1", cpu="4"),
            node("n2", cpu="4"),
            queue("q", gpu_quota=1),
            *[
                running(f"{name}{i}", "q", f"n{i}", gpus=0, cpu="2")
                for name in ("a", "b")
                for i in range(3)
            ],
            job("g", "q", 2, cpu="4", priority_class="build"),
        ],
        P,
        evicted=["a1-0", "a2-0", "b1-0", "b2-0"],
        pipelined={"g-0": "n1", "g-1": "n2"},
    ),
]


def _a_fails() -> list[Item]:
    """n0 and n1 (2 GPUs each) run train jobs t0, t1 (2 GPUs each); build job a asks
    1 + 4 GPUs: no node has 4, so its preempt search fails."""
    return [
        node("n0", gpus=2),
        node("n1", gpus=2),
        queue("q", gpu_quota=20),
        running("t0", "q", "n0", gpus=2),
        running("t1", "q", "n1", gpus=2),
        pod_group("a", "q", min_member=2, priority_class="build"),
        *pod("a-0", "a", gpus=1),
        *pod("a-1", "a", gpus=4),
    ]


V5 = [
    # a (older) needs 1 + 4 GPUs: no node has 4, so its search fails. b has a's signature
    # (same queue, priority, constraints) and needs 2 + 2. KAI sorts the requests ([1, 4]
    # and [2, 2]) and compares the first that differs: 2 > 1, "not easier", b is skipped
    # every cycle. b does not need task for task what a needed (nothing of b asks 4), so
    # podmuster tries it: t1 and t0 go, b starts on both nodes.
    Disruption(
        "v5-a-job-kai-would-skip-starts",
        [
            *_a_fails(),
            job("b", "q", 2, gpus=2, priority_class="build"),
        ],
        P,
        evicted=["t0-0", "t1-0"],
        pipelined={"b-0": "n0", "b-1": "n1"},
        pending=["a"],
        reasons={"a": ["preempt: no victim would make room"]},
    ),
    # c needs 2 x 4 GPUs after a (1 + 4) failed: it covers a task for task (4 >= 4, 4 >= 1),
    # so it is skipped with a's reason, as KAI skips it; d (1 GPU) is easier and preempts.
    Disruption(
        "v5-a-harder-job-is-skipped-an-easier-one-tried",
        [
            *_a_fails(),
            job("c", "q", 2, gpus=4, priority_class="build"),
            job("d", "q", gpus=1, priority_class="build"),
        ],
        P,
        evicted=["t1-0"],
        pipelined={"d-0": "n1"},
        pending=["a", "c"],
        reasons={"c": ["preempt: no victim would make room"]},
    ),
]


V6 = [
    # Victim order v2 (newer, 1 GPU), v1 (2 GPUs), both on n0 beside x (build, 1 GPU);
    # n1 has 1 free. After v1 the node n0 offers 3 >= 2: both are evicted in simulation,
    # p goes to n0 (the only node with 2 free), leaving 1: v2 still fits at home and
    # stays; v1 fits nowhere and goes.
    Disruption(
        "v6-a-victim-that-fits-at-home-stays",
        [
            node("n0", gpus=4),
            node("n1", gpus=8),
            queue("q", gpu_quota=12),
            running("x", "q", "n0", priority_class="build"),
            running("y", "q", "n1", 7, priority_class="build"),
            running("v1", "q", "n0", gpus=2),
            running("v2", "q", "n0"),
            job("p", "q", gpus=2, priority_class="build"),
        ],
        P,
        evicted=["v1-0"],
        pipelined={"p-0": "n0"},
    ),
]


V6 += [
    # A victim may land on any node: g (2 GPUs, 2 CPUs) needs n0, whose CPUs c (a CPU-only
    # job, 3 CPUs) holds; consolidation moves c to n1, a node without GPUs, and g starts.
    # (KAI simulates a GPU preemptor only on nodes with free or releasing GPUs plus the
    # victims' nodes, so c could only land on n0 again and nothing is consolidated.)
    Disruption(
        "v6-a-victim-may-move-to-a-node-without-gpus",
        [
            node("n0", gpus=2, cpu="4"),
            node("n1", cpu="4"),
            queue("q", gpu_quota=2),
            running("c", "q", "n0", gpus=0, cpu="3"),
            job("g", "q", gpus=2, cpu="2"),
        ],
        C,
        evicted=["c-0"],
        pipelined={"c-0": "n1", "g-0": "n0"},
    ),
]


V7 = [
    # n0 runs x (build, not a victim) with 2 GPUs free; n1 runs lo (train, 2 GPUs) with 2
    # free. b (build) needs 1 + 3 GPUs: lo goes, b takes n1 whole, and lo moves to n0's
    # free GPUs. (Binpacking b's 1-GPU pod onto n0 first would leave lo nowhere to go.)
    Disruption(
        "v7-preemptor-onto-the-freed-node-victim-moves",
        [
            node("n0", gpus=4),
            node("n1", gpus=4),
            queue("q", gpu_quota=8),
            running("x", "q", "n0", gpus=2, priority_class="build"),
            running("lo", "q", "n1", gpus=2),
            pod_group("b", "q", min_member=2, priority_class="build"),
            pod("b-0", "b", gpus=1),
            pod("b-1", "b", gpus=3),
        ],
        P,
        evicted=["lo-0"],
        pipelined={"b-0": "n1", "b-1": "n1", "lo-0": "n0"},
    ),
]


@pytest.mark.parametrize("case", V1 + V2 + V3 + V4 + V5 + V6 + V7, ids=str)
def test_kai_victim_rules(case: Disruption) -> None:
    check(case)
