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
_UNITS = tuple(TO_KAI_UNITS)  # the same numpy scalars, indexed without numpy


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


def at_most(a: float, b: float) -> bool:
    """``a`` ≤ ``b`` where -1 (unlimited) is above every number, as KAI's
    ``compareQuantities`` reads it (rule 7)."""
    if a == UNLIMITED:
        return b == UNLIMITED
    return b == UNLIMITED or a <= b


def smaller_share(a: QueueState, b: QueueState) -> int:
    """Rule 7: -1 when ``a``'s allocatable share is ≤ ``b``'s in every resource and smaller
    in one (``a`` goes first), 1 the other way round, 0 when neither."""
    share_a, share_b = a.share, b.share
    a_within = all(at_most(share_a[r], share_b[r]) for r in _RANGE)
    b_within = all(at_most(share_b[r], share_a[r]) for r in _RANGE)
    if a_within and not b_within:  # a ≤ b everywhere and smaller somewhere
        return -1
    if b_within and not a_within:
        return 1
    return 0


def order_key(
    state: QueueState, job: Triple, total: Triple
) -> tuple[bool, bool, int, bool, float, float]:
    """Rules 1-6 as a sort key (smaller goes first); rules 7-8 are left to ``compare``.

    Two queues whose keys differ decide by key exactly as ``compare`` would,
    except dominant shares within 1e-12, which callers must treat as equal.

    The rule functions above, unrolled over the three resources: the queue order asks
    this about 15,000 times a cycle at 5,000 nodes, and the generators and calls cost
    more than the arithmetic (the same comparisons and float operations in the same
    order, so the same key).
    """
    used, fair, quota, share = state.used, state.fair, state.quota, state.share
    u0, u1, u2 = used[0], used[1], used[2]
    w0, w1, w2 = u0 + job[0], u1 + job[1], u2 + job[2]
    s0, s1, s2 = share[0], share[1], share[2]
    q0, q1, q2 = quota[0], quota[1], quota[2]
    return (
        bool(fair[0] < u0 and fair[1] < u1 and fair[2] < u2),
        not (
            (q0 == UNLIMITED or w0 <= q0)
            and (q1 == UNLIMITED or w1 <= q1)
            and (q2 == UNLIMITED or w2 <= q2)
        ),
        -state.info.priority,
        bool((s0 == 0 and w0 > 0) or (s1 == 0 and w1 > 0) or (s2 == 0 and w2 > 0)),
        _dominant(s0, s1, s2, w0, w1, w2, total),
        _dominant(s0, s1, s2, u0, u1, u2, total),
    )


def _dominant(
    s0: float, s1: float, s2: float, a0: float, a1: float, a2: float, total: Triple
) -> float:
    """:func:`dominant_share` of the amounts ``a0-a2`` for the allocatable share ``s0-s2``."""
    k0, k1, k2 = _UNITS
    b0 = total[0] if s0 == UNLIMITED else s0
    b1 = total[1] if s1 == UNLIMITED else s1
    b2 = total[2] if s2 == UNLIMITED else s2
    best = 0.0
    ratio = a0 / b0 if b0 > 0 else a0 * k0 * 1000.0
    if ratio > best:
        best = ratio
    ratio = a1 / b1 if b1 > 0 else a1 * k1 * 1000.0
    if ratio > best:
        best = ratio
    ratio = a2 / b2 if b2 > 0 else a2 * k2 * 1000.0
    if ratio > best:
        best = ratio
    return best


def same_tier(
    a: tuple[bool, bool, int, bool, float, float], b: tuple[bool, bool, int, bool, float, float]
) -> bool:
    """True when rules 1-6 cannot tell the two keys apart."""
    return may_tie(a, b) and abs(a[5] - b[5]) <= 1e-12


def may_tie(
    a: tuple[bool, bool, int, bool, float, float], b: tuple[bool, bool, int, bool, float, float]
) -> bool:
    """Whether ``b``, the next key after ``a`` in sort order, may leave a queue in
    :func:`same_tier` with ``a``: rules 1-4 equal and rule 5 within 1e-12 (rule 6 not
    read). Keys holding a share that is not a number are not sorted by callers.

    Why rule 6 is not read: a key ``c`` after ``b`` in the same tier as ``a`` has rules
    1-4 equal to ``a``'s, so ``b``'s are too (sorted between them), and its rule 5 lies
    between ``a``'s and ``c``'s, within 1e-12 of ``a``'s. So when this is False for the
    first two keys, the first is alone in its tier and goes first."""
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and a[2] == b[2]
        and a[3] == b[3]
        and abs(a[4] - b[4]) <= 1e-12
    )


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
    smaller = smaller_share(a, b)
    if smaller:
        return smaller
    if a.info.creation != b.info.creation:
        return -1 if a.info.creation < b.info.creation else 1
    return 0
