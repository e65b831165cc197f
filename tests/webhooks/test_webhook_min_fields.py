"""The PodGroup webhook's minMember/minSubGroup rules (KAI v0.17), errors and warnings.

Each bad input is refused (or warned about, where KAI only warns) with the
object and the field named; the HTTP answer carries warnings either way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.webhooks.test_webhook_validation import podgroup as base_podgroup
from webhooks.server import PATHS, build_app
from webhooks.validation import podgroup_review, validate_podgroup


def podgroup(subgroups: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """PodGroup ml/train without minMember unless given."""
    return base_podgroup(subgroups, **{"minMember": None, **spec})


def texts(problems: list[Any]) -> list[str]:
    return [str(p) for p in problems]


GOOD = [
    pytest.param(podgroup(minMember=0), id="min-member-0"),
    pytest.param(podgroup([{"name": "a", "minMember": 0}]), id="leaf-min-member-0"),
    pytest.param(
        podgroup(
            [
                {"name": "a", "minMember": 2},
                {"name": "b", "minMember": 2},
                {"name": "c", "minMember": 2},
            ],
            minSubGroup=2,
        ),
        id="min-sub-group-2-of-3",
    ),
    pytest.param(
        podgroup(
            [
                {"name": "x", "minSubGroup": 1},
                {"name": "x1", "parent": "x", "minMember": 1},
                {"name": "x2", "parent": "x", "minMember": 1},
            ]
        ),
        id="nested",
    ),
]


@pytest.mark.parametrize("obj", GOOD)
def test_good_uses_are_accepted_without_warnings(obj: dict[str, Any]) -> None:
    assert podgroup_review(obj) == ([], [])
    assert podgroup_review(obj, update=True) == ([], [])


P = "PodGroup ml/train: "
ERRORS = [
    pytest.param(
        podgroup(minMember=1, minSubGroup=1),
        [f"{P}spec.minSubGroup: minMember and minSubGroup are mutually exclusive: set one of them"],
        id="spec-both",
    ),
    pytest.param(
        podgroup([{"name": "a", "minMember": 1, "minSubGroup": 1}]),
        [
            f"{P}spec.subGroups[0].minSubGroup: subgroup 'a': minMember and minSubGroup are"
            " mutually exclusive"
        ],
        id="subgroup-both",
    ),
    pytest.param(
        podgroup([{"name": "b", "minMember": 1}, {"name": "a", "minSubGroup": 1}]),
        [
            f"{P}spec.subGroups[1].minSubGroup: subgroup 'a' has no child subgroups:"
            " minSubGroup not allowed",
            f"{P}spec.subGroups[1].minMember: subgroup 'a' has no child subgroups: minMember"
            " is required",
        ],
        id="leaf-min-sub-group",
    ),
    pytest.param(
        podgroup([{"name": "a", "minMember": 1}, {"name": "b"}]),
        [
            f"{P}spec.subGroups[1].minMember: subgroup 'b' has no child subgroups: minMember"
            " is required"
        ],
        id="leaf-without-min-member",
    ),
    pytest.param(
        podgroup([{"name": "a", "minMember": 1}], minSubGroup=0),
        [f"{P}spec.minSubGroup: must be at least 1 on the PodGroup"],
        id="spec-min-sub-group-0",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), ERRORS)
def test_errors_name_the_field(obj: dict[str, Any], expected: list[str]) -> None:
    assert texts(validate_podgroup(obj)) == expected
    assert texts(validate_podgroup(obj, update=True)) == expected


MID_MIN_MEMBER = podgroup(
    [{"name": "x", "minMember": 2}, {"name": "x1", "parent": "x", "minMember": 1}]
)
MID_MESSAGE = (
    f"{P}spec.subGroups[0].minMember: subgroup 'x' has child subgroups: minMember not allowed"
    " (use minSubGroup)"
)


def test_min_member_on_a_mid_level_subgroup_is_refused_on_create_warned_on_update() -> None:
    errors, warnings = podgroup_review(MID_MIN_MEMBER)
    assert (texts(errors), warnings) == ([MID_MESSAGE], [])
    errors, warnings = podgroup_review(MID_MIN_MEMBER, update=True)
    assert (errors, texts(warnings)) == ([], [MID_MESSAGE])


OVER = [
    pytest.param(
        podgroup([{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1}], minSubGroup=3),
        f"{P}spec.minSubGroup: minSubGroup (3) exceeds the 2 root subgroups",
        id="spec",
    ),
    pytest.param(
        podgroup([{"name": "x", "minSubGroup": 2}, {"name": "x1", "parent": "x", "minMember": 1}]),
        f"{P}spec.subGroups[0].minSubGroup: subgroup 'x': minSubGroup (2) exceeds its 1 direct"
        " child subgroups",
        id="subgroup",
    ),
]


@pytest.mark.parametrize(("obj", "message"), OVER)
def test_min_sub_group_above_the_children_is_only_a_warning(
    obj: dict[str, Any], message: str
) -> None:
    for update in (False, True):
        errors, warnings = podgroup_review(obj, update=update)
        assert (errors, texts(warnings)) == ([], [message])


def test_every_problem_of_one_object_is_reported() -> None:
    obj = podgroup([{"name": "a"}, {"name": "b", "minSubGroup": 1}])
    fields = [p.field for p in validate_podgroup(obj)]
    assert fields == [
        "spec.subGroups[0].minMember",
        "spec.subGroups[1].minSubGroup",
        "spec.subGroups[1].minMember",
    ]


def post(body: Any) -> Any:
    async def existing() -> dict[str, Any]:
        return {}

    async def go() -> Any:
        async with TestClient(TestServer(build_app(existing))) as client:
            response = await client.post(PATHS["podgroups"], json=body)
            return await response.json()

    return asyncio.run(go())


def review(obj: dict[str, Any], operation: str) -> dict[str, Any]:
    request = {"uid": "u", "operation": operation, "object": obj}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def test_the_webhook_answers_with_warnings_and_the_operation_decides() -> None:
    created = post(review(MID_MIN_MEMBER, "CREATE"))["response"]
    assert created["allowed"] is False
    assert MID_MESSAGE in created["status"]["message"]
    updated = post(review(MID_MIN_MEMBER, "UPDATE"))["response"]
    assert updated == {"uid": "u", "allowed": True, "warnings": [MID_MESSAGE]}
