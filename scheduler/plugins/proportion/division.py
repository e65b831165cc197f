"""Hierarchical fair-share division: KAI's ``resource_division`` as a pure function.

Why it exists: every scheduling cycle needs each queue's fair share (what it
may hold before it becomes a reclaim victim) and its allocatable share. KAI's
rules have many sharp corners (deserved not capped by the amount, whole-unit
rounds, fractional remainders settled one unit at a time) and users compare our
numbers with KAI's, so the rules live here alone, free of session state, and
are tested against hand-computed tables (docs/semantics.md §5.4, §2.3).

Algorithm, per resource and per level of siblings dividing an amount A (the
cluster total at the root, the parent's final fair share below it):

1. Deserved phase: each queue gets ``min(deserved, requestable)`` (deserved -1
   means A), not capped by A. If the left-over is <= 0 there is no over-quota.
2. Over-quota phase, one priority bucket at a time (descending priority), in
   rounds over the unsatisfied queues with weight
   ``max(0, w + k (w - u))``: a queue whose remaining request r fits its
   share gets r exactly; others get ``floor(share)`` and record the fraction.
   Another round runs only while something is left and some r was strictly
   below its share.
3. Remainder phase: per bucket, largest recorded fraction first (older queue,
   then uid), each popped queue gets ``min(1, left-over)`` once.
4. Children divide their parent's final fair share; recurse.

Floating point: amounts are sums of floats (memory in bytes reaches 1e14, where
one ulp is ~0.02), so every comparison between computed amounts uses one
tolerance per resource, ``min(MAX_TOLERANCE, ABS_TOLERANCE + REL_TOLERANCE *
scale)``, scale being the largest magnitude among the total and the queues'
numbers for that resource; the cap keeps it far below the whole unit the rounds
hand out (it only bites for memory in bytes). Within it: a remaining request
fits its share, a queue is satisfied, a share snaps to the next integer, a
fraction or a left-over is zero, and two recorded remainders are equal (then
age and uid decide). Σ weights = 0 is an exact test (weights are not sums of
amounts).

Readings where §5.4 leaves room: a floor with no fraction keeps the queue's
earlier recorded remainder (only a positive fraction replaces it); queues with
OQW 0 take no part in the weights, so they neither get nor dilute shares even
if ``k`` and usage would make their weight positive; ``allocatable_share`` uses
the configured deserved, not the deserved-phase amount; siblings are processed
in (age, uid, name) order so float sums, hence results, ignore input order.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

UNLIMITED = -1.0
"""KAI's sentinel: deserved -1 = unlimited deserved, limit -1 = no limit."""

ABS_TOLERANCE = 1e-9
REL_TOLERANCE = 1e-13
MAX_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class QueueInput:
    """One queue of the tree; index r of every tuple is resource r."""

    name: str
    parent: str | None
    priority: int
    age_rank: int
    uid: str
    deserved: tuple[float, ...]
    limit: tuple[float, ...]
    over_quota_weight: tuple[float, ...]
    request: tuple[float, ...]
    usage: tuple[float, ...] | None = None


@dataclass(frozen=True, slots=True)
class QueueShare:
    """A queue's division result, per resource."""

    fair_share: tuple[float, ...]
    deserved: tuple[float, ...]
    allocatable_share: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SiblingDemand:
    """One sibling's numbers for one resource at one level of the tree."""

    deserved: float
    limit: float
    over_quota_weight: float
    request: float
    usage: float
    priority: int
    age_rank: int
    uid: str
    name: str


@dataclass(frozen=True, slots=True)
class LevelDivision:
    """The outcome of one level for one resource, in the siblings' order."""

    fair_shares: list[float]
    deserved_shares: list[float]


def tolerance(scale: float) -> float:
    """The comparison tolerance for amounts of magnitude ``scale`` (module docstring)."""
    return min(MAX_TOLERANCE, ABS_TOLERANCE + REL_TOLERANCE * abs(scale))


def requestable(request: float, limit: float) -> float:
    """``min(request, limit)``; a limit of -1 means no limit (§5.4 "requestable")."""
    return request if limit == UNLIMITED else min(request, limit)


def deserved_share(deserved: float, requestable_amount: float, amount: float) -> float:
    """Deserved phase: ``min(deserved, requestable)``, deserved -1 meaning the level amount."""
    return min(amount if deserved == UNLIMITED else deserved, requestable_amount)


