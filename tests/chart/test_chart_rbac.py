"""The chart's RBAC, pinned rule by rule: least privilege per component, no wildcards.

Why: a ClusterRole is the part of an install a security review reads first, and a
permission added "to make it work" never shows up in a functional test. The expected
rules below were derived from the calls each component makes (kubeapi calls in
podgrouper/, scheduler/live, scheduler/binder and scheduler/controllers); a change in
either must change this table.
"""

from __future__ import annotations

from typing import Any

import pytest
from chartkit import NAMESPACE, Helm, Rendered

pytestmark = pytest.mark.chart

Grants = set[tuple[str, str, str]]
"""(apiGroup, resource, verb): one permission."""

OWNER_KINDS = {
    "apps": ("deployments", "replicasets", "statefulsets"),
    "batch": ("jobs", "cronjobs"),
    "kubeflow.org": (
        "tfjobs",
        "pytorchjobs",
        "xgboostjobs",
        "jaxjobs",
        "mpijobs",
        "paddlejobs",
        "notebooks",
        "scheduledworkflows",
    ),
    "trainer.kubeflow.org": ("trainjobs",),
    "jobset.x-k8s.io": ("jobsets",),
    "leaderworkerset.x-k8s.io": ("leaderworkersets",),
    "ray.io": ("rayclusters", "rayjobs", "rayservices", "raycronjobs"),
    "serving.knative.dev": ("services", "configurations", "revisions"),
    "argoproj.io": ("workflows",),
    "grove.io": ("podcliquesets", "podgangsets", "podcliques", "podcliquescalinggroups"),
    "scheduler.grove.io": ("podgangs",),
    "nvidia.com": ("dynamographdeployments",),
}


def grants(group: str, resources: str, verbs: str) -> Grants:
    return {(group, r, v) for r in resources.split() for v in verbs.split()}


PODGROUPER: Grants = (
    grants("", "pods", "get list watch patch")
    | grants("", "namespaces", "get")
    | grants("", "events", "create")
    | grants("scheduling.run.ai", "podgroups", "get create update list watch")
    | grants("scheduling.k8s.io", "priorityclasses", "list")
    | grants("scheduling.k8s.io", "workloads podgroups compositepodgroups", "get list")
    | grants("scheduling.k8s.io", "podgroups", "watch")
    | grants("scheduling.k8s.io", "podgroups/status compositepodgroups/status", "update patch")
    | grants("kai.scheduler", "topologies", "list")
    | grants("apiextensions.k8s.io", "customresourcedefinitions", "list watch")
    | {(g, r, "get") for g, rs in OWNER_KINDS.items() for r in rs}
)
SCHEDULER: Grants = (
    grants("", "nodes", "list watch")
    | grants("", "pods", "list watch delete patch")
    | grants("", "pods/status", "patch")
    | grants("", "events", "create")
    | grants("scheduling.run.ai", "podgroups queues", "list watch")
    | grants("scheduling.run.ai", "podgroups/status", "patch")
    | grants("scheduling.run.ai", "podgroups", "patch")
    | grants("scheduling.run.ai", "bindrequests", "list watch create delete")
    | grants("scheduling.k8s.io", "priorityclasses", "list watch")
    | grants("kai.scheduler", "topologies", "list watch")
    | grants("", "persistentvolumeclaims persistentvolumes", "list watch")
    | grants("storage.k8s.io", "storageclasses", "list watch")
    | grants("resource.k8s.io", "resourceclaims resourceslices deviceclasses", "get list watch")
    | grants("", "namespaces", "list watch")
    # NUMA-aware placement (plugins.numa.enabled): the informer's extra kind
    | grants("topology.node.k8s.io", "noderesourcetopologies", "list watch")
)
BINDER: Grants = (
    grants("scheduling.run.ai", "bindrequests", "get list watch")
    | grants("scheduling.run.ai", "bindrequests/status", "patch")
    | grants("", "pods nodes", "get list watch")
    | grants("", "pods/binding", "create")
    | grants("", "pods/status", "patch")  # PodBound=False after a failed bind
    # Fractional GPUs: label sharing pods; the sync deletes pods; per-pod ConfigMaps.
    | grants("", "pods", "patch delete")
    | grants("", "configmaps", "get create update")
    | grants("", "events", "create")
    # Volumes: a PV's claimRef, a claim's selected-node annotation.
    | grants("", "persistentvolumeclaims", "get patch")
    | grants("", "persistentvolumes", "get list update")
    | grants("storage.k8s.io", "storageclasses", "list")
    | grants("resource.k8s.io", "resourceclaims", "get list watch")
    | grants("resource.k8s.io", "resourceclaims/status", "update patch")
)
CONTROLLERS: Grants = (
    grants("", "pods nodes", "list watch")
    | grants("scheduling.k8s.io", "priorityclasses", "list watch")
    | grants("scheduling.run.ai", "podgroups queues", "list watch")
    | grants("scheduling.run.ai", "podgroups/status queues/status", "patch")
)
WEBHOOKS: Grants = grants("scheduling.run.ai", "queues", "list")
EXPECTED = {
    "webhooks": WEBHOOKS,
    "podgrouper": PODGROUPER,
    "scheduler": SCHEDULER,
    "binder": BINDER,
    "controllers": CONTROLLERS,
}


