"""The SWEEP.yaml format of ``podmuster simulate --sweep``: one input, a grid of variants.

Why: "binpack or spread, and which quota split?" is a question about a grid
of runs over the same trace, not about one pair. This module reads the file
that names the input and the axes, checks every key (an error names the file
and the field, before anything runs), and expands the grid into named points
(docs/simulate.md, "Sweeps")::

    name: placement-vs-quota
    input: {trace: jobs.csv, cluster: cluster.yaml, period: 1s}
    base: base-config.yaml          # optional scheduler configuration file
    axes:
      - name: placement
        values:
          - {name: binpack, config: {placementStrategy: {gpu: binpack}}}
          - {name: spread, configFile: spread.yaml}
      - name: quota
        values:
          - {name: even, queues: {team-a: {gpuQuota: 2}, team-b: {gpuQuota: 2}}}
          - {name: a-heavy, queues: {team-a: {gpuQuota: 3, overQuotaWeight: 2}}}

The grid is the cross product of the axes, in their order; a point is named
by its values joined with ``/`` (``spread/even``). Running the points is
``simulator.sweep_run``'s job; this module only decides what they are.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from crds.documents import yaml_error
from crds.errors import InputError, shown
from scheduler.config import ConfigError, SchedulerConfig, load_config
from simulator import objects
from simulator.model import period_seconds

_TOP = {"name", "input", "base", "axes"}
_INPUT = {"trace", "traceFormat", "pods", "cluster", "workloads", "period", "arrivalScale"}
_PATH_INPUTS = ("trace", "pods", "cluster", "workloads")
_AXIS = {"name", "values"}
_VALUE = {"name", "config", "configFile", "queues"}
QUEUE_KEYS = ("gpuQuota", "gpuLimit", "overQuotaWeight")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+=-]*$")
MAX_POINTS = 1024  # a guard against a typo that multiplies the grid


@dataclass(frozen=True, slots=True)
class QueueOverride:
    """New GPU quota, limit or weight of one queue; ``field`` is where the file says so."""

    queue: str
    values: Mapping[str, float]
    field: str


@dataclass(frozen=True, slots=True)
class Point:
    """One run of the grid: a name, its value per axis, its configuration and queue changes."""

    name: str
    params: Mapping[str, str]  # axis name -> value name
    config: SchedulerConfig | None  # None: the cluster YAML's scheduler, or the defaults
    queues: tuple[QueueOverride, ...] = ()
    config_field: str = ""  # where the file sets its configuration ("" : the base or the cluster)


@dataclass(frozen=True, slots=True)
class Sweep:
    """A checked SWEEP.yaml: the input (paths resolved against the file), axes and points."""

    path: str
    name: str
    input: Mapping[str, Any]  # the input keys given, paths made relative to the cwd
    axes: tuple[str, ...]
    points: tuple[Point, ...]
    base: str | None = None  # the base configuration file, if any
    queue_overrides: tuple[QueueOverride, ...] = field(default=())  # every one, for checks
    variants: tuple[tuple[str, str, str], ...] = ()  # (axis, value, what it sets), for people


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str | None, message: str) -> InputError:
        return InputError(message, source=self.path, field=where)

    def mapping(self, raw: Any, where: str | None, known: set[str]) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.error(where, f"expected a mapping, got {shown(raw)}")
        for key in raw:
            if key not in known:
                inside = f"{where}.{key}" if where else str(key)
                raise self.error(inside, f"unknown key; known: {', '.join(sorted(known))}")
        return raw

    def name(self, raw: Mapping[str, Any], where: str) -> str:
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise self.error(
                f"{where}.name",
                f"expected a name of letters, digits and _ . + = -, got {shown(name)}",
            )
        return name

    def relative(self, raw: Any, where: str) -> str:
        if not isinstance(raw, str) or not raw:
            raise self.error(where, f"expected a file or directory path, got {shown(raw)}")
        return os.path.normpath(os.path.join(os.path.dirname(self.path) or ".", raw))

    def yaml_file(self, path: str, where: str | None) -> Mapping[str, Any]:
        named = "" if path == self.path else f"{path}: "  # the sweep file is named once
        try:
            with open(path, encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
        except OSError as exc:
            raise self.error(where, f"cannot read {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise self.error(where, f"{named}{yaml_error(exc)}") from None
        if not isinstance(data, Mapping):
            raise self.error(where, f"{named}expected a mapping at the top level")
        return data


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` on top: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in override.items():
        old = out.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = merge(old, value)
        else:
            out[key] = value
    return out


def _number(reader: _Reader, raw: Any, where: str, *, unlimited: bool) -> float:
    ok = isinstance(raw, int | float) and not isinstance(raw, bool)
    if ok and (raw >= 0 or (unlimited and raw == -1)):
        return float(raw)
    wanted = "a number >= 0, or -1 for no limit" if unlimited else "a number >= 0"
    raise reader.error(where, f"expected {wanted}, got {shown(raw)}")


def _queue_overrides(reader: _Reader, raw: Any, where: str) -> tuple[QueueOverride, ...]:
    if not isinstance(raw, Mapping):
        raise reader.error(where, "expected a mapping of queue name to gpuQuota/gpuLimit/weight")
    out = []
    for queue, values in raw.items():
        inside = f"{where}.{queue}"
        values = reader.mapping(values, inside, set(QUEUE_KEYS))
        if not values:
            raise reader.error(inside, f"give at least one of {', '.join(QUEUE_KEYS)}")
        checked = {
            key: _number(reader, values[key], f"{inside}.{key}", unlimited=key == "gpuLimit")
            for key in QUEUE_KEYS
            if key in values
        }
        out.append(QueueOverride(queue=str(queue), values=checked, field=inside))
    return tuple(out)


@dataclass(slots=True)
class _Value:
    name: str
    where: str
    config_file: Mapping[str, Any] | None
    config: Mapping[str, Any]
    queues: tuple[QueueOverride, ...]
    config_path: str = ""


def _axis(reader: _Reader, raw: Any, where: str) -> tuple[str, list[_Value]]:
    raw = reader.mapping(raw, where, _AXIS)
    name = reader.name(raw, where)
    items = raw.get("values")
    if not isinstance(items, list) or not items:
        raise reader.error(f"{where}.values", "expected a non-empty list of values")
    values: list[_Value] = []
    for i, item in enumerate(items):
        inside = f"{where}.values[{i}]"
        item = reader.mapping(item, inside, _VALUE)
        value_name = reader.name(item, inside)
        if any(v.name == value_name for v in values):
            raise reader.error(f"{inside}.name", f"duplicate value {value_name!r} in axis {name!r}")
        config_file = None
        if "configFile" in item:
            path = reader.relative(item["configFile"], f"{inside}.configFile")
            config_file = reader.yaml_file(path, f"{inside}.configFile")
        config = item.get("config") or {}
        if not isinstance(config, Mapping):
            raise reader.error(f"{inside}.config", "expected a mapping of configuration keys")
        queues = (
            _queue_overrides(reader, item["queues"], f"{inside}.queues") if "queues" in item else ()
        )
        values.append(
            _Value(value_name, inside, config_file, config, queues, str(item.get("configFile")))
        )
    return name, values


def _what(value: _Value, path: str) -> str:
    """What one axis value sets, in words: its configuration file, keys and queue changes."""
    parts = []
    if value.config_file is not None:
        parts.append(f"configuration file {path}")
    if value.config:
        flow = yaml.safe_dump(dict(value.config), default_flow_style=True, width=10**6)
        parts.append(f"configuration {flow.strip()}")
    for override in value.queues:
        changes = ", ".join(
            f"{key} {'no limit' if number == -1 else f'{number:g}'}"
            for key, number in override.values.items()
        )
        parts.append(f"queue {override.queue}: {changes}")
    return "; ".join(parts) or "nothing: the base as it is"


def _point(
    reader: _Reader,
    axes: list[tuple[str, list[_Value]]],
    choice: tuple[_Value, ...],
    base: Mapping[str, Any] | None,
) -> Point:
    config = base
    queues: dict[str, QueueOverride] = {}
    for value in choice:
        if value.config_file is not None:
            config = value.config_file
        if value.config:
            config = merge(config or {}, value.config)
        for override in value.queues:
            earlier = queues.get(override.queue)
            merged = {**(earlier.values if earlier else {}), **override.values}
            queues[override.queue] = QueueOverride(override.queue, merged, override.field)
    checked = None
    where = ", ".join(v.where for v in choice if v.config or v.config_file is not None)
    if config is not None:
        try:
            checked = load_config(config)
        except ConfigError as exc:
            raise reader.error(where or "base", f"configuration: {exc}") from None
    return Point(
        name="/".join(v.name for v in choice),
        params={axis: v.name for (axis, _), v in zip(axes, choice, strict=True)},
        config=checked,
        queues=tuple(queues.values()),
        config_field=where,
    )


def _cluster_scheduler(cluster: str | None) -> Mapping[str, Any] | None:
    """The cluster YAML's ``scheduler:`` mapping, the base that inline overrides go onto."""
    if cluster is None:
        return None
    try:
        with open(cluster, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return None  # the cluster loader reports it with its own words
    scheduler = data.get("scheduler") if isinstance(data, Mapping) else None
    return scheduler if isinstance(scheduler, Mapping) else None


def load(path: str, *, cluster: str | None = None) -> Sweep:
    """A checked sweep from ``path``; ``cluster`` overrides the file's ``input.cluster``.

    Relative paths in the file are relative to the file. A key that is wrong
    raises :class:`InputError` naming the file and the field.
    """
    reader = _Reader(path)
    data = reader.mapping(reader.yaml_file(path, None), None, _TOP)
    title = data.get("name", os.path.splitext(os.path.basename(path))[0])
    if not isinstance(title, str):
        raise reader.error("name", f"expected a string, got {shown(title)}")
    raw_input = reader.mapping(data.get("input") or {}, "input", _INPUT)
    given: dict[str, Any] = {}
    for key, value in raw_input.items():
        if key in _PATH_INPUTS:
            given[key] = reader.relative(value, f"input.{key}")
        elif key == "arrivalScale":
            ok = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
            if not ok:
                raise reader.error(
                    "input.arrivalScale", f"expected a positive number, got {shown(value)}"
                )
            given[key] = float(value)
        elif not isinstance(value, str | int | float) or isinstance(value, bool):
            raise reader.error(f"input.{key}", f"expected a string, got {shown(value)}")
        else:
            if key == "period":  # checked here, where the file and the field are known
                try:
                    period_seconds(value)
                except ValueError as exc:
                    raise reader.error("input.period", str(exc)) from None
            given[key] = str(value)
    base_path = None
    base: Mapping[str, Any] | None
    if "base" in data:
        base_path = reader.relative(data["base"], "base")
        base = reader.yaml_file(base_path, "base")
    else:
        base = _cluster_scheduler(cluster or given.get("cluster"))
    raw_axes = data.get("axes")
    if not isinstance(raw_axes, list) or not raw_axes:
        raise reader.error("axes", "expected a non-empty list of axes")
    axes = [_axis(reader, raw, f"axes[{i}]") for i, raw in enumerate(raw_axes)]
    for i, (name, _) in enumerate(axes):
        if any(other == name for other, _ in axes[:i]):
            raise reader.error(f"axes[{i}].name", f"duplicate axis {name!r}")
    size = 1
    for _, values in axes:
        size *= len(values)
    if size > MAX_POINTS:
        raise reader.error("axes", f"the grid has {size} points; at most {MAX_POINTS}")
    points = tuple(
        _point(reader, axes, choice, base)
        for choice in itertools.product(*(values for _, values in axes))
    )
    names = {(p.config or SchedulerConfig()).scheduler_name for p in points}
    if len(names) > 1:
        raise reader.error(
            "axes",
            f"every point must have the same schedulerName (the trace's pods name one), "
            f"got {', '.join(sorted(names))}",
        )
    return Sweep(
        path=path,
        name=title,
        input=given,
        axes=tuple(name for name, _ in axes),
        points=points,
        base=base_path,
        queue_overrides=tuple(o for _, values in axes for v in values for o in v.queues),
        variants=tuple(
            (name, v.name, _what(v, v.config_path)) for name, values in axes for v in values
        ),
    )


def check_scheduler_name(sweep: Sweep, jobs: list[Any], fallback: SchedulerConfig | None) -> None:
    """Every point schedules the input's pods: its ``schedulerName`` is the one they name.

    A point for another scheduler would start no job and look idle and fast;
    it is refused before anything runs, naming the file and the value that sets it.
    """
    wanted = {
        str((pod.get("spec") or {}).get("schedulerName"))
        for job in jobs
        for pod in job.pods
        if (pod.get("spec") or {}).get("schedulerName")
    }
    if not wanted:
        return
    for point in sweep.points:
        name = (point.config or fallback or SchedulerConfig()).scheduler_name
        if name not in wanted:
            raise InputError(
                f"schedulerName {name!r}: the input's pods are for {', '.join(sorted(wanted))}",
                source=sweep.path,
                field=point.config_field or "base",
            )


def check_queues(sweep: Sweep, queues: list[dict[str, Any]]) -> None:
    """Every queue the sweep changes exists in the scenario; else the file and field are named."""
    known = {str(q["metadata"]["name"]) for q in queues}
    for override in sweep.queue_overrides:
        problem = objects.missing_queue(override.queue, known)
        if problem is not None:
            raise InputError(problem, source=sweep.path, field=override.field)


def apply_queues(queues: list[dict[str, Any]], point: Point) -> list[dict[str, Any]]:
    """Copies of the Queue manifests with the point's GPU quota, limit and weight changes."""
    changes = {o.queue: o.values for o in point.queues}
    out = []
    for manifest in queues:
        values = changes.get(str(manifest["metadata"]["name"]))
        if not values:
            out.append(manifest)
            continue
        spec = dict(manifest.get("spec") or {})
        resources = dict(spec.get("resources") or {})
        gpu = dict(resources.get("gpu") or {})
        for key, target in (
            ("gpuQuota", "quota"),
            ("gpuLimit", "limit"),
            ("overQuotaWeight", "overQuotaWeight"),
        ):
            if key in values:
                gpu[target] = values[key]
        resources["gpu"] = gpu
        spec["resources"] = resources
        out.append({**manifest, "spec": spec})
    return out
