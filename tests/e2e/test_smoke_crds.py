"""Smoke tests: podmuster's CRDs are served and their schemas reject bad objects.

A real kube-apiserver validates the openAPIV3Schema in crds/*.yaml, so these
tests catch a schema that only looks right: each bad PodGroup or Queue must be
refused with the offending field named in the server's message.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml

from .controlplane import PODMUSTER_CRDS, Cluster
from .kube import KubectlError, Obj

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def served_version(plural: str, group: str = "scheduling.run.ai") -> str:
    """The storage version that crds/ declares for ``plural.group``."""
    for path in sorted(PODMUSTER_CRDS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("metadata", {}).get("name") == f"{plural}.{group}":
                versions = doc["spec"]["versions"]
                storage = [v["name"] for v in versions if v.get("storage")] or [versions[0]["name"]]
                return f"{group}/{storage[0]}"
    pytest.skip(f"crds/ has no CRD for {plural}.{group} yet")


def podgroup(namespace: str, spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": served_version("podgroups"),
        "kind": "PodGroup",
        "metadata": {"name": f"pg-{uuid.uuid4().hex[:6]}", "namespace": namespace},
        "spec": spec,
    }


def queue(spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": served_version("queues"),
        "kind": "Queue",
        "metadata": {"name": f"q-{uuid.uuid4().hex[:6]}"},
        "spec": spec,
    }


def rejection(cluster: Cluster, obj: Obj) -> str:
    """Create ``obj`` server-side; return the error, failing if it was accepted."""
    try:
        cluster.kubectl.create(obj, "--validate=false")
    except KubectlError as err:
        return err.stderr
    pytest.fail(f"the API server accepted an invalid {obj['kind']}: {obj['spec']}")


def test_crds_are_served(cluster: Cluster) -> None:
    if not list(PODMUSTER_CRDS.glob("*.yaml")):
        pytest.skip("crds/*.yaml is not written yet")
    out = cluster.kubectl.run("api-resources", "--api-group=scheduling.run.ai", "-o", "name")
    served = set(out.split())
    assert {"podgroups.scheduling.run.ai", "queues.scheduling.run.ai"} <= served


def test_valid_podgroup_and_queue_are_accepted(cluster: Cluster, namespace: str) -> None:
    pg = podgroup(namespace, {"minMember": 2, "queue": "default"})
    cluster.kubectl.create(pg)
    got = cluster.kubectl.get(
        "podgroups.scheduling.run.ai", pg["metadata"]["name"], "-n", namespace
    )
    assert got["spec"]["minMember"] == 2
    q = queue({"resources": {"gpu": {"quota": 4, "limit": -1, "overQuotaWeight": 1}}})
    cluster.kubectl.create(q)
    cluster.kubectl.run("delete", "queue", q["metadata"]["name"])


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"minMember": -1}, "spec.minMember"),
        ({"minMember": 1, "preemptibility": "sometimes"}, "spec.preemptibility"),
        ({"minMember": 1, "subGroups": [{"minMember": 1}]}, "spec.subGroups[0].name"),
    ],
    ids=["minMember-negative", "preemptibility-enum", "subgroup-without-name"],
)
def test_bad_podgroup_rejected_with_field(
    cluster: Cluster, namespace: str, spec: dict[str, Any], field: str
) -> None:
    message = rejection(cluster, podgroup(namespace, spec))
    assert "is invalid" in message, message
    assert field in message, message


@pytest.mark.parametrize("resource", ["gpu", "cpu", "memory"])
@pytest.mark.parametrize("key", ["quota", "limit", "overQuotaWeight"])
def test_bad_queue_rejected_with_field(cluster: Cluster, resource: str, key: str) -> None:
    message = rejection(cluster, queue({"resources": {resource: {key: "lots"}}}))
    assert f"spec.resources.{resource}.{key}" in message, message
