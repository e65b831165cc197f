"""Scheduler configuration: actions, placement strategy and plugin arguments, validated at load.

Why: the live scheduler, ``podmuster schedule --config`` and the simulator read
the same file. Every value is checked when the file is loaded, with an error
naming the key, instead of being parsed from strings at use (KAI's plugin
arguments). With no file the defaults reproduce KAI's: the five actions in
KAI's order, bin-packing for GPU and CPU tasks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from crds import durations
from crds.errors import shown
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

    def with_actions(self, actions: str | Sequence[str], key: str = "actions") -> SchedulerConfig:
        """This configuration running ``actions``; ``ConfigError`` names ``key`` when bad."""
        return replace(self, actions=validate_actions(actions, key))


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
        raise ConfigError(f"{key}: must be one of {', '.join(STRATEGIES)}, got {shown(raw)}")
    return str(raw)


def _number(raw: Any, key: str) -> float:
    """A plugin argument's number. KAI keeps plugin arguments as strings (its
    SchedulingShard's ``arguments`` is a map of strings: ``kValue: "1.5"``), so a string
    holding a finite number is taken as that number; YAML's own numbers are too."""
    if isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return value
    elif not isinstance(raw, bool) and isinstance(raw, int | float):
        return float(raw)
    raise ConfigError(f"{key}: expected a number, got {shown(raw)}")


def parse_duration(raw: Any, key: str) -> float:
    """Seconds from a number or a Go-style duration string (``90s``, ``5m``, ``1h30m``)."""
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{key}: expected a duration such as '60s', got {shown(raw)}")
    try:
        return durations.seconds(raw)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None


# KAI's plugins (SchedulingShard spec.plugins) and the arguments podmuster reads of each
_PLUGIN_ARGUMENTS: Mapping[str, tuple[str, ...]] = {
    "proportion": ("kValue", "reclaimerSaturationMultiplier", "relcaimerSaturationMultiplier"),
    "numa": ("ignoreList",),
    **dict.fromkeys(
        (
            "predicates",
            "priority",
            "nodeavailability",
            "resourcetype",
            "podaffinity",
            "elastic",
            "kubeflow",
            "ray",
            "subgrouporder",
            "taskorder",
            "nominatednode",
            "dynamicresources",
            "minruntime",
            "topology",
            "snapshot",
            "gpupack",
            "gpuspread",
            "nodeplacement",
            "gpusharingorder",
        ),
        (),
    ),
}
_MIN_RUNTIME = {
    "preemptMinRuntime": "default_preempt_min_runtime_s",
    "reclaimMinRuntime": "default_reclaim_min_runtime_s",
}

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


def read_file(path: str) -> Any:
    """The parsed YAML of a configuration file; ``ConfigError`` in one line (the caller names
    the file) when it cannot be read or is not YAML."""
    import yaml  # only with --config: a JSON snapshot alone never loads PyYAML

    from crds.documents import yaml_error

    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(str(yaml_error(exc))) from None


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
    values.update(_plugins(data.get("plugins")))
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
    min_runtime = _mapping(data.get("minRuntime"), "minRuntime", _MIN_RUNTIME)
    for key, attr in _MIN_RUNTIME.items():
        if key in min_runtime:
            seconds = parse_duration(min_runtime[key], f"minRuntime.{key}")
            if seconds < 0:
                raise ConfigError(f"minRuntime.{key}: must not be negative, got {seconds:g}s")
            values[attr] = seconds
    if "schedulerName" in data:
        values["scheduler_name"] = str(data["schedulerName"])
    if "queueAdmissionGate" in data:
        raw = data["queueAdmissionGate"]
        if not isinstance(raw, bool):
            raise ConfigError(f"queueAdmissionGate: expected true or false, got {shown(raw)}")
        values["admission_gate_all_queues"] = raw
    if "usageDBConfig" in data:
        try:
            values["usage_db"] = parse_usage_db_config(data["usageDBConfig"], os.environ)
        except UsageConfigError as exc:
            raise ConfigError(str(exc)) from None
    return replace(config, **values)


def _mapping(raw: Any, key: str, known: Iterable[str]) -> Mapping[str, Any]:
    """``raw`` (None: empty) as a mapping whose keys are all ``known``; else the key is named."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: expected a mapping, got {shown(raw)}")
    names = sorted(known)
    for name in raw:
        if name not in names:
            raise ConfigError(f"{key}.{name}: unknown key; known: {', '.join(names) or 'none'}")
    return raw


def _plugins(raw: Any) -> dict[str, Any]:
    """``plugins``: KAI's map of plugin name to ``enabled``, ``priority`` and ``arguments``.

    Every KAI plugin name is accepted, but only what podmuster acts on may be set: the
    proportion and numa arguments, and numa's ``enabled`` (the other plugins always run,
    in KAI's order). Anything else is an error naming its key, not a setting dropped.
    """
    plugins = _mapping(raw, "plugins", _PLUGIN_ARGUMENTS)
    values: dict[str, Any] = {}
    for name, settings in plugins.items():
        key = f"plugins.{name}"
        settings = _mapping(settings, key, ("enabled", "priority", "arguments"))
        enabled = settings.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            raise ConfigError(f"{key}.enabled: expected true or false, got {shown(enabled)}")
        if name == "numa":
            if enabled is not None:
                values["numa"] = enabled
        elif enabled is False:
            raise ConfigError(f"{key}.enabled: podmuster always runs {name}; only numa is optional")
        if "priority" in settings:
            raise ConfigError(f"{key}.priority: podmuster runs the plugins in KAI's default order")
        arguments = _mapping(settings.get("arguments"), f"{key}.arguments", _PLUGIN_ARGUMENTS[name])
        values.update(_ARGUMENTS[name](arguments) if name in _ARGUMENTS else {})
    return values


def _proportion(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``plugins.proportion.arguments``: kValue (>= 0) and the reclaimer's multiplier (>= 1)."""
    values: dict[str, Any] = {}
    key = "plugins.proportion.arguments"
    if "kValue" in arguments:
        k_value = _number(arguments["kValue"], f"{key}.kValue")
        if k_value < 0:
            raise ConfigError(f"{key}.kValue: must be >= 0, got {k_value:g}")
        values["k_value"] = k_value
    for name in ("reclaimerSaturationMultiplier", "relcaimerSaturationMultiplier"):
        if name in arguments:
            multiplier = _number(arguments[name], f"{key}.{name}")
            if multiplier < 1:
                raise ConfigError(f"{key}.{name}: must be >= 1, got {multiplier:g}")
            values["reclaimer_saturation_multiplier"] = multiplier
    return values


def _numa(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``plugins.numa.arguments.ignoreList``: comma-separated resource names."""
    ignore = arguments.get("ignoreList", "")
    if not isinstance(ignore, str):
        raise ConfigError(
            f"plugins.numa.arguments.ignoreList: expected a string, got {shown(ignore)}"
        )
    return {"numa_ignore": tuple(n.strip() for n in ignore.split(",") if n.strip())}


_ARGUMENTS: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "proportion": _proportion,
    "numa": _numa,
}
