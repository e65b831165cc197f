"""Engine reasons in plain words for the demo's readers.

Why: the engine's reasons are precise but dense (every resource, every
number). A newcomer needs the one idea behind each: which rule held the job
back and what it is waiting for. The engine's own text is kept next to it in
the JSON output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Ask:
    """What a waiting PodGroup asks for: its queue, priority and the GPUs of its pending pods."""

    queue: str
    priority: str
    gpus: float
    gang: bool  # minMember > 1: all of it at once


_CODE = re.compile(r"^([A-Z][A-Za-z]+):")
_GANG = re.compile(r"^gang of (\d+) pods: only (\d+) could be placed")
_NO_GPU_NODE = re.compile(r"0/(\d+) nodes are available: .*Insufficient nvidia\.com/gpu")
_NON_PREEMPTIBLE_USED = re.compile(r"non-preemptible allocated gpu=([0-9.]+)")
_QUEUE = re.compile(r"queue (\S+?)[ ;:]")


class _Row(Protocol):
    @property
    def deserved(self) -> float: ...
    @property
    def limit(self) -> float: ...
    @property
    def allocated(self) -> float: ...


def _num(value: float) -> str:
    return f"{value:g}"


def _used(reason: str) -> str:
    """The non-preemptible GPUs the engine says the queue already holds."""
    found = _NON_PREEMPTIBLE_USED.search(reason)
    return found.group(1) if found else "the GPUs"


def explain(reason: str, ask: Ask, rows: Mapping[str, _Row]) -> tuple[str, str]:
    """A short code (the engine's, or GangDoesNotFit) and one plain sentence."""
    match = _CODE.match(reason)
    queue_match = _QUEUE.search(reason)
    queue = queue_match.group(1) if queue_match else ask.queue
    row = rows.get(queue)
    if match and match.group(1) == "NonPreemptibleOverQuota" and row is not None:
        return (
            "NonPreemptibleOverQuota",
            f"non-preemptible ({ask.priority}) jobs must fit in the deserved quota: {queue} "
            f"has {_num(row.deserved)}, {_used(reason)} in use, {ask.gpus:g} asked",
        )
    if match and match.group(1) == "OverLimit" and row is not None:
        return (
            "OverLimit",
            f"{queue} may hold at most {_num(row.limit)} GPUs and holds "
            f"{_num(row.allocated)}; {ask.gpus:g} more would exceed it",
        )
    if match:
        return match.group(1), reason
    gang = _GANG.match(reason)
    if gang and ask.gang:
        return (
            "GangDoesNotFit",
            f"the gang needs {ask.gpus:g} GPUs at once; only {gang.group(2)} of its "
            f"{gang.group(1)} pods could be placed, so none starts",
        )
    short = _NO_GPU_NODE.search(reason)
    if short:
        return (
            "Unschedulable",
            f"none of the {short.group(1)} nodes has {ask.gpus:g} free GPUs; it waits for room",
        )
    return "Pending", reason
