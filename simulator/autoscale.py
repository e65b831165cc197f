"""A simulated cluster autoscaler for node pools with min and max sizes.

Why: "would an autoscaled pool absorb this load, and how long do jobs wait for
it" is a what-if question the simulator must answer; the live scheduler's
decisions (pending reasons) drive it, as they drive a real autoscaler.

Rules (docs/simulate.md): a pool starts with ``min`` nodes. After a cycle
that leaves jobs pending because no node has room ("0/N nodes are
available"), the pool is asked for enough nodes to hold those jobs' GPUs
(one node per job for a pool without GPUs), up to ``max`` counting nodes
already on their way; they join ``scaleUpDelay`` later. A pool node that has
been empty for ``scaleDownDelay`` is removed, down to ``min``.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler.cycle import CycleResult
from simulator import objects
from simulator.model import AutoscaledPool

if TYPE_CHECKING:
    from simulator.events import Simulation

UNSCHEDULABLE = ("nodes are available", "no nodes in the cluster")


class Autoscaler:
    def __init__(self, sim: Simulation, pools: Sequence[AutoscaledPool]) -> None:
        self.sim = sim
        self.pools = list(pools)
        self.size = {pool.name: 0 for pool in pools}
        self.coming = {pool.name: 0 for pool in pools}
        self.serial = {pool.name: 0 for pool in pools}
        self.scale_ups = 0
        self.scale_downs = 0

    def start(self) -> None:
        for pool in self.pools:
            for _ in range(pool.min_nodes):
                self._add(pool)

    def _add(self, pool: AutoscaledPool) -> None:
        manifest = copy.deepcopy(pool.template)
        prefix = manifest["metadata"]["name"]
        manifest["metadata"]["name"] = f"{prefix}-{self.serial[pool.name]}"
        manifest["metadata"].setdefault("labels", {})[objects.POOL_LABEL] = pool.name
        self.serial[pool.name] += 1
        self.size[pool.name] += 1
        self.sim.add_node(manifest, pool.name)

    def after_cycle(self, result: CycleResult) -> None:
        if not self.pools:
            return
        demand = 0.0
        jobs = 0
        for outcome in result.pod_groups:
            if outcome.outcome != "pending":
                continue
            if not any(text in reason for reason in outcome.reasons for text in UNSCHEDULABLE):
                continue
            run = self.sim.groups.get(outcome.pod_group)
            if run is None:
                continue
            jobs += 1
            demand += sum(self.sim.pod_gpu[pod] for pod in run.pending)
        if not jobs:
            return
        for pool in self.pools:
            gpus = _template_gpus(pool)
            wanted = math.ceil(demand / gpus) if gpus else jobs
            room = pool.max_nodes - self.size[pool.name] - self.coming[pool.name]
            count = min(max(wanted - self.coming[pool.name], 0), room)
            for _ in range(count):
                self.coming[pool.name] += 1
                self.scale_ups += 1
                self.sim.push_node_event(
                    self.sim.now + pool.scale_up_delay, functools.partial(self._arrived, pool)
                )
            if count:
                return  # the first pool with room takes the demand

    def _arrived(self, pool: AutoscaledPool) -> None:
        self.coming[pool.name] -= 1
        self._add(pool)

    def node_emptied(self, index: int) -> None:
        pool_name = self.sim.node_pool[index]
        pool = next((p for p in self.pools if p.name == pool_name), None)
        if pool is None:
            return
        name = self.sim.node_names[index]
        self.sim.push_node_event(
            self.sim.now + pool.scale_down_delay, lambda: self._maybe_remove(pool, index, name)
        )

    def _maybe_remove(self, pool: AutoscaledPool, index: int, name: str) -> None:
        if self.sim.node_pool[index] != pool.name or self.sim.node_pods[index] > 0:
            return
        if self.sim.in_flight:  # a decision on its way may bind to this node: look again later
            self.sim.push_node_event(
                self.sim.now + self.sim.period,
                functools.partial(self._maybe_remove, pool, index, name),
            )
            return
        if self.size[pool.name] <= pool.min_nodes:
            return
        since = self.sim.empty_since[index]
        if since is None or self.sim.now - since < pool.scale_down_delay - 1e-9:
            return
        self.size[pool.name] -= 1
        self.scale_downs += 1
        self.sim.remove_node(name)


def _template_gpus(pool: AutoscaledPool) -> float:
    return objects.node_gpus(pool.template)
