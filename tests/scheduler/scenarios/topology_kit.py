"""Shared pieces of the topology scenario tables: one Topology and labelled nodes.

Why: every topology scenario needs the same three-level Topology (zone, rack,
hostname) and nodes labelled along it; spelling them once keeps the tables
about the placement rule each case pins down.
"""

from __future__ import annotations

from typing import Any

from tests.kits.worlds import node, topology, topology_constraint

TOPO = "cluster-topo"
ZONE = "topology.kubernetes.io/zone"
RACK = "topology.kubernetes.io/rack"
HOST = "kubernetes.io/hostname"
TOPOLOGY = topology(TOPO, ZONE, RACK, HOST)

Obj = dict[str, Any]


def tnode(name: str, zone: str | None, rack: str | None, **args: Any) -> Obj:
    """A node labelled with its zone and rack (a None level is left unlabelled) and hostname."""
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    if rack is not None:
        labels[RACK] = rack
    return node(name, labels={**labels, **args.pop("labels", {})}, **args)


def required(level: str, topology_name: str = TOPO) -> Obj:
    return topology_constraint(topology_name, required=level)


def preferred(level: str, within: str | None = None) -> Obj:
    return topology_constraint(TOPO, required=within, preferred=level)


__all__ = ["HOST", "RACK", "TOPO", "TOPOLOGY", "ZONE", "Obj", "preferred", "required", "tnode"]
