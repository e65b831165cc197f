"""Queue order between siblings (docs/semantics.md §5.4, rules 1-8).

Why: fairness is enforced by the order in which queues get their next job,
re-evaluated after every allocation with fixed fair shares and changing
allocations. Each rule is a small function; ``compare`` applies them in order
and the first decisive one wins. Vectors here have three entries (GPU, CPU,
memory), so plain Python floats are faster than numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.api.queues import UNLIMITED
from scheduler.plugins.proportion.state import TO_KAI_UNITS, QueueState

Triple = Sequence[float]
_RANGE = range(3)


def is_over_utilized(state: QueueState) -> bool:
    """Fair share strictly below allocated in every resource (rule 1)."""
    fair, allocated = state.fair, state.used
    return all(fair[r] < allocated[r] for r in _RANGE)


def is_starved(state: QueueState, job: Triple) -> bool:
    """allocated + job within deserved in all resources (rule 2)."""
    deserved, allocated = state.quota, state.used
    return all(deserved[r] == UNLIMITED or allocated[r] + job[r] <= deserved[r] for r in _RANGE)


def has_zero_share_penalty(state: QueueState, job: Triple) -> bool:
    """Some resource with allocatable share 0 while the queue uses or asks for it (rule 4)."""
    share, allocated = state.share, state.used
    return any(share[r] == 0 and allocated[r] + job[r] > 0 for r in _RANGE)


def dominant_share(state: QueueState, amount: Triple, total: Triple) -> float:
    """Largest amount / allocatable share over resources (rule 5).

    An unlimited allocatable share divides by the cluster total; a zero share
    weighs the amount (in KAI units) by 1000, so such queues sort last.
    """
    best = 0.0
    share = state.share
    for r in _RANGE:
        base = total[r] if share[r] == UNLIMITED else share[r]
        ratio = amount[r] / base if base > 0 else amount[r] * TO_KAI_UNITS[r] * 1000.0
        if ratio > best:
            best = ratio
    return best


def order_key(
    state: QueueState, job: Triple, total: Triple
) -> tuple[bool, bool, int, bool, float, float]:
    """Rules 1-6 as a sort key (smaller goes first); rules 7-8 are left to ``compare``.

    Two queues whose keys differ decide by key exactly as ``compare`` would,
    except dominant shares within 1e-12, which callers must treat as equal.
    """
    with_job = [state.used[r] + job[r] for r in _RANGE]
    return (
        is_over_utilized(state),
        not is_starved(state, job),
        -state.info.priority,
        has_zero_share_penalty(state, job),
        dominant_share(state, with_job, total),
        dominant_share(state, state.used, total),
    )


def same_tier(
    a: tuple[bool, bool, int, bool, float, float], b: tuple[bool, bool, int, bool, float, float]
) -> bool:
    """True when rules 1-6 cannot tell the two keys apart."""
    return a[:4] == b[:4] and abs(a[4] - b[4]) <= 1e-12 and abs(a[5] - b[5]) <= 1e-12


def compare(a: QueueState, b: QueueState, job_a: Triple, job_b: Triple, total: Triple) -> int:
    """Negative when ``a`` goes first, positive when ``b`` does, 0 when tied on all rules."""
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
    with_a = [a.used[r] + job_a[r] for r in _RANGE]
    with_b = [b.used[r] + job_b[r] for r in _RANGE]
    diff = dominant_share(a, with_a, total) - dominant_share(b, with_b, total)
    if abs(diff) > 1e-12:
        return -1 if diff < 0 else 1
    diff = dominant_share(a, a.used, total) - dominant_share(b, b.used, total)
    if abs(diff) > 1e-12:
        return -1 if diff < 0 else 1
    share_a, share_b = a.share, b.share
    if all(share_a[r] <= share_b[r] for r in _RANGE) and any(
        share_a[r] < share_b[r] for r in _RANGE
    ):
        return -1
    if all(share_b[r] <= share_a[r] for r in _RANGE) and any(
        share_b[r] < share_a[r] for r in _RANGE
    ):
        return 1
    if a.info.creation != b.info.creation:
        return -1 if a.info.creation < b.info.creation else 1
    return 0
