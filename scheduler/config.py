"""Scheduler configuration: actions, placement strategy and plugin arguments, validated at load.

Why: the live scheduler, ``podmuster schedule --config`` and the simulator read
the same file. Every value is checked when the file is loaded, with an error
naming the key, instead of being parsed from strings at use (KAI's plugin
arguments). With no file the defaults reproduce KAI's: the five actions in
KAI's order, bin-packing for GPU and CPU tasks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from crds import durations
from crds.names import DEFAULT_SCHEDULER_NAME
from scheduler.usage.params import UsageConfigError, UsageDBConfig, parse_usage_db_config

ACTIONS = ("allocate", "consolidation", "reclaim", "preempt", "stalegangeviction")
STRATEGIES = ("binpack", "spread")
STUCK_IN_RELEASING_S = 120.0
"""KAI's default ``stuckInReleasingThreshold``, 2 minutes (``scheduler.api.pods.frees_room``)."""


class ConfigError(ValueError):
    """A bad scheduler configuration value; the message names the key."""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Everything a cycle needs to know besides the snapshot."""

    actions: tuple[str, ...] = ACTIONS
    gpu_placement: str = "binpack"
    cpu_placement: str = "binpack"
    k_value: float = 1.0
    reclaimer_saturation_multiplier: float = 1.0
    queue_depth_per_action: Mapping[str, int] = field(default_factory=dict)
    max_consolidation_preemptees: int = 16
    # Bounds on the disruption search (None: no bound). Work: victim chunks tried for one
    # preemptor, simulations for the whole action and cycle. Time: seconds one action, and
    # one preemptor within it, may search (KAI's maxActionSearchDuration 5m and
    # maxJobSearchDuration 4m). Generous enough not to change any decision on KAI's
    # benchmark topologies or benchmarks/disruption.py (tests/scheduler/test_search_bounds.py).
    max_victim_chunks: int | None = None
    max_simulations_per_action: int | None = 200
    max_action_search_s: float | None = 300.0
    max_job_search_s: float | None = 240.0
    staleness_grace_period_s: float = 60.0
    # a Running pod deleted longer ago than this is stuck: no pipelining onto its room
    stuck_in_releasing_s: float = STUCK_IN_RELEASING_S
    default_preempt_min_runtime_s: float = 0.0
    default_reclaim_min_runtime_s: float = 0.0
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # every queue under the admission gate, not only the annotated ones (§5.11)
    admission_gate_all_queues: bool = False
    # where queue usage for time-based fair share comes from (None: no usage, u = 0)
    usage_db: UsageDBConfig | None = None
    # NUMA-aware placement (plugins.numa.enabled, opt-in as in KAI) and the resources
    # published per zone that the kubelet does not align (plugins.numa.arguments.ignoreList)
    numa: bool = False
    numa_ignore: tuple[str, ...] = ()

    def with_actions(self, actions: tuple[str, ...]) -> SchedulerConfig:
        return replace(self, actions=validate_actions(actions, "actions"))


def validate_actions(actions: Any, key: str) -> tuple[str, ...]:
    if isinstance(actions, str):
        actions = [a.strip() for a in actions.split(",") if a.strip()]
    if not isinstance(actions, list | tuple) or not actions:
        raise ConfigError(f"{key}: expected a non-empty list of actions")
    for action in actions:
        if action not in ACTIONS:
            raise ConfigError(f"{key}: unknown action {action!r}; known: {', '.join(ACTIONS)}")
    return tuple(actions)


def _strategy(raw: Any, key: str) -> str:
    if raw not in STRATEGIES:
        raise ConfigError(f"{key}: must be one of {', '.join(STRATEGIES)}, got {raw!r}")
    return str(raw)


def _number(raw: Any, key: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ConfigError(f"{key}: expected a number, got {raw!r}")
    return float(raw)


def parse_duration(raw: Any, key: str) -> float:
    """Seconds from a number or a Go-style duration string (``90s``, ``5m``, ``1h30m``)."""
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{key}: expected a duration such as '60s', got {raw!r}")
    try:
        return durations.seconds(raw)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None


_KNOWN_KEYS = {
    "actions",
    "placementStrategy",
    "plugins",
    "queueDepthPerAction",
    "maxConsolidationPreemptees",
    "maxVictimChunks",
    "maxSimulationsPerAction",
    "maxActionSearchDuration",
    "maxJobSearchDuration",
    "defaultStalenessGracePeriod",
    "stuckInReleasingThreshold",
    "minRuntime",
    "schedulerName",
    "queueAdmissionGate",
    "usageDBConfig",
}


def load_config(data: Mapping[str, Any]) -> SchedulerConfig:
    """A SchedulerConfig from a parsed YAML mapping (SchedulingShard-like keys)."""
    if not isinstance(data, Mapping):
        raise ConfigError("expected a mapping at the top level")
    unknown = set(data) - _KNOWN_KEYS
    if unknown:
        raise ConfigError(
            f"{sorted(unknown)[0]}: unknown key; known: {', '.join(sorted(_KNOWN_KEYS))}"
        )
    config = SchedulerConfig()
    values: dict[str, Any] = {}
    if "actions" in data:
        values["actions"] = validate_actions(data["actions"], "actions")
    placement = data.get("placementStrategy") or {}
    if not isinstance(placement, Mapping):
        raise ConfigError("placementStrategy: expected a mapping with gpu and cpu")
    for key in placement:
        if key not in ("gpu", "cpu"):
            raise ConfigError(f"placementStrategy.{key}: unknown key; use gpu or cpu")
    if "gpu" in placement:
        values["gpu_placement"] = _strategy(placement["gpu"], "placementStrategy.gpu")
    if "cpu" in placement:
        values["cpu_placement"] = _strategy(placement["cpu"], "placementStrategy.cpu")
    plugins = data.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise ConfigError("plugins: expected a mapping of plugin name to settings")
    proportion = (plugins.get("proportion") or {}).get("arguments") or {}
    if "kValue" in proportion:
        values["k_value"] = max(
            0.0, _number(proportion["kValue"], "plugins.proportion.arguments.kValue")
        )
    for name in ("reclaimerSaturationMultiplier", "relcaimerSaturationMultiplier"):
        if name in proportion:
            multiplier = _number(proportion[name], f"plugins.proportion.arguments.{name}")
            values["reclaimer_saturation_multiplier"] = max(1.0, multiplier)
    depth = data.get("queueDepthPerAction") or {}
    if not isinstance(depth, Mapping):
        raise ConfigError("queueDepthPerAction: expected a mapping of action to depth")
    checked_depth = {}
    for action, value in depth.items():
        validate_actions([action], f"queueDepthPerAction.{action}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"queueDepthPerAction.{action}: expected a positive integer")
        checked_depth[str(action)] = value
    values["queue_depth_per_action"] = checked_depth
    if "maxConsolidationPreemptees" in data:
        raw = data["maxConsolidationPreemptees"]
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < -1:
            raise ConfigError("maxConsolidationPreemptees: expected an integer >= -1")
        values["max_consolidation_preemptees"] = raw
    for key, attr in (
        ("maxVictimChunks", "max_victim_chunks"),
        ("maxSimulationsPerAction", "max_simulations_per_action"),
    ):
        if key in data:
            raw = data[key]
            if raw is None:  # an explicit null lifts the bound
                values[attr] = None
                continue
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
                raise ConfigError(f"{key}: expected a positive integer or null")
            values[attr] = raw
    for key, attr in (
        ("maxActionSearchDuration", "max_action_search_s"),
        ("maxJobSearchDuration", "max_job_search_s"),
    ):
        if key in data:
            if data[key] is None:
                values[attr] = None
                continue
            seconds = parse_duration(data[key], key)
            if seconds <= 0:
                raise ConfigError(f"{key}: expected a positive duration or null")
            values[attr] = seconds
    if "defaultStalenessGracePeriod" in data:
        values["staleness_grace_period_s"] = parse_duration(
            data["defaultStalenessGracePeriod"], "defaultStalenessGracePeriod"
        )
    if "stuckInReleasingThreshold" in data:
        seconds = parse_duration(data["stuckInReleasingThreshold"], "stuckInReleasingThreshold")
        if seconds <= 0:
            raise ConfigError("stuckInReleasingThreshold: expected a positive duration")
        values["stuck_in_releasing_s"] = seconds
    min_runtime = data.get("minRuntime") or {}
    if not isinstance(min_runtime, Mapping):
        raise ConfigError("minRuntime: expected a mapping")
    if "preemptMinRuntime" in min_runtime:
        values["default_preempt_min_runtime_s"] = max(
            0.0, parse_duration(min_runtime["preemptMinRuntime"], "minRuntime.preemptMinRuntime")
        )
    if "reclaimMinRuntime" in min_runtime:
        values["default_reclaim_min_runtime_s"] = max(
            0.0, parse_duration(min_runtime["reclaimMinRuntime"], "minRuntime.reclaimMinRuntime")
        )
    if "schedulerName" in data:
        values["scheduler_name"] = str(data["schedulerName"])
    if "queueAdmissionGate" in data:
        raw = data["queueAdmissionGate"]
        if not isinstance(raw, bool):
            raise ConfigError(f"queueAdmissionGate: expected true or false, got {raw!r}")
        values["admission_gate_all_queues"] = raw
    if "usageDBConfig" in data:
        try:
            values["usage_db"] = parse_usage_db_config(data["usageDBConfig"], os.environ)
        except UsageConfigError as exc:
            raise ConfigError(str(exc)) from None
    values.update(_numa(plugins.get("numa")))
    return replace(config, **values)


def _numa(raw: Any) -> dict[str, Any]:
    """``plugins.numa``: ``enabled`` and ``arguments.ignoreList`` (comma-separated names)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError("plugins.numa: expected a mapping with enabled and arguments")
    values: dict[str, Any] = {}
    if "enabled" in raw:
        if not isinstance(raw["enabled"], bool):
            raise ConfigError(
                f"plugins.numa.enabled: expected true or false, got {raw['enabled']!r}"
            )
        values["numa"] = raw["enabled"]
    arguments = raw.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ConfigError("plugins.numa.arguments: expected a mapping")
    ignore = arguments.get("ignoreList", "")
    if not isinstance(ignore, str):
        raise ConfigError(f"plugins.numa.arguments.ignoreList: expected a string, got {ignore!r}")
    values["numa_ignore"] = tuple(n.strip() for n in ignore.split(",") if n.strip())
    return values
