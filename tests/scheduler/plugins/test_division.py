"""Hierarchical fair-share division (docs/semantics.md §5.4, §2.3, §9.4 S2).

Covers: a table of hand-computed divisions (deserved phase, deserved -1,
negative left-over, over-quota weights, OQW 0, priority buckets, limits,
whole-unit rounds and remainders, multi-round, 2- and 3-level trees,
independent resources, zero total, time-based usage with k), the derived
allocatable share, input errors (missing parent, cycles, widths), and
hypothesis properties (over-quota bounded by the left-over, OQW 0 gets no
over-quota, fair share within one unit of requestable/limit, work
conservation, determinism and independence from the input order).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.proportion.division import (
    QueueInput,
    QueueShare,
    allocatable_share,
    divide_fair_shares,
    requestable,
    tolerance,
)

Number = float | tuple[float, ...]


def _vec(value: Number) -> tuple[float, ...]:
    return tuple(float(v) for v in value) if isinstance(value, tuple) else (float(value),)


def q(
    name: str,
    *,
    parent: str | None = None,
    prio: int = 100,
    age: int = 0,
    uid: str | None = None,
    deserved: Number = 0.0,
    limit: Number = -1.0,
    oqw: Number = 1.0,
    request: Number = 0.0,
    usage: Number | None = None,
) -> QueueInput:
    """A queue; scalars mean a single resource (GPU)."""
    request_v = _vec(request)
    width = len(request_v)

    def widen(value: Number) -> tuple[float, ...]:
        v = _vec(value)
        return v * width if len(v) == 1 else v

    return QueueInput(
        name=name,
        parent=parent,
        priority=prio,
        age_rank=age,
        uid=uid if uid is not None else f"uid-{name}",
        deserved=widen(deserved),
        limit=widen(limit),
        over_quota_weight=widen(oqw),
        request=request_v,
        usage=None if usage is None else widen(usage),
    )


@dataclass(frozen=True)
class Case:
    total: Number
    queues: list[QueueInput]
    expected: dict[str, Number]
    k: float = 1.0
    aged: bool = field(default=True)  # age_rank = listing order unless the case sets ages

    def inputs(self) -> list[QueueInput]:
        if not self.aged:
            return self.queues
        return [replace(queue, age_rank=i) for i, queue in enumerate(self.queues)]


S2_QUEUES = [
    q("d1", deserved=1, oqw=1, request=8),  # 6 running + 2 pending under it
    q("queue0", parent="d1", deserved=1, oqw=1, request=3),
    q("queue1", parent="d1", deserved=1, oqw=1, request=3),
    q("reclaimer_queue", parent="d1", deserved=2, oqw=0, request=2),
]

CASES: dict[str, Case] = {
    # min(3,5)=3, min(4,4)=4; left 3 but both OQW 0
    "deserved_only": Case(
        10,
        [q("a", deserved=3, oqw=0, request=5), q("b", deserved=4, oqw=0, request=4)],
        {"a": 3, "b": 4},
    ),
    # deserved -1 => A=10: min(10,4)=4, min(10,20)=10; left -4, shares sum 14 > 10
    "deserved_unlimited": Case(
        10,
        [q("a", deserved=-1, request=4), q("b", deserved=-1, oqw=0, request=20)],
        {"a": 4, "b": 10},
    ),
    # min(5,2)=2, min(3,3)=3
    "request_below_deserved": Case(
        10,
        [q("a", deserved=5, oqw=0, request=2), q("b", deserved=3, oqw=0, request=3)],
        {"a": 2, "b": 3},
    ),
    # 3 + 3 = 6 > 4: left -2, no over-quota phase although b wants 2 more
    "leftover_negative": Case(
        4, [q("a", deserved=3, request=3), q("b", deserved=3, request=5)], {"a": 3, "b": 3}
    ),
    # left 12 split 1:2 -> 4 and 8
    "oqw_proportional_1_2": Case(
        12, [q("a", oqw=1, request=100), q("b", oqw=2, request=100)], {"a": 4, "b": 8}
    ),
    # deserved 2+2, left 6 all to b (share 6 < r 8): a stays at 2
    "oqw_zero_gets_nothing": Case(
        10,
        [q("a", deserved=2, oqw=0, request=10), q("b", deserved=2, oqw=1, request=10)],
        {"a": 2, "b": 8},
    ),
    # deserved 4; left 6 split 1:1 -> 3 each: a=4+3, b=0+3
    "deserved_plus_over_quota": Case(
        10, [q("a", deserved=4, request=10), q("b", request=10)], {"a": 7, "b": 3}
    ),
    # bucket 200: hi r=6 <= 10 -> 6; bucket 100 gets the 4 left
    "priority_bucket_then_rest": Case(
        10, [q("hi", prio=200, request=6), q("lo", prio=100, request=10)], {"hi": 6, "lo": 4}
    ),
    # lo deserved 1; left 9 all to hi (bucket 200 first, share 9 < r 20)
    "priority_high_takes_all": Case(
        10,
        [q("hi", prio=200, request=20), q("lo", prio=100, deserved=1, request=20)],
        {"hi": 9, "lo": 1},
    ),
    # a requestable min(8,3)=3 -> 3, satisfied (limit 3); b gets left 7
    "limit_below_deserved": Case(
        10, [q("a", deserved=5, limit=3, request=8), q("b", request=10)], {"a": 3, "b": 7}
    ),
    # round 1 shares 5/5: a r=2 -> 2, b -> 5, left 3; round 2: b -> 3
    "limit_reached_mid_rounds": Case(
        10, [q("a", limit=2, request=10), q("b", request=10)], {"a": 2, "b": 8}
    ),
    # round 1 shares 3: a r=1 -> 1, b,c -> 3, left 2; round 2 shares 1 each
    "satisfied_queue_frees_capacity": Case(
        9,
        [q("a", request=1), q("b", request=10), q("c", request=10)],
        {"a": 1, "b": 4, "c": 4},
    ),
    # round 1 shares 4: a r=2 -> 2 (frees 2), b r=4 = share -> 4, c -> 4; round 2: c gets 2
    "multi_round_chain": Case(
        12,
        [q("a", request=2), q("b", request=4), q("c", request=20)],
        {"a": 2, "b": 4, "c": 6},
    ),
    # shares 11.4/9.5/.95/.95: a r=11.4 equals its share -> no 2nd round; b 9, c 0, d 0,
    # left 2.4; remainders c .95, d .95 (c older), b .5 -> c 1, d 1, b .4
    "equal_share_no_extra_round": Case(
        22.8,
        [
            q("a", oqw=12, request=11.4),
            q("b", oqw=10, request=100),
            q("c", oqw=1, request=100),
            q("d", oqw=1, request=100),
        ],
        {"a": 11.4, "b": 9.4, "c": 1, "d": 1},
    ),
    # round 1 (weights 2:1:1) shares 4.5/2.25/2.25: c r=1.5 -> 1.5, a 4 (rem .5), b 2 (rem .25),
    # left 1.5; round 2 shares 1/.5: a 1 (no fraction: keeps rem .5), b 0 (rem .5), left .5;
    # remainders tie at .5 -> older a gets .5
    "zero_fraction_keeps_earlier_remainder": Case(
        9,
        [q("a", oqw=2, request=100), q("b", request=100), q("c", request=1.5)],
        {"a": 5.5, "b": 2, "c": 1.5},
    ),
    # shares 1.5/1.5 -> 1 each, remainders .5/.5, left 1 -> older a
    "remainder_tie_older_queue": Case(
        3, [q("a", request=10), q("b", request=10)], {"a": 2, "b": 1}
    ),
    # same ages: uid "u1" (b) wins the tie
    "remainder_tie_uid": Case(
        3,
        [q("a", uid="u2", request=10), q("b", uid="u1", request=10)],
        {"a": 1, "b": 2},
        aged=False,
    ),
    # shares 1.25/1.25/2.5 -> 1/1/2, left 1; largest remainder .5 is c (youngest)
    "remainder_largest_first": Case(
        5,
        [q("a", request=10), q("b", request=10), q("c", oqw=2, request=10)],
        {"a": 1, "b": 1, "c": 3},
    ),
    # shares 1.5 each, r=1.6 > 1.5 -> 1 each, left 1 -> a gets 1: 2 > request 1.6
    "remainder_exceeds_request": Case(
        3, [q("a", request=1.6), q("b", request=1.6)], {"a": 2, "b": 1}
    ),
    # same with a limit 1.6: the remainder rule goes past the limit by 0.4
    "remainder_exceeds_limit": Case(
        3, [q("a", limit=1.6, request=10), q("b", request=10)], {"a": 2, "b": 1}
    ),
    # share 2.5 -> 2, remainder .5, left .5 -> min(1, .5)
    "remainder_below_one_unit_left": Case(2.5, [q("a", request=10)], {"a": 2.5}),
    # hi bucket: 1.5/1.5 -> 1/1, left 1 flows to lo's rounds before any remainder -> lo 1
    "floor_leftover_flows_to_lower_bucket": Case(
        3,
        [q("h1", prio=200, request=10), q("h2", prio=200, request=10), q("lo", request=10)],
        {"h1": 1, "h2": 1, "lo": 1},
    ),
    # hi share 1.5 -> 1 (rem .5); lo share .5 -> 0 (rem .5); remainders: hi bucket first
    "remainder_buckets_in_priority_order": Case(
        1.5, [q("lo", request=10), q("hi", prio=200, request=10)], {"hi": 1.5, "lo": 0}
    ),
    # a: deserved 1, share 9 >= r 2 -> 3; no one unsatisfied, 7 stays undivided
    "leftover_undivided_when_all_satisfied": Case(10, [q("a", deserved=1, request=3)], {"a": 3}),
    # root: P 4, Q 2, left 4 -> P 8; children of P divide 8: 3+1, left 4 split 1:3 -> 4/4
    "two_level": Case(
        10,
        [
            q("P", deserved=4, request=20),
            q("Q", deserved=2, request=2),
            q("c1", parent="P", deserved=3, oqw=1, request=12),
            q("c2", parent="P", deserved=1, oqw=3, request=8),
        ],
        {"P": 8, "Q": 2, "c1": 4, "c2": 4},
    ),
    # A=min(16,18)=16; B 6 + C 2, left 8: shares 4/4, C r=3 -> 3, B 4, round 2: B +1 = 11;
    # B's kids divide 11: 2+2, left 7: 3.5 each, B2 r=1 -> 1, B1 3 (rem .5); round 2 B1 +3 = 8;
    # C1 (deserved -1) = min(5, 5) = 5
    "three_level": Case(
        16,
        [
            q("A", deserved=-1, request=18),
            q("B", parent="A", deserved=6, request=13),
            q("C", parent="A", deserved=2, request=5),
            q("B1", parent="B", deserved=2, request=10),
            q("B2", parent="B", deserved=2, request=3),
            q("C1", parent="C", deserved=-1, request=5),
        ],
        {"A": 16, "B": 11, "C": 5, "B1": 8, "B2": 3, "C1": 5},
    ),
    # §9.4 S2: d1 = 1 + 5 = 6; children 1/1/2, left 2 split 1:1 (reclaimer OQW 0)
    "s2_reclaim_example": Case(
        6, S2_QUEUES, {"d1": 6, "queue0": 2, "queue1": 2, "reclaimer_queue": 2}
    ),
    # total 0: b still gets min(2,1)=1 (deserved not capped), left -1
    "zero_total": Case(0, [q("a", request=5), q("b", deserved=2, request=1)], {"a": 0, "b": 1}),
    # GPU: 1+1, left 2 -> a 3. CPU: a 1000, b (-1) min(8000,4000); a OQW 0 -> stop.
    # Memory: a 8e9, b 0, left 24e9 -> b (OQW 3, only unsatisfied)
    "resources_independent": Case(
        (4, 8000, 32e9),
        [
            q("a", deserved=(1, 1000, 8e9), oqw=(1, 0, 1), request=(4, 6000, 8e9)),
            q("b", deserved=(1, -1, 0), oqw=(1, 1, 3), request=(1, 4000, 40e9)),
        ],
        {"a": (3, 1000, 8e9), "b": (1, 4000, 24e9)},
    ),
    # w=.5 each; weights a .5+(.5-.5)=.5, b .5+.5=1 -> 3.33/6.67 -> 3/6, left 1 -> b (.67)
    "usage_k1": Case(
        10, [q("a", request=100, usage=0.5), q("b", request=100, usage=0.0)], {"a": 3, "b": 7}
    ),
    # k=0 ignores usage: 5/5
    "usage_k0": Case(
        10,
        [q("a", request=100, usage=0.5), q("b", request=100, usage=0.0)],
        {"a": 5, "b": 5},
        k=0.0,
    ),
    # a weight max(0, .5 + 2(.5-1)) = 0; b gets all 10
    "usage_clips_weight_to_zero": Case(
        10, [q("a", request=100, usage=1.0), q("b", request=100)], {"a": 0, "b": 10}, k=2.0
    ),
    # only OQW-0 queues unsatisfied: sum of weights 0, bucket ends
    "all_oqw_zero": Case(10, [q("a", deserved=2, oqw=0, request=10)], {"a": 2}),
    # limit 0 = hard cap 0 (§2.3): requestable 0; b takes the rest
    "limit_zero_hard_cap": Case(
        5, [q("a", deserved=3, limit=0, request=4), q("b", request=9)], {"a": 0, "b": 5}
    ),
}


@pytest.mark.parametrize(("name", "case"), sorted(CASES.items()), ids=sorted(CASES))
def test_division_table(name: str, case: Case) -> None:
    result = divide_fair_shares(_vec(case.total), case.inputs(), case.k)
    assert set(result) == set(case.expected), name
    for queue, want in case.expected.items():
        assert result[queue].fair_share == pytest.approx(_vec(want), rel=1e-12, abs=1e-9), queue


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 25


def test_effective_deserved_and_allocatable_share() -> None:
    result = divide_fair_shares(
        (11.0,),
        [
            q("a", deserved=5, limit=7, request=4, age=0),  # deserved phase min(5,4)=4
            q("b", deserved=-1, limit=9, oqw=0, request=3, age=1),  # min(11,3)=3; alloc = limit 9
            q("c", deserved=-1, oqw=0, request=2, age=2),  # alloc = limit -1 (unlimited)
            q(
                "d", deserved=1, limit=2, request=20, age=3
            ),  # 4+3+2+1=10, left 1 -> 2; alloc min(2, 2)
        ],
    )
    assert result["a"] == QueueShare(fair_share=(4.0,), deserved=(4.0,), allocatable_share=(5.0,))
    assert result["b"].deserved == (3.0,)
    assert result["b"].allocatable_share == (9.0,)
    assert result["c"].allocatable_share == (-1.0,)
    assert result["d"].fair_share == (2.0,)
    assert result["d"].allocatable_share == (2.0,)


def test_allocatable_share_caps_remainder_overshoot() -> None:
    result = divide_fair_shares((3.0,), CASES["remainder_exceeds_limit"].inputs())
    assert result["a"].fair_share == (2.0,)
    assert result["a"].allocatable_share == (1.6,)  # max(0, 2) capped by the limit


@pytest.mark.parametrize(
    ("deserved", "fair", "limit", "want"),
    [(3, 5, -1, 5), (3, 1, -1, 3), (3, 5, 4, 4), (-1, 5, 4, 4), (-1, 5, -1, -1), (0, 0, 0, 0)],
)
def test_allocatable_share_helper(deserved: float, fair: float, limit: float, want: float) -> None:
    assert allocatable_share(deserved, fair, limit) == want


def test_requestable_helper() -> None:
    assert requestable(5.0, -1.0) == 5.0
    assert requestable(5.0, 3.0) == 3.0
    assert requestable(5.0, 0.0) == 0.0


def test_empty_inputs() -> None:
    assert divide_fair_shares((4.0,), []) == {}


def test_missing_parent_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"'child'.*'ghost'"):
        divide_fair_shares((1.0,), [q("child", parent="ghost", request=1)])


@pytest.mark.parametrize(
    "queues",
    [
        [q("a", parent="b"), q("b", parent="a"), q("root")],
        [q("self", parent="self")],
    ],
)
def test_parent_cycle_is_a_clear_error(queues: list[QueueInput]) -> None:
    with pytest.raises(ValueError, match="cycle"):
        divide_fair_shares((1.0,), queues)


def test_duplicate_name_and_width_errors() -> None:
    with pytest.raises(ValueError, match="more than once"):
        divide_fair_shares((1.0,), [q("a"), q("a")])
    with pytest.raises(ValueError, match="'a' does not have 2 resources"):
        divide_fair_shares((1.0, 2.0), [q("a")])


def test_memory_in_bytes_keeps_whole_units() -> None:
    # 3 queues share 1e12 + 1 bytes: 333333333333.67 each -> floors, then remainders by age
    total = 1e12 + 1
    result = divide_fair_shares((total,), [q(n, request=1e13, age=i) for i, n in enumerate("abc")])
    shares = [result[n].fair_share[0] for n in "abc"]
    assert shares == [333333333334.0, 333333333334.0, 333333333333.0]
    assert sum(shares) == total


# ---------------------------------------------------------------------------------------------
# Properties

Tree = tuple[tuple[float, ...], list[QueueInput], float]
PROPERTY = settings(deadline=None)

amounts = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 7.5, 10.0, 16.0]) | st.floats(
    0.0, 40.0
).map(lambda x: round(x, 3))


def vectors(width: int, values: st.SearchStrategy[float]) -> st.SearchStrategy[tuple[float, ...]]:
    return st.lists(values, min_size=width, max_size=width).map(tuple)


@st.composite
def trees(draw: st.DrawFn) -> Tree:
    """A random forest of up to 8 queues over 1-2 resources, a total and a k value."""
    width = draw(st.integers(1, 2))
    queues: list[QueueInput] = []
    for i in range(draw(st.integers(1, 8))):
        queues.append(
            QueueInput(
                name=f"q{i}",
                parent=draw(st.sampled_from([None, *[x.name for x in queues]])),
                priority=draw(st.sampled_from([50, 100, 100, 200])),
                age_rank=draw(st.integers(0, 3)),
                uid=f"u{draw(st.integers(0, 99)):02d}-{i}",
                deserved=draw(vectors(width, st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.5]))),
                limit=draw(vectors(width, st.sampled_from([-1.0, -1.0, 0.0, 1.6, 3.0, 6.0]))),
                over_quota_weight=draw(vectors(width, st.sampled_from([0.0, 1.0, 2.0, 3.0]))),
                request=draw(vectors(width, amounts)),
                usage=draw(st.none() | vectors(width, st.sampled_from([0.0, 0.2, 0.5, 1.0]))),
            )
        )
    total = draw(vectors(width, amounts | st.sampled_from([33.0, 100.0])))
    return total, queues, draw(st.sampled_from([0.0, 1.0, 2.0]))


def _levels(
    total: tuple[float, ...], queues: list[QueueInput], result: dict[str, QueueShare]
) -> list[tuple[tuple[float, ...], list[QueueInput]]]:
    """Every level: (the amount it divided, its queues)."""
    parents: list[str | None] = [None, *[x.name for x in queues]]
    levels = []
    for parent in parents:
        siblings = [x for x in queues if x.parent == parent]
        if siblings:
            amount = total if parent is None else result[parent].fair_share
            levels.append((amount, siblings))
    return levels


TOL = tolerance(100.0)


@PROPERTY
@given(trees())
def test_over_quota_bounded_by_left_over(tree: Tree) -> None:
    total, queues, k = tree
    result = divide_fair_shares(total, queues, k)
    for amount, siblings in _levels(total, queues, result):
        for r, a in enumerate(amount):
            left = a - sum(result[x.name].deserved[r] for x in siblings)
            over = sum(result[x.name].fair_share[r] - result[x.name].deserved[r] for x in siblings)
            assert over >= -TOL
            assert over <= max(0.0, left) + len(siblings) * TOL


@PROPERTY
@given(trees())
def test_oqw_zero_gets_no_over_quota(tree: Tree) -> None:
    total, queues, k = tree
    result = divide_fair_shares(total, queues, k)
    for x in queues:
        for r, weight in enumerate(x.over_quota_weight):
            if weight == 0.0:
                assert result[x.name].fair_share[r] == result[x.name].deserved[r]


@PROPERTY
@given(trees())
def test_fair_share_within_one_unit_of_requestable(tree: Tree) -> None:
    """Only the remainder phase passes requestable (hence the limit), by less than one unit."""
    total, queues, k = tree
    result = divide_fair_shares(total, queues, k)
    for x in queues:
        share = result[x.name]
        for r in range(len(total)):
            cap = requestable(x.request[r], x.limit[r])
            assert share.fair_share[r] < cap + 1.0
            if x.limit[r] != -1.0:
                assert share.fair_share[r] < x.limit[r] + 1.0
                assert share.allocatable_share[r] <= x.limit[r]
            if share.deserved[r] >= cap:  # satisfied by the deserved phase: no over-quota at all
                assert share.fair_share[r] == share.deserved[r]


@PROPERTY
@given(trees())
def test_work_conserving_without_usage(tree: Tree) -> None:
    """Without usage, nothing stays undivided while a sibling with OQW > 0 still wants more."""
    total, queues, k = tree
    queues = [replace(x, usage=None) for x in queues]
    result = divide_fair_shares(total, queues, k)
    for amount, siblings in _levels(total, queues, result):
        for r, a in enumerate(amount):
            hungry = [
                x
                for x in siblings
                if x.over_quota_weight[r] > 0
                and result[x.name].fair_share[r] < requestable(x.request[r], x.limit[r]) - TOL
            ]
            if hungry:
                given_out = sum(result[x.name].fair_share[r] for x in siblings)
                assert given_out >= a - len(siblings) * TOL


@PROPERTY
@given(trees(), st.randoms(use_true_random=False))
def test_deterministic_and_order_independent(tree: Tree, rnd: random.Random) -> None:
    total, queues, k = tree
    first = divide_fair_shares(total, queues, k)
    assert divide_fair_shares(total, queues, k) == first
    shuffled = list(queues)
    rnd.shuffle(shuffled)
    assert divide_fair_shares(total, shuffled, k) == first


def test_hundred_queues_three_resources() -> None:
    queues = [q(f"d{i}", deserved=(2, 4000, 8e9), request=(30, 1e5, 1e11)) for i in range(10)]
    queues += [
        q(
            f"l{i}",
            parent=f"d{i % 10}",
            deserved=(1, 1000, 1e9),
            oqw=(i % 3, 1, 1),
            request=(3 + i % 5, 5000 + i, 3e9 + i),
            age=i,
        )
        for i in range(90)
    ]
    result = divide_fair_shares((64.0, 512000.0, 2e12), queues)
    assert len(result) == 100
    assert math.isclose(sum(result[f"d{i}"].fair_share[0] for i in range(10)), 64.0)
