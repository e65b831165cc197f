"""The dashboard in charts/podmuster: nothing by default; with dashboard.enabled its
Deployment (in either mode), whose arguments parse with podmuster's own command line and
read the scheduler's configuration, a Service on its port, and read-only RBAC: list and
watch exactly what the scheduler's informers read, plus Events; bad values fail the
schema."""

from __future__ import annotations

from typing import Any

import pytest
from chartkit import NAMESPACE, Helm, HelmError, container

from podmuster.cli import build_parser
from scheduler.live.informers import WATCHED

pytestmark = pytest.mark.chart

NAME = "podmuster-dashboard"
ON = {"dashboard": {"enabled": True}}
PLURALS = {
    "DeviceClass": "deviceclasses",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
    "PriorityClass": "priorityclasses",
    "Topology": "topologies",
}


def test_off_by_default(helm: Helm) -> None:
    rendered = helm.template()
    assert NAME not in rendered.names("Deployment")
    assert NAME not in rendered.names("Service")
    assert NAME not in rendered.names("ClusterRole")


@pytest.mark.parametrize("mode", ["components", "all"])
def test_enabled_renders_a_deployment_and_a_service(helm: Helm, mode: str) -> None:
    values = {"mode": mode, "dashboard": {"enabled": True, "port": 9000, "refreshSeconds": 5}}
    rendered = helm.template(values)
    deployment = rendered.get("Deployment", NAME)
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == NAME
    parsed = build_parser().parse_args(container(deployment)["args"])
    assert (parsed.component, parsed.port, parsed.refresh) == ("dashboard", 9000, 5)
    assert parsed.config == "/etc/podmuster/scheduler.yaml"
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": "podmuster-scheduler-config"}} in volumes
    service = rendered.get("Service", NAME)
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    ]
    assert container(deployment)["ports"][0]["containerPort"] == 9000
    assert "0 chart(s) failed" in helm.lint(values)


def test_read_only_rbac_is_what_the_informers_read(helm: Helm) -> None:
    rendered = helm.template(ON)
    rules: list[dict[str, Any]] = rendered.get("ClusterRole", NAME)["rules"]
    granted = {
        (g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]
        for v in rule["verbs"]
    }  # fmt: skip
    assert {v for _, _, v in granted} == {"list", "watch"}
    wanted = {("", "events")}
    for api_version, kind in WATCHED:
        group = api_version.rpartition("/")[0]
        wanted.add((group, PLURALS.get(kind, kind.lower() + "s")))
    assert {(g, r) for g, r, _ in granted} == wanted
    (binding,) = [b for b in rendered.of_kind("ClusterRoleBinding") if b["roleRef"]["name"] == NAME]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


@pytest.mark.parametrize(
    "bad",
    [{"port": 0}, {"refreshSeconds": 0}, {"service": {"type": "Ingress"}}, {"extra": 1}],
)
def test_bad_values_fail_the_schema(helm: Helm, bad: dict[str, Any]) -> None:
    with pytest.raises(HelmError):
        helm.template({"dashboard": {"enabled": True, **bad}})
