"""The chart's hook Jobs and the Grafana dashboard, rendered.

Why: a hook runs once, unattended, with RBAC of its own; what it applies, what it may
touch and what it deletes must be exactly the chart's CRDs, the components' Leases, their
own pods and the objects they labelled, by the names and labels the components really use. The dashboard is
only useful if every series it queries is one the components export. (The hooks run on
the real API server in test_chart_lifecycle.py.)
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from chartkit import CHART, NAMESPACE, Helm, Rendered

from crds.gpusharing import RESERVATION_APP, RESERVATION_SCHEDULER_LABEL
from crds.names import CREATED_BY_LABEL
from scheduler.metrics import Metrics
from scheduler.scale_adjuster.deciding import APP_LABEL, SCALING_APP

pytestmark = pytest.mark.chart

HOOK = "helm.sh/hook"


def hooks_of(rendered: Rendered, event: str) -> list[dict[str, Any]]:
    return [
        d
        for d in rendered.docs
        if event in ((d["metadata"].get("annotations") or {}).get(HOOK) or "").split(",")
    ]


def job_containers(rendered: Rendered, name: str) -> list[dict[str, Any]]:
    job = rendered.get("Job", name)
    boxes: list[dict[str, Any]] = job["spec"]["template"]["spec"]["containers"]
    return boxes


def chart_crds() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((CHART / "crds").glob("*.yaml"))}


def crd_names() -> list[str]:
    names = []
    for text in chart_crds().values():
        doc = next(d for d in yaml.safe_load_all(text) if d)
        names.append(doc["metadata"]["name"])
    return sorted(names)


def test_crd_upgrade_applies_exactly_the_chart_crds(helm: Helm) -> None:
    rendered = helm.template()
    name = "podmuster-crd-upgrade"
    pre = hooks_of(rendered, "pre-upgrade")
    assert {(d["kind"], d["metadata"]["name"]) for d in pre} == {
        (kind, name)
        for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Job")
    }
    assert pre == [d for d in hooks_of(rendered, "pre-install") if d["kind"] != "Queue"]
    assert rendered.get("ConfigMap", name)["data"] == chart_crds()
    (apply,) = job_containers(rendered, name)
    assert apply["command"] == ["kubectl"]
    assert apply["args"] == [
        "apply", "--server-side", "--force-conflicts", "--field-manager=podmuster-crd-upgrade",
        "--filename=/etc/podmuster/crds/",
    ]  # fmt: skip
    assert {"name": "crds", "mountPath": "/etc/podmuster/crds", "readOnly": True} in apply[
        "volumeMounts"
    ]
    assert rendered.get("ClusterRole", name)["rules"] == [
        {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": crd_names(),
            "verbs": ["create", "patch"],
        }
    ]
    binding = rendered.get("ClusterRoleBinding", name)
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]
    weights = {d["kind"]: int(d["metadata"]["annotations"]["helm.sh/hook-weight"]) for d in pre}
    queues = [
        int(q["metadata"]["annotations"]["helm.sh/hook-weight"]) for q in rendered.of_kind("Queue")
    ]
    assert weights["ConfigMap"] < weights["Job"] < min(queues), "CRDs before the default queues"


def test_every_hook_object_is_deleted_once_it_succeeded(helm: Helm) -> None:
    rendered = helm.template(
        {"binder": {"resourceReservation": {"createNamespace": False}},
         "clusterAutoscaling": {"enabled": True, "createNamespace": False}}
    )  # fmt: skip
    hooked = [d for d in rendered.docs if HOOK in (d["metadata"].get("annotations") or {})]
    for doc in hooked:
        if doc["kind"] == "Queue":
            continue  # the default queues stay: they are the team's after install
        policy = doc["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        assert set(policy.split(",")) == {"before-hook-creation", "hook-succeeded"}, doc


EVERY_MODES_LEASES = [
    "podmuster-podgrouper", "podmuster-scheduler", "podmuster-binder",
    "podmuster-controllers", "podmuster-all", "podmuster-node-scale-adjuster",
]  # fmt: skip


def leases_granted(rendered: Rendered) -> set[str]:
    """The Lease names the components' leader-election Roles grant."""
    return {
        name
        for role in rendered.of_kind("Role")
        if role["metadata"]["name"].endswith("-leader-election")
        for rule in role["rules"]
        for name in rule.get("resourceNames", [])
    }


