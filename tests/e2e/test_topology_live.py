"""Topology-aware placement against a real API server (docs/topology.md, docs/semantics.md §5.8).

The whole pipeline runs (``podmuster run all``: podgrouper, scheduler, binder, status
controllers); kwok stands in for the kubelets. Each test labels its own kwok nodes into
zone ``z1`` with two racks, creates a Topology of its own (levels zone, rack) and a
user-managed PodGroup whose ``spec.topologyConstraint`` names it. Assertions are on what
the API shows: the pods' ``nodeName`` (bound, Running) and the nodes' rack labels, or,
for a Topology that does not exist, the PodGroup's scheduling condition and the pods'
``PodScheduled=False`` message.

Rack ``r1`` sorts first (it wins ties) and is partly filled by a pod of another group;
rack ``r2`` is empty.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import Obj, saying, wait_for
from .objects import (
    bind_requests,
    kai_bare_pod,
    kai_gang,
    kai_template,
    kai_topology,
    live_pods,
    scheduling_reasons,
    unschedulable,
    wait_running,
)
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ZONE = "topology.kubernetes.io/zone"
RACK = "podmuster.io/e2e-rack"


@dataclass
class TwoRacks:
    """Four 4-CPU nodes of this test, n0 and n1 in rack r1, n2 and n3 in rack r2 (zone
    z1), a queue, and the test's Topology; n0 is partly taken by a pod of another group."""

    cluster: Cluster
    namespace: str
    nodes: NodeFactory
    queue: str
    topology: str
    racks: dict[str, str] = field(default_factory=dict)  # node -> rack

    def build(self, filler_cpu: str) -> None:
        for rack in ("r1", "r1", "r2", "r2"):
            self.racks[self.nodes.add(cpu="4", labels={ZONE: "z1", RACK: rack})] = rack
        first = next(iter(self.racks))
        template = kai_template(
            self.nodes.pool, cpu=filler_cpu, node=first, labels={"app": "filler"}
        )
        self.cluster.kubectl.create(kai_bare_pod("filler", self.namespace, self.queue, template))
        wait_running(self.cluster, self.namespace, "app=filler", 1, timeout=30)

    def gang_racks(self, name: str, pods: int, level: str) -> list[str]:
        """Run a gang of ``pods`` 2-CPU pods with ``level`` (``requiredTopologyLevel`` or
        ``preferredTopologyLevel``) set to rack; the racks its Running pods are on, sorted."""
        template = kai_template(self.nodes.pool, cpu="2", labels={"app": name})
        constraint = {"topology": self.topology, level: RACK}
        gang = kai_gang(
            name, self.namespace, self.queue, template, pods, topologyConstraint=constraint
        )
        submit(self.cluster, gang)
        running = wait_running(self.cluster, self.namespace, f"app={name}", pods, timeout=30)
        return sorted(self.racks[p["spec"]["nodeName"]] for p in running)


@pytest.fixture
def two_racks(
    cluster: Cluster, namespace: str, kwok_nodes: NodeFactory, kai_queues: QueueFactory
) -> Iterator[TwoRacks]:
    name = f"topo-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.create(kai_topology(name, [ZONE, RACK]))
    yield TwoRacks(cluster, namespace, kwok_nodes, kai_queues.add("team"), name)
    cluster.kubectl.run("delete", "topology.kai.scheduler", name, "--ignore-not-found")


def submit(cluster: Cluster, objects: list[Obj]) -> None:
    for obj in objects:
        cluster.kubectl.create(obj)


def test_required_rack_puts_the_gang_in_the_one_rack_that_holds_it(
    podmuster: dict[str, ManagedProcess], two_racks: TwoRacks
) -> None:
    # r1 keeps 1 + 4 CPU free: room for two 2-CPU pods; r2 holds four. Without the
    # constraint the gang of four spreads over both racks (nine CPU free in all).
    two_racks.build(filler_cpu="3")
    assert two_racks.gang_racks("train", 4, "requiredTopologyLevel") == ["r2"] * 4


def test_preferred_rack_keeps_the_gang_in_one_rack_when_one_holds_it(
    podmuster: dict[str, ManagedProcess], two_racks: TwoRacks
) -> None:
    # r1 has room for three 2-CPU pods, r2 for four. Bin-packing alone starts on the
    # fuller node of r1 and spills into r2; the preference picks the rack that holds all.
    two_racks.build(filler_cpu="2")
    assert two_racks.gang_racks("near", 4, "preferredTopologyLevel") == ["r2"] * 4


def test_preferred_rack_is_best_effort(
    podmuster: dict[str, ManagedProcess], two_racks: TwoRacks
) -> None:
    # No rack holds five 2-CPU pods: the gang still starts, and the rack with the most
    # room for it (r2) fills first.
    two_racks.build(filler_cpu="2")
    assert two_racks.gang_racks("wide", 5, "preferredTopologyLevel") == ["r1"] + ["r2"] * 4


def test_a_missing_topology_keeps_the_gang_pending_and_says_so(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    kwok_nodes.add(cpu="8", labels={ZONE: "z1", RACK: "r1"})
    queue = kai_queues.add("team")
    missing = f"absent-{uuid.uuid4().hex[:6]}"
    template = kai_template(kwok_nodes.pool, cpu="1", labels={"app": "lost"})
    constraint = {"topology": missing, "requiredTopologyLevel": RACK}
    submit(cluster, kai_gang("lost", namespace, queue, template, 2, topologyConstraint=constraint))

    words = f"Requested topology {missing} does not exist"
    # The first condition may still say the gang is not complete (one pod created so far).
    probe = saying(words, partial(scheduling_reasons, cluster, namespace, "lost"))
    reasons = wait_for("why lost waits", probe)
    assert any(words in r["message"] for r in reasons), reasons
    probe = saying(words, partial(unschedulable, cluster, namespace, "lost-0"))
    condition = wait_for("PodScheduled=False", probe)
    assert condition["reason"] == "Unschedulable"
    assert words in condition["message"], condition
    assert not [p for p in live_pods(cluster, namespace, "app=lost") if p["spec"].get("nodeName")]
    assert not bind_requests(cluster, namespace)
