"""The webhook edge: AdmissionReviews in, verdicts out, over a real aiohttp server."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from kubeapi.errors import TransientError
from webhooks.server import PATHS, build_app, review_response


def review(obj: dict[str, Any], uid: str = "u-1") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": "CREATE", "object": obj},
    }


QUEUES: dict[str, Mapping[str, Any]] = {"root": {"metadata": {"name": "root"}, "spec": {}}}


async def existing() -> Mapping[str, Mapping[str, Any]]:
    return QUEUES


async def broken() -> Mapping[str, Mapping[str, Any]]:
    raise TransientError("Queue", "connection refused")


def post(path: str, body: Any, lister: Any = existing, **settings: Any) -> tuple[int, Any]:
    async def go() -> tuple[int, Any]:
        async with TestClient(TestServer(build_app(lister, **settings))) as client:
            response = await client.post(path, json=body)
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()

    return asyncio.run(go())


def queue(name: str, parent: str, resources: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentQueue": parent}
    if resources is not None:
        spec["resources"] = resources
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_an_acceptable_queue_is_allowed_with_the_request_uid() -> None:
    status, body = post(PATHS["queues"], review(queue("team", "root", {}), uid="abc"))
    assert status == 200
    assert body == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "abc", "allowed": True},
    }


def test_a_bad_queue_is_denied_with_every_problem() -> None:
    status, body = post(PATHS["queues"], review(queue("team", "ghost", None)))
    assert status == 200
    response = body["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 422
    assert response["status"]["message"] == (
        "Queue team: spec.resources: required (gpu, cpu and memory quotas); "
        "Queue team: spec.parentQueue: no Queue named 'ghost'"
    )


def test_a_podgroup_cycle_is_denied() -> None:
    group = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"subGroups": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]},
    }
    _, body = post(PATHS["podgroups"], review(group))
    assert body["response"]["allowed"] is False
    assert "cycle: a -> b -> a" in body["response"]["status"]["message"]


def test_queues_unreadable_is_a_server_error_for_the_failure_policy() -> None:
    status, text = post(PATHS["queues"], review(queue("team", "root", {})), lister=broken)
    assert status == 500
    assert "reading Queues" in text


def test_wrong_kind_or_garbage_is_a_bad_request() -> None:
    status, _ = post(PATHS["podgroups"], review(queue("team", "root", {})))
    assert status == 400
    status, _ = post(PATHS["queues"], "not a review")
    assert status == 400


def test_review_response_without_problems() -> None:
    assert review_response({}, [])["response"] == {"uid": "", "allowed": True}


def gpu_pod(fraction: str, scheduler: str = "kai-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "nb-", "annotations": {"gpu-fraction": fraction}},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "main", "image": "x"}]},
    }


def test_a_bad_gpu_sharing_pod_is_denied_naming_its_namespace() -> None:
    body = review(gpu_pod("1.5"))
    body["request"]["namespace"] = "ml"  # the object of a CREATE may not carry it
    _, answer = post(PATHS["pods"], body)
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"] == (
        "Pod ml/nb-*: metadata.annotations[gpu-fraction]: must be a number with 0 < x < 1 "
        "(a whole GPU is asked for with nvidia.com/gpu), got '1.5'"
    )
    _, answer = post(PATHS["pods"], review(gpu_pod("0.5")))
    assert answer["response"]["allowed"] is True


def test_a_non_ascii_integer_is_denied_not_a_server_error() -> None:
    """``gpu-memory: "²"`` passed ``str.isdigit`` and ``int()`` raised: the answer was a 500."""
    obj = gpu_pod("0.5")
    obj["metadata"]["annotations"] = {"gpu-memory": "\u00b2"}
    status, answer = post(PATHS["pods"], review(obj))
    assert status == 200
    assert answer["response"]["allowed"] is False
    assert (
        "metadata.annotations[gpu-memory]: must be a positive integer"
        in (answer["response"]["status"]["message"])
    )
    update = review(obj)  # an UPDATE is judged on its new object, as a CREATE
    update["request"]["operation"] = "UPDATE"
    update["request"]["oldObject"] = gpu_pod("0.5")
    assert post(PATHS["pods"], update)[1]["response"]["allowed"] is False


def test_pods_of_another_scheduler_name_are_allowed() -> None:
    async def go() -> list[bool]:
        app = build_app(existing, scheduler_name="batch")
        async with TestClient(TestServer(app)) as client:
            verdicts = []
            for scheduler in ("kai-scheduler", "batch"):
                response = await client.post(PATHS["pods"], json=review(gpu_pod("2", scheduler)))
                verdicts.append((await response.json())["response"]["allowed"])
            return verdicts

    assert asyncio.run(go()) == [True, False]


def test_a_pod_path_refuses_other_kinds() -> None:
    status, _ = post(PATHS["pods"], review(queue("team", "root", {})))
    assert status == 400


def test_the_mutation_answers_with_a_base64_json_patch() -> None:
    _, answer = post(PATHS["pod-mutation"], review(gpu_pod("0.5"), uid="m-1"))
    response = answer["response"]
    assert response["uid"] == "m-1"
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    patch = json.loads(base64.b64decode(response["patch"]))
    [annotation, env, runtime] = patch
    assert annotation["path"] == "/metadata/annotations/runai~1shared-gpu-configmap"
    # 64 random bits (finding 9: 24 bits let replicas of one workload collide)
    assert re.fullmatch(r"nb-[0-9a-f]{16}-shared-gpu", annotation["value"])
    assert env["path"] == "/spec/containers/0/env"
    assert runtime == {"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"}


def test_the_mutation_gives_the_configured_runtime_class_or_none() -> None:
    for configured, expected in (("gpu", ["gpu"]), ("", [])):
        body = review(gpu_pod("0.5"))
        _, answer = post(PATHS["pod-mutation"], body, fraction_runtime_class=configured)
        patch = json.loads(base64.b64decode(answer["response"]["patch"]))
        assert [op["value"] for op in patch if op["path"] == "/spec/runtimeClassName"] == expected


def test_the_mutation_leaves_other_pods_alone() -> None:
    _, answer = post(PATHS["pod-mutation"], review(gpu_pod("0.5", scheduler="default")))
    assert answer["response"] == {"uid": "u-1", "allowed": True}