@pytest.mark.parametrize(
    "values",
    [{}, {"mode": "all"}, {"clusterAutoscaling": {"enabled": True}},
     {"leaderElection": {"enabled": False}}],
    ids=["components", "all", "node-scale-adjuster", "no leader election"],
)  # fmt: skip
def test_cleanup_deletes_the_leases_of_every_mode(helm: Helm, values: dict[str, Any]) -> None:
    """The cleanup Job runs with the last release's values, so it deletes the Leases of
    every mode and component: a release switched from mode all to components (or that
    turned leader election or the node-scale-adjuster off) leaves no podmuster-all."""
    rendered = helm.template(values)
    boxes = {c["name"]: c for c in job_containers(rendered, "podmuster-cleanup")}
    args = boxes["leases"]["args"]
    assert args[:5] == ["delete", "leases", "--namespace", NAMESPACE, "--ignore-not-found"]
    assert args[5:] == EVERY_MODES_LEASES
    assert leases_granted(rendered) <= set(EVERY_MODES_LEASES)


def test_cleanup_deletes_the_components_leases_and_pods(helm: Helm) -> None:
    values = {
        "binder": {"resourceReservation": {"createNamespace": False, "namespace": "gpu-res"}},
        "clusterAutoscaling": {"enabled": True, "createNamespace": False},
        "scheduler": {"nodePools": [{"name": "a100"}]},
    }
    rendered = helm.template(values)
    name = "podmuster-cleanup"
    assert {(d["kind"], d["metadata"]["name"]) for d in hooks_of(rendered, "post-delete")} == {
        ("ServiceAccount", name), ("Role", name), ("RoleBinding", name), ("Job", name),
        ("ClusterRole", name), ("ClusterRoleBinding", name),
        ("Role", f"{name}-reservation-pods"), ("RoleBinding", f"{name}-reservation-pods"),
        ("Role", f"{name}-scaling-pods"), ("RoleBinding", f"{name}-scaling-pods"),
    }  # fmt: skip
    leases = [*EVERY_MODES_LEASES, "podmuster-scheduler-a100"]
    # every name the leader-election Roles grant, and the other mode's too
    assert leases_granted(rendered) == set(leases) - {"podmuster-all"}
    boxes = {c["name"]: c for c in job_containers(rendered, name)}
    assert boxes["leases"]["args"] == [
        "delete", "leases", "--namespace", NAMESPACE, "--ignore-not-found", *leases,
    ]  # fmt: skip
    assert boxes["reservation-pods"]["args"] == [
        "delete", "pods", "--namespace", "gpu-res", "--selector",
        f"app={RESERVATION_APP},{CREATED_BY_LABEL}=binder,"
        f"{RESERVATION_SCHEDULER_LABEL}=kai-scheduler",
        "--ignore-not-found", "--wait=false",
    ]  # fmt: skip
    assert APP_LABEL == "app"
    assert boxes["scaling-pods"]["args"] == [
        "delete", "pods", "--namespace", "kai-scale-adjust", "--selector",
        f"{APP_LABEL}={SCALING_APP}", "--ignore-not-found", "--wait=false",
    ]  # fmt: skip
    role = rendered.get("Role", name)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": leases, "verbs": ["delete"]},
    ]  # fmt: skip
    pods = rendered.get("Role", f"{name}-reservation-pods")
    assert pods["metadata"]["namespace"] == "gpu-res"
    assert pods["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "delete"]}
    ]
    for binding in ("", "-reservation-pods", "-scaling-pods"):
        subjects = rendered.get("RoleBinding", f"{name}{binding}")["subjects"]
        assert subjects == [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]
    subjects = rendered.get("ClusterRoleBinding", name)["subjects"]
    assert subjects == [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}]


def test_cleanup_deletes_what_the_components_labelled_in_every_namespace(helm: Helm) -> None:
    """BindRequests (the scheduler's) and GPU-sharing ConfigMaps (the binder's) are in
    users' namespaces; only the label the components put on them selects them, and the
    ClusterRole may list and delete those two resources, nothing else."""
    rendered = helm.template()
    name = "podmuster-cleanup"
    boxes = {c["name"]: c for c in job_containers(rendered, name)}
    for box, kind in (("bind-requests", "bindrequests.scheduling.run.ai"),
                      ("gpu-configmaps", "configmaps")):  # fmt: skip
        assert boxes[box]["args"] == [
            "delete", kind, "--all-namespaces", "--selector", CREATED_BY_LABEL,
            "--ignore-not-found", "--wait=false",
        ]  # fmt: skip
    assert rendered.get("ClusterRole", name)["rules"] == [
        {"apiGroups": ["scheduling.run.ai"], "resources": ["bindrequests"],
         "verbs": ["list", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "delete"]},
    ]  # fmt: skip


def test_cleanup_leaves_namespaces_the_chart_deletes_alone(helm: Helm) -> None:
    """A namespace the chart created is gone before post-delete hooks run (with its
    pods); a Role there could not even be created."""
    rendered = helm.template({"clusterAutoscaling": {"enabled": True}})
    assert [c["name"] for c in job_containers(rendered, "podmuster-cleanup")] == [
        "leases", "bind-requests", "gpu-configmaps",
    ]  # fmt: skip
    assert rendered.names("Role").count("podmuster-cleanup") == 1