def over_quota_weight(normalized_weight: float, usage: float, k_value: float) -> float:
    """``max(0, w + k·(w - u))`` with w = OQW / Σ OQW of the unsatisfied (§5.4 step 2)."""
    return max(0.0, normalized_weight + k_value * (normalized_weight - usage))


def allocatable_share(deserved: float, fair_share: float, limit: float) -> float:
    """``max(deserved, fairShare)`` capped by the limit; deserved -1 gives the limit (§5.4)."""
    if deserved == UNLIMITED:
        return limit
    share = max(deserved, fair_share)
    return share if limit == UNLIMITED else min(share, limit)


def is_unsatisfied(demand: SiblingDemand, fair_share: float, tol: float) -> bool:
    """request > fairShare and (limit -1 or limit > fairShare), beyond the tolerance."""
    if demand.request <= fair_share + tol:
        return False
    return demand.limit == UNLIMITED or demand.limit > fair_share + tol


def split_whole(share: float, tol: float) -> tuple[float, float]:
    """``(floor(share), share - floor(share))``; near-integers snap, tiny fractions drop."""
    whole = math.floor(share)
    fraction = share - whole
    if fraction >= 1.0 - tol:
        return whole + 1.0, 0.0
    return float(whole), (fraction if fraction > tol else 0.0)


def _over_quota_rounds(
    left: float,
    members: list[int],
    demands: Sequence[SiblingDemand],
    caps: list[float],
    shares: list[float],
    k_value: float,
    tol: float,
) -> tuple[float, dict[int, float]]:
    """Run one priority bucket's rounds; update ``shares``; return (left, remainders)."""
    remainders: dict[int, float] = {}
    while left > tol:
        unsatisfied = [i for i in members if is_unsatisfied(demands[i], shares[i], tol)]
        total_oqw = sum(demands[i].over_quota_weight for i in unsatisfied)
        if total_oqw <= 0.0:
            break
        weights = {
            i: over_quota_weight(
                demands[i].over_quota_weight / total_oqw, demands[i].usage, k_value
            )
            for i in unsatisfied
            if demands[i].over_quota_weight > 0.0
        }
        total_weight = sum(weights.values())
        if total_weight <= 0.0:
            break
        round_amount = left
        another_round = False
        for i, weight in weights.items():
            share = round_amount * weight / total_weight
            remaining = caps[i] - shares[i]
            if remaining <= share + tol:
                shares[i] = caps[i]
                left -= remaining
                remainders.pop(i, None)
                another_round = another_round or remaining < share - tol
            else:
                whole, fraction = split_whole(share, tol)
                shares[i] += whole
                left -= whole
                if fraction > 0.0:
                    remainders[i] = fraction
        if not another_round:
            break
    return left, remainders


def _remainder_order(
    remainders: dict[int, float], demands: Sequence[SiblingDemand], tol: float
) -> list[int]:
    """Largest remainder first; within the tolerance, older queue, then uid, then name."""

    def compare(a: int, b: int) -> int:
        if abs(remainders[a] - remainders[b]) > tol:
            return -1 if remainders[a] > remainders[b] else 1
        key_a, key_b = _age_key(demands[a]), _age_key(demands[b])
        return -1 if key_a < key_b else (1 if key_a > key_b else 0)

    return sorted(remainders, key=functools.cmp_to_key(compare))


def _age_key(demand: SiblingDemand) -> tuple[int, str, str]:
    return demand.age_rank, demand.uid, demand.name


def divide_amount(
    amount: float, demands: Sequence[SiblingDemand], k_value: float = 1.0, tol: float | None = None
) -> LevelDivision:
    """Divide ``amount`` of one resource among siblings: §5.4 steps 1-3.

    ``tol`` defaults to ``tolerance`` of the largest magnitude in the inputs.
    """
    if tol is None:
        numbers = [(d.request, d.deserved, d.limit) for d in demands]
        tol = tolerance(max([abs(amount)] + [abs(x) for triple in numbers for x in triple]))
    caps = [requestable(d.request, d.limit) for d in demands]
    deserved = [
        deserved_share(d.deserved, cap, amount) for d, cap in zip(demands, caps, strict=True)
    ]
    shares = list(deserved)
    left = amount - sum(deserved)
    if left <= tol:
        return LevelDivision(shares, deserved)
    bucket_remainders: list[dict[int, float]] = []
    for priority in sorted({d.priority for d in demands}, reverse=True):
        members = [i for i, d in enumerate(demands) if d.priority == priority]
        left, remainders = _over_quota_rounds(left, members, demands, caps, shares, k_value, tol)
        bucket_remainders.append(remainders)
    for remainders in bucket_remainders:
        for i in _remainder_order(remainders, demands, tol):
            if left <= tol:
                break
            given = min(1.0, left)
            shares[i] += given
            left -= given
    return LevelDivision(shares, deserved)