def flatten(rules: list[dict[str, Any]]) -> Grants:
    out: Grants = set()
    for rule in rules:
        assert set(rule) <= {"apiGroups", "resources", "verbs", "resourceNames"}, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out |= {(group, resource, verb) for verb in rule["verbs"]}
    return out


def every_rule(rendered: Rendered) -> list[dict[str, Any]]:
    return [
        r for kind in ("ClusterRole", "Role") for d in rendered.of_kind(kind) for r in d["rules"]
    ]


@pytest.mark.parametrize("mode", ["components", "all"])
def test_no_wildcards_anywhere(helm: Helm, mode: str) -> None:
    rendered = helm.template({"mode": mode})
    for rule in every_rule(rendered):
        for key in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in rule.get(key, []), rule
            assert all("*" not in value for value in rule.get(key, [])), rule
        assert "nonResourceURLs" not in rule


@pytest.mark.parametrize("component", sorted(EXPECTED))
def test_cluster_role_is_exactly_what_the_component_calls(helm: Helm, component: str) -> None:
    role = helm.template().get("ClusterRole", f"podmuster-{component}")
    actual = flatten(role["rules"])
    expected = EXPECTED[component]
    assert actual - expected == set(), "granted but not used"
    assert expected - actual == set(), "used but not granted"
    assert not any("resourceNames" in r for r in role["rules"])


def test_all_mode_grants_the_union(helm: Helm) -> None:
    role = helm.template({"mode": "all"}).get("ClusterRole", "podmuster-all")
    assert flatten(role["rules"]) == PODGROUPER | SCHEDULER | BINDER | CONTROLLERS


def test_nothing_may_write_nodes_secrets_or_rbac(helm: Helm) -> None:
    for mode in ("components", "all"):
        for _group, resource, verb in flatten(every_rule(helm.template({"mode": mode}))):
            assert resource not in ("secrets", "clusterroles", "roles", "rolebindings"), resource
            if resource == "nodes":
                assert verb in ("get", "list", "watch")


@pytest.mark.parametrize("component", ["podgrouper", "scheduler", "binder", "controllers"])
def test_leases_are_namespaced_and_named(helm: Helm, component: str) -> None:
    rendered = helm.template()
    role = rendered.get("Role", f"podmuster-{component}-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [f"podmuster-{component}"],
            "verbs": ["get", "update"],
        },
    ]
    binding = rendered.get("RoleBinding", f"podmuster-{component}-leader-election")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"podmuster-{component}", "namespace": NAMESPACE}
    ]