def test_hooks_can_be_turned_off(helm: Helm) -> None:
    rendered = helm.template({"crdUpgrade": {"enabled": False}, "cleanup": {"enabled": False}})
    assert rendered.of_kind("Job") == []
    assert [
        d["kind"] for d in rendered.docs if HOOK in (d["metadata"].get("annotations") or {})
    ] == [
        "Queue",
        "Queue",
    ]


def test_hook_jobs_run_unprivileged_where_the_chart_runs(helm: Helm) -> None:
    values = {
        "nodeSelector": {"role": "system"},
        "tolerations": [{"key": "system", "operator": "Exists", "effect": "NoSchedule"}],
        "hooks": {"image": {"repository": "mirror.example/kubectl", "tag": "v1.36.0"}},
        "imagePullSecrets": [{"name": "pull"}],
    }
    rendered = helm.template(values)
    for job in rendered.of_kind("Job"):
        spec = job["spec"]["template"]["spec"]
        assert spec["restartPolicy"] == "Never"
        assert spec["nodeSelector"] == {"role": "system"}
        assert spec["tolerations"] == values["tolerations"]
        assert spec["imagePullSecrets"] == [{"name": "pull"}]
        assert spec["securityContext"]["runAsNonRoot"] is True
        for box in spec["containers"]:
            assert box["image"] == "mirror.example/kubectl:v1.36.0"
            assert box["securityContext"]["readOnlyRootFilesystem"] is True
            assert {"name": "HOME", "value": "/tmp"} in box["env"]
            assert {"name": "tmp", "mountPath": "/tmp"} in box["volumeMounts"]


# --- the Grafana dashboard -----------------------------------------------------------

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_SUFFIXES = ("_bucket", "_sum", "_count", "_total")


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CHART / "dashboards" / "podmuster.json").read_text())
    return data


def queried_metrics(board: dict[str, Any]) -> set[str]:
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in board["templating"]["list"] if "definition" in v]
    names = set()
    for expr in exprs:
        expr = re.sub(r'"[^"]*"', "", expr)  # label values
        expr = re.sub(r"\{[^}]*\}", "", expr)  # matchers
        expr = re.sub(r"\[[^]]*\]", "", expr)  # ranges
        expr = re.sub(r"\b(by|without)\s*\([^)]*\)", "", expr)  # grouping labels
        for name in _NAME.findall(expr):
            if name.startswith(("kai_", "podmuster_", "process_", "python_")):
                names.add(name)
    return names


def exported() -> set[str]:
    """Every sample name the components' registry exposes (with the process collector)."""
    metrics = Metrics()
    metrics.observe_cycle(1.0, {"allocate": 1.0}, 1.0, 1.0)
    metrics.bind_latency.observe(1.0)
    names = set()
    for family in metrics.registry.collect():
        names |= {family.name} | {s.name for s in family.samples}
        if family.type == "counter":  # a counter without samples yet: its family name
            names.add(f"{family.name}_total")
    return names


def test_dashboard_queries_only_exported_metrics() -> None:
    board = dashboard()
    queried = queried_metrics(board)
    assert {"kai_queue_allocated_gpus", "podmuster_cycle_latency_milliseconds_bucket",
            "kai_task_bind_latency_milliseconds_bucket"} <= queried  # fmt: skip
    names = exported()
    unknown = {q for q in queried if q not in names and not any(q + s in names for s in _SUFFIXES)}
    assert unknown == set(), "the dashboard queries metrics no component exports"


def test_dashboard_panels_are_well_formed() -> None:
    board = dashboard()
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert board["uid"] == "podmuster-overview"
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]


def test_dashboard_configmap_is_off_by_default(helm: Helm) -> None:
    name = "podmuster-grafana-dashboard"
    assert name not in helm.template().names("ConfigMap")
    rendered = helm.template(
        {"grafanaDashboard": {"enabled": True, "namespace": "monitoring",
                              "labels": {"grafana_dashboard": "1", "team": "ml"}}}
    )  # fmt: skip
    configmap = rendered.get("ConfigMap", name)
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["labels"]["team"] == "ml"
    assert json.loads(configmap["data"]["podmuster.json"]) == dashboard()


def test_service_monitor_options(helm: Helm) -> None:
    rendered = helm.template(
        {"metrics": {"serviceMonitor": {"enabled": True, "namespace": "monitoring",
                                        "scrapeTimeout": "10s"}}},
        api_versions=["monitoring.coreos.com/v1/ServiceMonitor"],
    )  # fmt: skip
    monitors = rendered.of_kind("ServiceMonitor")
    assert len(monitors) == 5  # podgrouper, scheduler, binder, controllers, webhooks
    for monitor in monitors:
        assert monitor["metadata"]["namespace"] == "monitoring"
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
        assert monitor["spec"]["endpoints"][0]["scrapeTimeout"] == "10s"
