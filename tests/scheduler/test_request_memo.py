"""Pod requests read through the cache's memo equal requests read in full.

Why: the cluster cache reads the requests of pods whose containers write the same
resources once (:func:`scheduler.cache.parsing.pod_request` with a memo), which is
most of a pod's ingest at 20,000 pods. A key that merged two different writings (a
quantity ``1`` and ``True``, a new extended resource widening the space) would give a
pod another pod's request, so random specs, bad ones included, are read both ways.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.resources import ResourceSpace
from scheduler.cache import parsing, reading

NAMES = ("cpu", "memory", "nvidia.com/gpu", "example.com/nic", "nvidia.com/mig-1g.5gb", 1, True)
VALUES = ("1", "2", "500m", "4Gi", "1Gi", 1, True, 1.0, "x", "-1", ["1"])

quantities = st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VALUES), max_size=3)
resources = st.one_of(
    st.none(),
    st.just("not a map"),
    st.fixed_dictionaries(
        {}, optional={"requests": st.one_of(quantities, st.none()), "limits": quantities}
    ),
)
containers = st.lists(
    st.one_of(st.builds(lambda r: {"name": "c", "resources": r}, resources), st.just("c")),
    max_size=3,
)
specs = st.builds(
    lambda apps, inits, overhead: {
        "containers": apps,
        **({"initContainers": inits} if inits else {}),
        **({"overhead": overhead} if overhead else {}),
    },
    containers,
    st.one_of(st.none(), containers),
    st.one_of(st.none(), quantities),
)


def _read(spec: dict[str, Any], space: ResourceSpace, memo: parsing.RequestMemo | None) -> Any:
    try:
        return parsing.pod_request(spec, space, memo)
    except Exception as exc:  # a bad spec: the same error either way, whatever it is
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=300, deadline=None)
@given(st.lists(specs, min_size=1, max_size=12))
def test_a_request_read_through_the_memo_equals_one_read_in_full(
    pods: list[dict[str, Any]],
) -> None:
    memo_space, plain_space = ResourceSpace(), ResourceSpace()
    memo: parsing.RequestMemo = {}
    for spec in pods * 2:  # each spec again once the memo holds it
        got = _read(spec, memo_space, memo)
        want = _read(spec, plain_space, None)
        assert memo_space.names == plain_space.names
        if isinstance(want, str):
            assert got == want
        else:
            assert isinstance(got, np.ndarray)
            assert got.tolist() == want.tolist()


def test_pods_of_one_workload_share_a_memo_entry_not_a_vector() -> None:
    space = ResourceSpace()
    memo: parsing.RequestMemo = {}
    spec = {"containers": [{"resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}]}
    body = {"metadata": {"name": "p"}, "spec": spec}
    first = reading.read_pod(body, space, "kai-scheduler", memo)
    second = reading.read_pod(body, space, "kai-scheduler", memo)
    assert len(memo) == 1
    assert first.request is not second.request
    assert first.request.tolist() == second.request.tolist()
