"""Scheduler plugins: each registers session callbacks for one concern.

``builtin_plugins`` builds them in KAI's order from a validated configuration;
there is no import-time registration.
"""

from __future__ import annotations

from scheduler.config import SchedulerConfig
from scheduler.framework.interfaces import Plugin
from scheduler.plugins.dra import DraPlugin
from scheduler.plugins.gpusharing import GpuSharingPlugin
from scheduler.plugins.minruntime import MinRuntimePlugin
from scheduler.plugins.numa import NumaPlugin
from scheduler.plugins.ordering import OrderingPlugin
from scheduler.plugins.pod_affinity import PodAffinityPlugin
from scheduler.plugins.predicates import PredicatesPlugin
from scheduler.plugins.proportion.plugin import ProportionPlugin
from scheduler.plugins.scoring import ScoringPlugin
from scheduler.plugins.volumes import VolumesPlugin


def builtin_plugins(config: SchedulerConfig) -> list[Plugin]:
    """The default plugin set, in KAI's order (predicates, proportion, ordering, scoring)."""
    numa: list[Plugin] = [NumaPlugin(config.numa_ignore)] if config.numa else []
    return [
        PredicatesPlugin(),
        GpuSharingPlugin(),
        VolumesPlugin(),
        DraPlugin(),
        PodAffinityPlugin(),
        *numa,
        ProportionPlugin(config.k_value, config.reclaimer_saturation_multiplier),
        MinRuntimePlugin(config),
        OrderingPlugin(),
        ScoringPlugin(config.gpu_placement, config.cpu_placement),
    ]


__all__ = ["builtin_plugins"]
