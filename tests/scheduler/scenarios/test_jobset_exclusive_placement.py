"""JobSet's exclusive placement, as its webhook writes it onto pods (docs/semantics.md §14).

A JobSet annotated ``alpha.jobset.sigs.k8s.io/exclusive-topology: <key>`` gives each
child Job one topology domain of its own: JobSet's pod webhook adds to every pod a
required pod affinity to the pods of its own Job (label ``jobset.sigs.k8s.io/job-key``
In its key) and a required anti-affinity, in every namespace, to pods of any other Job
(the key Exists and NotIn its own). podmuster groups the whole JobSet as one gang, so
the cycle must place the first pod of each Job by the self-affinity rule and keep the
other Jobs out of that domain, all within one gang. Racks here are the topology; each
node holds every pod, so bin-packing alone would put the gang on one node.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kits.worlds import Item, Scenario, check, node, pod, pod_group, queue

JOB_KEY = "jobset.sigs.k8s.io/job-key"
RACK = "rack"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _exclusive(job_key: str) -> dict[str, Any]:
    own = {"matchExpressions": [{"key": JOB_KEY, "operator": "In", "values": [job_key]}]}
    others = {
        "matchExpressions": [
            {"key": JOB_KEY, "operator": "Exists"},
            {"key": JOB_KEY, "operator": "NotIn", "values": [job_key]},
        ]
    }
    return {
        "podAffinity": {REQUIRED: [{"labelSelector": own, "topologyKey": RACK}]},
        "podAntiAffinity": {
            REQUIRED: [{"labelSelector": others, "topologyKey": RACK, "namespaceSelector": {}}]
        },
    }


def _jobset(name: str, jobs: int, pods_per_job: int, **pod_args: Any) -> list[Item]:
    """One gang of ``jobs`` child Jobs, pods ``<name>-<job>-<i>``."""
    items: list[Item] = [pod_group(name, "q", min_member=jobs * pods_per_job)]
    for j in range(jobs):
        key = f"{name}-key-{j}"
        for i in range(pods_per_job):
            items.append(
                pod(
                    f"{name}-{j}-{i}",
                    name,
                    labels={JOB_KEY: key},
                    affinity=_exclusive(key),
                    **pod_args,
                )
            )
    return items


def _racks(*racks: str, per_rack: int = 2) -> list[Item]:
    return [
        node(f"{rack}{i}", cpu="16", labels={RACK: rack}) for rack in racks for i in range(per_rack)
    ]


SCENARIOS = [
    # Two Jobs of two pods on two racks: each Job fills one rack (the first by name for
    # the first Job: its first pod may go anywhere, bin-packing then keeps it on a0).
    Scenario(
        "two-jobs-two-racks",
        [queue("q"), *_racks("a", "b"), *_jobset("js", 2, 2)],
        binds={"js-0-0": "a0", "js-0-1": "a0", "js-1-0": "b0", "js-1-1": "b0"},
    ),
    # Three Jobs, two racks: the third Job has no rack of its own; the gang waits whole.
    Scenario(
        "three-jobs-two-racks",
        [queue("q"), *_racks("a", "b"), *_jobset("js", 3, 1)],
        pending=["js"],
        reasons={"js": ["didn't match pod anti-affinity rules"]},
    ),
    # A rack already holding another JobSet's Job (running) is not shared: the new
    # JobSet's single Job takes rack b, though bin-packing prefers the busier rack a.
    Scenario(
        "rack-held-by-another-jobset",
        [
            queue("q"),
            *_racks("a", "b"),
            *pod(
                "old-0-0",
                state="Running",
                node="a0",
                labels={JOB_KEY: "old-key-0"},
                affinity=_exclusive("old-key-0"),
            ),
            *_jobset("js", 1, 2),
        ],
        binds={"js-0-0": "b0", "js-0-1": "b0"},
    ),
    # The same Job keeps to its rack when a node of it is full: bin-packing puts the first
    # pod on b0 (a plain pod already runs there), which then has no room for the second;
    # it goes to b1, not to a0, which would win by name among the empty nodes.
    Scenario(
        "job-overflows-within-its-rack",
        [
            queue("q"),
            *_racks("a", "b"),
            *pod("filler", state="Running", node="b0", cpu="2"),
            *_jobset("js", 1, 2, cpu="10"),
        ],
        binds={"js-0-0": "b0", "js-0-1": "b1"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_jobset_exclusive_placement(scenario: Scenario) -> None:
    check(scenario)
