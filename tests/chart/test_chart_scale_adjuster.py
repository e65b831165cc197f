"""The node-scale-adjuster in charts/podmuster: nothing by default; with
clusterAutoscaling.enabled its Deployment (in either mode), whose arguments parse with
podmuster's own command line, the scaling namespace, and least-privilege RBAC (pods read
cluster-wide, written only in the scaling namespace, its own Lease); bad values fail the
schema."""

from __future__ import annotations

from typing import Any

import pytest
from chartkit import NAMESPACE, Helm, HelmError, container

from podmuster.cli import build_parser

pytestmark = pytest.mark.chart

NAME = "podmuster-node-scale-adjuster"
ON = {"clusterAutoscaling": {"enabled": True}}


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
        for v in rule["verbs"]
    }  # fmt: skip


def test_off_by_default(helm: Helm) -> None:
    rendered = helm.template()
    assert NAME not in rendered.names("Deployment")
    assert "kai-scale-adjust" not in rendered.names("Namespace")


@pytest.mark.parametrize("mode", ["components", "all"])
def test_enabled_renders_a_deployment_whose_flags_parse(helm: Helm, mode: str) -> None:
    values = {
        "mode": mode,
        "clusterAutoscaling": {"enabled": True, "coolDownSeconds": 30,
                               "gpuMemoryToFractionRatio": 0.2},
    }  # fmt: skip
    rendered = helm.template(values)
    deployment = rendered.get("Deployment", NAME)
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == NAME
    parsed = build_parser().parse_args(container(deployment)["args"])
    assert parsed.component == "node-scale-adjuster"
    assert (parsed.scale_cool_down_seconds, parsed.gpu_memory_to_fraction_ratio) == (30, 0.2)
    assert (parsed.scheduler_name, parsed.scaling_pod_namespace) == (
        "kai-scheduler",
        "kai-scale-adjust",
    )
    assert parsed.leader_elect
    assert parsed.leader_elect_namespace == NAMESPACE
    assert "kai-scale-adjust" in rendered.names("Namespace")
    assert "0 chart(s) failed" in helm.lint(values)


def test_least_privilege(helm: Helm) -> None:
    rendered = helm.template(ON)
    cluster_role = rendered.get("ClusterRole", NAME)
    assert grants(cluster_role["rules"]) == {("", "pods", "list"), ("", "pods", "watch")}
    roles = {
        (r["metadata"]["namespace"], r["metadata"]["name"]): r for r in rendered.of_kind("Role")
    }
    scaling = roles[("kai-scale-adjust", NAME)]
    assert grants(scaling["rules"]) == {
        ("", "pods", "create"),
        ("", "pods", "delete"),
        ("", "pods/status", "patch"),
    }
    lease = roles[(NAMESPACE, f"{NAME}-leader-election")]
    names = [r.get("resourceNames") for r in lease["rules"] if "get" in r["verbs"]]
    assert names == [["podmuster-node-scale-adjuster"]]
    bindings = [b for b in rendered.of_kind("RoleBinding") if b["roleRef"]["name"] == NAME]
    assert [b["metadata"]["namespace"] for b in bindings] == ["kai-scale-adjust"]
    assert bindings[0]["subjects"] == [
        {"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}
    ]


def test_existing_namespace_is_not_created(helm: Helm) -> None:
    values = {"clusterAutoscaling": {"enabled": True, "createNamespace": False,
                                     "scalingPodNamespace": "scale"}}  # fmt: skip
    rendered = helm.template(values)
    assert "scale" not in rendered.names("Namespace")
    assert ("scale", NAME) in {
        (r["metadata"]["namespace"], r["metadata"]["name"]) for r in rendered.of_kind("Role")
    }


@pytest.mark.parametrize(
    "bad",
    [{"gpuMemoryToFractionRatio": 0}, {"coolDownSeconds": -1}, {"unknown": 1}],
)
def test_schema_rejects_bad_values(helm: Helm, bad: dict[str, Any]) -> None:
    with pytest.raises(HelmError):
        helm.template({"clusterAutoscaling": {"enabled": True, **bad}})
