"""The rendered chart on the real API server, and the components running as its accounts.

Why: a manifest that renders can still be refused by the API server (a field in the
wrong place, an invalid PodDisruptionBudget), and RBAC that looks minimal can be too
small. So the rendered manifests are applied server-side (Deployments with
``--dry-run=server``: their image cannot run here), and then the podgrouper, scheduler,
binder and controllers run with the rendered arguments and configuration, each with a
token of its own ServiceAccount, and take a pod from creation to Running.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from chartkit import Helm, Rendered, container, token_kubeconfig

from tests.e2e import live
from tests.e2e.controlplane import Cluster
from tests.e2e.gpus import ensure_nvidia_runtime_class
from tests.e2e.kube import KubectlError, wait_for
from tests.e2e.objects import KWOK_TOLERATION, wait_phase
from tests.e2e.pki import Pki
from tests.e2e.procs import ManagedProcess, free_port, wait_until

pytestmark = [pytest.mark.chart, pytest.mark.e2e, pytest.mark.timeout(600)]

COMPONENTS = ("podgrouper", "scheduler", "binder", "controllers")


def release_name() -> str:
    return f"pm{uuid.uuid4().hex[:6]}"


def reservations_in(namespace: str) -> dict[str, Any]:
    """Values keeping the GPU reservation namespace's objects in the test's namespace
    (the chart would otherwise create the cluster-wide kai-resource-reservation)."""
    return {"binder": {"resourceReservation": {"namespace": namespace, "createNamespace": False}}}


def server_side_apply(cluster: Cluster, docs: list[dict[str, Any]], *extra: str) -> str:
    text = yaml.safe_dump_all(docs, sort_keys=False)
    return cluster.kubectl.run(
        "apply", "--server-side", "--field-manager=podmuster-chart-test", "-f", "-", *extra,
        stdin=text,
    )  # fmt: skip


def apply_rendered(cluster: Cluster, rendered: Rendered, skip: tuple[str, ...] = ()) -> None:
    """In helm's order: CRDs, pre-install hooks (the default queues), the rest; Deployments
    dry-run. Kinds in ``skip`` are left out."""
    crds = rendered.of_kind("CustomResourceDefinition")
    server_side_apply(cluster, crds, "--force-conflicts")
    for crd in crds:
        cluster.kubectl.run(
            "wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=60s"
        )
    server_side_apply(cluster, rendered.of_kind("Queue"))
    later = ("CustomResourceDefinition", "Deployment", "Queue", *skip)
    server_side_apply(cluster, [d for d in rendered.docs if d["kind"] not in later])
    out = server_side_apply(cluster, rendered.of_kind("Deployment"), "--dry-run=server")
    assert out.count("serverside-applied (server dry run)") == len(rendered.of_kind("Deployment"))


def delete_rendered(cluster: Cluster, rendered: Rendered) -> None:
    """Everything cluster-scoped the release made (the namespace takes the rest); the
    webhook configuration first, so nothing else is sent to a webhook that is gone."""
    for kind in (
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ClusterRoleBinding",
        "ClusterRole",
    ):
        names = rendered.names(kind)
        if names:
            cluster.kubectl.run("delete", kind.lower(), *names, "--ignore-not-found")


def test_rendered_manifests_apply_server_side(helm: Helm, cluster: Cluster, namespace: str) -> None:
    values = {"metrics": {"service": {"enabled": True}}}
    for mode in ("components", "all"):
        rendered = helm.template(
            {**values, **reservations_in(namespace), "mode": mode},
            release=release_name(),
            namespace=namespace,
        )
        try:
            apply_rendered(cluster, rendered)
            for kind in (
                "ServiceAccount",
                "ConfigMap",
                "PodDisruptionBudget",
                "Service",
                "Role",
                "Secret",
            ):
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
            for name in rendered.names("ValidatingWebhookConfiguration"):
                assert cluster.kubectl.exists("validatingwebhookconfiguration", name)
        finally:
            delete_rendered(cluster, rendered)


def allowed(cluster: Cluster, review: dict[str, Any]) -> bool:
    out = json.loads(
        cluster.kubectl.run("create", "-o", "json", "-f", "-", stdin=json.dumps(review))
    )
    return bool(out["status"].get("allowed"))


def may(
    cluster: Cluster,
    user: str,
    verb: str,
    resource: str,
    group: str = "",
    name: str = "",
    namespace: str = "",
) -> bool:
    """The API server's SubjectAccessReview answer for ``user`` (``resource`` may name a
    subresource: ``pods/binding``)."""
    plural, _, sub = resource.partition("/")
    attributes = {"group": group, "resource": plural, "subresource": sub, "verb": verb,
                  "namespace": namespace, "name": name}  # fmt: skip
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


def test_accounts_may_do_what_they_need_and_no_more(
    helm: Helm, cluster: Cluster, namespace: str
) -> None:
    """SubjectAccessReviews of the applied RBAC (the rendered rules are pinned offline)."""
    release = release_name()
    rendered = helm.template(reservations_in(namespace), release=release, namespace=namespace)
    try:
        apply_rendered(cluster, rendered)
        account = f"{release}-podmuster-binder"
        user = f"system:serviceaccount:{namespace}:{account}"

        def can(
            verb: str, resource: str, group: str = "", ns: str = namespace, name: str = ""
        ) -> bool:
            return may(cluster, user, verb, resource, group, name, ns)

        assert can("create", "pods/binding", ns="anywhere")
        assert can("patch", "bindrequests/status", "scheduling.run.ai", ns="anywhere")
        assert can("get", "leases", "coordination.k8s.io", name="podmuster-binder")
        assert not can("get", "leases", "coordination.k8s.io", name="podmuster-scheduler")
        assert not can(
            "get", "leases", "coordination.k8s.io", ns="default", name="podmuster-binder"
        )
        # Fractional GPUs: reservation pods are created in their namespace only; sharing
        # pods are labelled and (their reservation gone) deleted anywhere.
        assert can("create", "pods")
        assert not can("create", "pods", ns="anywhere")
        assert can("delete", "pods", ns="anywhere")
        assert can("patch", "pods", ns="anywhere")
        assert not can("update", "pods", ns="anywhere")
        assert can("create", "configmaps", ns="anywhere")
        assert can("update", "configmaps", ns="anywhere")
        assert not can("delete", "configmaps", ns="anywhere")
        assert not can("update", "bindrequests", "scheduling.run.ai", ns="anywhere")
        assert not can("get", "secrets")
    finally:
        delete_rendered(cluster, rendered)


@contextlib.contextmanager
def run_as_account(
    cluster: Cluster,
    rendered: Rendered,
    component: str,
    namespace: str,
    tmp: Path,
    overrides: Mapping[str, str | None],
) -> Iterator[ManagedProcess]:
    """The component with its rendered arguments, as its ServiceAccount, until the block ends.

    ``overrides`` replaces rendered flags that only make sense in a pod (paths, ports);
    ``None`` drops a flag.
    """
    deployment = next(
        d for d in rendered.of_kind("Deployment") if d["metadata"]["name"].endswith(f"-{component}")
    )
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    args: list[str] = container(deployment)["args"]
    assert args[:2] == ["run", component]
    kept = [a for a in args[2:] if a.split("=", 1)[0] not in overrides]
    flags = kept + [f"{k}={v}" for k, v in overrides.items() if v is not None]
    kubeconfig = token_kubeconfig(cluster, namespace, account, tmp / f"{component}.kubeconfig")
    # The last --kubeconfig wins: the account's token, not the admin's certificate.
    with live.component(cluster, component, [*flags, f"--kubeconfig={kubeconfig}"]) as proc:
        yield proc


def local_overrides(rendered: Rendered, component: str, tmp: Path) -> dict[str, str | None]:
    """Flags for running ``component`` on this machine beside the others."""
    if component == "podgrouper":
        return {"--metrics-port": "0"}
    config = tmp / "scheduler.yaml"
    configmap = next(
        c
        for c in rendered.of_kind("ConfigMap")
        if c["metadata"]["name"].endswith("-scheduler-config")
    )
    config.write_text(configmap["data"]["scheduler.yaml"])
    overrides: dict[str, str | None] = {"--metrics-port": "0"}
    if component in ("scheduler", "all"):
        overrides["--config"] = str(config)
    return overrides


def test_components_run_as_their_accounts(
    helm: Helm, cluster: Cluster, namespace: str, kwok_node: str, tmp_path: Path
) -> None:
    """A pod goes from created to Running with every component on its own least RBAC."""
    release = release_name()
    values = {
        "scheduler": {"schedulePeriod": 0.5},
        "controllers": {"debounce": 0.2},
        "webhooks": {"enabled": False},  # test_webhooks_* run them
        # The podgrouper watches only the test's namespace, with the RBAC for that.
        "podgrouper": {"namespaces": [namespace]},
        **reservations_in(namespace),
    }
    rendered = helm.template(values, release=release, namespace=namespace)
    try:
        apply_rendered(cluster, rendered)
        with contextlib.ExitStack() as stack:
            procs = [
                stack.enter_context(
                    run_as_account(
                        cluster,
                        rendered,
                        c,
                        namespace,
                        tmp_path,
                        local_overrides(rendered, c, tmp_path),
                    )
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

            # Kubernetes' own PodGroup: read, grouped and given its condition on that RBAC
            upstream = {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "upstream", "namespace": namespace},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
            }
            cluster.kubectl.create(upstream)
            member: dict[str, Any] = json.loads(json.dumps(pod))
            member["metadata"]["name"] = "member"
            member["spec"]["schedulingGroup"] = {"podGroupName": "upstream"}
            cluster.kubectl.create(member)
            wait_phase(cluster, namespace, "member", "Running", timeout=120)

            def upstream_scheduled() -> bool:
                obj = cluster.kubectl.get(
                    "podgroups.scheduling.k8s.io", "upstream", "-n", namespace
                )
                conditions = (obj.get("status") or {}).get("conditions") or []
                return any(c["type"] == "PodGroupInitiallyScheduled" and c["status"] == "True"
                           for c in conditions)  # fmt: skip

            wait_for("upstream PodGroup's condition", upstream_scheduled, timeout=60)
            for proc in procs:
                proc.check_alive()
                log = proc.log_path.read_text(errors="replace")
                denied = [line for line in log.splitlines() if "forbidden" in line.lower()]
                assert denied == [], f"{proc.name} was refused:\n" + "\n".join(denied[:10])
    finally:
        delete_rendered(cluster, rendered)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def refused(cluster: Cluster, obj: dict[str, Any], verb: str = "create") -> str:
    """The API server's refusal of ``obj`` (the test fails if it is accepted)."""
    with pytest.raises(KubectlError) as failure:
        cluster.kubectl.run(verb, "-f", "-", stdin=json.dumps(obj))
    return failure.value.stderr


