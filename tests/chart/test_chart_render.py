"""charts/podmuster rendered by the real helm: lint, defaults, non-default values.

Every Deployment's arguments are parsed by podmuster's own command line, and the
scheduler ConfigMap is loaded by the scheduler's configuration loader, so a flag or key
the components do not know fails here rather than in a crash-looping pod.
"""

from __future__ import annotations

import filecmp
from typing import Any

import pytest
import yaml
from chartkit import CHART, NAMESPACE, REPO, Helm, Rendered, container

from podmuster.cli import build_parser
from scheduler.config import load_config

pytestmark = pytest.mark.chart

COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")
DEPLOYMENTS = (*COMPONENTS, "webhooks")
HOOK_ACCOUNTS = ("podmuster-cleanup", "podmuster-crd-upgrade")
SERVICE_MONITOR_API = "monitoring.coreos.com/v1/ServiceMonitor"
"""Served where the Prometheus Operator's CRDs are; only then are ServiceMonitors made."""
"""The hook Jobs' ServiceAccounts (test_chart_hooks.py), rendered by default."""


def deployment(rendered: Rendered, component: str) -> dict[str, Any]:
    return rendered.get("Deployment", f"podmuster-{component}")


def args_of(rendered: Rendered, component: str) -> list[str]:
    args: list[str] = container(deployment(rendered, component))["args"]
    return args


def scheduler_config(rendered: Rendered) -> dict[str, Any]:
    configmap = rendered.get("ConfigMap", "podmuster-scheduler-config")
    data: dict[str, Any] = yaml.safe_load(configmap["data"]["scheduler.yaml"])
    return data


def test_crd_files_are_the_repository_crds() -> None:
    ours = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    charts = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert charts == ours
    _, mismatch, errors = filecmp.cmpfiles(REPO / "crds", CHART / "crds", ours, shallow=False)
    assert (mismatch, errors) == ([], []), "copy crds/*.yaml to charts/podmuster/crds/"


def test_lint_strict(helm: Helm) -> None:
    out = helm.lint()
    assert "0 chart(s) failed" in out
    out = helm.lint({"mode": "all", "metrics": {"serviceMonitor": {"enabled": True}}})
    assert "0 chart(s) failed" in out


def test_defaults_render_every_component(helm: Helm) -> None:
    rendered = helm.template()
    names = sorted(f"podmuster-{c}" for c in DEPLOYMENTS)
    assert rendered.names("Deployment") == names
    assert rendered.names("ServiceAccount") == sorted(
        [*names, *HOOK_ACCOUNTS, "kai-resource-reservation"]
    )
    assert rendered.names("ClusterRole") == sorted(
        [*names, "podmuster-crd-upgrade", "podmuster-cleanup"]
    )
    assert rendered.names("PodDisruptionBudget") == names
    metrics = [f"podmuster-{c}-metrics" for c in DEPLOYMENTS]
    assert rendered.names("Service") == sorted([*metrics, "podmuster-webhooks"])
    assert rendered.names("ServiceMonitor") == []
    assert rendered.names("CustomResourceDefinition") == [
        "bindrequests.scheduling.run.ai",
        "podgroups.scheduling.run.ai",
        "queues.scheduling.run.ai",
        "topologies.kai.scheduler",
    ]
    cluster_scoped = ("CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
                      "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
                      "Namespace")  # fmt: skip
    reservations = "kai-resource-reservation"  # the GPU reservation pods' own namespace
    for doc in rendered.docs:
        if doc["kind"] not in (*cluster_scoped, "PriorityClass", "Queue"):
            assert doc["metadata"]["namespace"] in (NAMESPACE, reservations), doc["metadata"]
            if doc["metadata"]["namespace"] == reservations:
                assert "reservation" in doc["metadata"]["name"]


