"""Engine reasons in plain words for the demo's readers.

Why: the engine's reasons are precise but dense (every resource, every
number). A newcomer needs the one idea behind each: which rule held the job
back and what it is waiting for. The engine's own text is kept next to it in
the JSON output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol

from podmuster.demo.cluster import Workload

_CODE = re.compile(r"^([A-Z][A-Za-z]+):")
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


def gang_gpus(workload: Workload) -> int:
    return sum((r.min_member or r.replicas) * r.gpus for r in workload.roles)


def explain(reason: str, workload: Workload, rows: Mapping[str, _Row]) -> tuple[str, str]:
    """A short code (the engine's, or GangDoesNotFit) and one plain sentence."""
    match = _CODE.match(reason)
    queue_match = _QUEUE.search(reason)
    queue = queue_match.group(1) if queue_match else workload.queue
    row = rows.get(queue)
    if match and match.group(1) == "NonPreemptibleOverQuota" and row is not None:
        return (
            "NonPreemptibleOverQuota",
            f"{workload.priority} jobs are non-preemptible and must fit in the deserved quota of "
            f"{queue} ({_num(row.deserved)} GPUs), already used by non-preemptible jobs",
        )
    if match and match.group(1) == "OverLimit" and row is not None:
        return (
            "OverLimit",
            f"{queue} may hold at most {_num(row.limit)} GPUs and holds "
            f"{_num(row.allocated)}; {gang_gpus(workload)} more would exceed it",
        )
    if match:
        return match.group(1), reason
    if reason.startswith("gang of"):
        return (
            "GangDoesNotFit",
            f"the gang needs {gang_gpus(workload)} GPUs at once and that much is not free; "
            "it starts whole or not at all",
        )
    return "Pending", reason
