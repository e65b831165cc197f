"""The ``usageDBConfig`` section of the scheduler configuration, validated at load.

Why this module exists: time-based fair share needs to know where queue usage
comes from (KAI's ``clientType`` and ``connectionString``) and over which window
it is summed (KAI's ``usageParams``: ``windowSize``, ``windowType``,
``halfLifePeriod``, ``tumblingWindowStartTime``, ``cronString``, ...). The live
scheduler, ``podmuster schedule`` and ``podmuster simulate`` read the same
section; every value is checked here once, with an error naming the key.
It imports nothing of the engine so that :mod:`scheduler.config` can use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crds import durations
from crds.errors import shown
from crds.meta import rfc3339_seconds
from scheduler.usage import cron

CLIENT_TYPES = ("prometheus", "builtin")
"""``prometheus``: KAI's queries against a Prometheus; ``builtin``: the scheduler's own record."""

WINDOW_TYPES = ("sliding", "tumbling", "cron")

DEFAULT_ALLOCATION_METRICS = (
    "kai_queue_allocated_gpus",
    "kai_queue_allocated_cpu_cores",
    "kai_queue_allocated_memory_bytes",
)
"""KAI's per-queue allocation gauges (label ``queue_name``), GPU, CPU, memory."""

DEFAULT_CAPACITY_METRICS = (
    'sum(kube_node_status_capacity{resource="nvidia_com_gpu"})',
    'sum(kube_node_status_capacity{resource="cpu"})',
    'sum(kube_node_status_capacity{resource="memory"})',
)
"""KAI's cluster capacity expressions (kube-state-metrics), GPU, CPU, memory."""

_METRIC_KEYS = ("gpu", "cpu", "memory")
_CRON_CHECK_AT = 4102444800.0  # 2100-01-01: an expression must have fired by then


class UsageConfigError(ValueError):
    """A bad ``usageDBConfig`` value; the message names the key."""


@dataclass(frozen=True, slots=True)
class UsageParams:
    """How queue usage is summed: window, decay, refresh (KAI's ``usageParams``)."""

    window_size_s: float = 7 * 86400.0
    window_type: str = "sliding"
    half_life_s: float | None = None  # None: no decay
    tumbling_start_s: float | None = None  # epoch seconds; required for ``tumbling``
    cron_string: str = ""  # required for ``cron``
    fetch_interval_s: float = 60.0
    staleness_s: float = 300.0
    query_resolution_s: float = 60.0
    query_timeout_s: float = 10.0
    allocation_metrics: tuple[str, str, str] = DEFAULT_ALLOCATION_METRICS
    capacity_metrics: tuple[str, str, str] = DEFAULT_CAPACITY_METRICS


@dataclass(frozen=True, slots=True)
class UsageDBConfig:
    """Where queue usage is read from, and how it is summed."""

    client_type: str = "builtin"
    connection_string: str = ""
    params: UsageParams = field(default_factory=UsageParams)
    history_file: str = ""  # builtin: where the record is kept across restarts ("" = memory)


def _duration(raw: Any, key: str, *, prometheus: bool = False) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, str) or not raw:
        raise UsageConfigError(f"{key}: expected a duration such as '10m', got {shown(raw)}")
    try:
        return durations.prometheus_seconds(raw) if prometheus else durations.seconds(raw)
    except ValueError as exc:
        raise UsageConfigError(f"{key}: {exc}") from None


def _mapping(raw: Any, key: str) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise UsageConfigError(f"{key}: expected a mapping")
    return raw


def _check_keys(data: Mapping[str, Any], known: tuple[str, ...], key: str) -> None:
    for name in data:
        if name not in known:
            raise UsageConfigError(f"{key}.{name}: unknown key; known: {', '.join(known)}")


_PARAM_KEYS = (
    "windowSize",
    "windowType",
    "halfLifePeriod",
    "tumblingWindowStartTime",
    "cronString",
    "fetchInterval",
    "stalenessPeriod",
    "waitTimeout",
    "extraParams",
)


