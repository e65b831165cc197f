"""The cluster YAML: nodes, node pools, an autoscaled pool, queues, scheduler settings.

Why: the CSV trace and the manifest forms of ``podmuster simulate`` describe
workloads only; the cluster they run on is a short hand-written file
(docs/simulate.md has the full format)::

    nodes:                     # single nodes (count: N makes N alike)
      - {name: big, gpus: 8, cpu: 96, memory: 1Ti, labels: {zone: a}}
    nodePools:                 # count x shape
      - {name: t4, count: 10, gpus: 2, cpu: 32, memory: 128Gi}
      - name: burst            # autoscaled between min and max
        gpus: 8
        autoscale: {min: 0, max: 4, scaleUpDelay: 5m, scaleDownDelay: 10m}
    queues:
      - {name: research, gpuQuota: 8, overQuotaWeight: 2}
      - {name: nlp, parent: research, gpuQuota: 4, gpuLimit: 16, priority: 100}
    objects: []                # any Node / Queue / PriorityClass / Topology manifests
    scheduler: {placementStrategy: {gpu: spread}}   # the --config file's keys
    period: 1s                 # scheduling period

A mistake is one line naming the file, the entry and the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import yaml

from crds.documents import check_fields, yaml_error
from crds.errors import InputError, describe_object, shown
from crds.quantities import QuantityError, parse_quantity
from scheduler.config import ConfigError, SchedulerConfig, load_config, parse_duration
from simulator import objects
from simulator.model import AutoscaledPool, Scenario

_TOP = {"nodes", "nodePools", "queues", "objects", "scheduler", "period"}
_NODE = {"name", "count", "gpus", "cpu", "memory", "ephemeralStorage", "pods", "labels"}
DEFAULT_EPHEMERAL_STORAGE: Final = "1Ti"
"""A node shape's local disk unless given: every kubelet reports one, and a pod asking for
``ephemeral-storage`` (as many real manifests do) would otherwise fit no simulated node."""
_POOL = _NODE | {"autoscale"}
_AUTOSCALE = {"min", "max", "scaleUpDelay", "scaleDownDelay"}
_QUEUE = {"name", "parent", "gpuQuota", "gpuLimit", "overQuotaWeight", "priority"}


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str, key: str | None, message: str) -> InputError:
        return InputError(message, source=self.path, obj=where, field=key)

    def mapping(self, raw: Any, where: str, known: set[str]) -> Mapping[str, Any]:
        if not isinstance(raw, Mapping):
            raise self.error(where, None, "expected a mapping")
        for key in raw:
            if key not in known:
                raise self.error(where, str(key), f"unknown key; known: {', '.join(sorted(known))}")
        return raw

    def number(self, raw: Any, where: str, key: str, *, minimum: float = 0.0) -> float:
        finite = isinstance(raw, int) or (isinstance(raw, float) and math.isfinite(raw))
        if isinstance(raw, bool) or not finite or raw < minimum:
            raise self.error(
                where, key, f"expected a number of at least {minimum:g}, got {shown(raw)}"
            )
        return float(raw)

    def whole(
        self, raw: Any, where: str, key: str, *, minimum: int = 0, maximum: int | None = None
    ) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
            raise self.error(where, key, f"expected a whole number >= {minimum}, got {shown(raw)}")
        if maximum is not None and raw > maximum:
            raise self.error(where, key, f"expected at most {maximum}, got {shown(raw)}")
        return raw

    def quantity(self, raw: Any, where: str, key: str, unit: str) -> int:
        """CPU in millicores or memory in MiB from a number (cores / GiB) or a quantity."""
        try:
            value = parse_quantity(str(raw)) if isinstance(raw, str) else None
        except QuantityError as exc:
            raise self.error(where, key, str(exc)) from None
        if value is None:
            number = self.number(raw, where, key)
            return int(number * 1000) if unit == "cpu" else int(number * 1024)
        return int(value * 1000) if unit == "cpu" else int(value / (1024 * 1024))

    def duration(self, raw: Any, where: str, key: str) -> float:
        try:
            value = parse_duration(raw, key)
        except ConfigError:
            raise self.error(
                where, key, f"expected a duration such as 5m, got {shown(raw)}"
            ) from None
        if value < 0:
            raise self.error(where, key, f"must not be negative, got {shown(raw)}")
        return value


MAX_NODES: Final = 100_000
"""The most nodes of one shape: more is a typo (the benchmarks go to 5,000), and building
them would exhaust the memory before the run starts."""


def _labels(reader: _Reader, raw: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """An entry's ``labels``: a map (values are written as text: ``zone: 1`` is ``"1"``)."""
    labels = raw.get("labels") or {}
    if not isinstance(labels, Mapping):
        raise reader.error(where, "labels", "expected a mapping of label to value")
    return labels


