"""A Dynamo/Grove deployment grouped live as KAI v0.17 groups it: one PodGroup per PodGang.

Neither Grove's nor Dynamo's operator is available here, so the test serves their kinds
with minimal CRDs of its own (schemaless, ``x-kubernetes-preserve-unknown-fields``) and
plays the operators: a DynamoGraphDeployment owning a PodCliqueSet, which owns a
PodClique and the PodGang of replica 0; the pods are created as Grove creates them
(owned by the PodClique, labelled ``grove.io/podgang``). The podgrouper must find the
PodGang through the pod's label, write ``pg-<podgang>-<uid>`` with a subgroup per
PodClique, take the queue from the DynamoGraphDeployment (no PodGang names one), label
each pod with its subgroup; the scheduler then runs the gang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import NodeFactory, QueueFactory
from .controlplane import Cluster
from .frameworks import apply_crds
from .kube import Obj, wait_for
from .objects import QUEUE_LABEL, group_of, kai_template, pod_group, schemaless_crd
from .procs import ManagedProcess

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SUBGROUP_LABEL = "kai.scheduler/subgroup-name"
PODGANG_LABEL = "grove.io/podgang"
KINDS = (
    ("grove.io", "PodCliqueSet", "podcliquesets"),
    ("grove.io", "PodClique", "podcliques"),
    ("scheduler.grove.io", "PodGang", "podgangs"),
    ("nvidia.com", "DynamoGraphDeployment", "dynamographdeployments"),
)


def crd(group: str, kind: str, plural: str) -> Obj:
    """A schemaless namespaced CRD serving ``kind`` at v1alpha1."""
    return schemaless_crd(group, kind, plural)


def owned(api_version: str, kind: str, name: str, namespace: str, owner: Obj, **body: Any) -> Obj:
    meta = owner["metadata"]
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [ref]},
        **body,
    }


def test_dynamo_deployment_is_grouped_from_its_podgang(
    cluster: Cluster,
    podmuster: dict[str, ManagedProcess],
    namespace: str,
    kwok_nodes: NodeFactory,
    kai_queues: QueueFactory,
    tmp_path: Path,
) -> None:
    path = tmp_path / "grove-crds.yaml"
    path.write_text(yaml.safe_dump_all([crd(*kind) for kind in KINDS]))
    apply_crds(cluster.kubectl, [path])
    kwok_nodes.add(cpu="8")
    queue = kai_queues.add("serve")
    kubectl = cluster.kubectl

    def create(obj: Obj) -> Obj:
        kubectl.create(obj)
        resource = f"{obj['kind'].lower()}s.{obj['apiVersion'].split('/')[0]}"
        return kubectl.get(resource, obj["metadata"]["name"], "-n", namespace)

    dgd = create(
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "DynamoGraphDeployment",
            "metadata": {"name": "llm", "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
            "spec": {},
        }
    )
    pcs = create(owned("grove.io/v1alpha1", "PodCliqueSet", "llm", namespace, dgd, spec={}))
    clique = create(owned("grove.io/v1alpha1", "PodClique", "llm-0-decode", namespace, pcs))
    names = ["llm-0-decode-a", "llm-0-decode-b"]
    refs = [{"namespace": namespace, "name": n} for n in names]
    podgroups = [{"name": "llm-0-decode", "minReplicas": 2, "podReferences": refs}]
    spec = {"podgroups": podgroups, "priorityClassName": "inference"}
    gang = create(
        owned("scheduler.grove.io/v1alpha1", "PodGang", "llm-0", namespace, pcs, spec=spec)
    )
    template = kai_template(kwok_nodes.pool, cpu="100m", restart="Always")
    for name in names:
        pod = owned("v1", "Pod", name, namespace, clique, spec=template["spec"])
        pod["metadata"]["labels"] = {**template["metadata"]["labels"], PODGANG_LABEL: "llm-0"}
        kubectl.create(pod)

    def labelled() -> list[Obj] | None:
        pods = kubectl.items("pods", "-n", namespace, "-l", PODGANG_LABEL)
        done = [p for p in pods if SUBGROUP_LABEL in (p["metadata"].get("labels") or {})]
        return done if len(pods) == len(done) == 2 else None

    pods = wait_for("the 2 Grove pods in their subgroup", labelled, timeout=120)
    group = f"pg-llm-0-{gang['metadata']['uid']}"
    for member in pods:
        assert group_of(member) == group
        assert member["metadata"]["labels"][SUBGROUP_LABEL] == "llm-0-decode"
    written = pod_group(cluster, namespace, group)
    assert written["spec"]["queue"] == queue  # from the DynamoGraphDeployment
    assert written["spec"]["minMember"] == 2
    assert written["spec"]["priorityClassName"] == "inference"
    assert written["spec"]["subGroups"] == [{"name": "llm-0-decode", "minMember": 2}]
    owner = written["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("PodGang", "llm-0")

    def running() -> bool:
        found = kubectl.items("pods", "-n", namespace, "-l", PODGANG_LABEL)
        return sum(p["status"].get("phase") == "Running" for p in found) == 2

    wait_for("the Grove gang Running", running, timeout=120)
