"""The queue order key, unrolled over the three resources, equals the rules it stands for.

Why: ``queue_order.order_key`` is asked about 15,000 times a cycle at 5,000 nodes
and spells rules 1-6 out resource by resource; it must give exactly the key the
rule functions (``is_over_utilized``, ``is_starved``, ``has_zero_share_penalty``,
``dominant_share``) give, unlimited and zero shares included, or the queue order
(and every decision after it) would change.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.queues import UNLIMITED, QueueInfo
from scheduler.plugins.proportion import queue_order
from scheduler.plugins.proportion.state import QueueState

_amount = st.sampled_from([0.0, 0.5, 1.0, 2.0, 1000.0, 2500.0, 4e9, 1e-13])
_quota = st.one_of(_amount, st.just(float(UNLIMITED)))
_triple = st.lists(_amount, min_size=3, max_size=3)
_quotas = st.lists(_quota, min_size=3, max_size=3)


def _state(
    priority: int, fair: list[float], quota: list[float], share: list[float], used: list[float]
) -> QueueState:
    info = QueueInfo("q", None, priority, 0.0, "uid", np.array(quota), np.array(quota), np.ones(3))
    vector = np.array
    return QueueState(
        info,
        fair_share=vector(fair),
        deserved=vector(quota),
        allocatable_share=vector(share),
        limit=vector(quota),
        request=vector(used),
        allocated=vector(used),
        allocated_non_preemptible=np.zeros(3),
    )


def _by_rules(
    state: QueueState, job: list[float], total: list[float]
) -> tuple[bool, bool, int, bool, float, float]:
    with_job = [state.used[r] + job[r] for r in range(3)]
    return (
        queue_order.is_over_utilized(state),
        not queue_order.is_starved(state, job),
        -state.info.priority,
        queue_order.has_zero_share_penalty(state, job),
        queue_order.dominant_share(state, with_job, total),
        queue_order.dominant_share(state, state.used, total),
    )


@given(
    st.integers(-5, 5),
    _triple,
    _quotas,
    _quotas,
    _triple,
    _triple,
    st.lists(st.sampled_from([0.0, 1.0, 8000.0, 1e10]), min_size=3, max_size=3),
)
def test_order_key_equals_the_rules(
    priority: int,
    fair: list[float],
    quota: list[float],
    share: list[float],
    used: list[float],
    job: list[float],
    total: list[float],
) -> None:
    state = _state(priority, fair, quota, share, used)
    key = queue_order.order_key(state, job, total)
    expected = _by_rules(state, job, total)
    assert key == expected
    assert [type(part) for part in key] == [type(part) for part in expected]


_keys = st.tuples(
    st.booleans(),
    st.booleans(),
    st.integers(-2, 2),
    st.booleans(),
    st.sampled_from([0.0, 0.5, 0.5 + 1e-13, 0.5 + 1e-11, 1.0]),
    st.sampled_from([0.0, 0.25, 0.25 + 1e-13, 0.25 + 1e-11]),
)


@given(_keys, _keys)
def test_same_tier_compares_rules_1_to_4_exactly_and_the_shares_within_1e_12(
    a: tuple[bool, bool, int, bool, float, float], b: tuple[bool, bool, int, bool, float, float]
) -> None:
    expected = a[:4] == b[:4] and abs(a[4] - b[4]) <= 1e-12 and abs(a[5] - b[5]) <= 1e-12
    assert queue_order.same_tier(a, b) == expected
