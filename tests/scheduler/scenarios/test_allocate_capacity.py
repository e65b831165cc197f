"""Queue capacity checks in allocate (docs/semantics.md §2.3, §3, §5.2).

OverLimit and NonPreemptibleOverQuota are checked at every queue on the path to
the root; fair share never caps allocation; missing, orphaned or non-leaf queues
keep the job out.
"""

from __future__ import annotations

import pytest

from tests.kits.worlds import Scenario, check, job, node, queue


def _no_gpu_limit_field(name: str) -> dict[str, object]:
    """A queue whose GPU block has no limit at all (unset = hard cap 0)."""
    body = queue(name)
    del body["spec"]["resources"]["gpu"]["limit"]
    return body


SCENARIOS = [
    # §5.2(a): leaf limit 2 with 2 running; one more GPU would be 3 > 2, so OverLimit.
    Scenario(
        "over-limit-at-leaf",
        [
            queue("q", gpu_limit=2),
            node("n0", gpus=4),
            job("run", "q", 2, gpus=1, states=["Running"] * 2, nodes=["n0"] * 2),
            job("new", "q", gpus=1),
        ],
        pending=["new"],
        reasons={"new": ["OverLimit", "queue q"]},
    ),
    # A quota or limit below -1 (KAI: GPU taken literally, memory clamped) is refused as
    # input (docs/cli.md "Bad input"): see tests/podmuster/test_cli_bad_input.py.
    # §5.2(a): allocated + request == limit is allowed (strictly greater is refused).
    Scenario(
        "limit-reached-exactly",
        [
            queue("q", gpu_limit=2),
            node("n0", gpus=4),
            job("run", "q", gpus=1, states=["Running"], nodes=["n0"]),
            job("new", "q", gpus=1),
        ],
        binds={"new-0": "n0"},
    ),
    # §1.3 allocated set: a Binding pod counts to its queue, so with limit 1 the new job
    # is OverLimit.
    Scenario(
        "binding-pod-counts-to-queue",
        [
            queue("q", gpu_limit=1),
            node("n0", gpus=2),
            job("b", "q", gpus=1, states=["Binding"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        pending=["j"],
        reasons={"j": ["OverLimit"]},
    ),
    # §1.3 allocated set: a Releasing pod no longer counts to its queue: 0 + 1 <= limit 1,
    # and n0's other GPU is idle, so the job binds.
    Scenario(
        "releasing-pod-not-counted-to-queue",
        [
            queue("q", gpu_limit=1),
            node("n0", gpus=2),
            job("r", "q", gpus=1, states=["Releasing"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        binds={"j-0": "n0"},
    ),
    # §5.1/§5.2: the capacity check is on the tasks to allocate, so an elastic job (min 1)
    # grows one pod per pop until the limit (2) refuses the third.
    Scenario(
        "elastic-grows-to-limit",
        [queue("q", gpu_limit=2), node("n0", gpus=4), job("e", "q", 3, gpus=1, min_member=1)],
        binds={"e-0": "n0", "e-1": "n0"},
        reasons={"e": ["OverLimit"]},
    ),
    # §5.2(a) up the path: parent limit 2, sibling leaf holds 1, the 2-GPU job would make
    # the parent 3 > 2.
    Scenario(
        "over-limit-at-parent",
        [
            queue("dept", gpu_limit=2, gpu_quota=-1),
            queue("a", "dept"),
            queue("b", "dept"),
            node("n0", gpus=4),
            job("run", "a", gpus=1, states=["Running"], nodes=["n0"]),
            job("new", "b", gpus=2),
        ],
        pending=["new"],
        reasons={"new": ["OverLimit", "queue dept"]},
    ),
    # §5.2(a) at every level: the grandparent's limit (1) refuses a job that its parent and
    # leaf (unlimited) would allow.
    Scenario(
        "over-limit-at-grandparent",
        [
            queue("top", gpu_limit=1, gpu_quota=-1),
            queue("mid", "top"),
            queue("leaf", "mid"),
            node("n0", gpus=4),
            job("j", "leaf", gpus=2),
        ],
        pending=["j"],
        reasons={"j": ["OverLimit", "queue top"]},
    ),
    # §5.2(a) whole gang: limit 3 and a gang of 4 x 1 GPU; the gang is refused as one.
    Scenario(
        "gang-over-limit",
        [queue("q", gpu_limit=3), node("n0", gpus=4), job("g", "q", 4, gpus=1)],
        pending=["g"],
        reasons={"g": ["OverLimit"]},
    ),
    # §2.3: limit 0 blocks any GPU request, but a CPU-only job asks 0 GPU and is unaffected.
    Scenario(
        "limit-zero-blocks-gpu-not-cpu",
        [
            queue("q", gpu_limit=0),
            node("n0", gpus=2),
            job("gpu-job", "q", gpus=1),
            job("cpu-job", "q", cpu="2"),
        ],
        binds={"cpu-job-0": "n0"},
        pending=["gpu-job"],
        reasons={"gpu-job": ["OverLimit"]},
    ),
    # §2.3: an unset limit is a hard cap of 0 as well.
    Scenario(
        "limit-unset-is-zero",
        [_no_gpu_limit_field("q"), node("n0", gpus=2), job("gpu-job", "q", gpus=1)],
        pending=["gpu-job"],
        reasons={"gpu-job": ["OverLimit"]},
    ),
    # §2.3 memory in MB: limit 3000 MB = 3e9 bytes; 2G running + 1G pending = 3e9 fits.
    Scenario(
        "memory-limit-in-mb-fits",
        [
            queue("q", memory_limit=3000),
            node("n0"),
            job("run", "q", memory="2G", states=["Running"], nodes=["n0"]),
            job("new", "q", memory="1G"),
        ],
        binds={"new-0": "n0"},
    ),
    # §2.3 memory in MB: 2G + 1500M = 3.5e9 > 3000 MB, so OverLimit.
    Scenario(
        "memory-limit-in-mb-exceeded",
        [
            queue("q", memory_limit=3000),
            node("n0"),
            job("run", "q", memory="2G", states=["Running"], nodes=["n0"]),
            job("new", "q", memory="1500M"),
        ],
        pending=["new"],
        reasons={"new": ["OverLimit", "memory"]},
    ),
    # §2.3 CPU in millicores: limit 1500 admits a 1-CPU pod ...
    Scenario(
        "cpu-limit-millicores-fits",
        [queue("q", cpu_limit=1500), node("n0"), job("new", "q", cpu="1")],
        binds={"new-0": "n0"},
    ),
    # ... and refuses a 2-CPU pod (2000 > 1500).
    Scenario(
        "cpu-limit-millicores-exceeded",
        [queue("q", cpu_limit=1500), node("n0"), job("new", "q", cpu="2")],
        pending=["new"],
        reasons={"new": ["OverLimit", "cpu"]},
    ),
    # §9.4 allocateGang note: a train (preemptible) gang of 2 x 1 GPU in a queue with
    # deserved 1 on a 2-GPU node binds fully: over quota is fine for preemptible jobs.
    Scenario(
        "allocate-gang-train-over-quota-binds",
        [
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=1),
            node("n0", gpus=2),
            job("g", "q", 2, gpus=1, priority_class="train"),
        ],
        binds={"g-0": "n0", "g-1": "n0"},
    ),
    # §9.4 allocateGang note: the same gang at build priority (100, non-preemptible) would
    # put 2 > deserved 1 non-preemptible GPUs in q: NonPreemptibleOverQuota.
    Scenario(
        "allocate-gang-build-over-quota-pending",
        [
            queue("default", gpu_quota=-1),
            queue("q", "default", gpu_quota=1),
            node("n0", gpus=2),
            job("g", "q", 2, gpus=1, priority_class="build"),
        ],
        pending=["g"],
        reasons={"g": ["NonPreemptibleOverQuota"]},
    ),
    # §5.2(b): a build job within deserved binds.
    Scenario(
        "non-preemptible-within-quota",
        [
            queue("q", gpu_quota=2),
            node("n0", gpus=2),
            job("g", "q", 2, gpus=1, priority_class="build"),
        ],
        binds={"g-0": "n0", "g-1": "n0"},
    ),
    # §5.2(b) up the path: the leaf has deserved 5 but its parent only 1.
    Scenario(
        "non-preemptible-over-quota-at-parent",
        [
            queue("dept", gpu_quota=1),
            queue("q", "dept", gpu_quota=5),
            node("n0", gpus=4),
            job("g", "q", gpus=2, priority_class="build"),
        ],
        pending=["g"],
        reasons={"g": ["NonPreemptibleOverQuota", "queue dept"]},
    ),
    # §5.2(b): only non-preemptible usage counts; a running train job does not use up the
    # quota, so the build job (0 + 1 <= 1) binds.
    Scenario(
        "non-preemptible-ignores-preemptible-usage",
        [
            queue("q", gpu_quota=1),
            node("n0", gpus=2),
            job("train", "q", gpus=1, states=["Running"], nodes=["n0"], priority_class="train"),
            job("build", "q", gpus=1, priority_class="build"),
        ],
        binds={"build-0": "n0"},
    ),
    # §3: inference (125) is non-preemptible by default; over a quota of 0 it waits.
    Scenario(
        "inference-non-preemptible",
        [queue("q"), node("n0", gpus=1), job("inf", "q", gpus=1, priority_class="inference")],
        pending=["inf"],
        reasons={"inf": ["NonPreemptibleOverQuota"]},
    ),
    # §3: preemptibility overrides the priority: a build job marked preemptible may go
    # over quota.
    Scenario(
        "build-marked-preemptible-over-quota",
        [
            queue("q"),
            node("n0", gpus=1),
            job("b", "q", gpus=1, priority_class="build", preemptibility="preemptible"),
        ],
        binds={"b-0": "n0"},
    ),
    # §3: ... and a train job marked non-preemptible is held to deserved.
    Scenario(
        "train-marked-non-preemptible-over-quota",
        [
            queue("q"),
            node("n0", gpus=1),
            job("t", "q", gpus=1, priority_class="train", preemptibility="non-preemptible"),
        ],
        pending=["t"],
        reasons={"t": ["NonPreemptibleOverQuota"]},
    ),
    # §2.3: quota -1 is unlimited deserved, so a non-preemptible job of any size passes.
    Scenario(
        "non-preemptible-unlimited-quota",
        [
            queue("q", gpu_quota=-1),
            node("n0", gpus=4),
            job("b", "q", 4, gpus=1, priority_class="build"),
        ],
        binds={f"b-{i}": "n0" for i in range(4)},
    ),
    # §5.2: fair share does not cap allocation; q deserves 1 (fair share 1, OQW 0) yet
    # all four preemptible 1-GPU jobs bind.
    Scenario(
        "fair-share-does-not-cap",
        [
            queue("q", gpu_quota=1),
            queue("other", gpu_quota=3),
            node("n0", gpus=4),
            *[job(f"j{i}", "q", gpus=1) for i in range(4)],
        ],
        binds={f"j{i}-0": "n0" for i in range(4)},
    ),
    # §5.1: a PodGroup naming a missing queue is not scheduled (QueueDoesNotExist).
    Scenario(
        "queue-missing",
        [queue("q"), node("n0", gpus=1), job("j", "nope", gpus=1)],
        pending=["j"],
        reasons={"j": ["QueueDoesNotExist"]},
    ),
    # §2.3: an orphan queue (missing parent) is dropped with its subtree, so its jobs get
    # QueueDoesNotExist, including jobs of a child of the orphan.
    Scenario(
        "queue-parent-missing",
        [
            queue("orphan", "ghost"),
            queue("grandchild", "orphan"),
            node("n0", gpus=2),
            job("j", "orphan", gpus=1),
            job("k", "grandchild", gpus=1),
        ],
        pending=["j", "k"],
        reasons={"j": ["QueueDoesNotExist"], "k": ["QueueDoesNotExist"]},
    ),
    # §2.3: only leaf queues accept jobs.
    Scenario(
        "non-leaf-queue",
        [queue("dept"), queue("leaf", "dept"), node("n0", gpus=1), job("j", "dept", gpus=1)],
        pending=["j"],
        reasons={"j": ["not a leaf"]},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_capacity(scenario: Scenario) -> None:
    check(scenario)