def test_the_webhooks_hold_no_lease(helm: Helm) -> None:
    rendered = helm.template()
    assert "podmuster-webhooks-leader-election" not in rendered.names("Role")
    roles = helm.template({"leaderElection": {"enabled": False}}).names("Role")
    assert [r for r in roles if "leader-election" in r] == []


@pytest.mark.parametrize(("mode", "binder"), [("components", "binder"), ("all", "all")])
def test_gpu_reservation_namespace_and_accounts(helm: Helm, mode: str, binder: str) -> None:
    """The binder creates pods only in the reservation namespace; the reservation pods'
    own account may read and patch pods there (to report their GPU), nothing else."""
    rendered = helm.template({"mode": mode})
    rns = "kai-resource-reservation"
    assert rendered.names("Namespace") == [rns]
    account = rendered.get("ServiceAccount", "kai-resource-reservation")
    assert account["metadata"]["namespace"] == rns
    own = rendered.get("Role", "kai-resource-reservation")
    assert own["metadata"]["namespace"] == rns
    assert flatten(own["rules"]) == grants("", "pods", "get patch")
    binding = rendered.get("RoleBinding", "kai-resource-reservation")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "kai-resource-reservation", "namespace": rns}
    ]
    creator = rendered.get("Role", f"podmuster-{binder}-resource-reservation")
    assert creator["metadata"]["namespace"] == rns
    assert flatten(creator["rules"]) == grants("", "pods", "create")
    binding = rendered.get("RoleBinding", f"podmuster-{binder}-resource-reservation")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": f"podmuster-{binder}", "namespace": NAMESPACE}
    ]
    elsewhere = helm.template(
        {"binder": {"resourceReservation": {"namespace": "gpu-rr", "createNamespace": False}}}
    )
    assert elsewhere.names("Namespace") == []
    assert elsewhere.get("Role", "kai-resource-reservation")["metadata"]["namespace"] == "gpu-rr"


def test_all_mode_lease(helm: Helm) -> None:
    role = helm.template({"mode": "all"}).get("Role", "podmuster-all-leader-election")
    assert role["rules"][1]["resourceNames"] == ["podmuster-all"]


def test_each_binding_names_its_own_service_account(helm: Helm) -> None:
    rendered = helm.template()
    for binding in rendered.of_kind("ClusterRoleBinding"):
        name = binding["metadata"]["name"]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}
        ]


def test_extra_owner_rules_grant_get_only(helm: Helm) -> None:
    extra = [{"apiGroups": ["example.com"], "resources": ["trainingruns"]}]
    values = {"podgrouper": {"extraOwnerRules": extra, "namespaces": ["team-*"]}}
    role = helm.template(values).get("ClusterRole", "podmuster-podgrouper")
    added = flatten(role["rules"]) - PODGROUPER
    assert added == {("example.com", "trainingruns", "get")} | grants(
        "", "namespaces", "list watch"
    )


def test_direct_bind_grants_pods_binding_to_the_schedulers_only(helm: Helm) -> None:
    """scheduler.directBind adds exactly pods/binding create to every scheduler's role
    (the default pool's and each node pool's), and nothing anywhere else."""
    pools = {"nodePools": [{"name": "a100"}]}
    off = helm.template({"scheduler": pools})
    on = helm.template({"scheduler": {**pools, "directBind": True}})
    binding = ("", "pods/binding", "create")
    for name in ("podmuster-scheduler", "podmuster-scheduler-a100"):
        before = flatten(off.get("ClusterRole", name)["rules"])
        assert binding not in before, name
        assert flatten(on.get("ClusterRole", name)["rules"]) - before == {binding}, name
    for name in ("podmuster-podgrouper", "podmuster-binder", "podmuster-controllers"):
        assert on.get("ClusterRole", name) == off.get("ClusterRole", name), name
    all_on = helm.template({"mode": "all", "scheduler": {"directBind": True}})
    assert flatten(all_on.get("ClusterRole", "podmuster-all")["rules"]) == (
        PODGROUPER | SCHEDULER | BINDER | CONTROLLERS
    ), "mode all: the binder's pods/binding already covers direct binds"