def _children_by_parent(queues: Sequence[QueueInput]) -> dict[str | None, list[QueueInput]]:
    """Group queues under their parent, siblings in canonical (age, uid, name) order.

    Raises ``ValueError`` for duplicate names, missing parents and parent cycles.
    """
    names: set[str] = set()
    for queue in queues:
        if queue.name in names:
            raise ValueError(f"queue {queue.name!r} is listed more than once")
        names.add(queue.name)
    children: dict[str | None, list[QueueInput]] = {}
    for queue in queues:
        if queue.parent is not None and queue.parent not in names:
            raise ValueError(f"queue {queue.name!r} has a missing parent {queue.parent!r}")
        children.setdefault(queue.parent, []).append(queue)
    for siblings in children.values():
        siblings.sort(key=lambda q: (q.age_rank, q.uid, q.name))
    reached: set[str] = set()
    frontier: list[str | None] = [None]
    while frontier:
        parent = frontier.pop()
        for child in children.get(parent, []):
            reached.add(child.name)
            frontier.append(child.name)
    cyclic = sorted(names - reached)
    if cyclic:
        raise ValueError(f"queues in a parent cycle (no path to a top-level queue): {cyclic}")
    return children


def _check_widths(width: int, queues: Sequence[QueueInput]) -> None:
    for queue in queues:
        vectors = (queue.deserved, queue.limit, queue.over_quota_weight, queue.request)
        if any(len(v) != width for v in vectors) or (
            queue.usage is not None and len(queue.usage) != width
        ):
            raise ValueError(f"queue {queue.name!r} does not have {width} resources")


def _demand(queue: QueueInput, r: int) -> SiblingDemand:
    return SiblingDemand(
        deserved=queue.deserved[r],
        limit=queue.limit[r],
        over_quota_weight=queue.over_quota_weight[r],
        request=queue.request[r],
        usage=0.0 if queue.usage is None else queue.usage[r],
        priority=queue.priority,
        age_rank=queue.age_rank,
        uid=queue.uid,
        name=queue.name,
    )


def divide_fair_shares(
    total: tuple[float, ...], queues: Sequence[QueueInput], k_value: float = 1.0
) -> dict[str, QueueShare]:
    """Fair, effective deserved and allocatable shares of every queue of the tree (§5.4).

    The top-level queues divide ``total``; each queue's children divide its final
    fair share, to any depth. The result does not depend on the order of ``queues``.
    """
    width = len(total)
    _check_widths(width, queues)
    children = _children_by_parent(queues)
    tols = [
        tolerance(
            max(
                [abs(total[r])]
                + [abs(x[r]) for q in queues for x in (q.request, q.deserved, q.limit)]
            )
        )
        for r in range(width)
    ]
    fair: dict[str, list[float]] = {q.name: [0.0] * width for q in queues}
    deserved: dict[str, list[float]] = {q.name: [0.0] * width for q in queues}
    pending: list[tuple[str | None, tuple[float, ...]]] = [(None, total)]
    while pending:
        parent, amounts = pending.pop()
        siblings = children.get(parent, [])
        if not siblings:
            continue
        for r in range(width):
            demands = [_demand(q, r) for q in siblings]
            level = divide_amount(amounts[r], demands, k_value, tols[r])
            for q, share, given in zip(
                siblings, level.fair_shares, level.deserved_shares, strict=True
            ):
                fair[q.name][r] = share
                deserved[q.name][r] = given
        pending.extend((q.name, tuple(fair[q.name])) for q in siblings)
    return {
        q.name: QueueShare(
            fair_share=tuple(fair[q.name]),
            deserved=tuple(deserved[q.name]),
            allocatable_share=tuple(
                allocatable_share(q.deserved[r], fair[q.name][r], q.limit[r]) for r in range(width)
            ),
        )
        for q in queues
    }
