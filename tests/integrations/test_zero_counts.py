"""Gang counts of 0 where KAI v0.17's PodGroup write fails (docs/integrations.md, "Where
podmuster differs"): podmuster writes a PodGroup its own and later KAI's API accept, and
the group meaning no gang, so the pods run; these pin that choice."""

from __future__ import annotations

from typing import Any

from integrations.grouping import group_workloads

TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "x"}]}}


def _only_podgroup(workload: dict[str, Any]) -> dict[str, Any]:
    result = group_workloads([workload])
    assert result.errors == ()
    (podgroup,) = result.pod_groups
    spec: dict[str, Any] = podgroup["spec"]
    return spec


def test_a_jobset_replicated_job_of_no_replicas_is_a_leaf_of_min_member_0() -> None:
    """KAI writes ``minSubGroup: 0`` on a subgroup without children: refused on create."""
    job = {"template": {"spec": {"template": TEMPLATE}}}
    spec = _only_podgroup(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "ns"},
            "spec": {
                "replicatedJobs": [
                    {"name": "a", "replicas": 0, **job},
                    {"name": "b", "replicas": 1, **job},
                ]
            },
        }
    )
    assert {"name": "a", "minMember": 0} in spec["subGroups"]
    assert all("minSubGroup" not in s for s in spec["subGroups"] if s["name"] == "a")


def test_knative_min_scale_0_is_a_gang_of_1() -> None:
    """KAI writes ``minMember: 0``, which v0.17's CRD refuses (``minimum: 1``)."""
    spec = _only_podgroup(
        {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": "kn", "namespace": "ns"},
            "spec": {
                "template": {
                    "metadata": {"annotations": {"autoscaling.knative.dev/min-scale": "0"}},
                    **TEMPLATE,
                }
            },
        }
    )
    assert spec["minMember"] == 1


def test_pytorch_elastic_min_replicas_0_is_min_member_0() -> None:
    """As KAI after v0.17 (#1989) accepts it: no gang; v0.17's CRD refuses it."""
    spec = _only_podgroup(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "ns"},
            "spec": {
                "elasticPolicy": {"minReplicas": 0, "maxReplicas": 2},
                "pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": TEMPLATE}},
            },
        }
    )
    assert spec["minMember"] == 0
    assert spec["subGroups"] == [{"name": "worker", "minMember": 0}]