@pytest.mark.parametrize("component", DEPLOYMENTS)
def test_rendered_arguments_parse_with_the_cli(helm: Helm, component: str) -> None:
    args = args_of(helm.template(), component)
    parsed = build_parser().parse_args(args)
    assert parsed.component == component
    if component in ("podgrouper", "scheduler"):
        assert parsed.scheduler_name == "kai-scheduler"
    # The common flags reach every component (values logFormat, logLevel, kubeApi).
    assert (parsed.log_format, parsed.log_level) == ("json", "info")
    assert (parsed.kube_api_qps, parsed.kube_api_burst) == (50, 300)
    assert (parsed.metrics_port, parsed.health_port) == (8080, None)
    if component == "podgrouper":
        assert parsed.queue_label_key == "kai.scheduler/queue"
        assert parsed.liveness == ""
    if component == "webhooks":
        assert parsed.port == 9443
        assert parsed.scheduler_name == "kai-scheduler"
        assert parsed.tls_cert_file == "/etc/podmuster/tls/tls.crt"
        assert parsed.gpu_fraction_runtime_class_name == "nvidia"
        assert not parsed.leader_elect  # every replica answers
    else:
        assert parsed.leader_elect
        assert parsed.leader_elect_namespace == NAMESPACE


@pytest.mark.parametrize("component", DEPLOYMENTS)
def test_log_and_api_values_reach_every_component(helm: Helm, component: str) -> None:
    values = {"logLevel": "debug", "logFormat": "plain", "kubeApi": {"qps": 20, "burst": 40}}
    parsed = build_parser().parse_args(args_of(helm.template(values), component))
    assert (parsed.log_level, parsed.log_format) == ("debug", "plain")
    assert (parsed.kube_api_qps, parsed.kube_api_burst) == (20, 40)


def test_all_mode_is_one_deployment(helm: Helm) -> None:
    rendered = helm.template({"mode": "all", "schedulerName": "batch", "queueLabelKey": "q"})
    assert rendered.names("Deployment") == ["podmuster-all", "podmuster-webhooks"]
    assert rendered.names("ServiceAccount") == sorted(
        ["kai-resource-reservation", "podmuster-all", "podmuster-webhooks", *HOOK_ACCOUNTS]
    )
    parsed = build_parser().parse_args(args_of(rendered, "all"))
    assert parsed.component == "all"
    assert parsed.resource_reservation_allocation_timeout == 40
    assert parsed.resource_reservation_runtime_class == ""  # none by default, as KAI's
    assert not parsed.cdi_enabled
    assert (parsed.scheduler_name, parsed.queue_label_key) == ("batch", "q")
    assert parsed.config == "/etc/podmuster/scheduler.yaml"
    assert parsed.leader_elect
    volumes = deployment(rendered, "all")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": "podmuster-scheduler-config"}} in volumes


def test_scheduler_configuration_is_mounted_and_loads(helm: Helm) -> None:
    rendered = helm.template()
    args = args_of(rendered, "scheduler")
    assert "--config=/etc/podmuster/scheduler.yaml" in args
    mounts = container(deployment(rendered, "scheduler"))["volumeMounts"]
    assert {"name": "config", "mountPath": "/etc/podmuster", "readOnly": True} in mounts
    config = load_config(scheduler_config(rendered))
    assert config.actions == (
        "allocate",
        "consolidation",
        "reclaim",
        "preempt",
        "stalegangeviction",
    )
    assert (config.gpu_placement, config.cpu_placement) == ("binpack", "binpack")
    assert config.scheduler_name == "kai-scheduler"


