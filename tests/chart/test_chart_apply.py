"""The rendered chart on the real API server, and the components running as its accounts.

Why: a manifest that renders can still be refused by the API server (a field in the
wrong place, an invalid PodDisruptionBudget), and RBAC that looks minimal can be too
small. So the rendered manifests are applied server-side (Deployments with
``--dry-run=server``: their image cannot run here), and then the podgrouper, scheduler,
binder and controllers run with the rendered arguments and configuration, each with a
token of its own ServiceAccount, and take a pod from creation to Running.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartkit import Helm, Rendered, container

from tests.e2e import live
from tests.e2e.controlplane import Cluster
from tests.e2e.kube import wait_for
from tests.e2e.objects import KWOK_TOLERATION, wait_phase
from tests.e2e.procs import ManagedProcess

pytestmark = [pytest.mark.chart, pytest.mark.e2e, pytest.mark.timeout(600)]

COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")
CONFIG_PATH = "/etc/podmuster/scheduler.yaml"


def release_name() -> str:
    return f"pm{uuid.uuid4().hex[:6]}"


def server_side_apply(cluster: Cluster, docs: list[dict[str, Any]], *extra: str) -> str:
    text = yaml.safe_dump_all(docs, sort_keys=False)
    return cluster.kubectl.run(
        "apply", "--server-side", "--field-manager=podmuster-chart-test", "-f", "-", *extra,
        stdin=text,
    )  # fmt: skip


def apply_rendered(cluster: Cluster, rendered: Rendered) -> None:
    """CRDs first, then everything but Deployments for real, Deployments dry-run."""
    crds = rendered.of_kind("CustomResourceDefinition")
    server_side_apply(cluster, crds, "--force-conflicts")
    for crd in crds:
        cluster.kubectl.run(
            "wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=60s"
        )
    later = ("CustomResourceDefinition", "Deployment", "Queue")
    server_side_apply(cluster, [d for d in rendered.docs if d["kind"] not in later])
    # Hooks run after the release's objects: the default queues, parent first.
    server_side_apply(cluster, rendered.of_kind("Queue"))
    out = server_side_apply(cluster, rendered.of_kind("Deployment"), "--dry-run=server")
    assert out.count("serverside-applied (server dry run)") == len(rendered.of_kind("Deployment"))


def delete_rendered(cluster: Cluster, rendered: Rendered) -> None:
    """Everything cluster-scoped the release made (the namespace takes the rest)."""
    for kind in ("ClusterRoleBinding", "ClusterRole"):
        names = rendered.names(kind)
        if names:
            cluster.kubectl.run(
                "delete", kind.lower(), *names, "--ignore-not-found", "--wait=false"
            )


def test_rendered_manifests_apply_server_side(helm: Helm, cluster: Cluster, namespace: str) -> None:
    values = {"metrics": {"service": {"enabled": True}}}
    for mode in ("components", "all"):
        rendered = helm.template(
            {**values, "mode": mode}, release=release_name(), namespace=namespace
        )
        try:
            apply_rendered(cluster, rendered)
            for kind in ("ServiceAccount", "ConfigMap", "PodDisruptionBudget", "Service", "Role"):
                names = rendered.names(kind)
                listed = cluster.kubectl.items(kind.lower(), "-n", namespace)
                assert set(names) <= {o["metadata"]["name"] for o in listed}, kind
            for name in rendered.names("ClusterRole"):
                assert cluster.kubectl.exists("clusterrole", name)
            classes = {
                c["metadata"]["name"]: c["value"] for c in cluster.kubectl.items("priorityclasses")
            }
            assert {k: classes[k] for k in ("train", "build-preemptible", "build", "inference")} == {
                "train": 50, "build-preemptible": 75, "build": 100, "inference": 125,
            }  # fmt: skip
            child = cluster.kubectl.get("queues.scheduling.run.ai", "default-queue")
            assert child["spec"]["parentQueue"] == "default-parent-queue"
        finally:
            delete_rendered(cluster, rendered)


def allowed(cluster: Cluster, review: dict[str, Any]) -> bool:
    out = json.loads(
        cluster.kubectl.run("create", "-o", "json", "-f", "-", stdin=json.dumps(review))
    )
    return bool(out["status"].get("allowed"))


def test_accounts_may_do_what_they_need_and_no_more(
    helm: Helm, cluster: Cluster, namespace: str
) -> None:
    """SubjectAccessReviews of the applied RBAC (the rendered rules are pinned offline)."""
    release = release_name()
    rendered = helm.template(release=release, namespace=namespace)
    try:
        apply_rendered(cluster, rendered)
        account = f"{release}-podmuster-binder"
        user = f"system:serviceaccount:{namespace}:{account}"

        def can(
            verb: str, resource: str, group: str = "", ns: str = namespace, name: str = ""
        ) -> bool:
            plural, _, sub = resource.partition("/")
            attributes = {
                "group": group,
                "resource": plural,
                "subresource": sub,
                "verb": verb,
                "namespace": ns,
                "name": name,
            }
            review = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": user,
                    "groups": ["system:authenticated"],
                    "resourceAttributes": attributes,
                },
            }
            return allowed(cluster, review)

        assert can("create", "pods/binding", ns="anywhere")
        assert can("patch", "bindrequests/status", "scheduling.run.ai", ns="anywhere")
        assert can("get", "leases", "coordination.k8s.io", name="podmuster-binder")
        assert not can("get", "leases", "coordination.k8s.io", name="podmuster-scheduler")
        assert not can(
            "get", "leases", "coordination.k8s.io", ns="default", name="podmuster-binder"
        )
        assert not can("delete", "pods", ns="anywhere")
        assert not can("update", "bindrequests", "scheduling.run.ai", ns="anywhere")
        assert not can("get", "secrets")
    finally:
        delete_rendered(cluster, rendered)


def token_kubeconfig(cluster: Cluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as ServiceAccount ``account`` with a fresh token."""
    token = cluster.kubectl.run(
        "create", "token", account, "-n", namespace, "--duration=1h"
    ).strip()
    config = json.loads(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": token}
    path.write_text(json.dumps(config))
    return path


@contextlib.contextmanager
def run_as_account(
    cluster: Cluster, rendered: Rendered, component: str, release: str, namespace: str, tmp: Path
) -> Iterator[ManagedProcess]:
    """The component with its rendered arguments, as its ServiceAccount, until the block ends."""
    name = f"{release}-podmuster-{component}"
    args: list[str] = list(container(rendered.get("Deployment", name))["args"])
    config = tmp / "scheduler.yaml"
    config.write_text(
        rendered.get("ConfigMap", f"{release}-podmuster-scheduler-config")["data"]["scheduler.yaml"]
    )
    args = [a.replace(CONFIG_PATH, str(config)) for a in args]
    # One port per process on this machine; the podgrouper is limited to the test namespace.
    args = [a for a in args if not a.startswith(("--metrics-port", "--liveness"))]
    if component == "podgrouper":
        args.append(f"--namespace={namespace}")
    else:
        args.append("--metrics-port=0")
    kubeconfig = token_kubeconfig(cluster, namespace, name, tmp / f"{component}.kubeconfig")
    assert args[:2] == ["run", component]
    # The last --kubeconfig wins: the account's token, not the admin's certificate.
    with live.component(cluster, component, [*args[2:], f"--kubeconfig={kubeconfig}"]) as proc:
        yield proc


def test_components_run_as_their_accounts(
    helm: Helm, cluster: Cluster, namespace: str, kwok_node: str, tmp_path: Path
) -> None:
    """A pod goes from created to Running with every component on its own least RBAC."""
    release = release_name()
    values = {"scheduler": {"schedulePeriod": 0.5}, "controllers": {"debounce": 0.2}}
    rendered = helm.template(values, release=release, namespace=namespace)
    try:
        apply_rendered(cluster, rendered)
        with contextlib.ExitStack() as stack:
            procs = [
                stack.enter_context(
                    run_as_account(cluster, rendered, c, release, namespace, tmp_path)
                )
                for c in COMPONENTS
            ]
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "chart", "namespace": namespace, "labels": {"kai.scheduler/queue": "default-queue"}},
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "nodeSelector": {"kubernetes.io/hostname": kwok_node},
                    "tolerations": [KWOK_TOLERATION],
                    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}],
                },
            }  # fmt: skip
            cluster.kubectl.create(pod)
            wait_phase(cluster, namespace, "chart", "Running", timeout=120)
            group = cluster.kubectl.get("pod", "chart", "-n", namespace)["metadata"]["annotations"][
                "pod-group-name"
            ]

            def allocated() -> bool:
                obj = cluster.kubectl.get("podgroups.scheduling.run.ai", group, "-n", namespace)
                return bool(
                    ((obj.get("status") or {}).get("resourcesStatus") or {}).get("allocated")
                )

            wait_for(f"PodGroup {group} status from the controllers", allocated, timeout=60)
            for proc in procs:
                proc.check_alive()
                log = proc.log_path.read_text(errors="replace")
                denied = [line for line in log.splitlines() if "forbidden" in line.lower()]
                assert denied == [], f"{proc.name} was refused:\n" + "\n".join(denied[:10])
    finally:
        delete_rendered(cluster, rendered)
