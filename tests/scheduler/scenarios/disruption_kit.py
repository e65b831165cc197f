"""A scenario table kit for the disruption actions (reclaim, preempt, consolidation, stale gangs).

Why: ``tests.kits.worlds.Scenario`` pins down allocate decisions (binds,
pipelined pods, pending groups) but not evictions, the clock or annotations,
which are what the disruption rules are about. ``Disruption`` adds them: the
evicted pods must match exactly (each by the case's action unless stated),
the cycle runs at ``NOW`` shifted by ``at`` seconds, and ``annotations`` must
match the changes the cycle asks to persist. ``started`` and ``stale`` put
KAI's PodGroup annotations on a job, in seconds before ``NOW``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from scheduler.cache.reading import LAST_START_ANNOTATION, STALE_ANNOTATION
from scheduler.cache.snapshotting import build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle
from tests.kits.worlds import NOW, Item, describe_result, job, sourced

Obj = dict[str, Any]


def priority_class(name: str, value: int) -> Obj:
    """A PriorityClass object (the four KAI classes are known without one)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def running(
    name: str,
    queue: str,
    node: str | Sequence[str],
    tasks: int = 1,
    *,
    gpus: float = 1,
    **job_args: Any,
) -> list[Obj]:
    """A job whose ``tasks`` pods all run: on ``node``, or one node per pod."""
    nodes = [node] * tasks if isinstance(node, str) else list(node)
    return job(
        name, queue, len(nodes), gpus=gpus, states=["Running"] * len(nodes), nodes=nodes, **job_args
    )


def rfc3339(seconds_before_now: float) -> str:
    return (NOW - timedelta(seconds=seconds_before_now)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _annotate(objects: list[Obj], key: str, value: str) -> list[Obj]:
    group = objects[0]
    assert group["kind"] == "PodGroup", "annotate the list job() returns"
    meta = dict(group["metadata"])
    meta["annotations"] = {**meta.get("annotations", {}), key: value}
    return [{**group, "metadata": meta}, *objects[1:]]


def started(objects: list[Obj], seconds_ago: float) -> list[Obj]:
    """The job with ``kai.scheduler/last-start-timestamp`` ``seconds_ago`` before ``NOW``."""
    return _annotate(objects, LAST_START_ANNOTATION, rfc3339(seconds_ago))


def stale(objects: list[Obj], seconds_ago: float) -> list[Obj]:
    """The job with ``kai.scheduler/stale-podgroup-timestamp`` ``seconds_ago`` before ``NOW``."""
    return _annotate(objects, STALE_ANNOTATION, rfc3339(seconds_ago))


@dataclass(frozen=True)
class Disruption:
    """A cluster picture and what one cycle of ``actions`` must decide on it.

    ``evicted``, ``pipelined`` and ``binds`` must match exactly (pod names in
    the ``default`` namespace); every eviction must come from ``evicted_by``
    (default: the only action, if there is one). ``pending`` lists groups whose
    outcome must be ``pending``; ``reasons`` maps a group to substrings of its
    reasons; ``annotations``, when given, must equal the cycle's annotation
    changes (group name -> {key: value or None}).
    """

    name: str
    objects: Sequence[Item]
    actions: tuple[str, ...]
    evicted: Sequence[str] = ()
    pipelined: Mapping[str, str] = field(default_factory=dict)
    binds: Mapping[str, str] = field(default_factory=dict)
    pending: Sequence[str] = ()
    reasons: Mapping[str, Sequence[str]] = field(default_factory=dict)
    annotations: Mapping[str, Mapping[str, str | None]] | None = None
    evicted_by: str | None = None
    at: float = 0.0
    settings: Mapping[str, Any] = field(default_factory=dict)
    bind_failed: Sequence[str] = ()

    def __str__(self) -> str:
        return self.name

    def config(self) -> SchedulerConfig:
        return SchedulerConfig(actions=self.actions, **dict(self.settings))


def run(case: Disruption) -> CycleResult:
    now = NOW.timestamp() + case.at
    config = case.config()
    built = build_snapshot(sourced(case.objects), now=now, stuck_after=config.stuck_in_releasing_s)
    built.snapshot.bind_failed = frozenset(f"default/{name}" for name in case.bind_failed)
    return run_cycle(built.snapshot, config, explain=True)


def _short(key: str) -> str:
    return key.split("/", 1)[1] if key.startswith("default/") else key


def problems(case: Disruption, result: CycleResult) -> list[str]:
    """Every difference between the case's expectations and ``result``."""
    out: list[str] = []
    evicted = {_short(e.pod): e.action for e in result.evictions}
    if set(evicted) != set(case.evicted):
        out.append(f"evicted: expected {sorted(case.evicted)}, got {sorted(evicted)}")
    by = case.evicted_by or (case.actions[0] if len(case.actions) == 1 else None)
    if by is not None:
        out += [f"eviction of {p} by {a}, expected {by}" for p, a in evicted.items() if a != by]
    for label, want, got in (
        ("pipelined", case.pipelined, {_short(b.pod): b.node for b in result.pipelined}),
        ("binds", case.binds, {_short(b.pod): b.node for b in result.binds}),
    ):
        if dict(want) != got:
            out.append(
                f"{label}: expected {dict(sorted(want.items()))}, got {dict(sorted(got.items()))}"
            )
    outcomes = {_short(o.pod_group): o for o in result.pod_groups}
    for group in case.pending:
        got_outcome = outcomes[group].outcome if group in outcomes else "not considered"
        if got_outcome != "pending":
            out.append(f"{group}: expected pending, got {got_outcome}")
    for group, substrings in case.reasons.items():
        text = " | ".join(outcomes[group].reasons) if group in outcomes else ""
        out += [f"reason of {group}: {s!r} not in {text!r}" for s in substrings if s not in text]
    if case.annotations is not None:
        got_annotations = {_short(k): v for k, v in result.annotations.items()}
        expected = {k: dict(v) for k, v in case.annotations.items()}
        if got_annotations != expected:
            out.append(f"annotations: expected {expected}, got {got_annotations}")
    return out


def check(case: Disruption) -> CycleResult:
    """Run the case and assert its expectations, with a readable report on failure."""
    result = run(case)
    found = problems(case, result)
    if found:
        evictions = [f"  {e.pod} by {e.action} for {e.for_job}" for e in result.evictions]
        report = "\n".join(
            [
                f"case {case.name!r} differs:",
                *found,
                "",
                describe_result(result),
                "evictions:",
                *evictions,
            ]
        )
        raise AssertionError(report)
    return result


__all__ = [
    "Disruption",
    "check",
    "priority_class",
    "rfc3339",
    "run",
    "running",
    "stale",
    "started",
]