def parse_params(raw: Any, key: str = "usageDBConfig.usageParams") -> UsageParams:
    """:class:`UsageParams` from KAI's ``usageParams`` mapping (defaults as KAI's)."""
    data = _mapping(raw, key)
    _check_keys(data, _PARAM_KEYS, key)
    values: dict[str, Any] = {}
    if "windowSize" in data:
        size = _duration(data["windowSize"], f"{key}.windowSize", prometheus=True)
        if size <= 0:
            raise UsageConfigError(f"{key}.windowSize: must be positive")
        values["window_size_s"] = size
    window_type = data.get("windowType", "sliding")
    if window_type not in WINDOW_TYPES:
        raise UsageConfigError(
            f"{key}.windowType: must be one of {', '.join(WINDOW_TYPES)}, got {shown(window_type)}"
        )
    values["window_type"] = window_type
    if data.get("halfLifePeriod") not in (None, ""):
        half_life = _duration(data["halfLifePeriod"], f"{key}.halfLifePeriod")
        values["half_life_s"] = half_life if half_life > 0 else None  # KAI: <= 0 disables
    if data.get("tumblingWindowStartTime") not in (None, ""):
        start = data["tumblingWindowStartTime"]
        try:
            values["tumbling_start_s"] = rfc3339_seconds(str(start))
        except ValueError:
            raise UsageConfigError(
                f"{key}.tumblingWindowStartTime: expected an RFC 3339 time, got {shown(start)}"
            ) from None
    if window_type == "tumbling" and "tumbling_start_s" not in values:
        raise UsageConfigError(f"{key}.tumblingWindowStartTime: required for a tumbling window")
    if window_type == "cron":
        text = data.get("cronString")
        if not isinstance(text, str) or not text:
            raise UsageConfigError(f"{key}.cronString: required for a cron window")
        try:
            cron.CronSchedule.parse(text).previous(_CRON_CHECK_AT)
        except ValueError as exc:
            raise UsageConfigError(f"{key}.cronString: {exc}") from None
        values["cron_string"] = text
    for name, attr in (("fetchInterval", "fetch_interval_s"), ("stalenessPeriod", "staleness_s")):
        if name in data:
            seconds = _duration(data[name], f"{key}.{name}")
            if seconds <= 0:
                raise UsageConfigError(f"{key}.{name}: must be positive")
            values[attr] = seconds
    if "waitTimeout" in data:
        _duration(data["waitTimeout"], f"{key}.waitTimeout")
    values.update(_extra_params(_mapping(data.get("extraParams"), f"{key}.extraParams"), key))
    params = UsageParams(**values)
    if params.staleness_s < params.fetch_interval_s:  # KAI: never staler than one fetch
        values["staleness_s"] = params.fetch_interval_s
        params = UsageParams(**values)
    return params


def _extra_params(extra: Mapping[str, Any], key: str) -> dict[str, Any]:
    """KAI's client-specific ``extraParams``: metric overrides, resolution, query timeout."""
    known = tuple(
        [f"{r}AllocationMetric" for r in _METRIC_KEYS]
        + [f"{r}CapacityMetric" for r in _METRIC_KEYS]
        + ["queryResolution", "usageQueryTimeout"]
    )
    _check_keys(extra, known, f"{key}.extraParams")
    values: dict[str, Any] = {}
    for name, attr in (
        ("queryResolution", "query_resolution_s"),
        ("usageQueryTimeout", "query_timeout_s"),
    ):
        if name in extra:
            seconds = _duration(extra[name], f"{key}.extraParams.{name}")
            if seconds <= 0:
                raise UsageConfigError(f"{key}.extraParams.{name}: must be positive")
            values[attr] = seconds
    for suffix, attr, defaults in (
        ("AllocationMetric", "allocation_metrics", DEFAULT_ALLOCATION_METRICS),
        ("CapacityMetric", "capacity_metrics", DEFAULT_CAPACITY_METRICS),
    ):
        metrics = list(defaults)
        for i, resource in enumerate(_METRIC_KEYS):
            raw = extra.get(f"{resource}{suffix}")
            if raw is None:
                continue
            if not isinstance(raw, str) or not raw.strip():
                raise UsageConfigError(
                    f"{key}.extraParams.{resource}{suffix}: expected a PromQL expression"
                )
            metrics[i] = raw
        values[attr] = tuple(metrics)
    return values


_CONFIG_KEYS = ("clientType", "connectionString", "connectionStringEnvVar", "usageParams")
_OUR_KEYS = ("historyFile",)


def parse_usage_db_config(
    raw: Any, environ: Mapping[str, str] | None = None, key: str = "usageDBConfig"
) -> UsageDBConfig:
    """:class:`UsageDBConfig` from KAI's ``usageDBConfig`` (plus our ``historyFile``)."""
    data = _mapping(raw, key)
    _check_keys(data, _CONFIG_KEYS + _OUR_KEYS, key)
    client = data.get("clientType", "builtin")
    if client not in CLIENT_TYPES:
        raise UsageConfigError(
            f"{key}.clientType: must be one of {', '.join(CLIENT_TYPES)}, got {shown(client)}"
        )
    connection = data.get("connectionString") or ""
    variable = data.get("connectionStringEnvVar") or ""
    if connection and variable:
        raise UsageConfigError(f"{key}: set connectionString or connectionStringEnvVar, not both")
    if variable:
        connection = (environ or {}).get(str(variable), "")
        if not connection:
            raise UsageConfigError(f"{key}.connectionStringEnvVar: {variable} is not set")
    if not isinstance(connection, str):
        raise UsageConfigError(f"{key}.connectionString: expected a URL, got {shown(connection)}")
    history = data.get("historyFile") or ""
    if not isinstance(history, str):
        raise UsageConfigError(f"{key}.historyFile: expected a file path, got {shown(history)}")
    return UsageDBConfig(
        client_type=str(client),
        connection_string=connection,
        params=parse_params(data.get("usageParams"), f"{key}.usageParams"),
        history_file=history,
    )
