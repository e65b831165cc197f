"""KAI v0.17 stale gang eviction tests (``actions/stalegangeviction``) as scenario rows.

Source: ``stalegangeviction_test.go`` (one job ``job-1`` in queue ``q-1`` under department
``d-1``, on one node, with a global grace period of 60 s). Each row names its KAI test and
the rule of docs/semantics.md §5.2 (stalegangeviction) that gives the expectation. KAI's
stale duration is the age of the ``kai.scheduler/stale-podgroup-timestamp`` here.
"""

from __future__ import annotations

from typing import Any

import pytest
from disruption_kit import stale
from kai_rows import Disruption, check, department, leaf, row

from tests.kits.worlds import node, pod, pod_group

S = ("stalegangeviction",)
SUB_GROUPS = [{"name": "sub-group-0", "minMember": 2}, {"name": "sub-group-1", "minMember": 1}]


def job_1(
    states: list[str],
    *,
    min_member: int | None = None,
    sub_groups: list[str] | None = None,
    stale_for: float | None = None,
    grace: str | None = None,
) -> list[dict[str, Any]]:
    """``job-1`` with pods ``job-1-<i>`` in ``states`` on node-1 (subgroup per pod if given)."""
    group = pod_group(
        "job-1",
        "q-1",
        min_member=None if sub_groups else (len(states) if min_member is None else min_member),
        sub_groups=SUB_GROUPS if sub_groups else (),
    )
    if grace is not None:
        group["spec"]["stalenessGracePeriod"] = grace
    pods = [
        obj
        for i, state in enumerate(states)
        for obj in pod(
            f"job-1-{i}",
            "job-1",
            state=state,
            node="node-1",
            sub_group=sub_groups[i] if sub_groups else None,
        )
    ]
    objects = [group, *pods]
    return stale(objects, stale_for) if stale_for is not None else objects


def world(*job: list[dict[str, Any]]) -> list[Any]:
    return [department("d-1", gpu_quota=0), leaf("q-1", "d-1"), node("node-1"), *job]


RF = ["Running", "Failed"]
SG3 = ["sub-group-0", "sub-group-0", "sub-group-0", "sub-group-1"]

ROWS = [
    row(
        "sanity",
        "§5.2 a gang running at its minimum is not stale",
        Disruption("kai-stale-sanity", world(job_1(["Running"])), S),
    ),
    row(
        "Don't evict recently stale job",
        "§5.2 stale for 1 s, within the 60 s grace period: nothing is evicted",
        Disruption("kai-stale-recent", world(job_1(RF, stale_for=1)), S),
    ),
    row(
        "Evict long-ago stale job",
        "§5.2 stale for 61 s > 60 s: every active pod of the gang is evicted",
        Disruption("kai-stale-long-ago", world(job_1(RF, stale_for=61)), S, evicted=["job-1-0"]),
    ),
    row(
        "Don't evict non-stale job (has enough minAvailable, even though it has stale duration)",
        "§5.2 one running pod meets minMember 1: not stale whatever the timestamp says",
        Disruption("kai-stale-meets-minimum", world(job_1(RF, min_member=1, stale_for=1)), S),
    ),
    row(
        "Stale job with sub groups - evict",
        "§5.2 sub-group-1 has no running pod: the gang is stale and its three pods go",
        Disruption(
            "kai-stale-subgroup-evict",
            world(job_1(["Running"] * 3 + ["Failed"], sub_groups=SG3, stale_for=61)),
            S,
            evicted=["job-1-0", "job-1-1", "job-1-2"],
        ),
    ),
    row(
        "Job with sub groups - should not evict",
        "§5.2 each subgroup meets its minimum (2 and 1) despite a failed pod: not stale",
        Disruption(
            "kai-stale-subgroups-met",
            world(
                job_1(
                    ["Running", "Running", "Failed", "Running"],
                    sub_groups=["sub-group-0", "sub-group-0", "sub-group-0", "sub-group-1"],
                    stale_for=61,
                )
            ),
            S,
        ),
    ),
    row(
        "Per-job grace period shorter than global default - evict",
        "§5.2 the PodGroup's stalenessGracePeriod (10 s) wins over the default: 30 s > 10 s",
        Disruption(
            "kai-stale-short-grace",
            world(job_1(RF, stale_for=30, grace="10s")),
            S,
            evicted=["job-1-0"],
        ),
    ),
    row(
        "Per-job grace period longer than global default - no evict",
        "§5.2 a 120 s grace period keeps a gang stale for 61 s",
        Disruption("kai-stale-long-grace", world(job_1(RF, stale_for=61, grace="120s")), S),
    ),
    row(
        "Negative per-job grace period - no evict",
        "§5.2 a negative grace period means never",
        Disruption("kai-stale-negative-grace", world(job_1(RF, stale_for=120, grace="-1s")), S),
    ),
    row(
        "Zero per-job grace period - immediate evict",
        "§5.2 a zero grace period evicts as soon as the gang is stale",
        Disruption(
            "kai-stale-zero-grace",
            world(job_1(RF, stale_for=1, grace="0s")),
            S,
            evicted=["job-1-0"],
        ),
    ),
    row(
        "Per-job grace period with subgroups - evict only allocated",
        "§5.2 only active pods are evicted; the failed one is left alone",
        Disruption(
            "kai-stale-subgroups-short-grace",
            world(job_1(["Running"] * 3 + ["Failed"], sub_groups=SG3, stale_for=61, grace="5s")),
            S,
            evicted=["job-1-0", "job-1-1", "job-1-2"],
        ),
    ),
]


@pytest.mark.parametrize("case", ROWS)
def test_kai_stalegangeviction(case: Disruption) -> None:
    check(case)
