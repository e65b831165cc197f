"""What was simulated: the cluster's node shapes and counts, and the queue tree with its quotas.

Why: a what-if result means nothing without the "if": a reader of the report
(or of the run's JSON) must see which cluster and which quotas the figures
come from. This module summarises a :class:`~simulator.model.Scenario` into
plain data, kept in each run's JSON under ``cluster`` and shown by the report.
Nodes are grouped by shape (pool, GPUs, GPU model, CPU, memory), so a
1,523-node trace is a dozen lines; queues are read through the one typed
Queue model (``crds.queue``).
"""

from __future__ import annotations

from typing import Any

from crds.quantities import parse_quantity
from crds.queue import UNLIMITED, Queue
from simulator.model import Scenario
from simulator.objects import GPU_MODEL_LABEL, POOL_LABEL, node_gpus

_MIB = 1024 * 1024


def _allocatable(manifest: dict[str, Any]) -> dict[str, Any]:
    return dict((manifest.get("status") or {}).get("allocatable") or {})


def _shape(manifest: dict[str, Any]) -> dict[str, Any]:
    """The shape of one Node: pool, GPUs, GPU model, CPU cores, memory in GiB."""
    allocatable = _allocatable(manifest)
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    cpu = allocatable.get("cpu")
    memory = allocatable.get("memory")
    return {
        "pool": labels.get(POOL_LABEL),
        "gpus": node_gpus(manifest),
        "gpu_model": labels.get(GPU_MODEL_LABEL),
        "cpu": None if cpu is None else float(parse_quantity(str(cpu))),
        "memory_gib": None
        if memory is None
        else round(float(parse_quantity(str(memory)) / _MIB) / 1024, 2),
    }


def _node_groups(scenario: Scenario) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for manifest in scenario.nodes:
        shape = _shape(manifest)
        key = tuple(shape.values())
        if key in groups:
            groups[key]["count"] += 1
        else:
            groups[key] = {**shape, "count": 1, "autoscale": None}
    # by pool, then the biggest GPU nodes first, then the most common shape
    out = sorted(groups.values(), key=lambda g: (g["pool"] or "", -g["gpus"], -g["count"]))
    for pool in scenario.pools:
        shape = _shape(pool.template)
        out.append(
            {
                **shape,
                "pool": pool.name,
                "count": pool.min_nodes,
                "autoscale": {"min": pool.min_nodes, "max": pool.max_nodes},
            }
        )
    return out


def _number(value: Any) -> float | None:
    """A quota or limit as a float, None for unlimited (-1)."""
    number = float(value)
    return None if number == UNLIMITED else number


def _queues(scenario: Scenario) -> list[dict[str, Any]]:
    out = []
    for manifest in scenario.queues:
        queue = Queue.from_manifest(manifest)
        gpu = queue.spec.resources_or_default().get("gpu")
        out.append(
            {
                "name": queue.metadata.name,
                "parent": queue.parent(),
                "gpu_quota": _number(gpu.quota_or_default()),
                "gpu_limit": _number(gpu.limit_or_default()),
                "over_quota_weight": float(gpu.over_quota_weight_or_default()),
                "priority": queue.spec.priority_or_default(),
            }
        )
    return out


def describe(scenario: Scenario) -> dict[str, Any]:
    """``{"nodes": [shape and count...], "queues": [quota, limit, weight, priority...]}``.

    Only lists at the top, so the comparison's ``diff`` (numbers only) leaves
    it out: both runs of a comparison simulate the same cluster. A GPU quota
    or limit of None is unlimited; a limit of 0 is KAI's default hard cap of
    zero only when set so (the cluster YAML's default limit is unlimited).
    """
    return {"nodes": _node_groups(scenario), "queues": _queues(scenario)}