def test_non_default_values(helm: Helm) -> None:
    values = {
        "schedulerName": "podmuster",
        "queueLabelKey": "example.com/queue",
        "leaderElection": {"enabled": False},
        "image": {"repository": "registry.example/podmuster", "tag": "1.2.3"},
        "podgrouper": {
            "namespaceLabelSelector": "kai=enabled",
            "namespaces": ["team-*"],
            "knativeGangSchedule": False,
            "defaultPrioritiesConfigMap": {"name": "priorities", "namespace": "config"},
        },
        "scheduler": {
            "schedulePeriod": 0.5,
            "config": {
                "actions": ["allocate", "reclaim"],
                "placementStrategy": {"gpu": "spread", "cpu": "spread"},
                "queueDepthPerAction": {"allocate": 50},
            },
        },
        "binder": {
            "workers": 3,
            "resourceReservation": {"runtimeClassName": "nvidia", "allocationTimeout": 5},
            "cdiEnabled": True,
        },
        "podDisruptionBudget": {"enabled": False},
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
        "priorityClasses": {"create": False},
        "defaultQueues": {"create": False},
        "webhooks": {"enabled": False},
    }
    rendered = helm.template(values, api_versions=[SERVICE_MONITOR_API])
    parser = build_parser()
    grouper = parser.parse_args(args_of(rendered, "podgrouper"))
    assert grouper.scheduler_name == "podmuster"
    assert grouper.queue_label_key == "example.com/queue"
    assert grouper.namespace_label_selector == "kai=enabled"
    assert grouper.namespace == ["team-*"]
    assert grouper.knative_gang_schedule == "false"
    assert (
        grouper.default_priorities_configmap_name,
        grouper.default_priorities_configmap_namespace,
    ) == ("priorities", "config")
    scheduler = parser.parse_args(args_of(rendered, "scheduler"))
    assert scheduler.scheduler_name == "podmuster"
    assert scheduler.schedule_period == 0.5
    assert not scheduler.leader_elect
    binder = parser.parse_args(args_of(rendered, "binder"))
    assert binder.workers == 3
    assert binder.scheduler_name == "podmuster"  # its own work only, beside KAI
    assert binder.resource_reservation_runtime_class == "nvidia"
    assert binder.resource_reservation_allocation_timeout == 5
    assert binder.resource_reservation_namespace == "kai-resource-reservation"
    assert binder.cdi_enabled
    # (more than one replica needs leader election: test_chart_checks.py)
    image = container(deployment(rendered, "binder"))["image"]
    assert image == "registry.example/podmuster:1.2.3"
    config = load_config(scheduler_config(rendered))
    assert config.actions == ("allocate", "reclaim")
    assert (config.gpu_placement, config.cpu_placement) == ("spread", "spread")
    assert dict(config.queue_depth_per_action) == {"allocate": 50}
    assert config.scheduler_name == "podmuster"
    assert rendered.names("Role") == [
        "kai-resource-reservation",
        "podmuster-binder-resource-reservation",
        "podmuster-cleanup",
        "podmuster-podgrouper-default-priorities",
    ]
    assert (
        rendered.get("Role", "podmuster-podgrouper-default-priorities")["metadata"]["namespace"]
        == "config"
    )
    assert rendered.names("PodDisruptionBudget") == []
    assert rendered.names("PriorityClass") == []
    assert rendered.names("Queue") == []
    assert rendered.names("ValidatingWebhookConfiguration") == []
    monitors = rendered.of_kind("ServiceMonitor")
    assert len(monitors) == 4
    assert all(m["metadata"]["labels"]["release"] == "prom" for m in monitors)


def test_pod_annotations_and_the_config_checksum(helm: Helm) -> None:
    rendered = helm.template()
    assert "annotations" not in deployment(rendered, "podgrouper")["spec"]["template"]["metadata"]
    checksum = deployment(rendered, "scheduler")["spec"]["template"]["metadata"]["annotations"]
    assert list(checksum) == ["checksum/config"]
    changed = helm.template({"scheduler": {"config": {"placementStrategy": {"gpu": "spread"}}}})
    other = deployment(changed, "scheduler")["spec"]["template"]["metadata"]["annotations"]
    assert other["checksum/config"] != checksum["checksum/config"], (
        "a config change must roll the pods"
    )
    annotated = helm.template({"podAnnotations": {"team": "platform"}})
    meta = deployment(annotated, "binder")["spec"]["template"]["metadata"]
    assert meta["annotations"] == {"team": "platform"}


