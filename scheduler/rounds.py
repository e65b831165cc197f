"""Carrying out one cycle's decisions on the cluster objects, so the next cycle can run.

Why: ``podmuster schedule --rounds``, the demo and the simulator all ask "and
then what?": what the cluster looks like once the scheduler's decisions have
happened. :func:`apply_result` answers it as a pure function of
``(objects, result, now)``, so every caller plays a cycle forward the same
way (docs/cli.md §2, ``--rounds``):

* **bind**: the pod runs on its node (``spec.nodeName``, phase ``Running``,
  ``status.startTime`` = ``now``). Binding and start are taken as instant. A
  fractional-GPU pod is labelled with its group(s) as the binder would
  (``runai-gpu-group=<first>``, plus ``runai-gpu-group/<id>`` per device when
  it has several).
* **eviction**: the pod is gone. A pod that is evicted *and* pipelined (a
  victim that consolidation or a disruption scenario re-placed) is the pod its
  controller re-creates: it is pending again, under the same name.
* **pipelined**: the pod is pending again (no node, no bind); the next cycle
  decides anew, as KAI does, which persists nothing for a pipelined pod.
* BindRequests of pods that were bound, evicted or reset are removed (the
  binder is done with them, or their pod is gone).
* ``result.annotations`` (``kai.scheduler/last-start-timestamp`` and
  ``kai.scheduler/stale-podgroup-timestamp``) are written to the PodGroups
  (``None`` removes the annotation), as KAI does at session close.
* ``result.ungated``: the ``kai.scheduler/queue-admission`` scheduling gate comes off
  those pods (other gates stay), so the next cycle may place them (§5.11).

Nothing else moves: pods already Releasing stay Releasing and unrelated
objects are passed through unchanged (the same ``SourcedObject``). Input
objects are never mutated; changed objects are copies with the same source
and index. The clock between rounds is the caller's choice (:data:`ROUND_SECONDS`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from crds.documents import SourcedObject
from crds.gpusharing import GPU_GROUP_LABEL
from crds.names import ADMISSION_GATE, CORE_KINDS, KINDS, group_kind
from scheduler.cache.reading import bind_request_pod_key, key_of
from scheduler.cache.snapshotting import SnapshotResult, build_snapshot
from scheduler.config import SchedulerConfig
from scheduler.cycle import CycleResult, run_cycle

ROUND_SECONDS: Final = 1.0
"""Simulated time between two rounds: the live scheduler's default cycle period."""

_BIND_REQUEST_API: Final = KINDS["BindRequest"][0] + "/"
_POD: Final = CORE_KINDS["Pod"]
"""A pod by ``crds.names.group_kind``: what the cache reads as one (``apiVersion: V1`` too)."""


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_on(
    pod: dict[str, Any], node: str, now: float, gpu_groups: tuple[str, ...] = ()
) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out.setdefault("spec", {})["nodeName"] = node
    if gpu_groups:  # what the binder does for a fractional pod: label it with its group(s)
        labels = out["metadata"].setdefault("labels", {})
        labels[GPU_GROUP_LABEL] = gpu_groups[0]
        if len(gpu_groups) > 1:
            for gid in gpu_groups:
                labels[f"{GPU_GROUP_LABEL}/{gid}"] = gid
    out["metadata"].pop("deletionTimestamp", None)
    status = out.setdefault("status", {})
    status["phase"] = "Running"
    status["startTime"] = _rfc3339(now)
    status.pop("nominatedNodeName", None)
    return out