def kai_queue(name: str, parent: str = "", resources: Any = "unlimited") -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {"parentQueue": parent} if parent else {}
    if resources == "unlimited":
        resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    if resources is not None:
        spec["resources"] = resources
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_webhooks_refuse_bad_objects_on_the_api_server(
    helm: Helm, cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    """The rendered webhook configuration, pointed at the webhooks running here as their
    account (the API server cannot reach a Service without a pod network)."""
    release = release_name()
    rendered = helm.template(reservations_in(namespace), release=release, namespace=namespace)
    pki = Pki.create(tmp_path / "pki")
    port = free_port()
    config = rendered.get("ValidatingWebhookConfiguration", f"{release}-podmuster-webhooks")
    mutation = rendered.get("MutatingWebhookConfiguration", f"{release}-podmuster-webhooks")
    ca_bundle = base64.b64encode(pki.ca_cert.read_bytes()).decode()
    for hook in [*config["webhooks"], *mutation["webhooks"]]:
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
    prefix = f"adm{uuid.uuid4().hex[:5]}"
    queues = [f"{prefix}-{n}" for n in ("org", "team")]
    try:
        apply_rendered(
            cluster,
            rendered,
            skip=("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"),
        )
        overrides = {
            "--port": str(port), "--metrics-port": "-1",
            "--tls-cert-file": str(pki.serving_cert), "--tls-key-file": str(pki.serving_key),
        }  # fmt: skip
        with run_as_account(cluster, rendered, "webhooks", namespace, tmp_path, overrides) as proc:
            wait_until(f"webhooks on {port}", lambda: port_open(port), 60, watch=[proc])
            before = {  # a pod created before the webhook, with a fraction it would refuse
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "old", "namespace": namespace, "annotations": {"gpu-fraction": "1.5"}},
                "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}]},
            }  # fmt: skip
            cluster.kubectl.create(before)
            server_side_apply(cluster, [config, mutation])
            org, team = queues
            cluster.kubectl.create(kai_queue(org))
            cluster.kubectl.create(kai_queue(team, org))
            assert "spec.resources: required" in refused(
                cluster, kai_queue(f"{prefix}-bare", org, None)
            )
            assert "no Queue named 'ghost'" in refused(cluster, kai_queue(f"{prefix}-x", "ghost"))
            # the CRD schema says minimum -1; between -1 and 0 only the webhook refuses
            bad = {"gpu": {"quota": -0.5, "limit": -1, "overQuotaWeight": 1}}
            message = refused(cluster, kai_queue(f"{prefix}-y", org, bad))
            assert (
                f"Queue {prefix}-y: spec.resources.gpu.quota: must be -1 (unlimited) or >= 0"
                in message
            )
            loop = cluster.kubectl.get("queues.scheduling.run.ai", org)
            loop["spec"]["parentQueue"] = team
            message = refused(cluster, loop, "replace")
            assert f"parent queues would form a cycle: {org} -> {team} -> {org}" in message
            group = {
                "apiVersion": "scheduling.run.ai/v2alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "gang", "namespace": namespace},
                "spec": {"queue": team, "minMember": 2, "subGroups": [
                    {"name": "a", "parent": "b", "minMember": 1},
                    {"name": "b", "parent": "a", "minMember": 1},
                ]},
            }  # fmt: skip
            topology = {
                "apiVersion": "kai.scheduler/v1alpha1",
                "kind": "Topology",
                "metadata": {"name": f"{prefix}-topo"},
                "spec": {"levels": [{"nodeLabel": "zone", "alias": "rack"}, {"nodeLabel": "rack"}]},
            }
            assert f"Topology {prefix}-topo: spec.levels[0].alias: 'rack' is the nodeLabel" in (
                refused(cluster, topology)
            )
            message = refused(cluster, group)
            assert f"PodGroup {namespace}/gang: spec.subGroups[0].parent" in message
            assert "cycle: a -> b -> a" in message
            group["spec"] = {"queue": team, "subGroups": [  # KAI v0.17: a parent takes minSubGroup
                {"name": "a", "minSubGroup": 1},
                {"name": "b", "parent": "a", "minMember": 1},
            ]}  # fmt: skip
            cluster.kubectl.create(group)
            # Fractional pods get the RuntimeClass nvidia (the chart's default, as KAI's);
            # without the class the API server refuses them before the validation.
            ensure_nvidia_runtime_class(cluster)
            notebook = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "nb", "namespace": namespace, "annotations": {"gpu-fraction": "1.5"}},
                "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main", "image": "busybox"}]},
            }  # fmt: skip
            message = refused(cluster, notebook)
            assert 'admission webhook "pods.validation.podmuster.io" denied' in message
            assert (
                f"Pod {namespace}/nb: metadata.annotations[gpu-fraction]: "
                "must be a number with 0 < x < 1" in message
            )
            for scheduler, fraction in (("kai-scheduler", "0.5"), ("default-scheduler", "1.5")):
                notebook["spec"]["schedulerName"] = scheduler
                notebook["metadata"]["annotations"] = {"gpu-fraction": fraction}
                cluster.kubectl.run(
                    "create", "--dry-run=server", "-f", "-", stdin=json.dumps(notebook)
                )
            # The mutation wires the GPU env of a fractional pod to its ConfigMap and
            # gives it the RuntimeClass nvidia (the chart's default, as KAI's).
            notebook["spec"]["schedulerName"] = "kai-scheduler"
            notebook["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
            created = json.loads(
                cluster.kubectl.run(
                    "create", "--dry-run=server", "-o", "json", "-f", "-",
                    stdin=json.dumps(notebook),
                )
            )  # fmt: skip
            assert created["metadata"]["annotations"]["runai/shared-gpu-configmap"] == (
                "nb-shared-gpu"
            )
            env = {e["name"]: e["valueFrom"] for e in created["spec"]["containers"][0]["env"]}
            assert env == {
                key: {"configMapKeyRef": {"name": "nb-shared-gpu", "key": key}
                      | ({"optional": True} if key == "RUNAI_NUM_OF_GPUS" else {})}
                for key in ("NVIDIA_VISIBLE_DEVICES", "GPU_PORTION", "RUNAI_NUM_OF_GPUS")
            }  # fmt: skip
            assert created["spec"]["runtimeClassName"] == "nvidia"
            # UPDATE (as KAI): judged when a GPU-sharing annotation changes ...
            notebook["metadata"]["name"] = "nb2"
            cluster.kubectl.create(notebook)

            def update_refused(*args: str) -> str:
                with pytest.raises(KubectlError) as failure:
                    cluster.kubectl.run(*args, "-n", namespace, "--overwrite")
                return failure.value.stderr

            message = update_refused("annotate", "pod", "nb2", "gpu-memory=\u00b2")
            assert 'admission webhook "pods.validation.podmuster.io" denied' in message
            assert f"Pod {namespace}/nb2: metadata.annotations[gpu-memory]: " in message
            message = update_refused("annotate", "pod", "old", "gpu-fraction=2")
            assert f"Pod {namespace}/old: metadata.annotations[gpu-fraction]: " in message
            cluster.kubectl.run(
                "annotate", "pod", "nb2", "-n", namespace, "gpu-fraction=0.25", "--overwrite"
            )
            # ... and not when they stay as they were (KAI would refuse this label update)
            cluster.kubectl.run("label", "pod", "old", "-n", namespace, "team=a")
            proc.check_alive()
    finally:
        cluster.kubectl.run(
            "delete", "pod", "old", "nb2", "-n", namespace, "--ignore-not-found", "--wait=false"
        )
        delete_rendered(cluster, rendered)
        cluster.kubectl.run("delete", "queues.scheduling.run.ai", *queues, "--ignore-not-found")
