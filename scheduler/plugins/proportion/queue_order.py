"""Queue order between siblings (kai-semantics §5.4, rules 1-8).

Why: fairness is enforced by the order in which queues get their next job,
re-evaluated after every allocation with fixed fair shares and changing
allocations. Each rule is a small function; ``compare`` applies them in order
and the first decisive one wins.
"""

from __future__ import annotations

import numpy as np

from scheduler.api.queues import UNLIMITED, QueueVector
from scheduler.plugins.proportion.state import TO_KAI_UNITS, QueueState


def is_over_utilized(state: QueueState) -> bool:
    """Fair share strictly below allocated in every resource (rule 1)."""
    return bool((state.fair_share < state.allocated).all())


def is_starved(state: QueueState, job: QueueVector) -> bool:
    """allocated + job within deserved in all resources (rule 2)."""
    wanted = state.allocated + job
    return bool(((state.deserved == UNLIMITED) | (wanted <= state.deserved)).all())


def has_zero_share_penalty(state: QueueState, job: QueueVector) -> bool:
    """Some resource with allocatable share 0 while the queue uses or asks for it (rule 4)."""
    wanted = state.allocated + job
    return bool(((state.allocatable_share == 0) & (wanted > 0)).any())


def dominant_share(state: QueueState, amount: QueueVector, total: QueueVector) -> float:
    """Largest amount / allocatable share over resources (rule 5)."""
    share = state.allocatable_share
    base = np.where(share == UNLIMITED, total, share)
    scaled = amount * TO_KAI_UNITS
    ratios = np.where(base > 0, amount / np.where(base > 0, base, 1.0), scaled * 1000.0)
    return float(ratios.max()) if len(ratios) else 0.0


def _sign(value: float) -> int:
    return -1 if value < 0 else (1 if value > 0 else 0)


def compare(
    a: QueueState, b: QueueState, job_a: QueueVector, job_b: QueueVector, total: QueueVector
) -> int:
    """Negative when ``a`` goes first, positive when ``b`` does, 0 when tied on rules 1-7."""
    over_a, over_b = is_over_utilized(a), is_over_utilized(b)
    if over_a != over_b:
        return 1 if over_a else -1
    starved_a, starved_b = is_starved(a, job_a), is_starved(b, job_b)
    if starved_a != starved_b:
        return -1 if starved_a else 1
    if a.info.priority != b.info.priority:
        return -1 if a.info.priority > b.info.priority else 1
    penalty_a, penalty_b = has_zero_share_penalty(a, job_a), has_zero_share_penalty(b, job_b)
    if penalty_a != penalty_b:
        return 1 if penalty_a else -1
    diff = dominant_share(a, a.allocated + job_a, total) - dominant_share(
        b, b.allocated + job_b, total
    )
    if abs(diff) > 1e-12:
        return _sign(diff)
    diff = dominant_share(a, a.allocated, total) - dominant_share(b, b.allocated, total)
    if abs(diff) > 1e-12:
        return _sign(diff)
    share_a, share_b = a.allocatable_share, b.allocatable_share
    if (share_a <= share_b).all() and (share_a < share_b).any():
        return -1
    if (share_b <= share_a).all() and (share_b < share_a).any():
        return 1
    if a.info.creation != b.info.creation:
        return -1 if a.info.creation < b.info.creation else 1
    return 0