def test_image_defaults_to_the_app_version(helm: Helm) -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    image = container(deployment(helm.template(), "scheduler"))["image"]
    assert image == f"ghcr.io/podmuster/podmuster:{chart['appVersion']}"


@pytest.mark.parametrize("component", DEPLOYMENTS)
def test_pods_run_unprivileged_with_probes(helm: Helm, component: str) -> None:
    pod = deployment(helm.template(), component)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["serviceAccountName"] == f"podmuster-{component}"
    box = container({"spec": {"template": {"spec": pod}}})
    security = box["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert box["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert box["readinessProbe"]["httpGet"]["port"] == "metrics"
    assert box["ports"][0] == {"name": "metrics", "containerPort": 8080, "protocol": "TCP"}
    assert box["resources"]["requests"]["cpu"]
    assert {"name": "tmp", "mountPath": "/tmp"} in box["volumeMounts"]


def test_priority_classes(helm: Helm) -> None:
    classes = helm.template().of_kind("PriorityClass")
    assert {c["metadata"]["name"]: c["value"] for c in classes} == {
        "train": 50,
        "build-preemptible": 75,
        "build": 100,
        "inference": 125,
    }
    assert not any(c["globalDefault"] for c in classes)


def test_default_queues_are_created_on_install_only(helm: Helm) -> None:
    rendered = helm.template()
    parent = rendered.get("Queue", "default-parent-queue")
    child = rendered.get("Queue", "default-queue")
    unlimited = {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    for queue in (parent, child):
        assert queue["metadata"]["annotations"]["helm.sh/hook"] == "pre-install"
        assert queue["spec"]["resources"] == {r: unlimited for r in ("gpu", "cpu", "memory")}
    assert "parentQueue" not in parent["spec"]
    assert child["spec"]["parentQueue"] == "default-parent-queue"
    weights = [int(q["metadata"]["annotations"]["helm.sh/hook-weight"]) for q in (parent, child)]
    assert weights[0] < weights[1], "the parent must exist before its child"


def test_default_queues_are_configurable(helm: Helm) -> None:
    gpu = {"quota": 8, "limit": 16, "overQuotaWeight": 2}
    other = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": gpu, "cpu": other, "memory": other}
    values = {
        "defaultQueues": {
            "parent": {"name": "research", "resources": resources},
            "child": {"name": "research-default", "resources": resources},
        }
    }
    rendered = helm.template(values)
    assert rendered.names("Queue") == ["research", "research-default"]
    child = rendered.get("Queue", "research-default")
    assert child["spec"] == {"parentQueue": "research", "resources": resources}


def test_notes_name_the_scheduler_and_queue_label(helm: Helm) -> None:
    out = helm.run(
        "install", "podmuster", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
        "--set", "schedulerName=batch", "--set", "queueLabelKey=example.com/queue",
    )  # fmt: skip
    notes = out[out.index("NOTES:") :]
    assert "schedulerName: batch" in notes
    assert "example.com/queue: default-queue" in notes
    assert f"kubectl -n {NAMESPACE} get deployments" in notes


def test_notes_say_the_default_image_is_not_published(helm: Helm) -> None:
    def notes(*extra: str) -> str:
        out = helm.run(
            "install", "podmuster", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
            *extra,
        )  # fmt: skip
        return out[out.index("NOTES:") :]

    assert "podmuster publishes no\nimage" in notes()
    assert "publishes no" not in notes("--set", "image.repository=registry.example/podmuster")


def test_notes_keep_each_line_apart(helm: Helm) -> None:
    """The image paragraph is conditional: with an image of one's own (the documented
    install), its template tags must not eat the newline before "Check the components"."""
    for extra in ((), ("--set", "image.repository=registry.example/podmuster")):
        out = helm.run(
            "install", "podmuster", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
            *extra,
        )  # fmt: skip
        notes = out[out.index("NOTES:") :]
        assert "schedulerName: kai-scheduler\n\n" in notes, notes
        assert "\n\nCheck the components:\n" in notes, notes


@pytest.mark.parametrize("mode", ["components", "all"])
def test_every_deployment_gets_a_pdb_a_metrics_service_and_a_service_monitor(
    helm: Helm, mode: str
) -> None:
    """install.md promises a PodDisruptionBudget and /metrics (Service, ServiceMonitor) per
    Deployment: the node-scale-adjuster, the dashboard and the webhooks included. Each
    Service's target port is a port of the Deployment's container."""
    values = {
        "mode": mode,
        "dashboard": {"enabled": True},
        "clusterAutoscaling": {"enabled": True},
        "metrics": {"serviceMonitor": {"enabled": True}},
    }
    rendered = helm.template(values, api_versions=[SERVICE_MONITOR_API])
    names = rendered.names("Deployment")
    assert {"podmuster-dashboard", "podmuster-node-scale-adjuster", "podmuster-webhooks"} <= set(
        names
    )
    assert rendered.names("PodDisruptionBudget") == names
    assert rendered.names("ServiceMonitor") == names
    for name in names:
        service = rendered.get("Service", f"{name}-metrics")
        pod = rendered.get("Deployment", name)["spec"]["template"]
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        ports = {
            p["name"]: p["containerPort"]
            for p in container(rendered.get("Deployment", name))["ports"]
        }
        assert ports["metrics"] == 8080, name
        assert service["spec"]["ports"][0]["targetPort"] == "metrics"
        args = build_parser().parse_args(container(rendered.get("Deployment", name))["args"])
        assert args.metrics_port == 8080, name


def test_service_monitors_wait_for_the_prometheus_operator(helm: Helm) -> None:
    """Without the Operator's CRDs a ServiceMonitor fails the whole install: none is
    rendered, and NOTES says so."""
    values = {"metrics": {"serviceMonitor": {"enabled": True}}}
    assert helm.template(values).names("ServiceMonitor") == []
    assert (
        len(helm.template(values, api_versions=[SERVICE_MONITOR_API]).names("ServiceMonitor")) == 5
    )
    out = helm.run(
        "install", "podmuster", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
        "--set", "metrics.serviceMonitor.enabled=true",
    )  # fmt: skip
    assert "serves no monitoring.coreos.com/v1\nServiceMonitor" in out
    out = helm.run(
        "install", "podmuster", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
    )  # fmt: skip
    assert "serves no" not in out  # not enabled: nothing to say


def test_the_documented_install_beside_kai_leaves_kais_objects_alone(helm: Helm) -> None:
    """install.md's command for installing beside KAI: another scheduler name, no
    PriorityClasses (KAI's exist; Helm will not adopt them) and a reservation namespace
    that is not KAI's (Helm will not adopt it, and the cleanup would delete KAI's
    reservation pods there)."""
    text = (REPO / "docs" / "install.md").read_text()
    block = text[text.index("Beside KAI, the install needs") :]
    block = block[block.index("```bash") : block.index("```\n", block.index("```bash") + 7)]
    sets = [a for a in block.replace("\\\n", " ").split() if "=" in a and not a.startswith("-")]
    values: dict[str, Any] = {}
    for assignment in sets:
        path, _, value = assignment.partition("=")
        *parents, leaf = path.split(".")
        node = values
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = {"false": False, "true": True}.get(value, value)
    rendered = helm.template(values)
    assert values["schedulerName"] != "kai-scheduler"
    assert rendered.names("PriorityClass") == []
    reservation = values["binder"]["resourceReservation"]["namespace"]
    assert reservation != "kai-resource-reservation"
    assert "kai-resource-reservation" not in rendered.names("Namespace")
    binder = build_parser().parse_args(args_of(rendered, "binder"))
    assert binder.resource_reservation_namespace == reservation
    cleanup = next(j for j in rendered.of_kind("Job") if j["metadata"]["name"].endswith("cleanup"))
    for box in cleanup["spec"]["template"]["spec"]["containers"]:
        assert "kai-resource-reservation" not in box["args"][:4], box
