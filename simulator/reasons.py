"""Pending reasons folded into a few categories for the histogram.

Why: the engine explains each pending job in a full sentence with node counts
("0/1523 nodes are available: 1201 Insufficient nvidia.com/gpu, ..."); a
histogram needs the kinds of reasons, not the sentences.
"""

from __future__ import annotations

import re

_POD_PREFIX = re.compile(r"^(?:[^:]*?)pod [^\s:]+: ")
_COUNTED = re.compile(r"^\d+ (?:node\(s\) )?")
_ACTIONS = frozenset({"reclaim", "preempt", "consolidation", "consolidate"})
_GANG = "would fit this pod alone, not together with the rest of its job"


def categories(reason: str) -> list[str]:
    """The categories of one reason sentence (a fit failure may name several)."""
    text = _POD_PREFIX.sub("", reason.strip())
    if "nodes are available:" in text:
        detail = text.split("nodes are available:", 1)[1].strip().rstrip(".")
        if _GANG in detail:
            return ["gang does not fit together"]
        out = []
        for part in detail.split(", "):
            label = _COUNTED.sub("", part.strip())
            if label:
                out.append(label)
        return out or ["no node fits"]
    if text.startswith("no nodes in the cluster"):
        return ["no nodes in the cluster"]
    head = text.split(":", 1)[0].strip()
    if head in _ACTIONS:
        return [f"no {head} possible"]
    if re.fullmatch(r"[A-Z][A-Za-z]+", head):
        return [head]  # CamelCase KAI reason codes: QueueDoesNotExist, NonPreemptibleOverQuota...
    words = head.split()
    return [" ".join(words[:6]) if words else "unknown"]
