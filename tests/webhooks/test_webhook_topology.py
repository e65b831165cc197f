"""The Topology admission webhook: bad levels refused, each naming the object and field.

Covers: acceptable Topologies (with and without aliases, hostname last) pass; a
duplicate node label, ``kubernetes.io/hostname`` above the last level, a duplicate
alias, an alias equal to a level's node label, no levels, an unknown field and a bad
label key are refused with ``Topology NAME: spec.levels[...]...: message``; several
broken rules are all reported in one answer; the HTTP path answers an
AdmissionReview with 422 and the messages (the chart's registration:
tests/chart/test_chart_webhooks.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from webhooks.server import PATHS, build_app
from webhooks.validation import validate_topology


def topology(*levels: dict[str, Any], name: str = "cluster-topo") -> dict[str, Any]:
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": list(levels)},
    }


def test_acceptable_topologies_pass() -> None:
    assert validate_topology(topology({"nodeLabel": "example.com/rack"})) == []
    assert (
        validate_topology(
            topology(
                {"nodeLabel": "example.com/zone", "alias": "zone"},
                {"nodeLabel": "example.com/rack", "alias": "rack"},
                {"nodeLabel": "kubernetes.io/hostname", "alias": "host"},
            )
        )
        == []
    )


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        (
            [{"nodeLabel": "rack"}, {"nodeLabel": "rack"}],
            "Topology cluster-topo: spec.levels[1].nodeLabel: duplicate level 'rack' (levels[0])",
        ),
        (
            [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "rack"}],
            "Topology cluster-topo: spec.levels[0].nodeLabel: "
            "kubernetes.io/hostname may only be the last level",
        ),
        (
            [{"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack", "alias": "z"}],
            "Topology cluster-topo: spec.levels[1].alias: 'z' is the alias of levels[0] too",
        ),
        (
            [{"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}],
            "Topology cluster-topo: spec.levels[0].alias: 'rack' is the nodeLabel of "
            "levels[1]; an alias must not equal a nodeLabel",
        ),
        (
            [],
            "Topology cluster-topo: spec.levels: List should have at least 1 item after "
            "validation, not 0, got []",
        ),
        (
            [{"nodeLabel": "rack", "alais": "r"}],
            "Topology cluster-topo: spec.levels[0].alais: unknown field, got 'r'",
        ),
    ],
)
def test_bad_levels_are_refused_naming_the_field(
    levels: list[dict[str, Any]], expected: str
) -> None:
    assert [str(p) for p in validate_topology(topology(*levels))] == [expected]


def test_a_bad_label_key_is_named() -> None:
    (problem,) = validate_topology(topology({"nodeLabel": "bad key!"}))
    assert problem.field == "spec.levels[0].nodeLabel"
    assert "should match pattern" in problem.message


def test_every_broken_rule_is_reported_at_once() -> None:
    problems = validate_topology(
        topology(
            {"nodeLabel": "kubernetes.io/hostname", "alias": "x"},
            {"nodeLabel": "rack", "alias": "x"},
            {"nodeLabel": "rack"},
        )
    )
    assert [p.field for p in problems] == [
        "spec.levels[0].nodeLabel",
        "spec.levels[2].nodeLabel",
        "spec.levels[1].alias",
    ]


def post(body: Any) -> tuple[int, Any]:
    async def no_queues() -> dict[str, Any]:
        return {}

    async def go() -> tuple[int, Any]:
        async with TestClient(TestServer(build_app(no_queues))) as client:
            response = await client.post(PATHS["topologies"], json=body)
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()

    return asyncio.run(go())


def review(obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "t-1", "operation": operation, "object": obj},
    }


def test_the_webhook_answers_an_admission_review() -> None:
    status, body = post(review(topology({"nodeLabel": "rack", "alias": "r"})))
    assert status == 200
    assert body["response"] == {"uid": "t-1", "allowed": True}
    bad = topology({"nodeLabel": "zone", "alias": "z"}, {"nodeLabel": "rack", "alias": "z"})
    _, body = post(review(bad, "UPDATE"))
    assert body["response"]["allowed"] is False
    assert body["response"]["status"] == {
        "code": 422,
        "reason": "Invalid",
        "message": "Topology cluster-topo: spec.levels[1].alias: 'z' is the alias of levels[0] too",
    }


def test_the_webhook_refuses_another_kind() -> None:
    status, _ = post(review({"kind": "Queue", "metadata": {"name": "q"}, "spec": {}}))
    assert status == 400
