"""NUMA-aware placement (KAI v0.16/v0.17): the kubelet Topology Manager predicted per node.

Why: a node whose kubelet runs ``single-numa-node`` or ``restricted`` rejects, after
the bind, a pod it cannot align on its NUMA zones; the engine must never choose it.
Each row pins one rule with hand-computed zones: which pods are aligned (Guaranteed,
whole CPUs; devices for every QoS), the policy's test (one zone; the preferred width all
resources agree on; best-effort never filters), pod and container scope, the score
(100 / zones spanned), and the zones charged as the cycle places pods.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler.config import SchedulerConfig
from tests.kits.numa_kit import gpod, nrt, zone
from tests.kits.worlds import Scenario, check, node, pod_group, queue

G16 = "16Gi"
NUMA = SchedulerConfig(actions=("allocate",), numa=True)

# "split": 8 CPU, 32Gi, 1 GPU in two zones, the GPU on zone 0 (KAI's docs example).
SPLIT = node("split", cpu="8", memory="32Gi", gpus=1)
# "big": no NodeResourceTopology, room for anything here; bin-packing prefers "split".
BIG = node("big", cpu="16", memory="64Gi", gpus=2)


def split_zones(policy: str, scope: str = "pod") -> dict[str, object]:
    return nrt("split", policy, [zone("4", G16, 1), zone("4", G16, 0)], scope=scope)


def one(name: str, *containers: dict[str, str], guaranteed: bool = True) -> list[object]:
    """A one-pod job ``name`` (pod ``name-0``) with the given containers."""
    return [
        pod_group(name, "q", min_member=1),
        gpod(f"{name}-0", name, containers, guaranteed=guaranteed),
    ]


def on_split(
    policy: str, *containers: dict[str, str], scope: str = "pod", guaranteed: bool = True
) -> list[object]:
    """ "split" with its zones under ``policy``, "big", and a one-pod job "j" to place."""
    return [
        queue("q"),
        SPLIT,
        BIG,
        split_zones(policy, scope),
        *one("j", *containers, guaranteed=guaranteed),
    ]


BIG_POD = {"cpu": "6", "memory": "24Gi", "nvidia.com/gpu": "1"}

SCENARIOS = [
    # 6 CPU + 24Gi + 1 GPU fits no single zone of "split" (4 CPU, 16Gi each): filtered,
    # the pod goes to "big" although bin-packing would pick "split".
    Scenario(
        "single-numa-node-filters-a-split-fit",
        on_split("single-numa-node", BIG_POD),
        binds={"j-0": "big"},
    ),
    # Control: best-effort never filters; "split" spans 2 zones (score 100/2) and "big"
    # publishes nothing (assumed the widest node's 2 zones, 100/2): bin-packing decides.
    Scenario(
        "best-effort-admits-the-split",
        on_split("best-effort", BIG_POD),
        binds={"j-0": "split"},
    ),
    # Control: with policy none the node is not modelled.
    Scenario(
        "policy-none-is-not-modelled",
        on_split("none", BIG_POD),
        binds={"j-0": "split"},
    ),
    # 4 CPU + 16Gi + 1 GPU fits zone 0 exactly: kept, and preferred (span 1: 100 vs 50).
    Scenario(
        "single-numa-node-one-zone-fits",
        on_split("single-numa-node", {"cpu": "4", "memory": G16, "nvidia.com/gpu": "1"}),
        binds={"j-0": "split"},
    ),
    # best-effort scores 100 / span: a 4-CPU pod spans one zone of "local" (4 + 4) but
    # two of "wide" (3 + 3). Bin-packing prefers the smaller "wide"; the NUMA tier (100
    # against 50) is above it.
    Scenario(
        "best-effort-prefers-fewer-zones",
        [
            queue("q"),
            node("local", cpu="8", memory="32Gi"),
            node("wide", cpu="6", memory="32Gi"),
            nrt("local", "best-effort", [zone("4", G16), zone("4", G16)]),
            nrt("wide", "best-effort", [zone("3", G16), zone("3", G16)]),
            *one("j", {"cpu": "4", "memory": "1Gi"}),
        ],
        binds={"j-0": "local"},
    ),
    # restricted: 6 CPU needs 2 zones by allocatable (4+4), 24Gi too (16+16): the widths
    # agree, zones {0,1} hold both, admitted across two zones.
    Scenario(
        "restricted-admits-agreeing-widths",
        on_split("restricted", {"cpu": "6", "memory": "24Gi"}),
        binds={"j-0": "split"},
    ),
    # restricted: 6 CPU wants 2 zones but 8Gi wants 1: the widths disagree, rejected.
    Scenario(
        "restricted-rejects-disagreeing-widths",
        on_split("restricted", {"cpu": "6", "memory": "8Gi"}),
        binds={"j-0": "big"},
    ),
    # 6.5 CPU is not whole cores: the CPU Manager leaves it in the shared pool, only its
    # 8Gi is aligned, which zone 0 holds: kept under single-numa-node.
    Scenario(
        "fractional-cpu-is-not-aligned",
        on_split("single-numa-node", {"cpu": "6500m", "memory": "8Gi"}),
        binds={"j-0": "split"},
    ),
    # A Burstable pod (requests only) aligns no CPU or memory: not NUMA-relevant.
    Scenario(
        "burstable-without-devices-is-free",
        on_split("single-numa-node", {"cpu": "6", "memory": "24Gi"}, guaranteed=False),
        binds={"j-0": "split"},
    ),
    # Devices align for every QoS: a Burstable pod asking 2 GPUs on zones of 1 GPU each
    # fits no zone and goes to "big" (4 GPUs), although bin-packing prefers "split".
    Scenario(
        "burstable-devices-are-aligned",
        [
            queue("q"),
            node("split", cpu="8", memory="32Gi", gpus=2),
            node("big", cpu="16", memory="64Gi", gpus=4),
            nrt("split", "single-numa-node", [zone("4", G16, 1), zone("4", G16, 1)]),
            *one("j", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}, guaranteed=False),
        ],
        binds={"j-0": "big"},
    ),
    # Container scope: two containers of 3 CPU each align one at a time (zone 0, then
    # zone 1 with zone 0's 1 CPU left); pod scope would need 6 CPU in one zone.
    Scenario(
        "container-scope-aligns-each-container",
        on_split(
            "single-numa-node",
            {"cpu": "3", "memory": "1Gi"},
            {"cpu": "3", "memory": "1Gi"},
            scope="container",
        ),
        binds={"j-0": "split"},
    ),
    Scenario(
        "pod-scope-aligns-the-whole-pod",
        on_split("single-numa-node", {"cpu": "3", "memory": "1Gi"}, {"cpu": "3", "memory": "1Gi"}),
        binds={"j-0": "big"},
    ),
    # Zones are charged as the cycle places pods: "numa" has 12 CPU in three zones of 4.
    # Four 3-CPU pods fit the node (12) but only one per zone: three go there (span 1,
    # score 100 against "big"'s 100/3), the fourth, fitting no zone, to "big".
    Scenario(
        "zones-charged-within-the-cycle",
        [
            queue("q"),
            node("numa", cpu="12", memory="48Gi"),
            BIG,
            nrt("numa", "single-numa-node", [zone("4", G16), zone("4", G16), zone("4", G16)]),
            pod_group("j", "q", min_member=4),
            *(gpod(f"j-{i}", "j", [{"cpu": "3", "memory": "1Gi"}]) for i in range(4)),
        ],
        binds={"j-0": "numa", "j-1": "numa", "j-2": "numa", "j-3": "big"},
    ),
    # The published available counts pods placed earlier: zone 0 has 1 CPU left, zone 1
    # all 4, so a 4-CPU pod fits (zone 1).
    Scenario(
        "published-available-is-used",
        [
            queue("q"),
            SPLIT,
            BIG,
            nrt(
                "split",
                "single-numa-node",
                [zone("4", G16, 1, free={"cpu": "1"}), zone("4", G16, 0)],
            ),
            *one("j", {"cpu": "4", "memory": "8Gi"}),
        ],
        binds={"j-0": "split"},
    ),
    Scenario(
        "published-available-full",
        [
            queue("q"),
            SPLIT,
            BIG,
            nrt(
                "split",
                "single-numa-node",
                [zone("4", G16, 1, free={"cpu": "1"}), zone("4", G16, 0, free={"cpu": "3"})],
            ),
            *one("j", {"cpu": "4", "memory": "8Gi"}),
        ],
        binds={"j-0": "big"},
    ),
    # No node fits: the reason names the NUMA rule.
    Scenario(
        "no-node-aligns",
        [queue("q"), SPLIT, split_zones("single-numa-node"), *one("j", BIG_POD)],
        pending=["j"],
        reasons={"j": ["cannot NUMA-align the pod's resources"]},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_numa(scenario: Scenario) -> None:
    check(replace(scenario, config=NUMA))


def test_numa_is_opt_in() -> None:
    """Without plugins.numa.enabled the published zones are not read into placement."""
    check(Scenario("disabled", on_split("single-numa-node", BIG_POD), binds={"j-0": "split"}))


def test_ignore_list_drops_a_resource_from_alignment() -> None:
    """24Gi fits no 16Gi zone; with memory ignored (no Memory Manager) only the 2 CPUs
    are aligned, which zone 0 holds."""
    objects = on_split("single-numa-node", {"cpu": "2", "memory": "24Gi"})
    check(Scenario("strict", objects, binds={"j-0": "big"}, config=NUMA))
    ignoring = replace(NUMA, numa_ignore=("memory",))
    check(Scenario("ignored", objects, binds={"j-0": "split"}, config=ignoring))