def _pending_again(pod: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out.get("spec", {}).pop("nodeName", None)
    out["metadata"].pop("deletionTimestamp", None)
    labels = out["metadata"].get("labels") or {}
    for key in [k for k in labels if k == GPU_GROUP_LABEL or k.startswith(GPU_GROUP_LABEL + "/")]:
        del labels[key]  # a re-created pod has no shared GPU group yet
    out["status"] = {"phase": "Pending"}
    return out


def _annotated(pod_group: dict[str, Any], changes: dict[str, str | None]) -> dict[str, Any]:
    out = copy.deepcopy(pod_group)
    annotations = out["metadata"].setdefault("annotations", {})
    for name, value in changes.items():
        if value is None:
            annotations.pop(name, None)
        else:
            annotations[name] = value
    if not annotations:
        del out["metadata"]["annotations"]
    return out


def _ungated(pod: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    spec = out.setdefault("spec", {})
    kept = [g for g in spec.get("schedulingGates") or () if g.get("name") != ADMISSION_GATE]
    if kept:
        spec["schedulingGates"] = kept
    else:
        spec.pop("schedulingGates", None)
    return out


def apply_result(
    objects: Sequence[SourcedObject], result: CycleResult, now: float
) -> list[SourcedObject]:
    """The objects after ``result``'s decisions have been carried out at time ``now``.

    A decision about a pod that is not among ``objects`` is a caller error
    (``ValueError``): the result must come from a snapshot of these objects.
    """
    runs = {bind.pod: bind.node for bind in result.binds}
    groups = {bind.pod: bind.gpu_groups for bind in result.binds if bind.gpu_groups}
    evicted = {eviction.pod for eviction in result.evictions}
    pipelined = {bind.pod for bind in result.pipelined}
    gone = evicted - pipelined  # evicted and pipelined: re-created, pending again
    ungated = set(result.ungated)
    touched = runs.keys() | evicted | pipelined | ungated
    seen: set[str] = set()
    out: list[SourcedObject] = []
    for item in objects:
        kind = item.obj.get("kind")
        if kind == "Pod" and group_kind(item.obj) == _POD:  # as the cache tells a pod
            key = key_of(item.obj)
            if key not in touched:
                out.append(item)
                continue
            seen.add(key)
            if key in gone:
                continue
            if key in ungated:
                body = _ungated(item.obj)
            elif key in runs:
                body = _run_on(item.obj, runs[key], now, groups.get(key, ()))
            else:
                body = _pending_again(item.obj)
            out.append(SourcedObject(body, item.source, item.index))
        elif kind == "BindRequest" and str(item.obj.get("apiVersion", "")).startswith(
            _BIND_REQUEST_API
        ):
            if bind_request_pod_key(item.obj) not in touched:
                out.append(item)
        elif kind == "PodGroup" and key_of(item.obj) in result.annotations:
            body = _annotated(item.obj, result.annotations[key_of(item.obj)])
            out.append(SourcedObject(body, item.source, item.index))
        else:
            out.append(item)
    missing = sorted(touched - seen)
    if missing:
        raise ValueError(f"decisions about pods not in the objects: {', '.join(missing)}")
    return out


def made_decisions(result: CycleResult) -> bool:
    """Whether the cycle decided anything that changes the cluster.

    Annotation-only results count too: a stale-gang stamp is a change the
    next cycle reads.
    """
    return bool(
        result.binds or result.pipelined or result.evictions or result.annotations or result.ungated
    )


@dataclass(slots=True)
class Round:
    """One played round: its number (from 1), clock, snapshot, decisions and the objects after.

    The objects after are worked out (:func:`apply_result`) when first asked for: by the
    next round, or by a caller that shows them; a one-cycle ``schedule`` never pays for it.
    """

    number: int
    now: float
    built: SnapshotResult
    result: CycleResult
    before: Sequence[SourcedObject] = field(repr=False)
    _after: list[SourcedObject] | None = field(default=None, repr=False)

    @property
    def objects(self) -> list[SourcedObject]:
        """The objects once this round's decisions have been carried out."""
        if self._after is None:
            self._after = apply_result(self.before, self.result, self.now)
        return self._after


def play(
    objects: Sequence[SourcedObject],
    config: SchedulerConfig,
    *,
    now: float,
    rounds: int | None = None,
    explain: bool = False,
    strict: bool = True,
    usage: Mapping[str, tuple[float, float, float]] | None = None,
) -> Iterator[Round]:
    """Run cycle after cycle, applying each one's decisions before the next.

    Round ``n`` runs at ``now + (n - 1) * ROUND_SECONDS``. Stops after
    ``rounds`` rounds, or never when ``rounds`` is None (the caller stops).
    With ``strict=False`` a bad object is left out and kept in ``built.errors``.
    ``usage`` (queue -> normalised usage, time-based fair share) goes into every
    round's snapshot unchanged.
    """
    current: Sequence[SourcedObject] = objects
    number = 0
    while rounds is None or number < rounds:
        number += 1
        built = build_snapshot(
            current,
            scheduler_name=config.scheduler_name,
            now=now,
            strict=strict,
            stuck_after=config.stuck_in_releasing_s,
        )
        if usage:
            built.snapshot.queue_usage = dict(usage)
        result = run_cycle(built.snapshot, config, explain=explain)
        played = Round(number, now, built, result, current)
        yield played
        if rounds is not None and number >= rounds:
            return  # the last round's objects after: only if its caller asks
        current = played.objects
        now += ROUND_SECONDS


__all__ = ["ROUND_SECONDS", "Round", "apply_result", "made_decisions", "play"]
