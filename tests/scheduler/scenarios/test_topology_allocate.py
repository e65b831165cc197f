"""Topology-aware allocation (docs/semantics.md §2.5, §5.8): required and preferred levels.

Why: a constrained gang must land inside one domain of its required level,
choosing the tightest-fitting domain (deepest level first), its pods filling
the preferred-level sub-domain with most room first; nodes missing a level
label are outside the topology; a group's running pods pin its domain; a bad
or missing topology is a reason on that group only.
"""

from __future__ import annotations

import pytest
from topology_kit import RACK, TOPO, TOPOLOGY, ZONE, preferred, required, tnode

from scheduler.config import SchedulerConfig
from tests.kits.worlds import Scenario, check, job, node, pod, pod_group, queue, topology

SPREAD = SchedulerConfig(actions=("allocate",), gpu_placement="spread", cpu_placement="spread")


def used(name: str, node_name: str, gpus: int) -> list[dict[str, object]]:
    """A running one-pod job taking ``gpus`` GPUs of ``node_name``."""
    return job(name, "q", gpus=gpus, states=["Running"], nodes=[node_name])


SCENARIOS = [
    # Free GPUs: n0 2, n1 4 (rack r1: 6); n2 1, n3 4 (rack r2: 5). Unconstrained bin-packing
    # would start on n2 and spill into r1; required rack puts all four in the tighter r2.
    Scenario(
        "required-rack-tightest-fit",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z1", "r2", gpus=4),
            tnode("n3", "z1", "r2", gpus=4),
            used("u0", "n0", 2),
            used("u2", "n2", 3),
            job("j", "q", 4, gpus=1, topology=required(RACK)),
        ],
        binds={"j-0": "n2", "j-1": "n3", "j-2": "n3", "j-3": "n3"},
    ),
    # The same cluster without a constraint: bin-packing spans both racks (control case).
    Scenario(
        "unconstrained-spans-racks",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z1", "r2", gpus=4),
            tnode("n3", "z1", "r2", gpus=4),
            used("u0", "n0", 2),
            used("u2", "n2", 3),
            job("j", "q", 4, gpus=1),
        ],
        binds={"j-0": "n2", "j-1": "n0", "j-2": "n0", "j-3": "n1"},
    ),
    # Seven GPUs fit the cluster (11 free) but no rack (6 and 5): pending, and the reason
    # names the level, the topology and the best rack's shortfall.
    Scenario(
        "job-bigger-than-any-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z1", "r2", gpus=4),
            tnode("n3", "z1", "r2", gpus=4),
            used("u0", "n0", 2),
            used("u2", "n2", 3),
            job("j", "q", 7, gpus=1, topology=required(RACK)),
        ],
        pending=["j"],
        reasons={
            "j": [
                "no rack of topology cluster-topo has room for 7 pods: best (z1/r1) has"
                " 6 GPUs free, room for 6 pods, needs 7 GPUs"
            ]
        },
    ),
    # §5.8 docs example: three 1-GPU pods, zone required, rack preferred. No rack holds 3;
    # zone z1 (3 free) fits tighter than z2 (4 free). Inside z1 rack a1 (2 free) has more
    # room for the job than a2 (1 free), so it scores higher and fills first, although
    # bin-packing alone would start on the fuller a2.
    Scenario(
        "preferred-rack-in-fuller-zone",
        [
            queue("q"),
            TOPOLOGY,
            tnode("a1n", "z1", "a1", gpus=4),
            tnode("a2n", "z1", "a2", gpus=4),
            tnode("b1n", "z2", "b1", gpus=4),
            tnode("b2n", "z2", "b2", gpus=4),
            used("u1", "a1n", 2),
            used("u2", "a2n", 3),
            used("u3", "b1n", 2),
            used("u4", "b2n", 2),
            job("j", "q", 3, gpus=1, topology=preferred(RACK, within=ZONE)),
        ],
        binds={"j-0": "a1n", "j-1": "a1n", "j-2": "a2n"},
    ),
    # Preferred only: no rack holds the gang, so it falls back to the whole topology. The
    # racks tie on ratio; in the sub-domain order (ratio, then id) r2 comes last and so
    # scores highest: it fills first.
    Scenario(
        "preferred-only-falls-back-to-topology",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z2", "r2", gpus=2),
            job("j", "q", 4, gpus=1, topology=preferred(RACK)),
        ],
        binds={"j-0": "n1", "j-1": "n1", "j-2": "n0", "j-3": "n0"},
    ),
    # Preferred rack fits: the tighter rack r2 is taken whole.
    Scenario(
        "preferred-rack-fits",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r2", gpus=2),
            job("j", "q", 2, gpus=1, topology=preferred(RACK, within=ZONE)),
        ],
        binds={"j-0": "n1", "j-1": "n1"},
    ),
    # Nodes missing a level label are outside the topology: "bare" (no labels) and "half"
    # (no zone) are fuller, but the constrained pod goes to the labelled n0; an
    # unconstrained pod still uses the fullest node.
    Scenario(
        "nodes-without-labels-excluded",
        [
            queue("q"),
            TOPOLOGY,
            node("bare", gpus=8),
            tnode("half", None, "r1", gpus=4),
            tnode("n0", "z1", "r1", gpus=4),
            used("u0", "bare", 7),
            used("u1", "half", 3),
            used("u2", "n0", 2),
            job("c", "q", gpus=1, topology=required(RACK)),
            job("free", "q", gpus=1),
        ],
        binds={"c-0": "n0", "free-0": "bare"},
    ),
    # Running pods pin the domain: the elastic extra of j joins its running pod's rack r2,
    # although r1 is the tighter fit for one pod.
    Scenario(
        "active-pods-pin-required-domain",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=4),
            used("u0", "n0", 1),
            job(
                "j",
                "q",
                2,
                gpus=1,
                min_member=1,
                states=["Running", "Pending"],
                nodes=["n1", None],
                topology=required(RACK),
            ),
        ],
        binds={"j-1": "n1"},
    ),
    # A pod being deleted does not pin (KAI v0.17 pins on active-allocated pods only): j-0 is
    # Releasing on n1 in r2, and j-1 goes to the tighter r1. (When the Releasing pod pinned,
    # j-1 went to r2; with no room there, consolidation evicted another job for it.)
    Scenario(
        "releasing-pods-do-not-pin",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=4),
            used("u0", "n0", 1),
            job(
                "j",
                "q",
                2,
                gpus=1,
                min_member=1,
                states=["Releasing", "Pending"],
                nodes=["n1", None],
                topology=required(RACK),
            ),
        ],
        binds={"j-1": "n0"},
    ),
    # ... and when the pinned rack is full the extra waits, with a reason naming it.
    Scenario(
        "pinned-domain-full",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=1),
            job(
                "j",
                "q",
                2,
                gpus=1,
                min_member=1,
                states=["Running", "Pending"],
                nodes=["n1", None],
                topology=required(RACK),
            ),
        ],
        pending=["j"],
        reasons={"j": ["the rack already holding its running pods (z1/r2)", "no room for 1"]},
    ),
    # A missing Topology CR: the job waits with KAI's reason; the other job schedules.
    Scenario(
        "missing-topology",
        [
            queue("q"),
            tnode("n0", "z1", "r1", gpus=4),
            job("j", "q", 2, gpus=1, topology=required(RACK, "no-such-topo")),
            job("k", "q", gpus=1),
        ],
        binds={"k-0": "n0"},
        pending=["j"],
        reasons={"j": ["Requested topology no-such-topo does not exist"]},
    ),
    # A level the Topology does not define is a configuration reason on that group only.
    Scenario(
        "unknown-level",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            job("j", "q", gpus=1, topology=required("example.com/pod")),
            job("k", "q", gpus=1),
        ],
        binds={"k-0": "n0"},
        pending=["j"],
        reasons={
            "j": [
                "invalid topology constraint: required level 'example.com/pod' is not a level"
                f" of topology {TOPO}"
            ]
        },
    ),
    # Preferred coarser than required is a configuration error too.
    Scenario(
        "preferred-above-required",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            job("j", "q", gpus=1, topology=preferred(ZONE, within=RACK)),
        ],
        pending=["j"],
        reasons={"j": ["preferred level 'topology.kubernetes.io/zone' is above required level"]},
    ),
    # Spread inside the chosen rack: r1 (6 free) is tighter than r2 (8 free), so the gang
    # stays in r1 although spread alone would pick the empty n2; within r1 it spreads.
    Scenario(
        "spread-within-required-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z2", "r2", gpus=8),
            used("u0", "n0", 1),
            used("u1", "n1", 1),
            job("j", "q", 2, gpus=1, topology=required(RACK)),
        ],
        binds={"j-0": "n0", "j-1": "n1"},
        config=SPREAD,
    ),
    # ... and bin-packing inside it packs onto one node.
    Scenario(
        "binpack-within-required-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=4),
            tnode("n1", "z1", "r1", gpus=4),
            tnode("n2", "z2", "r2", gpus=8),
            used("u0", "n0", 1),
            used("u1", "n1", 1),
            job("j", "q", 2, gpus=1, topology=required(RACK)),
        ],
        binds={"j-0": "n0", "j-1": "n0"},
    ),
    # A filter (node selector) that rules out the tightest rack's nodes: representative-pod
    # counting sees it, so the rack the pods may use is chosen.
    Scenario(
        "filters-count-in-domain-capacity",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", "z1", "r2", gpus=4, labels={"pool": "a"}),
            job("j", "q", 2, gpus=1, topology=required(RACK), node_selector={"pool": "a"}),
        ],
        binds={"j-0": "n1", "j-1": "n1"},
    ),
    # Different pods (a launcher and GPU workers) are counted by summed resources: zone z1
    # holds both (CPU node plus 2 GPUs), zone z2 has GPUs only.
    Scenario(
        "heterogeneous-gang-summed-capacity",
        [
            queue("q"),
            TOPOLOGY,
            tnode("c1", "z1", "r1", cpu="8"),
            tnode("g1", "z1", "r2", gpus=2),
            tnode("g2", "z2", "r3", gpus=4, cpu="1"),
            pod_group("mpi", "q", min_member=3, topology=required(ZONE)),
            pod("mpi-l", "mpi", cpu="4"),
            pod("mpi-w0", "mpi", gpus=1),
            pod("mpi-w1", "mpi", gpus=1),
        ],
        binds={"mpi-l": "c1", "mpi-w0": "g1", "mpi-w1": "g1"},
    ),
    # Mixed sizes of one kind (2 GPUs and 1 GPU) are counted by summed resources too: r1's
    # one 3-GPU node holds both and is the tighter rack. (KAI v0.17 counts copies of the
    # largest pod per node, 1 on n0, and takes r2: a documented difference, topology.md.)
    Scenario(
        "mixed-sizes-summed-tighter-rack",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=3),
            tnode("n1", "z1", "r2", gpus=2),
            tnode("n2", "z1", "r2", gpus=2),
            pod_group("m", "q", min_member=2, topology=required(RACK)),
            pod("m-0", "m", gpus=2),
            pod("m-1", "m", gpus=1),
        ],
        binds={"m-0": "n0", "m-1": "n0"},
    ),
    # The sum admits r1 (1 + 3 free for two 2-GPU pods) though no node there takes the
    # second pod: the try fails, is rolled back, and the roomier r2 holds the gang.
    Scenario(
        "summed-room-admits-then-next-domain",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=1),
            tnode("n1", "z1", "r1", gpus=3),
            tnode("n2", "z1", "r2", gpus=3),
            tnode("n3", "z1", "r2", gpus=3),
            pod_group("m", "q", min_member=2, topology=required(RACK)),
            pod("m-0", "m", gpus=2, cpu="1"),
            pod("m-1", "m", gpus=2, cpu="2"),
        ],
        binds={"m-0": "n2", "m-1": "n3"},
    ),
    # A constraint naming the topology but no level keeps the job on the topology's nodes
    # (every level label), in any domain: not on the unlabelled, tighter n1. (KAI v0.17
    # never schedules it: a documented difference, topology.md.)
    Scenario(
        "topology-without-levels",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n0", "z1", "r1", gpus=2),
            tnode("n1", None, None, gpus=1),
            job("j", "q", gpus=1, topology={"topology": TOPO}),
        ],
        binds={"j-0": "n0"},
    ),
    # Every node in one rack, the zone required: the zone holds the gang (KAI v0.17 starts
    # at the deepest shared domain, counts no room at the zone and never schedules it: a
    # documented difference, topology.md).
    Scenario(
        "required-level-above-the-deepest-shared-domain",
        [
            queue("q"),
            TOPOLOGY,
            tnode("n1", "z1", "r1", gpus=2),
            tnode("n2", "z1", "r1", gpus=2),
            job("j", "q", 2, gpus=1, topology=required(ZONE)),
        ],
        binds={"j-0": "n1", "j-1": "n1"},
    ),
    # Two topologies: each job follows its own.
    Scenario(
        "two-topologies",
        [
            queue("q"),
            TOPOLOGY,
            topology("blocks", "example.com/block"),
            tnode("n0", "z1", "r1", gpus=3, labels={"example.com/block": "b2"}),
            tnode("n1", "z1", "r2", gpus=1, labels={"example.com/block": "b1"}),
            tnode("n2", "z1", "r2", gpus=1, labels={"example.com/block": "b1"}),
            job("byrack", "q", 2, gpus=1, topology=required(RACK)),
            job("byblock", "q", 2, gpus=1, topology=required("example.com/block", "blocks")),
        ],
        binds={"byrack-0": "n1", "byrack-1": "n2", "byblock-0": "n0", "byblock-1": "n0"},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_topology_allocate(scenario: Scenario) -> None:
    check(scenario)