def _shape(reader: _Reader, raw: Mapping[str, Any], where: str, name: str) -> dict[str, Any]:
    labels = _labels(reader, raw, where)
    return objects.node(
        name,
        cpu_milli=reader.quantity(raw.get("cpu", 64), where, "cpu", "cpu"),
        memory_mib=reader.quantity(raw.get("memory", "512Gi"), where, "memory", "memory"),
        gpus=reader.whole(raw.get("gpus", 0), where, "gpus"),
        labels={str(k): str(v) for k, v in labels.items()},
        pods=reader.whole(raw.get("pods", 110), where, "pods", minimum=1),
        ephemeral_storage_mib=reader.quantity(
            raw.get("ephemeralStorage", DEFAULT_EPHEMERAL_STORAGE),
            where,
            "ephemeralStorage",
            "memory",
        ),
    )


def _name(reader: _Reader, raw: Mapping[str, Any], where: str) -> str:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise reader.error(where, "name", "is required")
    return name


def _nodes(reader: _Reader, items: Any, key: str) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        raise reader.error(key, None, "expected a list")
    nodes: list[dict[str, Any]] = []
    for i, raw in enumerate(items):
        where = f"{key}[{i}]"
        raw = reader.mapping(raw, where, _NODE)
        name = _name(reader, raw, where)
        count = reader.whole(raw.get("count", 1), where, "count", minimum=1, maximum=MAX_NODES)
        names = [name] if count == 1 and key == "nodes" else [f"{name}-{n}" for n in range(count)]
        nodes.extend(_shape(reader, raw, where, node_name) for node_name in names)
    return nodes


def _pools(reader: _Reader, items: Any) -> tuple[list[dict[str, Any]], list[AutoscaledPool]]:
    if not isinstance(items, list):
        raise reader.error("nodePools", None, "expected a list")
    nodes: list[dict[str, Any]] = []
    pools: list[AutoscaledPool] = []
    seen: set[str] = set()
    for i, raw in enumerate(items):
        where = f"nodePools[{i}]"
        raw = reader.mapping(raw, where, _POOL)
        name = _name(reader, raw, where)
        if name in seen:
            raise reader.error(where, "name", f"duplicate pool {name!r}")
        seen.add(name)
        labels = {**_labels(reader, raw, where), objects.POOL_LABEL: name}
        shaped = {**raw, "labels": labels}
        if "autoscale" not in raw:
            count = reader.whole(raw.get("count", 1), where, "count", minimum=1, maximum=MAX_NODES)
            nodes.extend(_shape(reader, shaped, where, f"{name}-{n}") for n in range(count))
            continue
        if "count" in raw:
            raise reader.error(where, "count", "an autoscaled pool has min and max, not count")
        auto_where = f"{where}.autoscale"
        auto = reader.mapping(raw["autoscale"], auto_where, _AUTOSCALE)
        low = reader.whole(auto.get("min", 0), auto_where, "min")
        high = reader.whole(auto.get("max", low), auto_where, "max")
        if high < low:
            raise reader.error(auto_where, "max", f"must be at least min ({low}), got {high}")
        pools.append(
            AutoscaledPool(
                name=name,
                template=_shape(reader, shaped, where, name),
                min_nodes=low,
                max_nodes=high,
                scale_up_delay=reader.duration(
                    auto.get("scaleUpDelay", "5m"), auto_where, "scaleUpDelay"
                ),
                scale_down_delay=reader.duration(
                    auto.get("scaleDownDelay", "10m"), auto_where, "scaleDownDelay"
                ),
            )
        )
    return nodes, pools


