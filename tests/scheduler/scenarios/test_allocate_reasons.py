"""Why a pod group stays pending (docs/semantics.md §2.2 reasons, docs/cli.md §2 --explain).

A fit failure names the resource and the nodes as kube-scheduler counts them;
queue refusals name the rule and the queue; ``--explain`` adds the queue's
deserved, fair share, allocated and limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.kits.worlds import Scenario, check, flatten, job, node, pod, queue, stamp, taint

SCENARIOS = [
    # Both nodes lack a free GPU: counted per first failing reason.
    Scenario(
        "insufficient-gpu-names-nodes",
        [queue("q"), node("n0", gpus=1), node("n1"), job("j", "q", gpus=2)],
        pending=["j"],
        reasons={"j": ["0/2 nodes are available: 2 Insufficient nvidia.com/gpu."]},
    ),
    # The gang's second pod fits the node alone, but the first took the room: said so,
    # rather than an empty list of reasons.
    Scenario(
        "gang-member-fits-alone-not-together",
        [queue("q"), node("n0", gpus=6), job("j", "q", 2, gpus=4)],
        pending=["j"],
        reasons={
            "j": [
                "only 1 could be placed",
                "0/1 nodes are available: 1 node(s) would fit this pod alone, not together"
                " with the rest of its job.",
            ]
        },
    ),
    # Mixed: n0 is tainted (first failing reason), n1 has too little memory.
    Scenario(
        "mixed-fit-reasons",
        [
            queue("q"),
            node("n0", taints=[taint("x")]),
            node("n1", memory="1G"),
            job("j", "q", memory="4G"),
        ],
        pending=["j"],
        reasons={"j": ["1 node(s) had untolerated taint", "1 Insufficient memory"]},
    ),
    # Selector excludes n0; n1 matches but is full.
    Scenario(
        "selector-and-insufficient",
        [
            queue("q"),
            node("n0", gpus=1),
            node("n1", gpus=1, labels={"pool": "a"}),
            job("other", "q", gpus=1, states=["Running"], nodes=["n1"]),
            job("j", "q", gpus=1, node_selector={"pool": "a"}),
        ],
        pending=["j"],
        reasons={
            "j": ["1 node(s) didn't match Pod's node selector", "1 Insufficient nvidia.com/gpu"]
        },
    ),
    # Cordoned and NotReady nodes are reported as such.
    Scenario(
        "unschedulable-reason",
        [
            queue("q"),
            node("n0", gpus=1, unschedulable=True),
            node("n1", gpus=1, ready=False),
            job("j", "q", gpus=1),
        ],
        pending=["j"],
        reasons={"j": ["2 node(s) were unschedulable or not ready"]},
    ),
    # A gang names how far it got and the pod that failed.
    Scenario(
        "gang-reason-names-failing-pod",
        [queue("q"), node("n0", gpus=2), job("g", "q", 3, gpus=1)],
        pending=["g"],
        reasons={"g": ["only 2 could be placed", "pod default/g-2"]},
    ),
    # --explain adds the queue's numbers: deserved 1, fair share 1 (deserved, OQW 0),
    # allocated 1 (the running job).
    Scenario(
        "explain-queue-numbers",
        [
            queue("q", gpu_quota=1),
            node("n0", gpus=1),
            job("run", "q", gpus=1, states=["Running"], nodes=["n0"]),
            job("j", "q", gpus=1),
        ],
        pending=["j"],
        reasons={"j": ["queue q: deserved gpu=1 ", "fair share gpu=1 ", "allocated gpu=1 "]},
        explain=True,
    ),
    # Pods of other schedulers are subtracted from the fair-share total: 4 GPUs - 1 foreign
    # = 3, all of it q's over-quota share (OQW 1, request 5), so fair share gpu=3.
    Scenario(
        "foreign-pods-reduce-fair-share-total",
        [
            queue("q", gpu_weight=1),
            node("n0", gpus=4),
            pod("web", gpus=1, state="Running", node="n0", scheduler_name="default-scheduler"),
            *[job(f"j{i}", "q", gpus=1) for i in range(5)],
        ],
        binds={"j0-0": "n0", "j1-0": "n0", "j2-0": "n0"},
        pending=["j3", "j4"],
        reasons={"j3": ["fair share gpu=3 "]},
        explain=True,
    ),
    # §5.4: NotReady nodes are left out of the fair-share total: only n0's 1 GPU counts, so
    # q's fair share is 1, not 5.
    Scenario(
        "not-ready-nodes-not-in-fair-share-total",
        [
            queue("q", gpu_weight=1),
            node("n0", gpus=1),
            node("n1", gpus=4, ready=False),
            *[job(f"j{i}", "q", gpus=1) for i in range(3)],
        ],
        binds={"j0-0": "n0"},
        pending=["j1", "j2"],
        reasons={"j1": ["fair share gpu=1 ", "1 node(s) were unschedulable or not ready"]},
        explain=True,
    ),
    # §5.4 deserved phase: min(deserved, requestable) is not capped by the amount, so two
    # queues deserving 3 each on a 4-GPU cluster both get fair share 3 (sum 6 > 4).
    Scenario(
        "deserved-not-capped-by-total",
        [
            queue("qa", gpu_quota=3),
            queue("qb", gpu_quota=3),
            node("n0", gpus=4),
            *[job(f"a{i}", "qa", gpus=1) for i in range(4)],
            *[job(f"b{i}", "qb", gpus=1) for i in range(4)],
        ],
        binds={"a0-0": "n0", "a1-0": "n0", "b0-0": "n0", "b1-0": "n0"},
        pending=["a2", "a3", "b2", "b3"],
        reasons={"a2": ["fair share gpu=3 "], "b2": ["fair share gpu=3 "]},
        explain=True,
    ),
    # §5.4 remainders: three queues of OQW 1 split 2 GPUs: 2/3 each floors to 0, then the
    # remainders (equal) go one unit each to the older qa and qb; qc's fair share is 0.
    Scenario(
        "over-quota-remainders-to-older-queues",
        [
            queue("qa", gpu_weight=1),
            queue("qb", gpu_weight=1),
            queue("qc", gpu_weight=1),
            node("n0", gpus=2),
            *[job(f"{q}{i}", f"q{q}", gpus=1) for q in "abc" for i in range(2)],
        ],
        binds={"a0-0": "n0", "b0-0": "n0"},
        pending=["a1", "b1", "c0", "c1"],
        reasons={
            "a1": ["fair share gpu=1 "],
            "b1": ["fair share gpu=1 "],
            "c0": ["fair share gpu=0 "],
        },
        explain=True,
    ),
    # OverLimit names the resource, the queue and its limit.
    Scenario(
        "over-limit-reason-details",
        [queue("q", gpu_limit=1), node("n0", gpus=4), job("j", "q", gpus=2)],
        pending=["j"],
        reasons={"j": ["OverLimit: gpu request", "queue q over its limit", "limit gpu=1 "]},
    ),
    # NonPreemptibleOverQuota names the queue and the deserved quota.
    Scenario(
        "non-preemptible-reason-details",
        [
            queue("q", gpu_quota=1),
            node("n0", gpus=4),
            job("j", "q", gpus=2, priority_class="build"),
        ],
        pending=["j"],
        reasons={"j": ["NonPreemptibleOverQuota", "queue q would exceed its deserved gpu quota"]},
    ),
    # A missing queue is named, also with --explain.
    Scenario(
        "queue-does-not-exist-named",
        [queue("q"), node("n0", gpus=1), job("j", "ghost", gpus=1)],
        pending=["j"],
        reasons={"j": ["QueueDoesNotExist: queue 'ghost' does not exist"]},
        explain=True,
    ),
    # An orphan's reason says its parent is missing.
    Scenario(
        "orphan-queue-reason",
        [queue("orphan", "ghost"), node("n0", gpus=1), job("j", "orphan", gpus=1)],
        pending=["j"],
        reasons={"j": ["QueueDoesNotExist", "parent queue 'ghost' does not exist"]},
    ),
    # NotReady says how many pods the gang needs and how many exist.
    Scenario(
        "not-ready-reason-counts",
        [queue("q"), node("n0", gpus=4), job("g", "q", 2, gpus=1, min_member=3)],
        pending=["g"],
        reasons={"g": ["NotReady: gang needs 3 pods but only 2 exist"]},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_allocate_reasons(scenario: Scenario) -> None:
    check(scenario)


def test_cli_explain_matches_kit(tmp_path: Path) -> None:
    """``podmuster schedule FILE --explain`` reports the same decisions and queue numbers."""
    scenario = next(s for s in SCENARIOS if s.name == "foreign-pods-reduce-fair-share-total")
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(stamp(flatten(scenario.objects))))
    cli = Path(sys.executable).with_name("podmuster")
    done = subprocess.run(
        [str(cli), "schedule", str(snapshot), "--actions", "allocate", "--explain", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    output = json.loads(done.stdout)
    assert {b["pod"]: b["node"] for b in output["binds"]} == {
        f"default/{pod_name}": node_name for pod_name, node_name in scenario.binds.items()
    }
    pending = {g["podGroup"]: g for g in output["podGroups"] if g["outcome"] == "pending"}
    assert set(pending) == {"default/j3", "default/j4"}
    assert any("fair share gpu=3 " in reason for reason in pending["default/j3"]["reasons"])
