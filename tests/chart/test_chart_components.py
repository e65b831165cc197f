"""Per-component values of charts/podmuster: placement, resources, extra arguments and
env, API limits, the health port, replica anti-affinity, direct binding and the
time-based fair-share usage source.

Why: a platform team pins the scheduler to control-plane nodes, gives it more API
budget than the podgrouper, or runs two binder replicas on different nodes; each of
those must reach exactly the Deployment it names (and a node pool's scheduler), and
the rendered arguments must still parse with podmuster's own command line.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from chartkit import Helm, HelmError, Rendered, container

from podmuster.cli import build_parser
from scheduler.config import load_config

pytestmark = pytest.mark.chart

# component values key -> the Deployment it configures (with the values that enable it)
DEPLOYMENTS: dict[str, tuple[str, dict[str, Any]]] = {
    "podgrouper": ("podmuster-podgrouper", {}),
    "scheduler": ("podmuster-scheduler", {}),
    "binder": ("podmuster-binder", {}),
    "controllers": ("podmuster-controllers", {}),
    "webhooks": ("podmuster-webhooks", {}),
    "all": ("podmuster-all", {"mode": "all"}),
    "clusterAutoscaling": (
        "podmuster-node-scale-adjuster",
        {"clusterAutoscaling": {"enabled": True}},
    ),
    "dashboard": ("podmuster-dashboard", {"dashboard": {"enabled": True}}),
}
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
CONTROL_PLANE = {
    "key": "node-role.kubernetes.io/control-plane",
    "operator": "Exists",
    "effect": "NoSchedule",
}
ZONE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]
        }
    }
}


def pod_spec(rendered: Rendered, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = rendered.get("Deployment", name)["spec"]["template"]["spec"]
    return spec


def merged(*parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = value
    return out


@pytest.mark.parametrize("key", sorted(DEPLOYMENTS))
def test_placement_and_extras_reach_only_their_component(helm: Helm, key: str) -> None:
    name, enable = DEPLOYMENTS[key]
    own = {
        "nodeSelector": {"role": "system", "disk": "ssd"},
        "tolerations": [GPU_TAINT],
        "affinity": ZONE_AFFINITY,
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
        "resources": {"requests": {"cpu": "3"}, "limits": {"memory": "9Gi"}},
        "extraArgs": ["--log-level=debug"],
        "extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
        "kubeApi": {"qps": 123},
    }
    values = merged(
        enable,
        {
            "nodeSelector": {"role": "infra", "arch": "amd64"},
            "tolerations": [CONTROL_PLANE],
            "affinity": {"podAffinity": {}},
            "kubeApi": {"qps": 50, "burst": 300},
        },
        {key: own},
    )
    rendered = helm.template(values)
    spec = pod_spec(rendered, name)
    assert spec["nodeSelector"] == {"role": "system", "disk": "ssd", "arch": "amd64"}
    assert spec["tolerations"] == [CONTROL_PLANE, GPU_TAINT]
    assert spec["affinity"] == ZONE_AFFINITY  # the component's replaces the global one
    assert spec["topologySpreadConstraints"] == own["topologySpreadConstraints"]
    box = container({"spec": {"template": {"spec": spec}}})
    # Helm merges values over the defaults: the default memory request stays
    assert box["resources"]["requests"]["cpu"] == "3"
    assert box["resources"]["limits"] == {"memory": "9Gi"}
    assert box["args"][-1] == "--log-level=debug", "extraArgs come last, so they win"
    assert {"name": "HTTPS_PROXY", "value": "http://proxy:3128"} in box["env"]
    parsed = build_parser().parse_args(box["args"])
    assert (parsed.log_level, parsed.kube_api_qps, parsed.kube_api_burst) == ("debug", 123, 300)
    # every other Deployment keeps the global placement and limits
    for other in rendered.of_kind("Deployment"):
        if other["metadata"]["name"] == name:
            continue
        other_spec = other["spec"]["template"]["spec"]
        assert other_spec["nodeSelector"] == {"role": "infra", "arch": "amd64"}
        assert other_spec["tolerations"] == [CONTROL_PLANE]
        other_args = container(other)["args"]
        assert "--kube-api-qps=50" in other_args, other["metadata"]["name"]
        assert "--log-level=debug" not in other_args


def test_node_pool_placement_over_the_schedulers(helm: Helm) -> None:
    values = {
        "scheduler": {
            "nodeSelector": {"role": "system"},
            "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "2Gi"}},
            "nodePools": [
                {"name": "a100", "nodeSelector": {"zone": "a"}, "kubeApi": {"burst": 900},
                 "resources": {"limits": {"memory": "8Gi"}}},
                {"name": "t4"},
            ],
        }
    }  # fmt: skip
    rendered = helm.template(values)
    a100 = pod_spec(rendered, "podmuster-scheduler-a100")
    assert a100["nodeSelector"] == {"role": "system", "zone": "a"}
    box = container(rendered.get("Deployment", "podmuster-scheduler-a100"))
    assert box["resources"] == {
        "requests": {"cpu": "1", "memory": "512Mi"},
        "limits": {"memory": "8Gi"},
    }
    parsed = build_parser().parse_args(box["args"])
    assert (parsed.node_pool, parsed.kube_api_burst) == ("a100", 900)
    assert pod_spec(rendered, "podmuster-scheduler-t4")["nodeSelector"] == {"role": "system"}
    assert (
        "--kube-api-burst=300"
        in container(rendered.get("Deployment", "podmuster-scheduler"))["args"]
    )


def test_no_placement_by_default(helm: Helm) -> None:
    for deployment in helm.template().of_kind("Deployment"):
        spec = deployment["spec"]["template"]["spec"]
        for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
            assert key not in spec, (deployment["metadata"]["name"], key)


@pytest.mark.parametrize("mode", ["soft", "hard", "off"])
def test_replicas_are_kept_apart(helm: Helm, mode: str) -> None:
    values = {
        "replicaAntiAffinity": {"mode": mode, "topologyKey": "topology.kubernetes.io/zone"},
        "binder": {"replicas": 2, "affinity": ZONE_AFFINITY},
        "webhooks": {"replicas": 3},
    }
    rendered = helm.template(values)
    assert "affinity" not in pod_spec(rendered, "podmuster-scheduler"), "one replica: nothing"
    for name, component in (("podmuster-binder", "binder"), ("podmuster-webhooks", "webhooks")):
        affinity = pod_spec(rendered, name).get("affinity", {})
        if name == "podmuster-binder":
            assert affinity["nodeAffinity"] == ZONE_AFFINITY["nodeAffinity"], "kept"
        term = {
            "topologyKey": "topology.kubernetes.io/zone",
            "labelSelector": {"matchLabels": {
                "app.kubernetes.io/name": "podmuster",
                "app.kubernetes.io/instance": "podmuster",
                "app.kubernetes.io/component": component,
            }},
        }  # fmt: skip
        anti = affinity.get("podAntiAffinity")
        if mode == "off":
            assert anti is None
        elif mode == "hard":
            assert anti == {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            assert anti == {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": term}
                ]
            }


def test_health_port_moves_the_probes(helm: Helm) -> None:
    rendered = helm.template({"healthPort": 8088, "clusterAutoscaling": {"enabled": True}})
    for deployment in rendered.of_kind("Deployment"):
        box = container(deployment)
        parsed = build_parser().parse_args(box["args"])
        assert (parsed.metrics_port, parsed.health_port) == (8080, 8088)
        if deployment["metadata"]["name"] == "podmuster-dashboard":
            continue
        assert {"name": "health", "containerPort": 8088, "protocol": "TCP"} in box["ports"]
        assert box["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
        assert box["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


@pytest.mark.parametrize("mode", ["components", "all"])
def test_direct_bind_reaches_the_scheduler(helm: Helm, mode: str) -> None:
    name = "podmuster-scheduler" if mode == "components" else "podmuster-all"
    off = build_parser().parse_args(
        container(helm.template({"mode": mode}).get("Deployment", name))["args"]
    )
    assert not off.direct_bind
    rendered = helm.template({"mode": mode, "scheduler": {"directBind": True}})
    on = build_parser().parse_args(container(rendered.get("Deployment", name))["args"])
    assert on.direct_bind


def scheduler_yaml(rendered: Rendered, name: str = "podmuster-scheduler-config") -> Any:
    return yaml.safe_load(rendered.get("ConfigMap", name)["data"]["scheduler.yaml"])


def test_no_usage_source_by_default(helm: Helm) -> None:
    data = scheduler_yaml(helm.template())
    assert "usageDBConfig" not in data
    assert load_config(data).usage_db is None


def test_prometheus_usage_source(helm: Helm) -> None:
    url = "http://prometheus-operated.monitoring.svc:9090"
    params = {"windowSize": "2w", "halfLifePeriod": "12h", "fetchInterval": "2m",
              "extraParams": {"queryResolution": "5m"}}  # fmt: skip
    usage_values = {"source": "prometheus", "prometheus": {"url": url}, "params": params}
    rendered = helm.template({"scheduler": {"usage": usage_values}})
    usage = load_config(scheduler_yaml(rendered)).usage_db
    assert usage is not None
    assert (usage.client_type, usage.connection_string) == ("prometheus", url)
    assert (usage.params.window_size_s, usage.params.half_life_s) == (14 * 86400, 12 * 3600)
    assert (usage.params.fetch_interval_s, usage.params.query_resolution_s) == (120, 300)
    with pytest.raises(HelmError) as failure:
        helm.template({"scheduler": {"usage": {"source": "prometheus"}}})
    assert "url" in failure.value.stderr


def test_builtin_usage_source_keeps_one_record_per_scheduler(helm: Helm) -> None:
    values = {
        "scheduler": {
            "usage": {"source": "builtin", "builtin": {"historyVolumeClaim": "usage"},
                      "params": {"windowType": "cron", "cronString": "0 0 * * 1"}},
            "nodePools": [{"name": "a100"}],
        }
    }  # fmt: skip
    rendered = helm.template(values)
    files = {}
    for config, deployment in (
        ("podmuster-scheduler-config", "podmuster-scheduler"),
        ("podmuster-scheduler-a100-config", "podmuster-scheduler-a100"),
    ):
        usage = load_config(scheduler_yaml(rendered, config)).usage_db
        assert usage is not None
        assert usage.client_type == "builtin"
        assert usage.params.window_type == "cron"
        files[deployment] = usage.history_file
        spec = pod_spec(rendered, deployment)
        assert {"name": "usage", "persistentVolumeClaim": {"claimName": "usage"}} in spec["volumes"]
        assert {"name": "usage", "mountPath": "/var/lib/podmuster/usage"} in container(
            rendered.get("Deployment", deployment)
        )["volumeMounts"]
        configmap = next(v for v in spec["volumes"] if v["name"] == "config")
        assert configmap["configMap"]["name"] == config
    assert files == {
        "podmuster-scheduler": "/var/lib/podmuster/usage/scheduler.json",
        "podmuster-scheduler-a100": "/var/lib/podmuster/usage/scheduler-a100.json",
    }
    # in memory: no claim, no file
    memory = helm.template({"scheduler": {"usage": {"source": "builtin"}}})
    usage = load_config(scheduler_yaml(memory)).usage_db
    assert usage is not None
    assert usage.history_file == ""
    assert all(v["name"] != "usage" for v in pod_spec(memory, "podmuster-scheduler")["volumes"])