def _queues(reader: _Reader, items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        raise reader.error("queues", None, "expected a list")
    out = []
    seen: set[str] = set()
    for i, raw in enumerate(items):
        where = f"queues[{i}]"
        raw = reader.mapping(raw, where, _QUEUE)
        name = _name(reader, raw, where)
        if name in seen:
            raise reader.error(where, "name", f"duplicate queue {name!r}")
        seen.add(name)
        limit = raw.get("gpuLimit", -1)
        if limit != -1:
            limit = reader.number(limit, where, "gpuLimit")
        priority = raw.get("priority")
        out.append(
            objects.queue(
                name,
                parent=str(raw["parent"]) if raw.get("parent") else None,
                gpu_quota=reader.number(raw.get("gpuQuota", 0), where, "gpuQuota"),
                gpu_limit=limit,
                over_quota_weight=reader.number(
                    raw.get("overQuotaWeight", 1), where, "overQuotaWeight"
                ),
                priority=None if priority is None else reader.whole(priority, where, "priority"),
            )
        )
    return out


def _check_parents(reader: _Reader, placed: list[tuple[dict[str, Any], str, str]]) -> None:
    """Every queue's parent is a queue of the file, and no queue is its own ancestor.

    ``placed`` is each Queue with where the file gives it and its parent's key. The
    scheduler drops such a queue (QueueDoesNotExist), and its jobs would wait forever."""

    def field(manifest: Mapping[str, Any], part: str, key: str) -> str:
        inside = manifest.get(part)  # a malformed object is reported by the checks later
        value = inside.get(key) if isinstance(inside, Mapping) else None
        return value if isinstance(value, str) else ""

    parents = {field(m, "metadata", "name"): field(m, "spec", "parentQueue") for m, _, _ in placed}
    parents = {name: parent for name, parent in parents.items() if parent}
    known = {field(manifest, "metadata", "name") for manifest, _, _ in placed} - {""}
    for manifest, where, key in placed:
        name = field(manifest, "metadata", "name")
        if name not in parents:
            continue
        problem = objects.missing_queue(parents[name], known)
        if problem is not None:
            raise reader.error(where, key, problem)
        chain = [name]
        while chain[-1] in parents:
            chain.append(parents[chain[-1]])
            if chain[-1] in chain[:-1]:
                raise reader.error(where, key, f"a parent cycle: {' -> '.join(chain)}")


def load(path: str) -> Scenario:
    """The cluster part of a scenario (no jobs yet) from a cluster YAML file."""
    reader = _Reader(path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=path) from None
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path) from None
    data = reader.mapping(data, "cluster", _TOP)
    nodes = _nodes(reader, data.get("nodes") or [], "nodes")
    pool_nodes, pools = _pools(reader, data.get("nodePools") or [])
    nodes.extend(pool_nodes)
    queues = _queues(reader, data.get("queues") or [])
    placed = [
        (q, f"Queue {q['metadata']['name']} (queues[{i}])", "parent") for i, q in enumerate(queues)
    ]
    priority_classes: list[dict[str, Any]] = []
    topologies: list[dict[str, Any]] = []
    lists = {  # the kinds objects: may hold, each to its list
        "Node": nodes,
        "Queue": queues,
        "PriorityClass": priority_classes,
        "Topology": topologies,
    }
    extra = data.get("objects") or []
    if not isinstance(extra, list):
        raise reader.error("objects", None, "expected a list of manifests")
    for i, obj in enumerate(extra):
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if kind not in lists:
            raise reader.error(
                f"objects[{i}]",
                "kind",
                f"expected one of {', '.join(sorted(lists))}, got {shown(kind)}",
            )
        try:  # as every manifest read from a file
            check_fields(obj)
        except InputError as exc:
            named = f"{describe_object(obj)} (objects[{i}])"
            raise reader.error(named, exc.field, exc.message) from None
        lists[kind].append(dict(obj))
        if kind == "Queue":
            placed.append(
                (lists[kind][-1], f"{describe_object(obj)} (objects[{i}])", "spec.parentQueue")
            )
    _check_parents(reader, placed)
    config: SchedulerConfig | None = None
    if data.get("scheduler") is not None:
        try:
            config = load_config(data["scheduler"])
        except ConfigError as exc:
            raise reader.error("scheduler", None, str(exc)) from None
    period = None
    if data.get("period") is not None:
        period = reader.duration(data["period"], "cluster", "period")
        if period <= 0:
            raise reader.error("cluster", "period", "must be positive")
    if not nodes and not pools:
        raise reader.error("cluster", "nodes", "the cluster has no nodes and no node pools")
    return Scenario(
        nodes=nodes,
        queues=queues,
        jobs=[],
        priority_classes=priority_classes,
        topologies=topologies,
        pools=pools,
        config=config,
        period=period,
        source=path,
        sources={
            describe_object(m): path for m in [*nodes, *queues, *priority_classes, *topologies]
        },
    )
