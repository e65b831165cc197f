"""The simulator's input model: jobs with arrival and duration, the cluster, autoscaled pools.

Why: three input forms (the Alibaba trace, the project's CSV with a cluster
YAML, workload manifests) all reduce to one :class:`Scenario`, which the
event loop (``simulator.events``) replays without knowing where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from crds.errors import InputError, shown
from scheduler.config import ConfigError, SchedulerConfig, parse_duration


@dataclass(slots=True)
class SimJob:
    """One schedulable unit: a PodGroup and its pods, arriving at ``arrival``.

    ``duration`` counts from the moment its gang's minimum runs (a gang starts
    together). ``recreate`` says what an eviction does: a controller-owned pod
    (Job, PyTorchJob, trace rows) comes back pending; a bare Pod is gone.
    """

    key: str  # PodGroup namespace/name
    queue: str
    arrival: float
    duration: float
    pod_group: dict[str, Any]
    pods: list[dict[str, Any]]
    pod_gpus: list[float]  # GPUs per pod, fractions included, same order as pods
    recreate: bool = True
    origin: str = ""  # where it came from, for messages (file and row/object)
    workload: str | None = None  # the manifest it came from, "Kind namespace/name"

    @property
    def gpus(self) -> float:
        return sum(self.pod_gpus)


@dataclass(frozen=True, slots=True)
class AutoscaledPool:
    """A node pool the simulated cluster autoscaler grows and shrinks between min and max."""

    name: str
    template: dict[str, Any]  # a Node manifest; its name is the prefix of new nodes' names
    min_nodes: int
    max_nodes: int
    scale_up_delay: float
    scale_down_delay: float


def period_seconds(raw: str | float) -> float:
    """A scheduling period given as ``--period`` or a sweep's ``input.period``: seconds, as a
    number or a Go duration (``1s``, ``500ms``); ``ValueError`` unless it is positive."""
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        numeric = isinstance(text, str) and text.replace(".", "", 1).isdigit()
        value = parse_duration(float(text) if numeric else text, "period")
    except ConfigError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"expected a positive duration such as 1s, got {shown(raw)}")
    return value


@dataclass(slots=True)
class Scenario:
    """Everything one simulation needs besides the scheduler configuration."""

    nodes: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    jobs: list[SimJob]
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    topologies: list[dict[str, Any]] = field(default_factory=list)  # kai.scheduler Topology
    pools: list[AutoscaledPool] = field(default_factory=list)
    config: SchedulerConfig | None = None  # from the cluster YAML; --config wins
    period: float | None = None  # scheduling period from the cluster YAML; --period wins
    skipped: dict[str, int] = field(default_factory=dict)  # input rows left out, by reason
    bad_objects: list[InputError] = field(default_factory=list)  # left out, one line each
    sources: dict[str, str] = field(default_factory=dict)  # "Kind name" -> file, for messages
    source: str = ""

    def fresh(self) -> Scenario:
        """A copy for one run: a run replaces its jobs' PodGroup manifests as it annotates them."""
        return replace(self, jobs=[replace(job) for job in self.jobs])
