"""Pending reasons folded into a few categories, and one root cause per pending job.

Why: the engine explains each pending job in full sentences with node counts
("0/1523 nodes are available: 1201 Insufficient nvidia.com/gpu, ..."); a
histogram needs the kinds of reasons, not the sentences. And a job that does
not fit gets several sentences in one cycle: the placement failure, then one
per action that tried to make room for it ("reclaim: ...", "preempt: ...",
"consolidation: ..."). Those actions failed *because* the job does not fit;
counting each would count one stuck job four times. :func:`root_cause` keeps
the one reason that explains the others.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_POD_PREFIX = re.compile(r"^(?:[^:]*?)pod [^\s:]+: ")
_COUNTED = re.compile(r"^(\d+) (?:node\(s\) )?")
_ACTIONS = frozenset({"reclaim", "preempt", "consolidation", "consolidate"})
_GANG = "would fit this pod alone, not together with the rest of its job"


def _fit_parts(detail: str) -> list[tuple[str, int]]:
    """(label, nodes it ruled out) of each part of "0/N nodes are available: <detail>"."""
    out = []
    for part in detail.split(", "):
        part = part.strip()
        counted = _COUNTED.match(part)
        label = _COUNTED.sub("", part)
        if label:
            out.append((label, int(counted.group(1)) if counted else 0))
    return out


def _classified(reason: str) -> tuple[bool, list[tuple[str, int]]]:
    """(is it an action that failed to make room, [(category, weight)]) of one sentence."""
    text = _POD_PREFIX.sub("", reason.strip())
    if "nodes are available:" in text:
        detail = text.split("nodes are available:", 1)[1].strip().rstrip(".")
        if _GANG in detail:
            return False, [("gang does not fit together", 0)]
        return False, _fit_parts(detail) or [("no node fits", 0)]
    if text.startswith("no nodes in the cluster"):
        return False, [("no nodes in the cluster", 0)]
    head = text.split(":", 1)[0].strip()
    if head in _ACTIONS:
        return True, [(f"no {head} possible", 0)]
    if re.fullmatch(r"[A-Z][A-Za-z]+", head):
        return False, [(head, 0)]  # KAI reason codes: QueueDoesNotExist, OverLimit...
    words = head.split()
    return False, [(" ".join(words[:6]) if words else "unknown", 0)]


def root_cause(reasons: Sequence[str]) -> str:
    """The one category that explains a pending job's reasons from one cycle.

    The first sentence that is not a failed action (reclaim, preempt,
    consolidation) is the cause; the actions only say nothing could make room
    for it. Of a fit failure naming several node filters, the one that ruled
    out the most nodes wins (the first on a tie). Only when every sentence is
    a failed action does the first of them stand as the cause.
    """
    fallback = "no reason given"
    for reason in reasons:
        action, parts = _classified(reason)
        if action:
            if fallback == "no reason given":
                fallback = parts[0][0]
            continue
        return max(parts, key=lambda part: part[1])[0]
    return fallback
