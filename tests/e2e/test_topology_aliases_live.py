"""Topology level aliases on a real API server (docs/topology.md, KAI v0.17).

The CRD podmuster installs must take ``spec.levels[].alias``, let an alias be edited
while the node labels stay immutable (its CEL rule), and the running scheduler must
place a gang whose ``requiredTopologyLevel`` names the alias exactly as the label: two
kwok nodes in rack ``r1`` (one partly taken), two in ``r2``; a gang of four 2-CPU pods
fits only ``r2``.
"""

from __future__ import annotations

import uuid

import pytest

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .kube import KubectlError
from .objects import kai_bare_pod, kai_gang, kai_template, kai_topology, wait_running
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

ZONE = "topology.kubernetes.io/zone"
RACK = "podmuster.io/e2e-rack"


def test_alias_is_editable_and_places_like_the_label(
    podmuster: dict[str, ManagedProcess],
    cluster: Cluster,
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
) -> None:
    name = f"alias-{uuid.uuid4().hex[:6]}"
    topology = kai_topology(name, [ZONE, RACK])
    topology["spec"]["levels"][1]["alias"] = "shelf"
    cluster.kubectl.create(topology)
    try:
        # the alias may change; the node labels may not
        cluster.kubectl.run(
            "patch", "topology.kai.scheduler", name, "--type=json",
            "-p", '[{"op": "replace", "path": "/spec/levels/1/alias", "value": "rack"}]',
        )  # fmt: skip
        with pytest.raises(KubectlError, match="only aliases may be edited"):
            cluster.kubectl.run(
                "patch", "topology.kai.scheduler", name, "--type=json",
                "-p", '[{"op": "replace", "path": "/spec/levels/1/nodeLabel", "value": "x"}]',
            )  # fmt: skip
        racks = {}
        for rack in ("r1", "r1", "r2", "r2"):
            racks[kwok_nodes.add(cpu="4", labels={ZONE: "z1", RACK: rack})] = rack
        queue = kai_queues.add("team")
        first = next(iter(racks))
        filler = kai_template(kwok_nodes.pool, cpu="3", node=first, labels={"app": "filler"})
        cluster.kubectl.create(kai_bare_pod("filler", namespace, queue, filler))
        wait_running(cluster, namespace, "app=filler", 1, timeout=30)
        template = kai_template(kwok_nodes.pool, cpu="2", labels={"app": "train"})
        constraint = {"topology": name, "requiredTopologyLevel": "rack"}
        for obj in kai_gang("train", namespace, queue, template, 4, topologyConstraint=constraint):
            cluster.kubectl.create(obj)
        running = wait_running(cluster, namespace, "app=train", 4, timeout=30)
        assert sorted(racks[p["spec"]["nodeName"]] for p in running) == ["r2"] * 4
    finally:
        cluster.kubectl.run("delete", "topology.kai.scheduler", name, "--ignore-not-found")
