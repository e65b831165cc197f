"""NUMA zones given back by evictions (KAI v0.17): only the zones a placement record names.

Why: preempt and reclaim evict running pods to make room; on a single-numa-node node
the room must appear in the right zone. A running pod's zones are known from its
``kai.scheduler/numa-placement-observed`` (else ``-predicted``) annotation; evicting
it gives back exactly those zones, and a pod without a record gives back none (a zone
is never guessed), so its eviction cannot make a pod NUMA-alignable.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from disruption_kit import Disruption, check

from crds.names import NUMA_PLACEMENT_OBSERVED_ANNOTATION
from tests.kits.numa_kit import gpod, nrt, zone
from tests.kits.worlds import node, pod_group, queue

FOUR = {"cpu": "4", "memory": "4Gi"}


def victim(name: str, zone_id: str | None) -> list[object]:
    """A running one-pod low-priority job on "n" taking 4 CPU, recorded on ``zone_id``."""
    record = [{"zone": zone_id, "amount": {"cpu": "4", "memory": "4Gi"}}] if zone_id else None
    annotations = {NUMA_PLACEMENT_OBSERVED_ANNOTATION: json.dumps(record)} if record else {}
    return [
        pod_group(name, "q"),
        gpod(f"{name}-0", name, [FOUR], state="Running", node="n", annotations=annotations),
    ]


def world(first_zone: str | None) -> list[object]:
    """Node "n": two zones of 4 CPU, both taken (published available 0) by v-old and v-new.

    v-new (listed last: newer) is the first victim; its record is ``first_zone``.
    """
    return [
        queue("q"),
        node("n", cpu="8", memory="32Gi"),
        nrt(
            "n",
            "single-numa-node",
            [
                zone("4", "16Gi", free={"cpu": "0", "memory": "12Gi"}),
                zone("4", "16Gi", free={"cpu": "0", "memory": "12Gi"}),
            ],
        ),
        *victim("v-old", None),
        *victim("v-new", first_zone),
        pod_group("p", "q", priority_class="build"),
        gpod("p-0", "p", [FOUR]),
    ]


CASES = [
    # Evicting v-new gives back zone node-1 (4 CPU): the preemptor aligns there.
    Disruption(
        "recorded-zone-given-back",
        world("node-1"),
        ("preempt",),
        evicted=["v-new-0"],
        pipelined={"p-0": "n"},
    ),
    # No record on either victim: evicting both frees 8 CPU on the node but no zone, so
    # the preemptor would be rejected by the kubelet and waits.
    Disruption(
        "no-record-no-zone",
        world(None),
        ("preempt",),
        pending=["p"],
    ),
    # A record naming a zone the node does not publish is treated as unknown.
    Disruption(
        "record-of-unknown-zone",
        world("node-7"),
        ("preempt",),
        pending=["p"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_numa_disruption(case: Disruption) -> None:
    check(replace(case, settings={"numa": True}))
