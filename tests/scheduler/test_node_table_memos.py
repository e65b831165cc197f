"""Pod node masks and the scale-up hint's node shapes, formed once per node table.

Why: a pending pod with a required node affinity (the Alibaba trace's gpuspec
list pins a third of its GPU pods to GPU models) had its affinity matched against
every node in every cycle, and a cycle giving a scale-up hint grouped every node
into shapes again: together about 60% of that replay's CPU. Both read only the
nodes (names, labels, taints, allocatable), so the cache's node table keeps them
from cycle to cycle and drops them with the table when a node changes. These
tests hold the three parts of that: formed once while the table stays, formed
again (and right) after a node changes, and distinct pods' rules kept apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crds.documents import SourcedObject
from scheduler.actions import scale_hint
from scheduler.cache.cluster_cache import ClusterCache
from scheduler.config import SchedulerConfig
from scheduler.cycle import run_cycle
from scheduler.plugins import predicates
from tests.kits.worlds import job, node, queue

V100 = {"gpu.model": "V100"}
A100 = {"gpu.model": "A100"}


def _model_affinity(model: str) -> dict[str, Any]:
    term = {"key": "gpu.model", "operator": "In", "values": [model]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [term]}]
            }
        }
    }


def _cache(*objects: Any) -> ClusterCache:
    cache = ClusterCache()
    flat = [o for item in objects for o in (item if isinstance(item, list) else [item])]
    cache.upsert_all(SourcedObject(body, "test", i) for i, body in enumerate(flat))
    return cache


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def _cycle(cache: ClusterCache, now: float) -> Any:
    return run_cycle(cache.snapshot(now=now).snapshot, SchedulerConfig())


def test_an_affinity_is_matched_against_the_nodes_once_per_node_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    matched = _counting(monkeypatch, predicates, "node_affinity_mask")
    # the A100 gang waits (only V100 nodes); its affinity is asked in every cycle
    cache = _cache(
        queue("qa", gpu_quota=8),
        node("v0", gpus=8, labels=V100),
        job("wants-a100", "qa", 1, gpus=8, affinity=_model_affinity("A100")),
    )
    for now in (1.0, 2.0, 3.0):
        result = _cycle(cache, now)
        assert not result.binds
    assert len(matched) == 1
    # a node change is a new table: the affinity is matched again, against the new nodes
    cache.upsert(SourcedObject(node("a0", gpus=8, labels=A100), "test", 99))
    result = _cycle(cache, 4.0)
    assert [b.node for b in result.binds] == ["a0"]
    assert len(matched) == 2


def test_two_pods_rules_keep_their_own_masks(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _cache(
        queue("qa", gpu_quota=16),
        node("v0", gpus=8, labels=V100),
        node("a0", gpus=8, labels=A100),
        job("wants-v100", "qa", 1, gpus=8, affinity=_model_affinity("V100")),
        job("wants-a100", "qa", 1, gpus=8, affinity=_model_affinity("A100")),
    )
    _cycle(cache, 0.0)  # forms the table's masks for both rules
    placed = {b.pod.split("/")[-1].rsplit("-", 1)[0]: b.node for b in _cycle(cache, 1.0).binds}
    assert placed == {"wants-v100": "v0", "wants-a100": "a0"}


def test_kept_masks_cannot_be_changed_in_place() -> None:
    """Shared from cycle to cycle, a mask changed in place would change every later cycle."""
    cache = _cache(
        queue("qa", gpu_quota=8),
        node("v0", gpus=8, labels=V100),
        job("wants-v100", "qa", 1, gpus=8, affinity=_model_affinity("V100")),
    )
    snapshot = cache.snapshot().snapshot
    (pod,) = [p for j in snapshot.jobs.values() for p in j.iter_pods()]
    ((mask, reason),) = predicates._masks(snapshot.nodes.meta, pod, has_taints=False)
    assert (mask.tolist(), reason) == ([True], "node(s) didn't match Pod's node affinity")
    with pytest.raises(ValueError, match="read-only"):
        mask &= np.zeros(1, dtype=bool)


def test_node_shapes_are_grouped_once_per_node_table(monkeypatch: pytest.MonkeyPatch) -> None:
    grouped = _counting(monkeypatch, scale_hint, "_node_shapes")
    # a gang bigger than any node waits; each cycle gives it a hint, from the node shapes
    cache = _cache(
        queue("qa", gpu_quota=16),
        node("v0", gpus=8, labels=V100),
        job("too-big", "qa", 1, gpus=16),
    )
    for now in (1.0, 2.0):
        (outcome,) = [o for o in _cycle(cache, now).pod_groups if o.outcome == "pending"]
        assert outcome.scale_up_hint is not None
    assert len(grouped) == 1
    cache.upsert(SourcedObject(node("v1", gpus=8, labels=V100), "test", 99))
    _cycle(cache, 3.0)
    assert len(grouped) == 2
